package log

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Retention treats the active segment as Kafka's deletableSegments does: it
// may go when it holds data, all below the high watermark, and the rule
// (retention.ms, retention.bytes) takes it; the pass then rolls a new empty
// active segment at the log end offset first.

// producerBatch is n records of producer pid at epoch 0 from sequence seq.
func producerBatch(t testing.TB, pid int64, seq int32, n int, ts int64) []byte {
	t.Helper()
	spec := &record.BatchSpec{ProducerID: pid, ProducerEpoch: 0, BaseSequence: seq}
	for i := range n {
		spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: ts,
			Key: fmt.Appendf(nil, "p%d-%d", pid, int(seq)+i), Value: make([]byte, 100)})
	}
	b, err := record.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkOnlyEmptySegmentAt: the log is one empty segment at leo, with log
// start offset and HW there too.
func checkOnlyEmptySegmentAt(t *testing.T, l *Log, leo int64, what string) {
	t.Helper()
	s, err := l.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Segments) != 1 || s.Segments[0].BaseOffset != leo || s.Segments[0].Size != 0 ||
		s.LogStartOffset != leo || s.LogEndOffset != leo || s.HighWatermark != leo || s.LastStableOffset != leo {
		t.Fatalf("%s: want one empty segment with log start = LSO = HW = LEO = %d; have %+v", what, leo, s)
	}
}

// TestRetentionDeletesIdleLog: an idle log whose data is all older than
// retention.ms is not kept forever in its active segment. One pass rolls
// and deletes every segment; the log start offset becomes the LEO, which
// stays; appends continue at the LEO, and all of it survives a restart
// (clean or not) with the producer state and leader epochs it had.
func TestRetentionDeletesIdleLog(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprint("clean=", clean), func(t *testing.T) { testRetentionDeletesIdleLog(t, clean) })
	}
}

