package cleaner

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// producerLog writes idempotent and transactional batches and markers.
type producerLog struct {
	t   *testing.T
	l   *log.Log
	clk *clock.Fake
	seq map[int64]int32
}

func (p *producerLog) batch(pid int64, txn bool, recs ...kv) log.AppendResult {
	p.t.Helper()
	spec := &record.BatchSpec{ProducerID: pid, ProducerEpoch: 0, BaseSequence: p.seq[pid], Transactional: txn}
	if pid < 0 {
		spec.ProducerEpoch, spec.BaseSequence = -1, -1
	}
	for i, r := range recs {
		spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: p.clk.Now().UnixMilli(),
			Key: []byte(r.key), Value: r.val()})
	}
	b, err := record.Build(spec)
	if err != nil {
		p.t.Fatal(err)
	}
	var res log.AppendResult
	if txn {
		g := p.l.StartTransactionVerification(pid, spec.BaseSequence, 0, false)
		res, err = p.l.AppendVerified(b, 0, g)
	} else {
		res, err = p.l.Append(b, log.OriginClient, 0)
	}
	if err != nil {
		p.t.Fatal(err)
	}
	if pid >= 0 {
		p.seq[pid] += int32(len(recs))
	}
	p.l.SetHighWatermark(p.l.LogEndOffset())
	return res
}

func (p *producerLog) marker(pid int64, typ controlType) int64 {
	p.t.Helper()
	res, err := p.l.AppendMarker(log.MarkerSpec{ProducerID: pid, ProducerEpoch: 0, Commit: typ == controlCommit,
		CoordinatorEpoch: 7, TransactionVersion: log.TV1}, 0)
	if err != nil {
		p.t.Fatal(err)
	}
	p.l.SetHighWatermark(p.l.LogEndOffset())
	return res.BaseOffset
}

// headers returns every batch header of l, empty ones included.
func headers(t testing.TB, l *log.Log) []record.Header {
	t.Helper()
	var out []record.Header
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		buf, err := l.Read(nil, off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		if len(buf) == 0 {
			break
		}
		for rest := buf; len(rest) > 0; {
			b, tail, _ := record.Split(rest)
			rest = tail
			h, _ := record.ParseHeader(b)
			if h.LastOffset() >= off {
				out = append(out, h)
				off = h.NextOffset()
			}
		}
	}
	return out
}

func markerAt(hs []record.Header, off int64) (record.Header, bool) {
	for _, h := range hs {
		if h.BaseOffset == off && h.Control() {
			return h, true
		}
	}
	return record.Header{}, false
}

func TestTransactionsAreCleanedAsKafkaDoes(t *testing.T) {
	clk := clock.NewFake(t0)
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 1000
	l := openLog(t, vfs.NewMem(), clk, "/data/t-0", cfg, false)
	defer l.Close()
	p := &producerLog{t: t, l: l, clk: clk, seq: map[int64]int32{}}
	p.batch(1, true, put("k1", "a1"), put("k2", "a2")) // aborted below
	p.batch(-1, false, put("k1", "x1"), put("k3", "x3"))
	abort := p.marker(1, controlAbort)
	p.batch(2, true, put("k1", "b1")) // committed
	commitB := p.marker(2, controlCommit)
	p.batch(1, true, put("k2", "c2")) // committed
	commitC := p.marker(1, controlCommit)
	l.Roll()
	logs := newFakeLogs()
	logs.add("t", 0, l)
	tc := newTestCleaner(t, logs, clk, 1<<20)
	tc.cleanUntilIdle(t)
	type rec struct{ K, V string }
	values := func() []rec {
		var out []rec
		for _, r := range readAll(t, l) {
			out = append(out, rec{r.Key, r.Value})
		}
		return out
	}
	if diff := cmp.Diff([]rec{{"k3", "x3"}, {"k1", "b1"}, {"k2", "c2"}}, values()); diff != "" {
		t.Fatalf("after cleaning (-want +got):\n%s", diff)
	}
	hs := headers(t, l)
	for _, off := range []int64{abort, commitB, commitC} {
		if _, ok := markerAt(hs, off); !ok {
			t.Fatalf("marker at %d removed while its transaction's batches were there", off)
		}
	}
	// The kept ABORT marker keeps its aborted-transaction index entry in
	// the cleaned segment (consumers that still meet it filter by it).
	wantAborted := []log.AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: abort, LastStableOffset: abort + 1}}
	checkAborted := func(want []log.AbortedTxn) {
		t.Helper()
		got, err := l.AbortedTransactions(0, l.LogEndOffset())
		if err != nil || !cmp.Equal(got, want) {
			t.Fatalf("aborted transactions %+v %v, want %+v", got, err, want)
		}
	}
	checkAborted(wantAborted)
	// Next round (new writes): the aborted transaction's batches are gone,
	// so its marker gets a delete horizon; the committed ones keep data.
	p.batch(-1, false, put("k3", "x3b"))
	l.Roll()
	tc.cleanUntilIdle(t)
	hs = headers(t, l)
	m, ok := markerAt(hs, abort)
	if !ok || !m.HasDeleteHorizon() || m.BaseTimestamp != clk.Now().UnixMilli()+1000 {
		t.Fatalf("abort marker: %+v (present %v)", m, ok)
	}
	if m, _ := markerAt(hs, commitB); m.HasDeleteHorizon() {
		t.Fatal("commit marker with data left got a horizon")
	}
	checkAborted(wantAborted)
	// After the horizon the abort marker goes. Superseding b1 empties its
	// batch, but producer 2's last batch stays (its sequence), and with it
	// the commit marker of its transaction, as in Kafka while the producer
	// is active.
	clk.Advance(2 * time.Second)
	p.batch(-1, false, put("k1", "z1"))
	l.Roll()
	tc.cleanUntilIdle(t)
	hs = headers(t, l)
	if _, ok := markerAt(hs, abort); ok {
		t.Fatal("abort marker still there after its horizon")
	}
	checkAborted(nil)
	if _, ok := markerAt(hs, commitB); !ok {
		t.Fatal("commit marker went while its transaction's batch is kept")
	}
	for _, h := range hs {
		if h.ProducerID == 2 && !h.Control() && h.NumRecords != 0 {
			t.Fatalf("producer 2's superseded batch kept records: %+v", h)
		}
	}
	if diff := cmp.Diff([]rec{{"k2", "c2"}, {"k3", "x3b"}, {"k1", "z1"}}, values()); diff != "" {
		t.Fatalf("at the end (-want +got):\n%s", diff)
	}
}

