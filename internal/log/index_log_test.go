package log

import (
	"testing"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Lookups through closed segments' indexes (on file) at the log's level:
// Read and FindOffsetByTimestamp at every offset and timestamp, after rolls,
// clean and unclean reopens, a crash, and truncation into a closed segment.

// indexedConfig gives segments of about 1,500 one-record batches, each batch
// indexed (several windows per index file).
func indexedConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 256 << 10
	c.IndexIntervalBytes = 0
	c.SegmentIndexBytes = 1 << 20
	c.TimestampAfterMs = -1
	return c
}

// appendedBatch is what a test appended: one record at offset with timestamp ts.
type appendedBatch struct{ offset, ts int64 }

func appendIndexed(t *testing.T, l *Log, n int, ts0 int64) []appendedBatch {
	t.Helper()
	out := make([]appendedBatch, 0, n)
	for i := 0; i < n; i++ {
		ts := ts0 + int64(i)
		res := mustAppend(t, l, testBatch(t, 1, ts, "k"), 0)
		out = append(out, appendedBatch{res.BaseOffset, ts})
	}
	return out
}

// checkIndexedLog checks that closed segments keep their indexes on file,
// trimmed, and that every offset and timestamp of want is found, in a
// scattered order (so lookups do not just walk forward).
func checkIndexedLog(t *testing.T, fs vfs.FS, l *Log, want []appendedBatch, what string) {
	t.Helper()
	segs := l.segments()
	if len(segs) < 2 {
		t.Fatalf("%s: only %d segments", what, len(segs))
	}
	for i, s := range segs {
		if i == len(segs)-1 {
			if !s.index.inMemory || !s.timeIndex.inMemory {
				t.Fatalf("%s: active segment %d indexes not in memory", what, s.baseOffset)
			}
			continue
		}
		assertOnFile(t, &s.index.index, fs, s.path(IndexSuffix), s.index.entries())
		assertOnFile(t, &s.timeIndex.index, fs, s.path(TimeIndexSuffix), s.timeIndex.entries())
		if s.index.entries() < 600 {
			t.Fatalf("%s: segment %d has only %d index entries", what, s.baseOffset, s.index.entries())
		}
	}
	if got := l.LogEndOffset(); got != want[len(want)-1].offset+1 {
		t.Fatalf("%s: log end offset %d, want %d", what, got, want[len(want)-1].offset+1)
	}
	leo := l.LogEndOffset()
	var buf []byte
	n := len(want)
	for j := 0; j < n; j++ {
		b := want[(j*7919)%n]
		var err error
		buf, err = l.Read(buf[:0], b.offset, 1, leo, true)
		if err != nil {
			t.Fatalf("%s: read at %d: %v", what, b.offset, err)
		}
		h, err := record.ParseHeader(buf)
		if err != nil || h.BaseOffset != b.offset || h.MaxTimestamp != b.ts {
			t.Fatalf("%s: read at %d gave batch %d (ts %d, %v), want ts %d", what, b.offset, h.BaseOffset, h.MaxTimestamp, err, b.ts)
		}
		if j%5 != 0 {
			continue
		}
		res, ok, err := l.FindOffsetByTimestamp(b.ts)
		if err != nil || !ok || res.Offset != b.offset || res.Timestamp != b.ts {
			t.Fatalf("%s: offset for timestamp %d: %+v %v %v, want %d", what, b.ts, res, ok, err, b.offset)
		}
	}
}

func TestClosedSegmentLookups(t *testing.T) {
	fs := durableDirFS(t)
	clk := clock.NewFake(t0)
	cfg := indexedConfig()
	l := openAt(t, fs, clk, cfg, false, 0, -1)
	want := appendIndexed(t, l, 6000, t0.UnixMilli())
	checkIndexedLog(t, fs, l, want, "after rolls")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = openAt(t, fs, clk, cfg, true, l.LogEndOffset(), -1)
	checkIndexedLog(t, fs, l, want, "clean reopen")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openAt(t, fs, clk, cfg, false, 0, -1)
	checkIndexedLog(t, fs, l, want, "unclean reopen, everything rescanned")
	mid := l.segments()[2].baseOffset
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openAt(t, fs, clk, cfg, false, mid, -1)
	checkIndexedLog(t, fs, l, want, "unclean reopen from a recovery point")

	// A crash: what was synced survives, indexes of closed segments as well.
	more := appendIndexed(t, l, 2000, want[len(want)-1].ts+1)
	want = append(want, more...)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	img := fs.CrashClone()
	l2 := openAt(t, img, clk, cfg, false, l.RecoveryPoint(), -1)
	checkIndexedLog(t, img, l2, want, "after a crash")
	l2.Close()

	// Truncation into a closed segment makes it the active one, its index
	// back in memory with the entries below the cut.
	cut := want[len(want)/3]
	seg := segmentFor(l.segments(), cut.offset)
	if seg == len(l.segments())-1 {
		t.Fatalf("offset %d is in the active segment", cut.offset)
	}
	if err := l.TruncateTo(cut.offset); err != nil {
		t.Fatal(err)
	}
	want = want[:len(want)/3]
	act := l.active()
	if act.baseOffset != l.segments()[seg].baseOffset || !act.index.inMemory || act.index.lastOffset() >= cut.offset {
		t.Fatalf("after truncation: active segment %d (in memory %v, last indexed %d), cut at %d",
			act.baseOffset, act.index.inMemory, act.index.lastOffset(), cut.offset)
	}
	checkIndexedLog(t, fs, l, want, "truncated")
	more = appendIndexed(t, l, 4000, cut.ts+1000)
	want = append(want, more...)
	checkIndexedLog(t, fs, l, want, "truncated, then appended and rolled")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openAt(t, fs, clk, cfg, true, l.LogEndOffset(), -1)
	checkIndexedLog(t, fs, l, want, "truncated, clean reopen")
	l.Close()
	l = openAt(t, fs, clk, cfg, false, 0, -1)
	checkIndexedLog(t, fs, l, want, "truncated, unclean reopen")
	l.Close()
}

// TestReadDeletedSegment: a reader holding a segment that retention just
// removed (its index files already closed, its .log kept open for
// file.delete.delay.ms) still finds every batch.
func TestReadDeletedSegment(t *testing.T) {
	fs := durableDirFS(t)
	clk := clock.NewFake(t0)
	cfg := indexedConfig()
	cfg.FileDeleteDelayMs = 60_000
	l := openAt(t, fs, clk, cfg, false, 0, -1)
	want := appendIndexed(t, l, 4000, t0.UnixMilli())
	l.SetHighWatermark(l.LogEndOffset())
	old := l.segments()[0]
	next := l.segments()[1].baseOffset
	if _, err := l.IncrementLogStartOffset(next); err != nil {
		t.Fatal(err)
	}
	if !old.deleted.Load() {
		t.Fatal("segment 0 not deleted")
	}
	for _, b := range want {
		if b.offset >= next {
			break
		}
		bp, ok, err := old.findBatch(b.offset, old.size.Load())
		if err != nil || !ok || bp.hdr.BaseOffset != b.offset {
			t.Fatalf("find %d in the deleted segment: %+v %v %v", b.offset, bp.hdr, ok, err)
		}
	}
	l.Close()
}