func testRetentionDeletesIdleLog(t *testing.T, clean bool) {
	fs := vfs.NewMem()
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.RetentionMs = 3600_000
	cfg.FileDeleteDelayMs = 1000
	l := openTest(t, fs, clk, cfg, false)
	const pid = 7
	seq := int32(0)
	for i := range 30 {
		mustAppend(t, l, producerBatch(t, pid, seq, 3, clk.Now().UnixMilli()), int32(i/10))
		seq += 3
		clk.Advance(time.Second)
	}
	l.SetHighWatermark(l.LogEndOffset())
	leo, segments := l.LogEndOffset(), l.NumSegments()
	if segments < 3 {
		t.Fatalf("want several segments, have %d", segments)
	}
	// Not yet: the newest record is 30 s short of retention.ms.
	clk.Advance(time.Hour - 30*time.Second)
	if res, err := l.DeleteOldSegments(clk.Now()); err != nil || res.Segments >= segments {
		t.Fatalf("before the newest record expired: %+v %v", res, err)
	}
	clk.Advance(time.Minute)
	res, err := l.DeleteOldSegments(clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res.Segments == 0 || res.Reason != "retention.ms" || res.LogStartOffset != leo {
		t.Fatalf("retention pass: %+v, want every segment gone and log start %d", res, leo)
	}
	checkOnlyEmptySegmentAt(t, l, leo, "after the pass")
	if got, err := l.Read(nil, leo-1, 1<<20, leo, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the log start offset: %d bytes, %v", len(got), err)
	}
	if got, err := l.Read(nil, leo, 1<<20, leo, true); err != nil || len(got) != 0 {
		t.Fatalf("read at the LEO: %d bytes, %v", len(got), err)
	}
	if e, end := l.EndOffsetForEpoch(2); e != 2 || end != leo || l.LatestEpoch() != 2 {
		t.Fatalf("epoch 2 ends at %d (epoch %d), latest %d; want %d", end, e, l.LatestEpoch(), leo)
	}
	// A second pass finds only the empty active segment: nothing to do.
	if res, err := l.DeleteOldSegments(clk.Now().Add(48 * time.Hour)); err != nil || res.Segments != 0 {
		t.Fatalf("pass over the empty log: %+v %v", res, err)
	}
	// The old segments' files go after file.delete.delay.ms; the new one and
	// its producer snapshot stay.
	clk.Advance(2 * time.Second)
	names, err := fs.List("/data/t-0")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if base, ok := ParseFileName(n); ok && base != leo {
			t.Errorf("file %s left after retention deleted everything below %d", n, leo)
		}
	}

	// A restart (clean, or a crash image without a log start checkpoint)
	// finds the same log: one empty segment at the LEO.
	reopen := func(l *Log) *Log {
		t.Helper()
		if clean {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			return openAt(t, fs, clk, cfg, true, l.RecoveryPoint(), l.LogStartOffset())
		}
		if err := l.SyncTo(l.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
		fs = fs.CrashClone()
		return openAt(t, fs, clk, cfg, false, 0, -1)
	}
	l = reopen(l)
	checkOnlyEmptySegmentAt(t, l, leo, "reopened after the pass")
	for _, e := range l.Epochs() {
		if e.StartOffset > leo {
			t.Fatalf("reopened: epoch entry %+v above the LEO %d", e, leo)
		}
	}
	// Becoming leader again assigns the current epoch at the LEO, so
	// OffsetForLeaderEpoch answers for it before any append (Kafka's
	// maybeAssignEpochStartOffset).
	if err := l.AssignLeaderEpoch(2); err != nil {
		t.Fatal(err)
	}
	if e, end := l.EndOffsetForEpoch(2); e != 2 || end != leo || l.LatestEpoch() != 2 {
		t.Fatalf("reopened, epoch 2 assigned: ends at %d (epoch %d), latest %d; want %d", end, e, l.LatestEpoch(), leo)
	}
	if err := l.AssignLeaderEpoch(1); err != nil || l.LatestEpoch() != 2 {
		t.Fatalf("an older epoch changed the cache: latest %d, %v", l.LatestEpoch(), err)
	}

	// The producer continues; its next batch lands at the LEO, in a new
	// leader epoch.
	next := producerBatch(t, pid, seq, 2, clk.Now().UnixMilli())
	r := mustAppend(t, l, next, 3)
	if r.BaseOffset != leo || r.LastOffset != leo+1 || r.LogStartOffset != leo {
		t.Fatalf("append after retention: %+v, want offsets %d-%d", r, leo, leo+1)
	}
	seq += 2
	l.SetHighWatermark(l.LogEndOffset())

	l = reopen(l)
	defer l.Close()
	if l.LogStartOffset() != leo || l.LogEndOffset() != leo+2 || l.NumSegments() != 1 {
		t.Fatalf("reopened: log start %d, LEO %d, %d segments; want %d, %d, 1",
			l.LogStartOffset(), l.LogEndOffset(), l.NumSegments(), leo, leo+2)
	}
	if e, end := l.EndOffsetForEpoch(2); e != 2 || end != leo {
		t.Fatalf("reopened: epoch 2 ends at %d (epoch %d), want %d", end, e, leo)
	}
	if e, end := l.EndOffsetForEpoch(3); e != 3 || end != leo+2 || l.LatestEpoch() != 3 {
		t.Fatalf("reopened: epoch 3 ends at %d (epoch %d), latest %d; want %d", end, e, l.LatestEpoch(), leo+2)
	}
	// The producer's last batch is known: a retry is a duplicate with its
	// offsets, the next sequence follows it, a gap is refused.
	if r, err := l.Append(next, OriginClient, 3); err != nil || !r.Duplicate || r.BaseOffset != leo {
		t.Fatalf("retry after restart: %+v %v, want a duplicate at %d", r, err, leo)
	}
	if r := mustAppend(t, l, producerBatch(t, pid, seq, 1, clk.Now().UnixMilli()), 3); r.BaseOffset != leo+2 {
		t.Fatalf("append after restart at %d, want %d", r.BaseOffset, leo+2)
	}
	if _, err := l.Append(producerBatch(t, pid, seq+5, 1, clk.Now().UnixMilli()), OriginClient, 3); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence gap after restart: %v", err)
	}
	got := readAll(t, l, leo)
	if len(got) != 2 || got[0].BaseOffset != leo || got[1].BaseOffset != leo+2 {
		t.Fatalf("batches after restart: %+v", got)
	}
}

