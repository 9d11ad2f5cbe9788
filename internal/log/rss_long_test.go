package log

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// TestHeapIndependentOfDataVolume (GREGOR_LONG=1) writes GREGOR_RSS_GIB GiB
// (default 4) of one-record 1 KiB batches, the densest indexing a producer
// gets (an offset and a time index entry every few batches), to the real
// filesystem in 128 MiB segments, then reopens the log cleanly and
// uncleanly and reads all of it: the live heap must stay below a bound that
// does not depend on the volume (closed segments' indexes stay on disk).
func TestHeapIndependentOfDataVolume(t *testing.T) {
	if !longTests() {
		t.Skip("GREGOR_LONG=1")
	}
	gib := int64(4)
	if s := os.Getenv("GREGOR_RSS_GIB"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			t.Fatalf("GREGOR_RSS_GIB=%q", s)
		}
		gib = n
	}
	dir := filepath.Join(t.TempDir(), "rss-0")
	cfg := DefaultConfig()
	cfg.SegmentBytes = 128 << 20
	cfg.TimestampAfterMs = -1
	open := func(clean bool) *Log {
		l, err := Open(Options{FS: vfs.OS(), Clock: clock.Real{}, Dir: dir, Config: cfg, Logger: discardLogger(),
			RecoveryPoint: 0, LogStartOffset: -1, HighWatermark: -1, CleanShutdown: clean})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := heap()
	l := open(false)
	spec := &record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Records: []record.BuildRecord{{Key: []byte("key"), Value: make([]byte, 1024)}}}
	ts := t0.UnixMilli()
	buf := make([]byte, 0, 2048)
	for l.Size() < gib<<30 {
		spec.Records[0].Timestamp = ts
		ts++
		b, err := record.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		buf = append(buf[:0], b...)
		if _, err := l.Append(buf, OriginClient, 0); err != nil {
			t.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	report := func(what string) uint64 {
		h := heap()
		grown := int64(h) - int64(base)
		// The closed segments' index files hold exactly their entries.
		var idx int64
		segs := l.segments()
		for _, s := range segs[:len(segs)-1] {
			for _, sfx := range []string{IndexSuffix, TimeIndexSuffix} {
				if fi, err := os.Stat(s.path(sfx)); err == nil {
					idx += fi.Size()
				}
			}
		}
		t.Logf("%-36s heap %6.2f MiB above start (%d GiB of log in %d segments, closed ones with %.2f MiB of index entries)",
			what, float64(grown)/(1<<20), gib, len(segs), float64(idx)/(1<<20))
		return h
	}
	var peak uint64
	peak = max(peak, report("after appending"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, clean := range []bool{true, false} {
		l = open(clean)
		what := "clean reopen"
		if !clean {
			what = "unclean reopen (rescan)"
		}
		peak = max(peak, report(what))
		var rb []byte
		for off := int64(0); off < leo; {
			var err error
			rb, err = l.Read(rb[:0], off, 1<<20, leo, true)
			if err != nil || len(rb) == 0 {
				t.Fatalf("read at %d: %v", off, err)
			}
			for data := rb; len(data) > 0; {
				batch, rest, _ := record.Split(data)
				h, _ := record.ParseHeader(batch)
				off, data = h.NextOffset(), rest
			}
		}
		peak = max(peak, report(what+", all read"))
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The active segment's index (at most segment.index.bytes each) and the
	// window cache are all the index memory there should be.
	const bound = 8 << 20
	if grown := int64(peak) - int64(base); grown > bound {
		t.Fatalf("heap grew by %d MiB for %d GiB of log, want at most %d MiB", grown>>20, gib, bound>>20)
	}
}
