package admin

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Message browser limits: the page sizes offered (Source caps a page at
// 1000 records) and how much of one key, value or header is shown.
var pageSizes = []int{10, 50, 100, 500, 1000}

const (
	defaultPageSize = 50
	maxShownKey     = 256
	maxShownValue   = 2048
)

// messagesQuery is the message browser's form, parsed. Every field has a
// default, so the bare URL shows the first page from the log start offset.
type messagesQuery struct {
	From      string // "offset" or "timestamp"
	Offset    int64  // -1: the log start offset
	TS        string // as typed: a datetime-local value (UTC) or unix ms
	TSMs      int64
	TSInput   string // TSMs as a datetime-local value
	Committed bool   // read_committed
	Limit     int
	As        string // "text" or "base64"
}

func parseMessagesQuery(r *http.Request) (messagesQuery, error) {
	v := r.URL.Query()
	q := messagesQuery{From: "offset", Offset: -1, TSMs: -1, Limit: defaultPageSize, As: "text"}
	switch f := v.Get("from"); f {
	case "", "offset":
	case "timestamp":
		q.From = f
	default:
		return q, badRequest("from must be offset or timestamp, not %q", f)
	}
	if s := strings.TrimSpace(v.Get("offset")); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return q, badRequest("offset %q is not a non-negative integer", s)
		}
		q.Offset = n
	}
	q.TS = strings.TrimSpace(v.Get("ts"))
	if q.From == "timestamp" {
		if q.TS == "" {
			return q, badRequest("searching by timestamp needs a time (ts)")
		}
		ms, err := parseBrowserTime(q.TS)
		if err != nil {
			return q, badRequest("%v", err)
		}
		q.TSMs = ms
		q.TSInput = time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05")
	}
	var err error
	if q.Committed, err = parseIsolation(v.Get("isolation")); err != nil {
		return q, err
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > pageSizes[len(pageSizes)-1] {
			return q, badRequest("limit %q must be between 1 and %d", s, pageSizes[len(pageSizes)-1])
		}
		q.Limit = n
	}
	switch as := v.Get("as"); as {
	case "", "text":
	case "base64":
		q.As = as
	default:
		return q, badRequest("as must be text or base64, not %q", as)
	}
	return q, nil
}

// parseBrowserTime reads a datetime-local input value as UTC, or an RFC 3339
// time, or unix milliseconds.
func parseBrowserTime(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms >= 0 {
		return ms, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02T15:04:05.000", time.RFC3339Nano} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			if t.UnixMilli() < 0 {
				break
			}
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("time %q: want YYYY-MM-DDTHH:MM[:SS] (UTC), RFC 3339 or unix milliseconds", s)
}