// TestRetentionKeepsActiveSegmentAboveHW: an expired active segment holding
// offsets at or above the high watermark stays (the log start offset never
// passes the HW); the closed segments go. Once the HW reaches the LEO, it
// goes too.
func TestRetentionKeepsActiveSegmentAboveHW(t *testing.T) {
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.RetentionMs = 3600_000
	cfg.FileDeleteDelayMs = 0
	l := openTest(t, vfs.NewMem(), clk, cfg, false)
	defer l.Close()
	for range 30 {
		mustAppend(t, l, testBatch(t, 3, clk.Now().UnixMilli(), "k"), 0)
	}
	n := l.NumSegments()
	act := l.segments()[n-1].baseOffset
	leo := l.LogEndOffset()
	l.SetHighWatermark(leo - 1)
	clk.Advance(2 * time.Hour)
	res, err := l.DeleteOldSegments(clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res.Segments != n-1 || l.NumSegments() != 1 || l.LogStartOffset() != act || l.segments()[0].size.Load() == 0 {
		t.Fatalf("HW %d below LEO %d: deleted %+v, %d segments left, log start %d; want the active segment at %d kept",
			l.HighWatermark(), leo, res, l.NumSegments(), l.LogStartOffset(), act)
	}
	plan, err := l.RetentionPlan(clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if plan.Now.Segments != 0 || plan.Next != nil || !strings.Contains(plan.Why, "the active segment") ||
		!strings.Contains(plan.Why, fmt.Sprintf("is not wholly below the high watermark %d", leo-1)) {
		t.Fatalf("plan while the HW holds the active segment: %+v", plan)
	}
	l.SetHighWatermark(leo)
	if res, err := l.DeleteOldSegments(clk.Now()); err != nil || res.Segments != 1 || res.LogStartOffset != leo {
		t.Fatalf("once the HW reached the LEO: %+v %v", res, err)
	}
	checkOnlyEmptySegmentAt(t, l, leo, "after the HW reached the LEO")
}

// TestRetentionBytesZero: retention.bytes=0 deletes everything below the
// high watermark; with the HW at the LEO that is every segment, the active
// one rolled first.
func TestRetentionBytesZero(t *testing.T) {
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.RetentionMs, cfg.RetentionBytes = -1, 0
	cfg.FileDeleteDelayMs = 0
	l := openTest(t, vfs.NewMem(), clk, cfg, false)
	defer l.Close()
	for range 30 {
		mustAppend(t, l, testBatch(t, 3, clk.Now().UnixMilli(), "k"), 0)
	}
	// HW inside the second segment: only the first goes.
	segs := l.segments()
	l.SetHighWatermark(segs[1].baseOffset + 1)
	if res, err := l.DeleteOldSegments(clk.Now()); err != nil || res.Segments != 1 || res.Reason != "retention.bytes" {
		t.Fatalf("HW in the second segment: %+v %v", res, err)
	}
	leo := l.LogEndOffset()
	l.SetHighWatermark(leo)
	n := l.NumSegments()
	res, err := l.DeleteOldSegments(clk.Now())
	if err != nil || res.Segments != n || res.Reason != "retention.bytes" || res.LogStartOffset != leo {
		t.Fatalf("HW at the LEO: %+v %v, want all %d segments", res, err, n)
	}
	checkOnlyEmptySegmentAt(t, l, leo, "retention.bytes=0")
	if r := mustAppend(t, l, testBatch(t, 1, clk.Now().UnixMilli(), "k"), 0); r.BaseOffset != leo {
		t.Fatalf("append after retention at %d, want %d", r.BaseOffset, leo)
	}
}

// TestRetentionNeverDeletesEmptyActiveSegment: an active segment with no
// bytes is never counted as deleted (Kafka's isLastSegmentAndEmpty): the
// closed segments before it go without a roll, and a pass over an empty log
// does nothing, whatever retention.ms and retention.bytes say.
func TestRetentionNeverDeletesEmptyActiveSegment(t *testing.T) {
	fs := vfs.NewMem()
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.RetentionMs, cfg.RetentionBytes = 0, 0
	cfg.FileDeleteDelayMs = 0
	l := openTest(t, fs, clk, cfg, false)
	defer l.Close()
	if res, err := l.DeleteOldSegments(clk.Now().Add(time.Hour)); err != nil || res.Segments != 0 {
		t.Fatalf("pass over a new log: %+v %v", res, err)
	}
	for range 30 {
		mustAppend(t, l, testBatch(t, 3, clk.Now().UnixMilli(), "k"), 0)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	leo := l.LogEndOffset()
	l.SetHighWatermark(leo)
	n := l.NumSegments()
	empty := l.active()
	if empty.baseOffset != leo || empty.size.Load() != 0 {
		t.Fatalf("after Roll the active segment starts at %d with %d bytes", empty.baseOffset, empty.size.Load())
	}
	clk.Advance(time.Hour)
	res, err := l.DeleteOldSegments(clk.Now())
	if err != nil || res.Segments != n-1 || res.LogStartOffset != leo {
		t.Fatalf("pass: %+v %v, want the %d closed segments", res, err, n-1)
	}
	if l.NumSegments() != 1 || l.active() != empty {
		t.Fatal("the empty active segment was replaced")
	}
	checkOnlyEmptySegmentAt(t, l, leo, "after the pass")
	for _, at := range []time.Duration{0, time.Hour, 1000 * time.Hour} {
		if res, err := l.DeleteOldSegments(clk.Now().Add(at)); err != nil || res.Segments != 0 || l.active() != empty {
			t.Fatalf("pass %v later over the empty log: %+v %v", at, res, err)
		}
	}
}

// TestLargestTimestampZero: a segment whose largest record timestamp is 0
// measures retention.ms from 0, not from its creation time (Kafka's
// largestTimestamp takes maxTimestampSoFar >= 0).
func TestLargestTimestampZero(t *testing.T) {
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.RetentionMs = 3600_000
	l := openTest(t, vfs.NewMem(), clk, cfg, false)
	defer l.Close()
	spec := &record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Records: []record.BuildRecord{{Timestamp: 0, Value: []byte("epoch zero")}}}
	b, err := record.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, b, 0)
	l.SetHighWatermark(l.LogEndOffset())
	s, err := l.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Segments[0].LargestTimestamp; got != 0 {
		t.Fatalf("largest timestamp %d, want 0", got)
	}
	if res, err := l.DeleteOldSegments(clk.Now()); err != nil || res.Segments != 1 {
		t.Fatalf("a record at timestamp 0 is long past retention.ms: %+v %v", res, err)
	}
}

// TestCrashDuringRetentionRoll crashes after every filesystem operation of
// a retention pass that rolls the active segment and deletes every
// segment: recovery finds either the old log (every batch, possibly with an
// empty segment at the LEO) or the new one (log start offset = LEO, no
// batches), the same LEO, log start ≤ HW, and takes appends at the LEO.
func TestCrashDuringRetentionRoll(t *testing.T) {
	cfg := smallConfig()
	cfg.RetentionMs = 3600_000
	cfg.FileDeleteDelayMs = 0
	sawOld, sawNew := false, false
	for k := int64(0); ; k++ {
		if k > 500 {
			t.Fatal("the pass takes more than 500 filesystem operations")
		}
		mem := vfs.NewMem()
		var armed atomic.Bool
		var n atomic.Int64
		fs := vfs.NewInjecting(mem, vfs.InjectorFunc(func(vfs.Op, string) error {
			if armed.Load() && n.Add(1) > k {
				return vfs.ErrInjected
			}
			return nil
		}))
		clk := clock.NewFake(t0)
		l := openAt(t, fs, clk, cfg, false, 0, -1)
		var want [][]byte
		for i := range 20 {
			b := testBatch(t, 3, clk.Now().UnixMilli(), "k")
			res := mustAppend(t, l, b, int32(i/7))
			stored := bytes.Clone(b)
			record.SetBaseOffset(stored, res.BaseOffset)
			record.SetLeaderEpoch(stored, int32(i/7))
			want = append(want, stored)
		}
		leo := l.LogEndOffset()
		if err := l.SyncTo(leo); err != nil {
			t.Fatal(err)
		}
		l.SetHighWatermark(leo)
		clk.Advance(2 * time.Hour)
		armed.Store(true)
		res, err := l.DeleteOldSegments(clk.Now())
		done := n.Load() <= k
		if done && (err != nil || res.LogStartOffset != leo) {
			t.Fatalf("pass without a fault: %+v %v", res, err)
		}
		if !done && err == nil {
			// Only a failure the pass does not see (none expected) lets it
			// end without an error.
			t.Fatalf("k=%d: fault injected, pass returned %+v", k, res)
		}
		for _, torn := range []bool{false, true} {
			img := mem.CrashClone()
			if torn {
				img = mem.CrashCloneTorn(rand.New(rand.NewPCG(uint64(k), 1)))
			}
			what := fmt.Sprintf("crash at operation %d of the pass (torn %v)", k, torn)
			r := openAt(t, img, clock.NewFake(clk.Now()), cfg, false, 0, -1)
			got := readAllBatches(prefixed{t, what + ": "}, r, r.LogStartOffset())
			switch {
			case r.LogEndOffset() != leo:
				t.Fatalf("%s: LEO %d, want %d", what, r.LogEndOffset(), leo)
			case r.LogStartOffset() > r.HighWatermark():
				t.Fatalf("%s: log start %d above the HW %d", what, r.LogStartOffset(), r.HighWatermark())
			case r.LogStartOffset() == 0 && len(got) == len(want):
				for i := range want {
					if !bytes.Equal(got[i], want[i]) {
						t.Fatalf("%s: batch %d differs", what, i)
					}
				}
				// The old batches keep their epochs: the checkpoint is cut
				// only once their segments are durably gone.
				for epoch, end := range []int64{21, 42, leo} {
					if e, o := r.EndOffsetForEpoch(int32(epoch)); e != int32(epoch) || o != end {
						t.Fatalf("%s: epoch %d ends at %d (epoch %d), want %d; epochs %v", what, epoch, o, e, end, r.Epochs())
					}
				}
				sawOld = true
			case r.LogStartOffset() == leo && len(got) == 0 && r.NumSegments() == 1:
				// No batch is left to carry an epoch: the cache may keep
				// the last one at the LEO or, as Kafka's load does, drop it.
				if ep := r.Epochs(); len(ep) > 1 || len(ep) == 1 && ep[0] != (EpochEntry{2, leo}) {
					t.Fatalf("%s: epochs %v over an empty log at %d", what, ep, leo)
				}
				sawNew = true
			default:
				t.Fatalf("%s: neither the old nor the new log: log start %d, %d batches, %d segments\n%s",
					what, r.LogStartOffset(), len(got), r.NumSegments(), img)
			}
			if a, err := r.Append(testBatch(t, 1, clk.Now().UnixMilli(), "after"), OriginClient, 3); err != nil || a.BaseOffset != leo {
				t.Fatalf("%s: append after recovery: %+v %v", what, a, err)
			}
			if e, end := r.EndOffsetForEpoch(3); e != 3 || end != leo+1 {
				t.Fatalf("%s: epoch 3 ends at %d (epoch %d), want %d", what, end, e, leo+1)
			}
			r.Close()
		}
		if done {
			break
		}
	}
	if !sawOld || !sawNew {
		t.Fatalf("recovered the old log: %v, the new one: %v; want both seen", sawOld, sawNew)
	}
}
