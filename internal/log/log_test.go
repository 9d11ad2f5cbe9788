package log

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testBatch(t testing.TB, n int, ts int64, key string) []byte {
	t.Helper()
	spec := &record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	for i := 0; i < n; i++ {
		spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: ts + int64(i),
			Key: []byte(fmt.Sprintf("%s-%d", key, i)), Value: make([]byte, 100)})
	}
	b, err := record.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func openTest(t testing.TB, fs vfs.FS, clk clock.Clock, cfg Config, clean bool) *Log {
	t.Helper()
	l, err := Open(Options{FS: fs, Clock: clk, Dir: "/data/t-0", Config: cfg, Logger: discardLogger(),
		RecoveryPoint: 0, LogStartOffset: -1, HighWatermark: -1, CleanShutdown: clean})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func smallConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 4096
	c.IndexIntervalBytes = 512
	c.SegmentIndexBytes = 1024
	c.TimestampAfterMs = -1
	return c
}

func readAll(t testing.TB, l *Log, from int64) []record.Header {
	t.Helper()
	var out []record.Header
	for off := from; off < l.LogEndOffset(); {
		data, err := l.Read(nil, off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			t.Fatalf("empty read at %d below LEO %d", off, l.LogEndOffset())
		}
		for len(data) > 0 {
			b, rest, ok := record.Split(data)
			if !ok {
				t.Fatalf("partial batch at %d", off)
			}
			h, err := record.ValidateStored(b)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, h)
			off = h.NextOffset()
			data = rest
		}
	}
	return out
}

