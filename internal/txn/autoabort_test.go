package txn

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// TestOrphansDecision: the automatic abort's decision alone, on a fake
// clock: only the orphan class is ever aborted, only when enabled, only
// once it has been orphan at every check for MinOrphanMs and is older than
// MinAgeMs, and a break in the orphan classification (another class, or
// not seen) starts the wait again.
func TestOrphansDecision(t *testing.T) {
	tp := topicpart.TopicPartition{Topic: "t", Partition: 0}
	cfg := AutoAbortConfig{Enabled: true, MinOrphanMs: 1000, MinAgeMs: 5000}
	sight := func(class string, ageMs int64) Sighting {
		return Sighting{TopicPartition: tp, Holder: Holder{ProducerID: 7, ProducerEpoch: 2, FirstOffset: 40},
			Diagnosis: Diagnosis{Class: class, AgeMs: ageMs}}
	}
	type step struct {
		at        int64
		seen      []Sighting
		cfg       AutoAbortConfig
		wantAbort bool
		wantWatch bool
	}
	off := cfg
	off.Enabled = false
	cases := []struct {
		name  string
		steps []step
	}{
		{"every other class is never aborted, however old", []step{
			{at: 0, seen: []Sighting{sight(ClassOpen, 1e9)}, cfg: cfg},
			{at: 1e6, seen: []Sighting{sight(ClassOpen, 1e9)}, cfg: cfg},
			{at: 2e6, seen: []Sighting{sight(ClassTimingOut, 1e9)}, cfg: cfg},
			{at: 3e6, seen: []Sighting{sight(ClassCompleting, 1e9)}, cfg: cfg},
			{at: 4e6, seen: []Sighting{sight(ClassUnreplicated, 1e9)}, cfg: cfg},
			{at: 5e6, seen: []Sighting{sight(ClassUnknown, 1e9)}, cfg: cfg},
			{at: 6e6, seen: []Sighting{sight(ClassUnknown, 1e9)}, cfg: cfg},
		}},
		{"an old orphan waits MinOrphanMs", []step{
			{at: 100, seen: []Sighting{sight(ClassOrphan, 10_000)}, cfg: cfg, wantWatch: true},
			{at: 1099, seen: []Sighting{sight(ClassOrphan, 10_999)}, cfg: cfg, wantWatch: true},
			{at: 1100, seen: []Sighting{sight(ClassOrphan, 11_000)}, cfg: cfg, wantWatch: true, wantAbort: true},
		}},
		{"a young orphan waits until older than MinAgeMs", []step{
			{at: 0, seen: []Sighting{sight(ClassOrphan, 100)}, cfg: cfg, wantWatch: true},
			{at: 2000, seen: []Sighting{sight(ClassOrphan, 2100)}, cfg: cfg, wantWatch: true},
			{at: 4900, seen: []Sighting{sight(ClassOrphan, 5000)}, cfg: cfg, wantWatch: true},
			{at: 4901, seen: []Sighting{sight(ClassOrphan, 5001)}, cfg: cfg, wantWatch: true, wantAbort: true},
		}},
		{"an unknown age counts from the first sighting", []step{
			{at: 0, seen: []Sighting{sight(ClassOrphan, -1)}, cfg: cfg, wantWatch: true},
			{at: 5000, seen: []Sighting{sight(ClassOrphan, -1)}, cfg: cfg, wantWatch: true},
			{at: 5001, seen: []Sighting{sight(ClassOrphan, -1)}, cfg: cfg, wantWatch: true, wantAbort: true},
		}},
		{"a break in the orphan class starts the wait again", []step{
			{at: 0, seen: []Sighting{sight(ClassOrphan, 10_000)}, cfg: cfg, wantWatch: true},
			{at: 900, seen: []Sighting{sight(ClassUnknown, 10_900)}, cfg: cfg},
			{at: 1000, seen: []Sighting{sight(ClassOrphan, 11_000)}, cfg: cfg, wantWatch: true},
			{at: 1999, seen: []Sighting{sight(ClassOrphan, 11_999)}, cfg: cfg, wantWatch: true},
			{at: 2000, seen: []Sighting{sight(ClassOrphan, 12_000)}, cfg: cfg, wantWatch: true, wantAbort: true},
		}},
		{"not seen at a check starts the wait again", []step{
			{at: 0, seen: []Sighting{sight(ClassOrphan, 10_000)}, cfg: cfg, wantWatch: true},
			{at: 500, cfg: cfg},
			{at: 1000, seen: []Sighting{sight(ClassOrphan, 11_000)}, cfg: cfg, wantWatch: true},
			{at: 1500, seen: []Sighting{sight(ClassOrphan, 11_500)}, cfg: cfg, wantWatch: true},
		}},
		{"disabled: watched, never aborted; enabled later: aborted at once", []step{
			{at: 0, seen: []Sighting{sight(ClassOrphan, 10_000)}, cfg: off, wantWatch: true},
			{at: 1e6, seen: []Sighting{sight(ClassOrphan, 1e6)}, cfg: off, wantWatch: true},
			{at: 1e6 + 1, seen: []Sighting{sight(ClassOrphan, 1e6)}, cfg: cfg, wantWatch: true, wantAbort: true},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var o Orphans
			for i, s := range c.steps {
				abort, watched := o.Observe(s.at, s.cfg, s.seen)
				if got := len(abort) == 1; got != s.wantAbort || len(abort) > 1 {
					t.Fatalf("step %d (t=%d): abort %+v, want abort=%v", i, s.at, abort, s.wantAbort)
				}
				if got := len(watched) == 1; got != s.wantWatch {
					t.Fatalf("step %d (t=%d): watched %+v, want %v", i, s.at, watched, s.wantWatch)
				}
				if s.wantAbort && (abort[0].ProducerID != 7 || abort[0].FirstOffset != 40 || abort[0].TopicPartition != tp) {
					t.Fatalf("step %d: aborts %+v", i, abort[0])
				}
			}
		})
	}
}