// url is the browser URL for q with some fields replaced.
func (q messagesQuery) url(topic string, part int32, offset int64) string {
	v := url.Values{}
	v.Set("offset", strconv.FormatInt(offset, 10))
	if q.Committed {
		v.Set("isolation", "read_committed")
	}
	if q.Limit != defaultPageSize {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.As != "text" {
		v.Set("as", q.As)
	}
	return messagesURL(topic, part) + "?" + v.Encode()
}

type messagesBody struct {
	P         PartitionView
	Q         messagesQuery
	PageSizes []int
	// Filled once the scan is done.
	Page                 *RecordPage
	Rows                 []recordRow
	ScanErr              string
	Elapsed              time.Duration
	NextURL, PrevURL     string
	OldestURL, NewestURL string
}

type recordRow struct {
	RecordView
	KeyShown, ValueShown shownBytes
	HeadersShown         []shownHeader
	Time                 string
}

type shownHeader struct {
	Key   string
	Value shownBytes
}

// shownBytes is a key, value or header value as the page shows it.
type shownBytes struct {
	Null     bool
	Text     string
	Base64   bool
	Omitted  int // characters cut off the end
	Original int // length of the full text in characters
}

func showBytes(null bool, s, enc, as string, limit int) shownBytes {
	if null {
		return shownBytes{Null: true}
	}
	b := shownBytes{Text: s, Base64: enc == "base64"}
	if as == "base64" && !b.Base64 {
		b.Text, b.Base64 = base64.StdEncoding.EncodeToString([]byte(s)), true
	}
	b.Original = utf8.RuneCountInString(b.Text)
	if b.Original > limit {
		b.Text = truncateRunes(b.Text, limit)
		b.Omitted = b.Original - limit + 1
	}
	return b
}

// serveMessages streams the page in two parts: the form and a "scanning"
// line with a Stop button first, then, once Source.Records returns, the
// records. Stopping the page load (the button calls window.stop(); leaving
// the page does the same) cancels the request's context, which ends the
// scan; scanTimeout bounds it regardless.
func (c *console) serveMessages(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	part, err := partitionParam(r)
	if err != nil {
		c.renderError(w, r, err)
		return
	}
	q, err := parseMessagesQuery(r)
	if err != nil {
		c.renderError(w, r, err)
		return
	}
	pv, err := c.src.Partition(r.Context(), topic, part)
	if err != nil {
		c.renderError(w, r, fmt.Errorf("partition %s/%d: %w", topic, part, err))
		return
	}
	q.Offset = max(q.Offset, pv.LogStart)
	body := &messagesBody{P: pv, Q: q, PageSizes: pageSizes}
	body.OldestURL = q.url(topic, part, pv.LogStart)
	bound := pv.HW
	if q.Committed {
		bound = pv.LSO
	}
	body.NewestURL = q.url(topic, part, max(pv.LogStart, bound-int64(q.Limit)))
	rq := RecordQuery{Topic: topic, Partition: part, Offset: q.Offset, TimestampMs: q.TSMs,
		MaxRecords: q.Limit, ReadCommitted: q.Committed}
	if q.From == "timestamp" {
		rq.Offset = -1
	}
	p := &page{Template: "messages.html", Title: fmt.Sprintf("Messages %s / %d", topic, part), Nav: "topics",
		JSON: recordsJSONURL(rq),
		Crumbs: []crumb{{"Topics", "/ui/topics"}, {topic, topicURL(topic)},
			{"partition " + strconv.Itoa(int(part)), partitionURL(topic, part)}, {"messages", ""}},
		Now: c.a.now(), Body: body}
	t := c.pages[p.Template]
	setPageHeaders(w)
	w.WriteHeader(http.StatusOK)
	if err := t.ExecuteTemplate(w, "head", p); err != nil {
		c.a.log.Warn("console: render", "page", p.Template, "err", err)
		return
	}
	if err := t.ExecuteTemplate(w, "messages-form", p); err != nil {
		c.a.log.Warn("console: render", "page", p.Template, "err", err)
		return
	}
	http.NewResponseController(w).Flush()

	ctx, cancel := context.WithTimeout(r.Context(), scanTimeout)
	defer cancel()
	start := time.Now()
	rp, err := c.src.Records(ctx, rq)
	body.Elapsed = time.Since(start).Round(time.Millisecond)
	if r.Context().Err() != nil {
		return // the browser stopped the page: nobody to write to
	}
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		body.ScanErr = fmt.Sprintf("the scan took longer than %v and was stopped", scanTimeout)
	case err != nil:
		body.ScanErr = err.Error()
	default:
		body.Page = &rp
		body.fill(topic, part)
	}
	if err := t.ExecuteTemplate(w, "messages-results", p); err != nil {
		c.a.log.Warn("console: render", "page", p.Template, "err", err)
		return
	}
	if err := t.ExecuteTemplate(w, "foot", p); err != nil {
		c.a.log.Warn("console: render", "page", p.Template, "err", err)
	}
}

func (b *messagesBody) fill(topic string, part int32) {
	rp, q := b.Page, b.Q
	for _, rv := range rp.Records {
		row := recordRow{RecordView: rv, Time: formatUnixMs(rv.TimestampMs),
			KeyShown:   showBytes(rv.KeyNull, rv.Key, rv.KeyEncoding, q.As, maxShownKey),
			ValueShown: showBytes(rv.ValueNull, rv.Value, rv.ValueEncoding, q.As, maxShownValue)}
		for _, h := range rv.Headers {
			row.HeadersShown = append(row.HeadersShown, shownHeader{Key: h.Key,
				Value: showBytes(h.ValueNull, h.Value, h.ValueEncoding, q.As, maxShownKey)})
		}
		b.Rows = append(b.Rows, row)
	}
	b.NextURL = q.url(topic, part, rp.NextOffset)
	if rp.StartOffset > b.P.LogStart {
		b.PrevURL = q.url(topic, part, max(b.P.LogStart, rp.StartOffset-int64(q.Limit)))
	}
}

// recordsJSONURL is the /v1 route with the same records.
func recordsJSONURL(rq RecordQuery) string {
	v := url.Values{}
	if rq.TimestampMs >= 0 {
		v.Set("timestamp", strconv.FormatInt(rq.TimestampMs, 10))
	} else {
		v.Set("offset", strconv.FormatInt(rq.Offset, 10))
	}
	v.Set("max_records", strconv.Itoa(rq.MaxRecords))
	if rq.ReadCommitted {
		v.Set("isolation", "read_committed")
	}
	return fmt.Sprintf("/v1/partitions/%s/%d/records?%s", url.PathEscape(rq.Topic), rq.Partition, v.Encode())
}
