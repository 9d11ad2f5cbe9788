package log

import (
	"path/filepath"
	"testing"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/vfs"
)

func preallocConfig() Config {
	c := smallConfig()
	c.SegmentBytes = 64 << 10
	c.Preallocate = true
	return c
}

func fileLen(t *testing.T, fs vfs.FS, path string) int64 {
	t.Helper()
	fi, err := fs.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// preallocate=true: a new segment's file is created at segment.bytes (a
// sparse file, on the real filesystem), trimmed to its data when it rolls
// and when the log closes, and a clean reopen reads exactly what was
// written.
func TestPreallocatedSegmentsTrimmedAtRollAndClose(t *testing.T) {
	fs := vfs.Default
	dir := filepath.Join(t.TempDir(), "t-0")
	clk := clock.NewFake(t0)
	open := func(clean bool) *Log {
		t.Helper()
		l, err := Open(Options{FS: fs, Clock: clk, Dir: dir, Config: preallocConfig(), Logger: discardLogger(),
			RecoveryPoint: 0, LogStartOffset: -1, HighWatermark: -1, CleanShutdown: clean})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := open(false)
	first := filepath.Join(dir, FileName(0)+LogSuffix)
	if n := fileLen(t, fs, first); n != 64<<10 {
		t.Fatalf("new segment file is %d bytes, want segment.bytes", n)
	}
	for i := 0; i < 5; i++ {
		if _, err := l.Append(testBatch(t, 10, t0.UnixMilli(), "k"), OriginClient, 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := fileLen(t, fs, first); n != 64<<10 || l.Size() >= 64<<10 {
		t.Fatalf("active file %d bytes, log size %d", n, l.Size())
	}
	before := readAll(t, l, 0)
	for l.NumSegments() < 2 {
		if _, err := l.Append(testBatch(t, 10, t0.UnixMilli(), "k"), OriginClient, 0); err != nil {
			t.Fatal(err)
		}
	}
	rolled := l.segments()[0]
	if n := fileLen(t, fs, first); n != rolled.size.Load() {
		t.Fatalf("rolled segment file %d bytes, its data %d", n, rolled.size.Load())
	}
	act := l.active()
	second := act.path(LogSuffix)
	if n := fileLen(t, fs, second); n != 64<<10 {
		t.Fatalf("the new active segment file is %d bytes", n)
	}
	written := act.size.Load()
	leo := l.LogEndOffset()
	all := readAll(t, l, 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := fileLen(t, fs, second); n != written {
		t.Fatalf("after close the active file is %d bytes, its data %d", n, written)
	}
	l = open(true)
	defer l.Close()
	if got := readAll(t, l, 0); l.LogEndOffset() != leo || len(got) != len(all) || got[len(before)-1] != before[len(before)-1] {
		t.Fatalf("reopened: LEO %d (want %d), %d batches (want %d)", l.LogEndOffset(), leo, len(got), len(all))
	}
}

// A crash leaves the active preallocated segment at segment.bytes with a
// zero-filled end: recovery keeps every synced batch, cuts the zeros, and the
// log takes appends again.
func TestPreallocatedSegmentRecoversAfterCrash(t *testing.T) {
	mem := vfs.NewMem()
	clk := clock.NewFake(t0)
	l := openTest(t, mem, clk, preallocConfig(), false)
	for i := 0; i < 3; i++ {
		if _, err := l.Append(testBatch(t, 10, t0.UnixMilli(), "k"), OriginClient, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	synced := readAll(t, l, 0)
	leo := l.LogEndOffset()
	if _, err := l.Append(testBatch(t, 10, t0.UnixMilli(), "lost"), OriginClient, 0); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone()
	path := "/data/t-0/" + FileName(0) + LogSuffix
	if n := fileLen(t, crashed, path); n != 64<<10 {
		t.Fatalf("crashed image: active file %d bytes, want the preallocated %d", n, 64<<10)
	}
	r := openTest(t, crashed, clk, preallocConfig(), false)
	defer r.Close()
	if got := readAll(t, r, 0); r.LogEndOffset() != leo || len(got) != len(synced) {
		t.Fatalf("recovered LEO %d (want %d), %d batches (want %d)", r.LogEndOffset(), leo, len(got), len(synced))
	}
	if n := fileLen(t, crashed, path); n != r.Size() {
		t.Fatalf("recovered file %d bytes, log size %d", n, r.Size())
	}
	if _, err := r.Append(testBatch(t, 10, t0.UnixMilli(), "after"), OriginClient, 0); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, r, 0); len(got) != len(synced)+1 {
		t.Fatalf("%d batches after a new append", len(got))
	}
}
