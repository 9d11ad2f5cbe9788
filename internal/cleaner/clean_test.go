package cleaner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

func TestCleanKeepsLatestPerKeyWithOriginalOffsets(t *testing.T) {
	fs := vfs.NewMem()
	clk := clock.NewFake(t0)
	l := openLog(t, fs, clk, "/data/t-0", compactConfig(), false)
	defer l.Close()
	for i := 0; i < 300; i++ {
		codec := []record.Codec{record.CodecNone, record.CodecGzip, record.CodecZstd}[i%3]
		appendBatch(t, l, codec, t0.UnixMilli()+int64(i), put(keyName(i%20), fmt.Sprintf("v%d-%s", i, strings.Repeat("x", 40))),
			put(keyName((i*7)%20), fmt.Sprintf("w%d", i)))
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	before := readAll(t, l)
	sizeBefore, startBefore, leoBefore := l.Size(), l.LogStartOffset(), l.LogEndOffset()
	logs := newFakeLogs()
	logs.add("t", 0, l)
	tc := newTestCleaner(t, logs, clk, 1<<20)
	if !tc.roundNow() {
		t.Fatalf("nothing cleaned: %+v", tc.status(t, "t", 0))
	}
	after := readAll(t, l)
	if diff := cmp.Diff(latestPerKey(before), after); diff != "" {
		t.Fatalf("after cleaning (-want +got):\n%s", diff)
	}
	if l.LogStartOffset() != startBefore || l.LogEndOffset() != leoBefore {
		t.Fatalf("offsets moved: start %d→%d, end %d→%d", startBefore, l.LogStartOffset(), leoBefore, l.LogEndOffset())
	}
	if l.Size() >= sizeBefore/4 {
		t.Fatalf("size %d → %d: not compacted", sizeBefore, l.Size())
	}
	st := tc.status(t, "t", 0)
	if st.CleanerPoint != leoBefore || st.DirtyBytes != 0 || st.LastRun == nil || st.LastRun.RecordsRemoved != int64(len(before)-len(after)) {
		t.Fatalf("status after cleaning: %+v, last run %+v", st, st.LastRun)
	}
	if tc.roundNow() {
		t.Fatal("a clean log was cleaned again")
	}
	// Reopen: the cleaned segments recover as they are.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, clean := range []bool{true, false} {
		l2 := openLog(t, fs.CrashClone(), clk, "/data/t-0", compactConfig(), clean)
		if diff := cmp.Diff(after, readAll(t, l2)); diff != "" {
			t.Fatalf("after reopening (clean=%v) (-want +got):\n%s", clean, diff)
		}
		l2.Close()
	}
}

func TestActiveSegmentAndHighWatermarkAreNotCleaned(t *testing.T) {
	clk := clock.NewFake(t0)
	l := openLog(t, vfs.NewMem(), clk, "/data/t-0", compactConfig(), false)
	defer l.Close()
	for i := 0; i < 100; i++ {
		appendBatch(t, l, record.CodecNone, t0.UnixMilli(), put("k", fmt.Sprintf("v%d-%s", i, strings.Repeat("y", 50))))
	}
	logs := newFakeLogs()
	logs.add("t", 0, l)
	tc := newTestCleaner(t, logs, clk, 1<<20)
	// checkCleanedUpTo: below the cleaner point only the latest record, from
	// it on every record as written.
	checkCleanedUpTo := func(point int64) {
		t.Helper()
		var want []int64
		if point > 0 {
			want = append(want, point-1)
		}
		for o := point; o < l.LogEndOffset(); o++ {
			want = append(want, o)
		}
		var got []int64
		for _, r := range readAll(t, l) {
			got = append(got, r.Offset)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("offsets after cleaning to %d (-want +got):\n%s", point, diff)
		}
	}
	l.SetHighWatermark(45) // held back, as by a lagging follower
	tc.cleanUntilIdle(t)
	st := tc.status(t, "t", 0)
	if st.UncleanableReason != ReasonHighWatermark || st.FirstUncleanableOffset > 45 || st.CleanerPoint != st.FirstUncleanableOffset {
		t.Fatalf("status: %+v", st)
	}
	checkCleanedUpTo(st.CleanerPoint)

	l.SetHighWatermark(l.LogEndOffset())
	tc.cleanUntilIdle(t)
	st = tc.status(t, "t", 0)
	snap, err := l.CleanSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	active := snap.Segments[len(snap.Segments)-1].BaseOffset
	if st.UncleanableReason != ReasonActiveSegment || st.FirstUncleanableOffset != active || st.CleanerPoint != active {
		t.Fatalf("status: %+v (active segment at %d)", st, active)
	}
	checkCleanedUpTo(active)
}

