package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gregor-broker/gregor/internal/cleaner"
)

// apiFakeSource is an in-memory Source: a few topics, partitions and groups
// kept in maps, answering ErrNotFound for anything else. failWith makes every
// call fail; lastQuery records what Records was asked.
type apiFakeSource struct {
	cluster    ClusterView
	topics     map[string]TopicView
	partitions map[string]map[int32]PartitionView
	groups     map[string]GroupView
	failWith   error

	mu        sync.Mutex
	lastQuery RecordQuery
}

func newAPIFakeSource() *apiFakeSource {
	s := &apiFakeSource{
		cluster: ClusterView{ClusterID: "c1", NodeID: 1, ControllerID: 1, Listeners: map[string]string{"PLAINTEXT": "127.0.0.1:9092"},
			Brokers: []BrokerView{{NodeID: 1, Host: "127.0.0.1", Port: 9092}},
			LogDirs: []LogDirView{{Path: "/data", TotalBytes: 1000, FreeBytes: 400, LogBytes: 300, Partitions: 2}},
			Topics:  2, Partitions: 2, LogBytes: 300},
		topics:     map[string]TopicView{},
		partitions: map[string]map[int32]PartitionView{},
		groups:     map[string]GroupView{},
	}
	for i, name := range []string{"orders", "payments"} {
		ps := PartitionSummary{Partition: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1},
			Offsets:   Offsets{LogStart: 10, LSO: 20, HW: 20, LEO: 25, RecoveryPoint: 25},
			SizeBytes: int64(100 * (i + 1)), Segments: 2}
		s.topics[name] = TopicView{
			TopicSummary:    TopicSummary{Name: name, ID: "id-" + name, Partitions: 1, ReplicationFactor: 1, CleanupPolicy: "delete", SizeBytes: ps.SizeBytes, Records: 10},
			Configs:         []ConfigView{{Name: "retention.ms", Value: "1000", Source: "DYNAMIC_TOPIC_CONFIG"}},
			PartitionDetail: []PartitionSummary{ps},
		}
		s.partitions[name] = map[int32]PartitionView{0: {Topic: name, TopicID: "id-" + name, Partition: 0, PartitionSummary: ps,
			SegmentList: []SegmentView{{BaseOffset: 10, EndOffset: 15, SizeBytes: 40, DeleteNext: true}, {BaseOffset: 15, EndOffset: 25, SizeBytes: 60 + int64(100*i), Active: true}},
			Retention: RetentionView{CleanupPolicy: "delete", RetentionMs: 1000, RetentionBytes: -1,
				Next: &RetentionNext{FromOffset: 10, ToOffset: 15, Segments: 1, Bytes: 40, Reason: "retention.ms", DueMs: 5}, Why: "due"},
			Groups: []GroupOffset{{Group: "g/1", Topic: name, Partition: 0, Committed: 12, HW: 20, Lag: 8}}}}
	}
	s.groups["g/1"] = GroupView{GroupSummary: GroupSummary{ID: "g/1", State: "Empty", Topics: []string{"orders", "payments"}, Lag: 16},
		Offsets: []GroupOffset{{Group: "g/1", Topic: "orders", Committed: 12, HW: 20, Lag: 8}, {Group: "g/1", Topic: "payments", Committed: 12, HW: 20, Lag: 8}}}
	return s
}

func (s *apiFakeSource) Cluster(context.Context) (ClusterView, error) { return s.cluster, s.failWith }

func (s *apiFakeSource) Transactions(context.Context) ([]HeldPartition, error) {
	return nil, s.failWith
}

func (s *apiFakeSource) OngoingTransactions(context.Context) (OngoingView, error) {
	return OngoingView{Transactions: []OngoingTransaction{{TransactionalID: "tx-1", ProducerID: 5, State: "Ongoing", TimeoutMs: 60000,
		AgeMs: 1500, Partitions: []TopicPartitions{{Topic: "orders", Partitions: []int32{0}}}}}}, s.failWith
}

func (s *apiFakeSource) AutoAbort(context.Context) (AutoAbortView, error) {
	return AutoAbortView{Enabled: true, MinOrphanMs: 600000, MinAgeMs: 900000, Checks: 3, AbortedTotal: 1,
		Watched: []WatchedOrphan{}, Recent: []AutoAbortRecord{{WatchedOrphan: WatchedOrphan{Topic: "orders", ProducerID: 9}, AtMs: 7}}}, s.failWith
}