func TestOpenTransactionHoldsTheCleanerBack(t *testing.T) {
	clk := clock.NewFake(t0)
	l := openLog(t, vfs.NewMem(), clk, "/data/t-0", compactConfig(), false)
	defer l.Close()
	p := &producerLog{t: t, l: l, clk: clk, seq: map[int64]int32{}}
	for i := 0; i < 30; i++ {
		p.batch(-1, false, put("k", fmt.Sprint(i)+"-padding-padding-padding-padding-padding-padding-padding"))
	}
	first := p.batch(5, true, put("t", "open")).BaseOffset
	for i := 0; i < 60; i++ {
		p.batch(-1, false, put("k", fmt.Sprint(i)+"-padding-padding-padding-padding-padding-padding-padding"))
	}
	l.Roll()
	logs := newFakeLogs()
	logs.add("t", 0, l)
	tc := newTestCleaner(t, logs, clk, 1<<20)
	tc.cleanUntilIdle(t)
	st := tc.status(t, "t", 0)
	if st.UncleanableReason != ReasonOpenTransaction || st.LastStableOffset != first || st.CleanerPoint > first {
		t.Fatalf("status: %+v", st)
	}
	for _, r := range readAll(t, l) {
		if r.Offset >= first {
			break
		}
		if r.Offset < st.CleanerPoint-1 {
			t.Fatalf("record %d below the cleaner point %d kept", r.Offset, st.CleanerPoint)
		}
	}
}

// A producer's last batch stays (emptied) so its sequence survives cleaning
// and a restart.
func TestProducerLastBatchIsKeptEmpty(t *testing.T) {
	fs := vfs.NewMem()
	clk := clock.NewFake(t0)
	l := openLog(t, fs, clk, "/data/t-0", compactConfig(), false)
	p := &producerLog{t: t, l: l, clk: clk, seq: map[int64]int32{}}
	p.batch(7, false, put("a", "1"), put("b", "1"))
	last := p.batch(7, false, put("a", "2"), put("b", "2"), put("c", "2"))
	for i := 0; i < 50; i++ {
		p.batch(-1, false, put([]string{"a", "b", "c"}[i%3], fmt.Sprint("later-", i, "-padding-padding-padding")))
	}
	l.Roll()
	logs := newFakeLogs()
	logs.add("t", 0, l)
	tc := newTestCleaner(t, logs, clk, 1<<20)
	tc.cleanUntilIdle(t)
	var kept *record.Header
	for _, h := range headers(t, l) {
		if h.ProducerID == 7 {
			if kept != nil || h.BaseOffset != last.BaseOffset {
				t.Fatalf("producer 7 batches after cleaning: %+v", h)
			}
			h := h
			kept = &h
		}
	}
	if kept == nil || kept.NumRecords != 0 || kept.LastOffset() != last.LastOffset || kept.BaseSequence != 2 {
		t.Fatalf("producer 7's last batch: %+v", kept)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Producer state rebuilt from the log alone keeps the sequence.
	img := fs.CrashClone()
	names, _ := img.List("/data/t-0")
	for _, n := range names {
		if len(n) > 9 && n[len(n)-9:] == ".snapshot" {
			img.Remove("/data/t-0/" + n)
		}
	}
	l2 := openLog(t, img, clk, "/data/t-0", compactConfig(), false)
	defer l2.Close()
	if _, ok := l2.Producer(7); !ok {
		t.Fatal("producer 7 forgotten")
	}
	// Its last sequence is 4: 10 is out of order, 5 follows.
	b, _ := record.Build(&record.BatchSpec{ProducerID: 7, BaseSequence: 10,
		Records: []record.BuildRecord{{Timestamp: clk.Now().UnixMilli(), Key: []byte("a"), Value: []byte("x")}}})
	if _, err := l2.Append(b, log.OriginClient, 0); !errors.Is(err, log.ErrOutOfOrderSequence) {
		t.Fatalf("sequence 10 after 4: %v", err)
	}
	p2 := &producerLog{t: t, l: l2, clk: clk, seq: map[int64]int32{7: 5}}
	p2.batch(7, false, put("a", "3"))
}