func TestMinCompactionLagHoldsYoungSegments(t *testing.T) {
	clk := clock.NewFake(t0)
	cfg := compactConfig()
	cfg.MinCompactionLagMs = 60_000
	l := openLog(t, vfs.NewMem(), clk, "/data/t-0", cfg, false)
	defer l.Close()
	for i := 0; i < 100; i++ {
		appendBatch(t, l, record.CodecNone, clk.Now().UnixMilli(), put("k", strings.Repeat("z", 60)))
		clk.Advance(time.Second)
	}
	logs := newFakeLogs()
	logs.add("t", 0, l)
	tc := newTestCleaner(t, logs, clk, 1<<20)
	tc.cleanUntilIdle(t)
	st := tc.status(t, "t", 0)
	if st.UncleanableReason != ReasonMinCompactionLag {
		t.Fatalf("reason %q, want %q: %+v", st.UncleanableReason, ReasonMinCompactionLag, st)
	}
	// Records younger than the lag are all still there.
	cutoff := clk.Now().UnixMilli() - cfg.MinCompactionLagMs
	young := 0
	for _, r := range readAll(t, l) {
		if r.TS > cutoff {
			young++
		}
	}
	if young < 59 {
		t.Fatalf("only %d records younger than min.compaction.lag.ms survive", young)
	}
	if st.NextEligibleMs <= clk.Now().UnixMilli() && !st.Eligible {
		t.Fatalf("next eligible %d not in the future: %+v", st.NextEligibleMs, st)
	}
}

func TestTombstonesStayUntilTheirDeleteHorizon(t *testing.T) {
	fs := vfs.NewMem()
	clk := clock.NewFake(t0)
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 10_000
	l := openLog(t, fs, clk, "/data/t-0", cfg, false)
	for i := 0; i < 50; i++ {
		appendBatch(t, l, record.CodecLz4, clk.Now().UnixMilli(), put(keyName(i%10), strings.Repeat("a", 80)))
	}
	appendBatch(t, l, record.CodecLz4, clk.Now().UnixMilli(), tomb(keyName(3)), put(keyName(4), "live"), tomb(keyName(5)))
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	logs := newFakeLogs()
	logs.add("t", 0, l)
	tc := newTestCleaner(t, logs, clk, 1<<20)
	tc.cleanUntilIdle(t)
	recs := readAll(t, l)
	var tombs []string
	for _, r := range recs {
		if r.Tomb {
			tombs = append(tombs, r.Key)
		}
	}
	if len(recs) != 10 || fmt.Sprint(tombs) != fmt.Sprint([]string{keyName(3), keyName(5)}) {
		t.Fatalf("after the first cleaning: %d records, tombstones %v", len(recs), tombs)
	}
	// The horizon is in the batch: attribute bit 6, base timestamp.
	horizon := clk.Now().UnixMilli() + cfg.DeleteRetentionMs
	if !batchHasHorizon(t, l, recs[len(recs)-1].Offset, horizon) {
		t.Fatal("tombstone batch carries no delete horizon")
	}
	// It survives a restart.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, fs, clk, "/data/t-0", cfg, true)
	defer l.Close()
	logs = newFakeLogs()
	logs.add("t", 0, l)
	logs.points[topicpart.TopicPartition{Topic: "t", Partition: 0}] = l.LogEndOffset()
	tc = newTestCleaner(t, logs, clk, 1<<20)
	if !batchHasHorizon(t, l, recs[len(recs)-1].Offset, horizon) {
		t.Fatal("delete horizon lost on reopen")
	}
	// Before the horizon, a new round (new dirty data) keeps them.
	clk.Advance(5 * time.Second)
	appendBatch(t, l, record.CodecNone, clk.Now().UnixMilli(), put(keyName(0), "new"))
	l.Roll()
	tc.cleanUntilIdle(t)
	if n := countTombs(readAll(t, l)); n != 2 {
		t.Fatalf("%d tombstones before the horizon, want 2", n)
	}
	// After the horizon, a round drops them; nothing else changes.
	clk.Advance(6 * time.Second)
	appendBatch(t, l, record.CodecNone, clk.Now().UnixMilli(), put(keyName(1), "new"))
	l.Roll()
	tc.cleanUntilIdle(t)
	got := readAll(t, l)
	if n := countTombs(got); n != 0 || len(got) != 8 {
		t.Fatalf("after the horizon: %d tombstones, %d records: %+v", n, len(got), got)
	}
}