func (s *apiFakeSource) Topics(context.Context) ([]TopicSummary, error) {
	if s.failWith != nil {
		return nil, s.failWith
	}
	return []TopicSummary{s.topics["orders"].TopicSummary, s.topics["payments"].TopicSummary}, nil
}

func (s *apiFakeSource) Topic(_ context.Context, name string) (TopicView, error) {
	if s.failWith != nil {
		return TopicView{}, s.failWith
	}
	t, ok := s.topics[name]
	if !ok {
		return TopicView{}, fmt.Errorf("topic %q: %w", name, ErrNotFound)
	}
	return t, nil
}

func (s *apiFakeSource) Partition(_ context.Context, topic string, p int32) (PartitionView, error) {
	if s.failWith != nil {
		return PartitionView{}, s.failWith
	}
	pv, ok := s.partitions[topic][p]
	if !ok {
		return PartitionView{}, fmt.Errorf("partition %s-%d: %w", topic, p, ErrNotFound)
	}
	return pv, nil
}

func (s *apiFakeSource) Cleaner(ctx context.Context, topic string, p int32) (*cleaner.PartitionStatus, error) {
	pv, err := s.Partition(ctx, topic, p)
	return pv.Cleaner, err
}

func (s *apiFakeSource) Groups(context.Context) ([]GroupSummary, error) {
	if s.failWith != nil {
		return nil, s.failWith
	}
	return []GroupSummary{s.groups["g/1"].GroupSummary}, nil
}

func (s *apiFakeSource) Group(_ context.Context, id string) (GroupView, error) {
	if s.failWith != nil {
		return GroupView{}, s.failWith
	}
	g, ok := s.groups[id]
	if !ok {
		return GroupView{}, fmt.Errorf("group %q: %w", id, ErrNotFound)
	}
	return g, nil
}

func (s *apiFakeSource) Records(_ context.Context, q RecordQuery) (RecordPage, error) {
	s.mu.Lock()
	s.lastQuery = q
	s.mu.Unlock()
	if s.failWith != nil {
		return RecordPage{}, s.failWith
	}
	if _, ok := s.partitions[q.Topic][q.Partition]; !ok {
		return RecordPage{}, fmt.Errorf("partition %s-%d: %w", q.Topic, q.Partition, ErrNotFound)
	}
	return RecordPage{Topic: q.Topic, Partition: q.Partition, StartOffset: q.Offset, NextOffset: q.Offset + 1, Bound: 20,
		Records:    []RecordView{{Offset: q.Offset, Key: "k", KeyEncoding: "utf8", ValueNull: true, Headers: []HeaderView{{Key: "h", Value: "v", ValueEncoding: "utf8"}}}},
		StopReason: "max_records"}, nil
}

func newAPITestAdmin(t *testing.T, src Source) (*Admin, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	a := New(Config{Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(&logs, nil)), Security: Security{RecordBrowser: true}})
	RegisterAPI(a, src)
	return a, &logs
}

