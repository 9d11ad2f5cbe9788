package log

import (
	"errors"
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// The producer snapshot keeps, per producer, its epoch, coordinator epoch,
// open transaction, last timestamp and last batch (sequences and offsets,
// wrapping sequences included): a round trip through the file keeps them.
func TestProducerSnapshotRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := newProducerState()
		offset := int64(0)
		for i, n := 0, rapid.IntRange(0, 30).Draw(t, "batches"); i < n; i++ {
			h := record.Header{
				ProducerID:      rapid.Int64Range(0, 5).Draw(t, "pid"),
				ProducerEpoch:   int16(rapid.IntRange(0, 3).Draw(t, "epoch")),
				BaseSequence:    rapid.SampledFrom([]int32{0, 7, math.MaxInt32 - 2, math.MaxInt32}).Draw(t, "seq"),
				LastOffsetDelta: int32(rapid.IntRange(0, 9).Draw(t, "delta")),
				MaxTimestamp:    rapid.Int64Range(-1, 1<<45).Draw(t, "ts"),
				BaseOffset:      offset,
			}
			var m *record.Marker
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 1:
				h.Attributes |= record.AttrTransactional
			case 2:
				h.Attributes |= record.AttrControl | record.AttrTransactional
				m = &record.Marker{Type: record.ControlType(rapid.IntRange(0, 1).Draw(t, "commit")),
					CoordinatorEpoch: int32(rapid.IntRange(0, 9).Draw(t, "coordinatorEpoch"))}
			}
			p.update(&h, m, -1)
			offset = h.NextOffset() + rapid.Int64Range(0, 3).Draw(t, "gap")
		}
		if rapid.Bool().Draw(t, "coordinatorEpoch") {
			for _, e := range p.m {
				e.CoordinatorEpoch = 42
			}
		}
		q, err := decodeSnapshot(p.encodeSnapshot())
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if len(q.m) != len(p.m) {
			t.Fatalf("%d producers, decoded %d", len(p.m), len(q.m))
		}
		for id, e := range p.m {
			d := q.m[id]
			if d == nil || d.ProducerID != id || d.Epoch != e.Epoch || d.CoordinatorEpoch != e.CoordinatorEpoch ||
				d.CurrentTxnFirstOffset != e.CurrentTxnFirstOffset || d.LastTimestamp != e.LastTimestamp {
				t.Fatalf("producer %d: %+v, decoded %+v", id, e, d)
			}
			if len(e.batches) == 0 {
				if len(d.batches) != 0 {
					t.Fatalf("producer %d: no batches, decoded %+v", id, d.batches)
				}
				continue
			}
			last := e.batches[len(e.batches)-1]
			if len(d.batches) != 1 {
				t.Fatalf("producer %d: decoded %d batches", id, len(d.batches))
			}
			got := d.batches[0]
			if got.firstSeq != last.firstSeq || got.lastSeq != last.lastSeq || got.firstOffset != last.firstOffset || got.lastOffset != last.lastOffset {
				t.Fatalf("producer %d: last batch %+v, decoded %+v", id, last, got)
			}
			// A retry of that batch is still recognised, and the next
			// sequence is accepted.
			h := record.Header{ProducerID: id, ProducerEpoch: e.Epoch, BaseSequence: last.firstSeq,
				LastOffsetDelta: int32(last.lastOffset - last.firstOffset)}
			if dup, ok := q.duplicate(&h); !ok || dup.firstOffset != last.firstOffset {
				t.Fatalf("producer %d: retry of the last batch not a duplicate after decode", id)
			}
			h.BaseSequence, h.LastOffsetDelta = record.IncrementSequence(last.lastSeq, 1), 0
			if err := q.checkSequence(&h, nil); err != nil {
				t.Fatalf("producer %d: next sequence after decode: %v", id, err)
			}
		}
	})
}

// Retention and DeleteRecords passing a producer's last batch do not forget
// the producer (Kafka since KIP-360): a retry of that batch is a duplicate
// with its original offsets, a sequence gap is refused and the next sequence
// accepted, while the log runs and after a clean restart or a crash.
func TestProducerKeptAfterItsBatchesAreDeleted(t *testing.T) {
	for _, how := range []string{"DeleteRecords", "retention"} {
		for _, restart := range []string{"none", "clean", "crash"} {
			t.Run(how+"/"+restart, func(t *testing.T) { testProducerKeptAfterDelete(t, how, restart) })
		}
	}
}

