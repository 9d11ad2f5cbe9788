package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
)

// Error codes of the JSON API's error body (APIError).
const (
	APICodeNotFound    = "not_found"
	APICodeBadRequest  = "bad_request"
	APICodeInternal    = "internal"
	APICodeUnavailable = "unavailable"
)

// RegisterAPI adds the read-only JSON API under /v1/ over s (see doc.go for
// the routes). GET /v1/partitions/{topic}/{partition}/cleaner is the log
// cleaner's own route and is not added here.
func RegisterAPI(a *Admin, s Source) {
	api := &jsonAPI{a: a}
	a.Handle("GET /v1/cluster", api.handle(func(ctx context.Context, _ *http.Request) (any, error) {
		return s.Cluster(ctx)
	}))
	a.Handle("GET /v1/topics", api.handle(func(ctx context.Context, _ *http.Request) (any, error) {
		return s.Topics(ctx)
	}))
	a.Handle("GET /v1/topics/{topic}", api.handle(func(ctx context.Context, r *http.Request) (any, error) {
		return s.Topic(ctx, r.PathValue("topic"))
	}))
	a.Handle("GET /v1/partitions/{topic}/{partition}", api.handle(func(ctx context.Context, r *http.Request) (any, error) {
		p, err := apiPartitionParam(r)
		if err != nil {
			return nil, err
		}
		return s.Partition(ctx, r.PathValue("topic"), p)
	}))
	a.Handle("GET /v1/partitions/{topic}/{partition}/records", a.recordBrowser(api.handle(func(ctx context.Context, r *http.Request) (any, error) {
		q, err := apiRecordQuery(r)
		if err != nil {
			return nil, err
		}
		return s.Records(ctx, q)
	})))
	a.Handle("GET /v1/transactions", api.handle(func(ctx context.Context, _ *http.Request) (any, error) {
		return s.Transactions(ctx)
	}))
	a.Handle("GET /v1/transactions/ongoing", api.handle(func(ctx context.Context, _ *http.Request) (any, error) {
		return s.OngoingTransactions(ctx)
	}))
	a.Handle("GET /v1/transactions/auto-abort", api.handle(func(ctx context.Context, _ *http.Request) (any, error) {
		return s.AutoAbort(ctx)
	}))
	a.Handle("GET /v1/groups", api.handle(func(ctx context.Context, _ *http.Request) (any, error) {
		return s.Groups(ctx)
	}))
	// A group id may hold any character, "/" included.
	a.Handle("GET /v1/groups/{group...}", api.handle(func(ctx context.Context, r *http.Request) (any, error) {
		return s.Group(ctx, r.PathValue("group"))
	}))
	if acker, ok := s.(UncleanAcker); ok {
		registerUncleanAck(a, api, acker)
	}
}

type jsonAPI struct{ a *Admin }

// APIError is the JSON API's error body: {"error": "...", "code": "..."}.
type APIError struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// handle turns f's answer into an indented JSON body, or its error into a
// JSON error: 400 for a bad parameter, 404 for ErrNotFound, 503 for
// ErrUnavailable, 500 otherwise.
func (api *jsonAPI) handle(f func(context.Context, *http.Request) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := f(r.Context(), r)
		if err != nil {
			api.writeError(w, r, err)
			return
		}
		writeAPIJSON(w, http.StatusOK, v)
	})
}

func (api *jsonAPI) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, msg, retryAfter := errorStatus(err)
	code := map[int]string{http.StatusBadRequest: APICodeBadRequest, http.StatusNotFound: APICodeNotFound,
		http.StatusServiceUnavailable: APICodeUnavailable}[status]
	if code == "" {
		code = APICodeInternal
		if r.Context().Err() != nil {
			api.a.log.Debug("admin API request ended by its client", "path", r.URL.Path, "err", err)
		} else {
			api.a.log.Error("admin API request failed", "path", r.URL.Path, "err", err)
		}
	}
	if retryAfter {
		w.Header().Set("Retry-After", "1")
	}
	writeAPIJSON(w, status, APIError{Error: msg, Code: code})
}

func writeAPIJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(APIError{Error: "encoding the answer: " + err.Error(), Code: APICodeInternal})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func apiPartitionParam(r *http.Request) (int32, error) {
	raw := r.PathValue("partition")
	p, ok := parsePartition(raw)
	if !ok {
		return 0, badRequest("partition %q is not a partition number (a non-negative 32-bit integer)", raw)
	}
	return p, nil
}

// apiRecordQuery reads the records route's parameters: offset or timestamp
// (unix ms, not both), max_records, max_bytes and isolation.
func apiRecordQuery(r *http.Request) (RecordQuery, error) {
	p, err := apiPartitionParam(r)
	if err != nil {
		return RecordQuery{}, err
	}
	q := RecordQuery{Topic: r.PathValue("topic"), Partition: p, TimestampMs: -1}
	vals := r.URL.Query()
	nonNegative := func(name string, bits int) (int64, bool, error) {
		raw := vals.Get(name)
		if !vals.Has(name) {
			return 0, false, nil
		}
		v, err := strconv.ParseInt(raw, 10, bits)
		if err != nil || v < 0 {
			return 0, false, badRequest("%s=%q: want a non-negative integer", name, raw)
		}
		return v, true, nil
	}
	off, hasOff, err := nonNegative("offset", 64)
	if err != nil {
		return q, err
	}
	ts, hasTS, err := nonNegative("timestamp", 64)
	if err != nil {
		return q, badRequest("%v (unix milliseconds)", err)
	}
	if hasOff && hasTS {
		return q, badRequest("give offset or timestamp, not both")
	}
	q.Offset = off
	if hasTS {
		q.TimestampMs = ts
	}
	n, _, err := nonNegative("max_records", 32)
	if err != nil {
		return q, err
	}
	q.MaxRecords = int(n)
	if n, _, err = nonNegative("max_bytes", 32); err != nil {
		return q, err
	}
	q.MaxBytes = int(n)
	q.ReadCommitted, err = parseIsolation(vals.Get("isolation"))
	return q, err
}