// TestAPIRoutes checks every route answers indented JSON that decodes to what
// the Source returned.
func TestAPIRoutes(t *testing.T) {
	src := newAPIFakeSource()
	a, _ := newAPITestAdmin(t, src)
	tests := []struct {
		path string
		got  any // a pointer to decode into
		want any
	}{
		{"/v1/cluster", new(ClusterView), src.cluster},
		{"/v1/topics", new([]TopicSummary), []TopicSummary{src.topics["orders"].TopicSummary, src.topics["payments"].TopicSummary}},
		{"/v1/topics/payments", new(TopicView), src.topics["payments"]},
		{"/v1/partitions/orders/0", new(PartitionView), src.partitions["orders"][0]},
		{"/v1/groups", new([]GroupSummary), []GroupSummary{src.groups["g/1"].GroupSummary}},
		{"/v1/groups/g/1", new(GroupView), src.groups["g/1"]},
		{"/v1/groups/g%2F1", new(GroupView), src.groups["g/1"]},
		{"/v1/partitions/orders/0/records?offset=12", new(RecordPage), RecordPage{Topic: "orders", StartOffset: 12, NextOffset: 13, Bound: 20,
			Records:    []RecordView{{Offset: 12, Key: "k", KeyEncoding: "utf8", ValueNull: true, Headers: []HeaderView{{Key: "h", Value: "v", ValueEncoding: "utf8"}}}},
			StopReason: "max_records"}},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			code, body, hdr := get(t, a.Handler(), tc.path)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			if ct := hdr.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if !strings.HasPrefix(body, "{\n  \"") && !strings.HasPrefix(body, "[\n  {\n    \"") {
				t.Errorf("body not indented JSON:\n%.80s", body)
			}
			if err := json.Unmarshal([]byte(body), tc.got); err != nil {
				t.Fatalf("decode: %v\n%s", err, body)
			}
			if diff := cmp.Diff(tc.want, deref(tc.got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func deref(p any) any {
	switch v := p.(type) {
	case *ClusterView:
		return *v
	case *[]TopicSummary:
		return *v
	case *TopicView:
		return *v
	case *PartitionView:
		return *v
	case *[]GroupSummary:
		return *v
	case *GroupView:
		return *v
	case *RecordPage:
		return *v
	}
	panic(fmt.Sprintf("deref %T", p))
}

// TestAPIRecordQuery checks the records route's parameters reach the Source
// as the RecordQuery they mean.
func TestAPIRecordQuery(t *testing.T) {
	src := newAPIFakeSource()
	a, _ := newAPITestAdmin(t, src)
	tests := []struct {
		query string
		want  RecordQuery
	}{
		{"", RecordQuery{Topic: "orders", TimestampMs: -1}},
		{"offset=15&max_records=7&max_bytes=4096", RecordQuery{Topic: "orders", Offset: 15, TimestampMs: -1, MaxRecords: 7, MaxBytes: 4096}},
		{"timestamp=1700000000000", RecordQuery{Topic: "orders", TimestampMs: 1700000000000}},
		{"timestamp=0&isolation=read_committed", RecordQuery{Topic: "orders", TimestampMs: 0, ReadCommitted: true}},
		{"isolation=read_uncommitted&max_records=0", RecordQuery{Topic: "orders", TimestampMs: -1}},
		{"max_records=100000", RecordQuery{Topic: "orders", TimestampMs: -1, MaxRecords: 100000}}, // the Source caps it
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			code, body, _ := get(t, a.Handler(), "/v1/partitions/orders/0/records?"+tc.query)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			src.mu.Lock()
			got := src.lastQuery
			src.mu.Unlock()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("RecordQuery (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAPIErrors checks each error answer: status, JSON body and code.
func TestAPIErrors(t *testing.T) {
	src := newAPIFakeSource()
	a, _ := newAPITestAdmin(t, src)
	tests := []struct {
		path    string
		status  int
		code    string
		message string // substring of the error text
	}{
		{"/v1/topics/nope", 404, "not_found", `topic "nope": not found`},
		{"/v1/partitions/nope/0", 404, "not_found", "partition nope-0: not found"},
		{"/v1/partitions/orders/3", 404, "not_found", "partition orders-3: not found"},
		{"/v1/partitions/orders/3/records", 404, "not_found", "partition orders-3: not found"},
		{"/v1/groups/nope", 404, "not_found", `group "nope": not found`},
		{"/v1/partitions/orders/x", 400, "bad_request", `partition "x" is not a partition number`},
		{"/v1/partitions/orders/-1", 400, "bad_request", `partition "-1"`},
		{"/v1/partitions/orders/4294967296", 400, "bad_request", `partition "4294967296"`},
		{"/v1/partitions/orders/x/records", 400, "bad_request", `partition "x"`},
		{"/v1/partitions/orders/0/records?offset=-1", 400, "bad_request", `offset="-1": want a non-negative integer`},
		{"/v1/partitions/orders/0/records?offset=abc", 400, "bad_request", `offset="abc"`},
		{"/v1/partitions/orders/0/records?timestamp=yesterday", 400, "bad_request", `timestamp="yesterday": want a non-negative integer (unix milliseconds)`},
		{"/v1/partitions/orders/0/records?offset=1&timestamp=2", 400, "bad_request", "give offset or timestamp, not both"},
		{"/v1/partitions/orders/0/records?max_records=-5", 400, "bad_request", `max_records="-5"`},
		{"/v1/partitions/orders/0/records?max_bytes=1e6", 400, "bad_request", `max_bytes="1e6"`},
		{"/v1/partitions/orders/0/records?max_bytes=99999999999", 400, "bad_request", `max_bytes="99999999999"`},
		{"/v1/partitions/orders/0/records?isolation=serializable", 400, "bad_request", `isolation="serializable": want read_committed or read_uncommitted`},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			code, body, hdr := get(t, a.Handler(), tc.path)
			checkAPIError(t, code, body, hdr, tc.status, tc.code, tc.message)
		})
	}
}

func checkAPIError(t *testing.T, code int, body string, hdr http.Header, status int, errCode, message string) {
	t.Helper()
	if code != status {
		t.Fatalf("status %d, want %d: %s", code, status, body)
	}
	if ct := hdr.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var e struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("error body is not JSON: %v\n%s", err, body)
	}
	if e.Code != errCode || !strings.Contains(e.Error, message) {
		t.Errorf("error %+v, want code %q and a message with %q", e, errCode, message)
	}
}

// TestAPIInternalError checks a failing Source answers 500 on every route
// and logs the failure.
func TestAPIInternalError(t *testing.T) {
	src := newAPIFakeSource()
	src.failWith = errors.New("disk on fire")
	a, logs := newAPITestAdmin(t, src)
	for _, path := range []string{"/v1/cluster", "/v1/topics", "/v1/topics/orders", "/v1/partitions/orders/0",
		"/v1/partitions/orders/0/records", "/v1/groups", "/v1/groups/g"} {
		t.Run(path, func(t *testing.T) {
			logs.Reset()
			code, body, hdr := get(t, a.Handler(), path)
			checkAPIError(t, code, body, hdr, 500, "internal", "disk on fire")
			if !strings.Contains(logs.String(), "admin API request failed") || !strings.Contains(logs.String(), "disk on fire") ||
				!strings.Contains(logs.String(), path) {
				t.Errorf("log %q lacks the failure", logs.String())
			}
		})
	}
}

// TestAPIUnavailable checks ErrUnavailable answers 503 with Retry-After on
// every route.
func TestAPIUnavailable(t *testing.T) {
	src := newAPIFakeSource()
	src.failWith = fmt.Errorf("listing consumer groups: %w: COORDINATOR_LOAD_IN_PROGRESS", ErrUnavailable)
	a, _ := newAPITestAdmin(t, src)
	for _, path := range []string{"/v1/cluster", "/v1/groups", "/v1/groups/g"} {
		code, body, hdr := get(t, a.Handler(), path)
		checkAPIError(t, code, body, hdr, 503, "unavailable", "COORDINATOR_LOAD_IN_PROGRESS")
		if got := hdr.Get("Retry-After"); got != "1" {
			t.Errorf("%s: Retry-After %q, want 1", path, got)
		}
	}
}

// TestAPIKeepsOtherRoutes checks RegisterAPI leaves room for the cleaner's
// route under the same prefix, and that only GET is served.
func TestAPIKeepsOtherRoutes(t *testing.T) {
	a, _ := newAPITestAdmin(t, newAPIFakeSource())
	a.Handle("GET /v1/partitions/{topic}/{partition}/cleaner", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "cleaner "+r.PathValue("topic")+"-"+r.PathValue("partition"))
	}))
	if code, body, _ := get(t, a.Handler(), "/v1/partitions/orders/0/cleaner"); code != 200 || body != "cleaner orders-0" {
		t.Fatalf("cleaner route: %d %q", code, body)
	}
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/topics", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /v1/topics = %d, want 405", rec.Code)
	}
}

// TestAPIOverTCP serves the API on a real listener.
func TestAPIOverTCP(t *testing.T) {
	a, _ := newAPITestAdmin(t, newAPIFakeSource())
	if err := a.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- a.Serve(context.Background()) }()
	defer func() {
		if err := a.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Get("http://" + a.Addr().String() + "/v1/partitions/payments/0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var pv PartitionView
	if err := json.NewDecoder(resp.Body).Decode(&pv); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	if pv.Topic != "payments" || pv.HW != 20 || len(pv.SegmentList) != 2 || pv.Retention.Next == nil {
		t.Fatalf("%+v", pv)
	}
}