func testProducerKeptAfterDelete(t *testing.T, how, restart string) {
	fs := durableDirFS(t)
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.RetentionMs = 3600_000
	cfg.FileDeleteDelayMs = 0
	l := openTest(t, fs, clk, cfg, false)
	const pid = 7
	ts := t0.UnixMilli()
	var last AppendResult
	for seq := int32(0); seq < 9; seq += 3 {
		last = mustAppend(t, l, producerBatch(t, pid, seq, 3, ts), 0)
	}
	for i := 0; l.NumSegments() < 4; i++ {
		if i == 1000 {
			t.Fatal("no roll")
		}
		mustAppend(t, l, testBatch(t, 3, ts, "k"), 0)
	}
	l.SetHighWatermark(l.LogEndOffset())
	switch how {
	case "DeleteRecords":
		if _, err := l.IncrementLogStartOffset(l.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
	case "retention":
		clk.Advance(2 * time.Hour)
		if res, err := l.DeleteOldSegments(clk.Now()); err != nil || res.LogStartOffset != l.LogEndOffset() {
			t.Fatalf("retention: %+v %v", res, err)
		}
	}
	if first := segmentBases(l)[0]; first <= last.LastOffset || l.LogStartOffset() <= last.LastOffset {
		t.Fatalf("the producer's batches (up to %d) are still there: first segment %d, log start %d",
			last.LastOffset, first, l.LogStartOffset())
	}
	switch restart {
	case "clean":
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openAt(t, fs, clk, cfg, true, l.LogEndOffset(), l.LogStartOffset())
	case "crash":
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		// No recovery point and no log start checkpoint: nothing above the
		// first segment's base offset is trusted.
		l = openAt(t, fs.CrashClone(), clk, cfg, false, 0, -1)
	}
	defer l.Close()
	checkProducerContinues(t, l, pid, 6, 3, last)
}

// checkProducerContinues checks that the log knows producer pid's last batch
// (sequences seq..seq+n-1, appended as last): a retry is a duplicate with the
// original offsets, a gap is ErrOutOfOrderSequence, the next sequence goes to
// the log end offset.
func checkProducerContinues(t *testing.T, l *Log, pid int64, seq int32, n int, last AppendResult) {
	t.Helper()
	ts := t0.UnixMilli()
	r, err := l.Append(producerBatch(t, pid, seq, n, ts), OriginClient, 0)
	if err != nil || !r.Duplicate || r.BaseOffset != last.BaseOffset || r.LastOffset != last.LastOffset {
		t.Fatalf("retry of %d..%d: %+v %v, want a duplicate", last.BaseOffset, last.LastOffset, r, err)
	}
	next := seq + int32(n)
	if _, err := l.Append(producerBatch(t, pid, next+1, 1, ts), OriginClient, 0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence %d after %d: %v, want %v", next+1, next-1, err, ErrOutOfOrderSequence)
	}
	leo := l.LogEndOffset()
	if r, err := l.Append(producerBatch(t, pid, next, 1, ts), OriginClient, 0); err != nil || r.Duplicate || r.BaseOffset != leo {
		t.Fatalf("sequence %d: %+v %v, want an append at %d", next, r, err, leo)
	}
}

// A crash with the recovery point behind every segment drops the snapshots
// above the first one; the reload writes them again, so when DeleteRecords
// later removes the first segments and another crash follows, the snapshot at
// the new first segment still knows the producer.
func TestProducerKeptThroughCrashThenDeleteRecords(t *testing.T) {
	fs := durableDirFS(t)
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.FileDeleteDelayMs = 0
	l := openTest(t, fs, clk, cfg, false)
	ts := t0.UnixMilli()
	last := mustAppend(t, l, producerBatch(t, 7, 0, 3, ts), 0)
	for i := 0; l.NumSegments() < 5; i++ {
		if i == 1000 {
			t.Fatal("no roll")
		}
		mustAppend(t, l, testBatch(t, 3, ts, "k"), 0)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	fs = fs.CrashClone()
	l = openAt(t, fs, clk, cfg, false, 0, -1)
	bases := segmentBases(l)
	if len(bases) < 5 {
		t.Fatalf("segments %v after the crash", bases)
	}
	for _, b := range bases[1:] {
		if _, err := fs.Stat(snapshotPath("/data/t-0", b)); err != nil {
			t.Fatalf("no snapshot at segment %d after the reload: %v", b, err)
		}
	}
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.IncrementLogStartOffset(bases[2]); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	l = openAt(t, fs.CrashClone(), clk, cfg, false, 0, -1)
	defer l.Close()
	checkProducerContinues(t, l, 7, 0, 3, last)
}

// A producer idle for producer.id.expiration.ms (since the max timestamp of
// its last batch, not its append time) is forgotten by the expiration check,
// not a millisecond earlier; its next batch starts it again at any sequence.
// A producer with an open transaction does not expire.
func TestProducerExpiration(t *testing.T) {
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.ProducerIDExpirationMs = 3600_000
	l := openTest(t, vfs.NewMem(), clk, cfg, false)
	defer l.Close()
	old := t0.Add(-30 * time.Minute).UnixMilli()
	first := mustAppend(t, l, producerBatch(t, 7, 0, 3, old), 0)
	txn, err := record.Build(&record.BatchSpec{ProducerID: 8, ProducerEpoch: 0, BaseSequence: 0, Transactional: true,
		Records: []record.BuildRecord{{Timestamp: old, Value: []byte("t")}}})
	if err != nil {
		t.Fatal(err)
	}
	open := mustAppend(t, l, txn, 0)

	clk.Advance(30*time.Minute - time.Millisecond)
	if n := l.RemoveExpiredProducers(clk.Now()); n != 0 {
		t.Fatalf("%d producers removed a millisecond before producer.id.expiration.ms", n)
	}
	if r, err := l.Append(producerBatch(t, 7, 0, 3, old), OriginClient, 0); err != nil || !r.Duplicate || r.BaseOffset != first.BaseOffset {
		t.Fatalf("retry before expiration: %+v %v, want a duplicate", r, err)
	}
	clk.Advance(time.Millisecond)
	if n := l.RemoveExpiredProducers(clk.Now()); n != 1 {
		t.Fatalf("%d producers removed at producer.id.expiration.ms, want 1", n)
	}
	if _, ok := l.Producer(7); ok {
		t.Fatal("expired producer still known")
	}
	if _, ok := l.Producer(8); !ok {
		t.Fatal("producer with an open transaction expired")
	}
	now := clk.Now().UnixMilli()
	leo := l.LogEndOffset()
	if r, err := l.Append(producerBatch(t, 7, 42, 2, now), OriginClient, 0); err != nil || r.Duplicate || r.BaseOffset != leo {
		t.Fatalf("first batch after expiration (sequence 42): %+v %v, want an append at %d", r, err, leo)
	}
	if _, err := l.Append(producerBatch(t, 7, 50, 1, now), OriginClient, 0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence 50 after 43: %v", err)
	}
	mustAppend(t, l, producerBatch(t, 7, 44, 1, now), 0)
	l.SetHighWatermark(l.LogEndOffset())
	if lso := l.LastStableOffset(); lso != open.BaseOffset {
		t.Fatalf("last stable offset %d, want the open transaction's first offset %d", lso, open.BaseOffset)
	}
	clk.Advance(48 * time.Hour)
	if n := l.RemoveExpiredProducers(clk.Now()); n != 1 {
		t.Fatalf("%d producers removed two days later, want 1 (producer 8's transaction is open)", n)
	}
}

// Loading producer state skips producers expired by now, from the snapshot
// (clean restart) and from the replayed batches (crash), and not one
// millisecond before they expire.
func TestProducerLoadSkipsExpired(t *testing.T) {
	fs := vfs.NewMem()
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.ProducerIDExpirationMs = 3 * 3600_000
	l := openTest(t, fs, clk, cfg, false)
	mustAppend(t, l, producerBatch(t, 7, 0, 1, clk.Now().UnixMilli()), 0)
	clk.Advance(2 * time.Hour)
	eight := mustAppend(t, l, producerBatch(t, 8, 0, 1, clk.Now().UnixMilli()), 0)
	// With a sealed segment the log leaves a snapshot at its end (a log of
	// one segment is replayed whole at a start anyway).
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	leo := l.LogEndOffset()
	data, err := vfs.ReadFile(fs, snapshotPath("/data/t-0", leo))
	if err != nil {
		t.Fatal(err)
	}
	if ps, err := decodeSnapshot(data); err != nil || ps.m[7] == nil || ps.m[8] == nil {
		t.Fatalf("snapshot at %d: %v, want producers 7 and 8", leo, err)
	}
	known := func(l *Log) (seven, eight bool) {
		_, seven = l.Producer(7)
		_, eight = l.Producer(8)
		l.Close()
		return seven, eight
	}
	clk.Advance(time.Hour - time.Millisecond) // producer 7 idle 3 h - 1 ms
	if s, e := known(openAt(t, fs.CrashClone(), clk, cfg, true, leo, -1)); !s || !e {
		t.Fatalf("clean load 1 ms before expiration: producer 7 known %v, 8 known %v", s, e)
	}
	if s, e := known(openAt(t, fs.CrashClone(), clk, cfg, false, 0, -1)); !s || !e {
		t.Fatalf("replay 1 ms before expiration: producer 7 known %v, 8 known %v", s, e)
	}
	clk.Advance(time.Millisecond)
	if s, e := known(openAt(t, fs.CrashClone(), clk, cfg, false, 0, -1)); s || !e {
		t.Fatalf("replay at expiration: producer 7 known %v, 8 known %v", s, e)
	}
	l = openAt(t, fs, clk, cfg, true, leo, -1)
	defer l.Close()
	if _, ok := l.Producer(7); ok {
		t.Fatal("clean load at expiration kept producer 7")
	}
	if r, err := l.Append(producerBatch(t, 7, 9, 1, clk.Now().UnixMilli()), OriginClient, 0); err != nil || r.Duplicate {
		t.Fatalf("expired producer's batch at sequence 9: %+v %v, want a new append", r, err)
	}
	if r, err := l.Append(producerBatch(t, 8, 0, 1, clk.Now().UnixMilli()), OriginClient, 0); err != nil || !r.Duplicate || r.BaseOffset != eight.BaseOffset {
		t.Fatalf("producer 8's retry: %+v %v, want a duplicate", r, err)
	}
}