func TestAppendReadRollReopen(t *testing.T) {
	fs := vfs.NewMem()
	clk := clock.NewFake(t0)
	l := openTest(t, fs, clk, smallConfig(), false)
	for i := 0; i < 50; i++ {
		res, err := l.Append(testBatch(t, 3, t0.UnixMilli()+int64(i), "k"), OriginClient, 5)
		if err != nil {
			t.Fatal(err)
		}
		if res.BaseOffset != int64(i*3) || res.LastOffset != int64(i*3+2) {
			t.Fatalf("append %d: %+v", i, res)
		}
	}
	if l.NumSegments() < 5 {
		t.Fatalf("expected rolls, got %d segments", l.NumSegments())
	}
	if got := readAll(t, l, 0); len(got) != 50 || got[49].BaseOffset != 147 || got[10].LeaderEpoch != 5 {
		t.Fatalf("read %d batches", len(got))
	}
	// Reading from the middle of a batch starts at that batch.
	data, err := l.Read(nil, 31, 1, 150, true)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := record.ParseHeader(data); h.BaseOffset != 30 {
		t.Fatalf("read at 31 started at %d", h.BaseOffset)
	}
	if _, err := l.Read(nil, 151, 100, 151, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past LEO: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, clean := range []bool{true, false} {
		l2 := openTest(t, fs, clk, smallConfig(), clean)
		if l2.LogEndOffset() != 150 {
			t.Fatalf("clean=%v: reopened LEO %d", clean, l2.LogEndOffset())
		}
		if got := readAll(t, l2, 0); len(got) != 50 {
			t.Fatalf("clean=%v: read %d batches after reopen", clean, len(got))
		}
		if err := l2.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFindOffsetByTimestampAndMax(t *testing.T) {
	fs := vfs.NewMem()
	clk := clock.NewFake(t0)
	l := openTest(t, fs, clk, smallConfig(), false)
	base := t0.UnixMilli()
	for i := 0; i < 40; i++ {
		ts := base + int64(i)*10
		if i == 20 {
			ts = base + 100000 // an outlier: the max timestamp
		}
		if _, err := l.Append(testBatch(t, 2, ts, "k"), OriginClient, 0); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		ts   int64
		want int64
	}{{base, 0}, {base + 1, 1}, {base + 55, 12}, {base + 391, 40}}
	for _, c := range cases {
		got, ok, err := l.FindOffsetByTimestamp(c.ts)
		if err != nil || !ok || got.Offset != c.want {
			t.Fatalf("ts %d: %+v %v %v, want %d", c.ts-base, got, ok, err, c.want)
		}
	}
	if _, ok, _ := l.FindOffsetByTimestamp(base + 200000); ok {
		t.Fatal("found an offset after every timestamp")
	}
	m, ok, err := l.MaxTimestampOffset()
	if err != nil || !ok || m.Offset != 41 || m.Timestamp != base+100001 {
		t.Fatalf("max timestamp: %+v %v %v", m, ok, err)
	}
}

func TestIdempotentProducer(t *testing.T) {
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	mk := func(pid int64, epoch int16, seq int32) []byte {
		b, err := record.Build(&record.BatchSpec{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq,
			Records: []record.BuildRecord{{Timestamp: t0.UnixMilli(), Value: []byte("a")}, {OffsetDelta: 1, Timestamp: t0.UnixMilli()}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	r1, err := l.Append(mk(7, 0, 0), OriginClient, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(mk(7, 0, 2), OriginClient, 0); err != nil {
		t.Fatal(err)
	}
	dup, err := l.Append(mk(7, 0, 0), OriginClient, 0)
	if err != nil || !dup.Duplicate || dup.BaseOffset != r1.BaseOffset {
		t.Fatalf("retry: %+v %v", dup, err)
	}
	if _, err := l.Append(mk(7, 0, 9), OriginClient, 0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap: %v", err)
	}
	if _, err := l.Append(mk(7, 1, 0), OriginClient, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(mk(7, 0, 4), OriginClient, 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("fenced: %v", err)
	}
	if l.LogEndOffset() != 6 {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
}

func TestRetentionAndDeleteRecords(t *testing.T) {
	fs := vfs.NewMem()
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.RetentionMs = 3600_000
	cfg.FileDeleteDelayMs = 1000
	l := openTest(t, fs, clk, cfg, false)
	for i := 0; i < 60; i++ {
		if _, err := l.Append(testBatch(t, 3, clk.Now().UnixMilli(), "k"), OriginClient, 0); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
	}
	l.SetHighWatermark(l.LogEndOffset())
	clk.Advance(30 * time.Minute)
	before := l.NumSegments()
	res, err := l.DeleteOldSegments(clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res.Segments == 0 || res.Reason != "retention.ms" || l.NumSegments() != before-res.Segments {
		t.Fatalf("retention: %+v, segments %d -> %d", res, before, l.NumSegments())
	}
	if l.LogStartOffset() == 0 {
		t.Fatal("log start offset did not move")
	}
	if _, err := l.Read(nil, 0, 100, l.LogEndOffset(), true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	// Far in the future every segment expires, the active one too: it is
	// rolled first, so one empty segment is left at the log end offset.
	clk.Advance(48 * time.Hour)
	if _, err := l.DeleteOldSegments(clk.Now()); err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() != 1 || l.LogStartOffset() != 180 || l.LogEndOffset() != 180 {
		t.Fatalf("%d segments left, log start %d, LEO %d", l.NumSegments(), l.LogStartOffset(), l.LogEndOffset())
	}
	mustAppend(t, l, testBatch(t, 3, clk.Now().UnixMilli(), "k"), 0)
	l.SetHighWatermark(l.LogEndOffset())
	start, err := l.IncrementLogStartOffset(l.LogEndOffset() - 1)
	if err != nil || l.LogStartOffset() != start || start != 182 {
		t.Fatalf("delete records: %d %v", start, err)
	}
	if _, err := l.IncrementLogStartOffset(l.LogEndOffset() + 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("delete past HW: %v", err)
	}
	clk.Advance(2 * time.Second)
	names, _ := fs.List("/data/t-0")
	for _, n := range names {
		if len(n) > 8 && n[len(n)-8:] == DeletedSuffix {
			t.Fatalf("%s not removed after file.delete.delay.ms", n)
		}
	}
}

func TestTruncateTo(t *testing.T) {
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	for i := 0; i < 40; i++ {
		if _, err := l.Append(testBatch(t, 2, t0.UnixMilli(), "k"), OriginClient, int32(i/10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.TruncateTo(31); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 30 {
		t.Fatalf("LEO after truncate %d", l.LogEndOffset())
	}
	if e, off := l.EndOffsetForEpoch(1); e != 1 || off != 30 {
		t.Fatalf("epoch 1 end: %d %d", e, off)
	}
	if got := readAll(t, l, 0); len(got) != 15 {
		t.Fatalf("%d batches after truncate", len(got))
	}
	res, err := l.Append(testBatch(t, 2, t0.UnixMilli(), "k"), OriginClient, 9)
	if err != nil || res.BaseOffset != 30 {
		t.Fatalf("append after truncate: %+v %v", res, err)
	}
}

// A leader's high watermark only rises: an advance computed earlier and
// applied later is ignored, targets are clamped to [log start, LEO], and
// DeleteRecords or retention moving the log start offset keep it at or
// above the log start offset.
func TestMaybeIncrementHighWatermark(t *testing.T) {
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.FileDeleteDelayMs = 0
	l := openTest(t, vfs.NewMem(), clk, cfg, false)
	for range 30 {
		mustAppend(t, l, testBatch(t, 3, clk.Now().UnixMilli(), "k"), 0)
	}
	leo := l.LogEndOffset()
	steps := []struct {
		to    int64
		moved bool
		want  int64
	}{
		{to: 10, moved: true, want: 10},
		{to: 7, moved: false, want: 10},  // an older target applied late
		{to: 10, moved: false, want: 10}, // the same one twice
		{to: leo + 50, moved: true, want: leo},
		{to: leo - 1, moved: false, want: leo},
	}
	for _, s := range steps {
		if moved := l.MaybeIncrementHighWatermark(s.to); moved != s.moved || l.HighWatermark() != s.want {
			t.Fatalf("MaybeIncrementHighWatermark(%d): moved %v, high watermark %d; want %v, %d",
				s.to, moved, l.HighWatermark(), s.moved, s.want)
		}
	}
	if _, err := l.IncrementLogStartOffset(leo - 3); err != nil {
		t.Fatal(err)
	}
	if l.MaybeIncrementHighWatermark(5) || l.HighWatermark() != leo || l.LogStartOffset() > l.HighWatermark() {
		t.Fatalf("after DeleteRecords: log start %d, high watermark %d, LEO %d", l.LogStartOffset(), l.HighWatermark(), leo)
	}

	// A follower or a restart may set it lower: SetHighWatermark still
	// does, clamped to the log start offset.
	l.SetHighWatermark(0)
	if l.HighWatermark() != l.LogStartOffset() {
		t.Fatalf("SetHighWatermark(0): high watermark %d, log start %d", l.HighWatermark(), l.LogStartOffset())
	}
}