func TestExpiredTombstonesGoWithoutNewWrites(t *testing.T) {
	clk := clock.NewFake(t0)
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 1000
	l := openLog(t, vfs.NewMem(), clk, "/data/t-0", cfg, false)
	defer l.Close()
	for i := 0; i < 40; i++ {
		appendBatch(t, l, record.CodecNone, clk.Now().UnixMilli(), put(keyName(i%4), strings.Repeat("b", 100)))
	}
	appendBatch(t, l, record.CodecNone, clk.Now().UnixMilli(), tomb(keyName(0)))
	l.Roll()
	logs := newFakeLogs()
	logs.add("t", 0, l)
	tc := newTestCleaner(t, logs, clk, 1<<20)
	tc.cleanUntilIdle(t)
	if n := countTombs(readAll(t, l)); n != 1 {
		t.Fatalf("%d tombstones after the first cleaning", n)
	}
	st := tc.status(t, "t", 0)
	if st.NextEligibleMs != clk.Now().UnixMilli()+1000 {
		t.Fatalf("next eligible %d, want the horizon %d: %+v", st.NextEligibleMs, clk.Now().UnixMilli()+1000, st)
	}
	clk.Advance(1001 * time.Millisecond)
	if !tc.roundNow() {
		t.Fatalf("no round after the horizon: %+v", tc.status(t, "t", 0))
	}
	if got := readAll(t, l); countTombs(got) != 0 || len(got) != 3 {
		t.Fatalf("after the horizon: %+v", got)
	}
}

func countTombs(recs []readRec) int {
	n := 0
	for _, r := range recs {
		if r.Tomb {
			n++
		}
	}
	return n
}