type fakeViews map[int64]CoordinatorView

func (f fakeViews) ForProducer(_ context.Context, pid int64) CoordinatorView { return f[pid] }

type recordingMarkers struct {
	mu   sync.Mutex
	sent []Marker
	err  error
}

func (r *recordingMarkers) WriteTxnMarkers(_ context.Context, m Marker) map[topicpart.TopicPartition]error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, m)
	out := map[topicpart.TopicPartition]error{}
	for _, tp := range m.Partitions {
		out[tp] = r.err
	}
	return out
}

// TestOrphanAborterCheck: the shell on a fake clock aborts the orphan (and
// nothing else) with its own producer id, epoch and coordinator epoch, as
// kafka-transactions.sh abort, counts it, retries a failed write at the
// next check, and with the config off writes nothing.
func TestOrphanAborterCheck(t *testing.T) {
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	settings := map[string]string{AutoAbortEnableConfig: "true", AutoAbortMinOrphanMsConfig: "1000",
		"transaction.max.timeout.ms": "5000", "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
		"node.id": "1", "process.roles": "broker,controller", "controller.listener.names": "CONTROLLER"}
	cfg := func() *config.Broker {
		b, err := config.NewBroker(settings)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	orphan := topicpart.TopicPartition{Topic: "t", Partition: 1}
	open := topicpart.TopicPartition{Topic: "t", Partition: 0}
	start := clk.Now().UnixMilli() - 60_000
	led := []LedHolders{
		{TopicPartition: open, Holders: []Holder{{ProducerID: 1, ProducerEpoch: 0, FirstOffset: 0, StartMs: start, LastTimestamp: -1}}},
		{TopicPartition: orphan, Holders: []Holder{{ProducerID: 9, ProducerEpoch: 3, CoordinatorEpoch: 4, FirstOffset: 12, StartMs: start, LastTimestamp: -1}}},
	}
	views := fakeViews{
		1: {Available: true, Txn: &Description{TransactionalID: "live", State: Ongoing, ProducerID: 1, TimeoutMs: 1 << 30,
			StartMs: start, Partitions: []topicpart.TopicPartition{open}}},
		9: {Available: true},
	}
	markers := &recordingMarkers{err: kerr.NotLeaderForPartition}
	a := NewOrphanAborter(OrphanAborterOptions{Led: func() []LedHolders { return led }, Coordinator: views, Markers: markers,
		Config: cfg, Clock: clk, Logger: discard()})
	ctx := context.Background()
	a.Check(ctx) // first sighting
	clk.Advance(999 * time.Millisecond)
	a.Check(ctx)
	if len(markers.sent) != 0 {
		t.Fatalf("aborted before min.orphan.ms: %+v", markers.sent)
	}
	clk.Advance(time.Millisecond)
	a.Check(ctx) // due: the write fails
	if len(markers.sent) != 1 || a.Aborted() != 0 || a.Status().Recent[0].Err == "" {
		t.Fatalf("after a failed write: sent %+v, aborted %d, status %+v", markers.sent, a.Aborted(), a.Status())
	}
	markers.err = nil
	a.Check(ctx) // retried
	want := Marker{ProducerID: 9, ProducerEpoch: 3, CoordinatorEpoch: 4, TransactionVersion: TV0, Partitions: []topicpart.TopicPartition{orphan}}
	if len(markers.sent) != 2 || !equalMarker(markers.sent[1], want) || a.Aborted() != 1 {
		t.Fatalf("retried abort: sent %+v, want %+v; aborted %d", markers.sent, want, a.Aborted())
	}
	st := a.Status()
	if st.Checks != 4 || len(st.Recent) != 2 || st.Recent[1].Err != "" || len(st.Watched) != 1 || st.Watched[0].ProducerID != 9 {
		t.Fatalf("status %+v", st)
	}

	settings[AutoAbortEnableConfig] = "false"
	markers.sent = nil
	for range 5 {
		clk.Advance(time.Hour)
		a.Check(ctx)
	}
	if len(markers.sent) != 0 || a.Aborted() != 1 || len(a.Status().Watched) != 1 {
		t.Fatalf("disabled: sent %+v, aborted %d, watched %+v", markers.sent, a.Aborted(), a.Status().Watched)
	}
}

func equalMarker(a, b Marker) bool {
	return a.ProducerID == b.ProducerID && a.ProducerEpoch == b.ProducerEpoch && a.CoordinatorEpoch == b.CoordinatorEpoch &&
		a.Commit == b.Commit && a.TransactionVersion == b.TransactionVersion && len(a.Partitions) == 1 && a.Partitions[0] == b.Partitions[0]
}