// batchHasHorizon reports whether the batch holding offset carries delete
// horizon h.
func batchHasHorizon(t testing.TB, l *log.Log, offset, h int64) bool {
	t.Helper()
	buf, err := l.Read(nil, offset, 1, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	hd, err := record.ParseHeader(buf)
	if err != nil {
		t.Fatal(err)
	}
	return hd.HasDeleteHorizon() && hd.BaseTimestamp == h
}

func TestDedupeBufferTooSmallTakesSeveralRounds(t *testing.T) {
	clk := clock.NewFake(t0)
	cfg := compactConfig()
	cfg.SegmentBytes = 16 << 10
	l := openLog(t, vfs.NewMem(), clk, "/data/t-0", cfg, false)
	defer l.Close()
	for i := 0; i < 2000; i++ {
		appendBatch(t, l, record.CodecNone, clk.Now().UnixMilli(), put(keyName(i%500), fmt.Sprint("v", i)))
	}
	l.Roll()
	before := readAll(t, l)
	logs := newFakeLogs()
	logs.add("t", 0, l)
	// Room for about 100 keys: 500 distinct keys need several rounds.
	tc := newTestCleaner(t, logs, clk, 100*bytesPerEntry)
	rounds := 0
	var points []int64
	for ; rounds < 200 && tc.roundNow(); rounds++ {
		st := tc.status(t, "t", 0)
		points = append(points, st.CleanerPoint)
		if st.Uncleanable != nil {
			t.Fatalf("uncleanable: %+v", st.Uncleanable)
		}
	}
	if rounds < 5 {
		t.Fatalf("only %d rounds with a map for ~100 keys", rounds)
	}
	for i := 1; i < len(points); i++ {
		if points[i] <= points[i-1] {
			t.Fatalf("cleaner point did not advance: %v", points)
		}
	}
	if diff := cmp.Diff(latestPerKey(before), readAll(t, l)); diff != "" {
		t.Fatalf("after %d rounds (-want +got):\n%s", rounds, diff)
	}
	if st := tc.status(t, "t", 0); st.LastRun == nil {
		t.Fatal("no last run")
	}
}

func TestCorruptSegmentMakesOnePartitionUncleanable(t *testing.T) {
	fs := vfs.NewMem()
	clk := clock.NewFake(t0)
	logs := newFakeLogs()
	var ls []*log.Log
	for p := int32(0); p < 2; p++ {
		l := openLog(t, fs, clk, fmt.Sprintf("/data/t-%d", p), compactConfig(), false)
		defer l.Close()
		for i := 0; i < 200; i++ {
			appendBatch(t, l, record.CodecNone, clk.Now().UnixMilli(), put(keyName(i%10), strings.Repeat("c", 50)))
		}
		l.Roll()
		logs.add("t", p, l)
		ls = append(ls, l)
	}
	// Damage a byte in the middle of partition 0's second segment (its
	// log is trusted: nobody rescans it while it is open).
	names, _ := fs.List("/data/t-0")
	var segs []string
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			segs = append(segs, n)
		}
	}
	f, err := fs.OpenReadWrite("/data/t-0/" + segs[1])
	if err != nil {
		t.Fatal(err)
	}
	flip := make([]byte, 3)
	if _, err := f.ReadAt(flip, 300); err != nil {
		t.Fatal(err)
	}
	for i := range flip {
		flip[i] ^= 0xff
	}
	if _, err := f.WriteAt(flip, 300); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tc := newTestCleaner(t, logs, clk, 1<<20)
	tc.cleanUntilIdle(t)
	st0, st1 := tc.status(t, "t", 0), tc.status(t, "t", 1)
	if st0.Uncleanable == nil || !strings.Contains(st0.Uncleanable.Error, "corrupt") || st0.Eligible {
		t.Fatalf("partition 0: %+v", st0)
	}
	if st1.Uncleanable != nil || st1.LastRun == nil || st1.DirtyBytes != 0 {
		t.Fatalf("partition 1 not cleaned: %+v", st1)
	}
	if len(readAll(t, ls[1])) != 10 {
		t.Fatal("partition 1 not compacted")
	}
	if st0.NextEligibleMs != st0.Uncleanable.RetryAtMs || st0.Uncleanable.RetryAtMs <= clk.Now().UnixMilli() {
		t.Fatalf("retry: %+v", st0)
	}
	// After the backoff it is tried again (and fails again, backing off longer).
	clk.Advance(time.Duration(st0.Uncleanable.RetryAtMs-clk.Now().UnixMilli()+1) * time.Millisecond)
	if !tc.roundNow() {
		t.Fatal("not retried after the backoff")
	}
	st0b := tc.status(t, "t", 0)
	if st0b.Uncleanable == nil || st0b.Uncleanable.Failures != 2 ||
		st0b.Uncleanable.RetryAtMs-clk.Now().UnixMilli() <= st0.Uncleanable.RetryAtMs-st0.Uncleanable.SinceMs {
		t.Fatalf("second failure: %+v", st0b.Uncleanable)
	}
}

func TestPanicWhileCleaningIsRecovered(t *testing.T) {
	clk := clock.NewFake(t0)
	l := openLog(t, vfs.NewMem(), clk, "/data/t-0", compactConfig(), false)
	defer l.Close()
	for i := 0; i < 100; i++ {
		appendBatch(t, l, record.CodecNone, clk.Now().UnixMilli(), put("k", strings.Repeat("d", 60)))
	}
	l.Roll()
	logs := newFakeLogs()
	logs.add("t", 0, l)
	tc := newTestCleaner(t, logs, clk, 1<<20)
	tc.testHook = func(topicpart.TopicPartition) { panic("boom") }
	tc.roundNow()
	st := tc.status(t, "t", 0)
	if st.Uncleanable == nil || !strings.Contains(st.Uncleanable.Error, "panic") {
		t.Fatalf("status: %+v", st)
	}
	tc.testHook = nil
	clk.Advance(time.Hour)
	tc.cleanUntilIdle(t)
	if st := tc.status(t, "t", 0); st.Uncleanable != nil || len(readAll(t, l)) > 30 {
		t.Fatalf("not recovered: %+v", st)
	}
}
