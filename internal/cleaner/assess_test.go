package cleaner

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

const now = int64(1_000_000_000)

// segs builds segments from (base, size, largest timestamp, first batch timestamp).
func segs(s ...[4]int64) []SegmentState {
	out := make([]SegmentState, len(s))
	for i, x := range s {
		out[i] = SegmentState{BaseOffset: x[0], Size: x[1], LargestTimestamp: x[2], FirstBatchTimestamp: x[3]}
	}
	return out
}

func baseState() LogState {
	return LogState{
		Segments:         segs([4]int64{0, 1000, now - 1e6, now - 2e6}, [4]int64{100, 1000, now - 5e5, now - 9e5}, [4]int64{200, 1000, now - 1e5, now - 4e5}, [4]int64{300, 10, now, now}),
		LogStartOffset:   0,
		LastStableOffset: 305, HighWatermark: 305, LogEndOffset: 305,
		CleanerPoint: -1, Compact: true, MinCleanableDirtyRatio: 0.5, MaxCompactionLagMs: math.MaxInt64,
	}
}

func TestAssess(t *testing.T) {
	type want struct {
		firstDirty, firstUncleanable int64
		reason                       Reason
		clean, dirty                 int64
		eligible, reset              bool
		next                         int64
	}
	cases := []struct {
		name string
		mod  func(s *LogState)
		want want
	}{
		{"never cleaned: all closed segments dirty", func(s *LogState) {},
			want{0, 300, ReasonActiveSegment, 0, 3000, true, false, now}},
		{"cleaner point at a segment", func(s *LogState) { s.CleanerPoint = 200 },
			want{200, 300, ReasonActiveSegment, 2000, 1000, false, false, -1}},
		{"cleaner point mid-segment counts that segment dirty", func(s *LogState) { s.CleanerPoint = 150 },
			want{150, 300, ReasonActiveSegment, 1000, 2000, true, false, now}},
		{"cleaner point below log start resets", func(s *LogState) { s.CleanerPoint = 50; s.LogStartOffset = 100 },
			want{100, 300, ReasonActiveSegment, 1000, 2000, true, true, now}},
		{"cleaner point past log end resets", func(s *LogState) { s.CleanerPoint = 400 },
			want{0, 300, ReasonActiveSegment, 0, 3000, true, true, now}},
		{"open transaction", func(s *LogState) { s.LastStableOffset = 150 },
			want{0, 100, ReasonOpenTransaction, 0, 1000, true, false, now}},
		{"high watermark", func(s *LogState) { s.LastStableOffset, s.HighWatermark = 250, 250 },
			want{0, 200, ReasonHighWatermark, 0, 2000, true, false, now}},
		{"min compaction lag", func(s *LogState) { s.MinCompactionLagMs = 6e5 },
			want{0, 100, ReasonMinCompactionLag, 0, 1000, true, false, now}},
		{"min compaction lag holds back what would tip the ratio", func(s *LogState) { s.MinCompactionLagMs = 6e5; s.CleanerPoint = 100 },
			want{100, 100, ReasonMinCompactionLag, 1000, 0, false, false, now - 1e5 + 6e5 + 1}},
		{"below the ratio", func(s *LogState) { s.CleanerPoint = 200; s.MinCleanableDirtyRatio = 0.4 },
			want{200, 300, ReasonActiveSegment, 2000, 1000, false, false, -1}},
		{"ratio is compared with >", func(s *LogState) { s.CleanerPoint = 150; s.MinCleanableDirtyRatio = 2.0 / 3 },
			want{150, 300, ReasonActiveSegment, 1000, 2000, false, false, -1}},
		{"max compaction lag forces a clean below the ratio", func(s *LogState) { s.CleanerPoint = 200; s.MaxCompactionLagMs = 3e5 },
			want{200, 300, ReasonActiveSegment, 2000, 1000, true, false, now}},
		{"max compaction lag not yet reached", func(s *LogState) { s.CleanerPoint = 200; s.MaxCompactionLagMs = 5e5 },
			want{200, 300, ReasonActiveSegment, 2000, 1000, false, false, now - 4e5 + 5e5 + 1}},
		{"not compacted", func(s *LogState) { s.Compact = false },
			want{0, 300, ReasonActiveSegment, 0, 3000, false, false, -1}},
		{"in progress", func(s *LogState) { s.InProgress = true },
			want{0, 300, ReasonActiveSegment, 0, 3000, false, false, now}},
		{"uncleanable until a retry", func(s *LogState) { s.RetryAtMs = now + 5000 },
			want{0, 300, ReasonActiveSegment, 0, 3000, false, false, now + 5000}},
		{"passed delete horizon", func(s *LogState) { s.CleanerPoint = 300; s.DeleteHorizonMs = now - 1 },
			want{300, 300, ReasonActiveSegment, 3000, 0, true, false, now}},
		{"future delete horizon", func(s *LogState) { s.CleanerPoint = 300; s.DeleteHorizonMs = now + 10 },
			want{300, 300, ReasonActiveSegment, 3000, 0, false, false, now + 10}},
		{"only the active segment", func(s *LogState) { s.Segments = s.Segments[3:]; s.LogStartOffset = 300 },
			want{300, 300, ReasonActiveSegment, 0, 0, false, false, -1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := baseState()
			c.mod(&s)
			a := Assess(s, now)
			got := want{a.FirstDirtyOffset, a.FirstUncleanableOffset, a.UncleanableReason, a.CleanBytes, a.DirtyBytes,
				a.Eligible, a.ResetCleanerPoint, a.NextEligibleMs}
			if got != c.want {
				t.Fatalf("got  %+v\nwant %+v\n(why: %s)", got, c.want, a.Why)
			}
			if a.Why == "" {
				t.Fatal("no explanation")
			}
		})
	}
}

func TestMaxCompactionDelay(t *testing.T) {
	s := baseState()
	s.MaxCompactionLagMs = 1e6
	a := Assess(s, now)
	if a.MaxCompactionDelayMs != 1e6 || !a.NeedCompactionNow { // oldest first batch 2e6 ago
		t.Fatalf("delay %d", a.MaxCompactionDelayMs)
	}
	s.MaxCompactionLagMs = math.MaxInt64
	if a := Assess(s, now); a.MaxCompactionDelayMs != 0 {
		t.Fatalf("delay %d with no lag limit", a.MaxCompactionDelayMs)
	}
}

func TestFilthiestPicksHighestRatioDeterministically(t *testing.T) {
	c := func(topic string, p int32, ratio float64, eligible bool) Candidate {
		return Candidate{TopicPartition: topicpart.TopicPartition{Topic: topic, Partition: p}, Assessment: Assessment{DirtyRatio: ratio, Eligible: eligible}}
	}
	cands := []Candidate{c("b", 0, 0.6, true), c("a", 1, 0.9, false), c("a", 2, 0.7, true), c("a", 0, 0.7, true)}
	i, dirtiest := Filthiest(cands)
	if i != 3 || dirtiest != 0.9 {
		t.Fatalf("picked %d (dirtiest %v)", i, dirtiest)
	}
	if i, _ := Filthiest(cands[1:2]); i != -1 {
		t.Fatalf("picked an ineligible log")
	}
}

func TestGroupSegments(t *testing.T) {
	s := []SegmentState{
		{BaseOffset: 0, Size: 400, OffsetIndexBytes: 8, TimeIndexBytes: 12},
		{BaseOffset: 10, Size: 400, OffsetIndexBytes: 8, TimeIndexBytes: 12},
		{BaseOffset: 20, Size: 300, OffsetIndexBytes: 8, TimeIndexBytes: 12},
		{BaseOffset: 30, Size: 0},
		{BaseOffset: 40, Size: 100, OffsetIndexBytes: 80, TimeIndexBytes: 12},
		{BaseOffset: 50, Size: 100, OffsetIndexBytes: 20, TimeIndexBytes: 12},
		{BaseOffset: 60, Size: 100},
		{BaseOffset: 1 << 32, Size: 100},
	}
	next := func(i int) int64 {
		if i+1 < len(s) {
			return s[i+1].BaseOffset
		}
		return 1<<32 + 10
	}
	got := groupSegments(s, next, 1000, 90)
	want := "[[0 1] [2] [4] [5] [6] [7]]" // size, index size, offset range
	if g := fmt.Sprint(got); g != want {
		t.Fatalf("groups %s, want %s", g, want)
	}
}

func TestUncleanableBackoff(t *testing.T) {
	for _, c := range []struct {
		backoff  int64
		failures int
		want     int64
	}{{15000, 1, 30000}, {15000, 2, 60000}, {15000, 20, 3600_000}, {0, 1, 2000}} {
		if got := uncleanableBackoffMs(c.backoff, c.failures); got != c.want {
			t.Fatalf("backoff(%d, %d) = %d, want %d", c.backoff, c.failures, got, c.want)
		}
	}
}

func TestThrottleDelay(t *testing.T) {
	if d := throttleDelay(1e6, 500*time.Millisecond, 1e6); d != 500*time.Millisecond {
		t.Fatalf("1 MB in 0.5 s at 1 MB/s: sleep %v", d)
	}
	if d := throttleDelay(1e5, time.Second, 1e6); d != 0 {
		t.Fatalf("under the rate: sleep %v", d)
	}
}

func TestOffsetMap(t *testing.T) {
	m := newOffsetMap(100*bytesPerEntry, 0.9) // 100 slots, 90 keys
	m.reset(0)
	for i := 0; i < 90; i++ {
		if !m.put([]byte(keyName(i)), int64(i)) {
			t.Fatalf("key %d refused", i)
		}
	}
	if !m.full() || m.put([]byte("new"), 100) {
		t.Fatal("a full map took a new key")
	}
	if !m.put([]byte(keyName(3)), 200) || m.get([]byte(keyName(3))) != 200 {
		t.Fatal("a full map refused to update a key")
	}
	if m.get([]byte("absent")) != -1 || m.get([]byte(keyName(89))) != 89 {
		t.Fatal("lookups")
	}
	m.reset(5)
	if m.entries != 0 || m.get([]byte(keyName(1))) != -1 || m.latest != 4 {
		t.Fatal("reset")
	}
	// Growth from the initial table to the full size keeps every key.
	big := newOffsetMap(1e5*bytesPerEntry, 0.9)
	big.reset(0)
	for i := 0; i < 50000; i++ {
		big.put([]byte(keyName(i)), int64(i))
	}
	for i := 0; i < 50000; i++ {
		if big.get([]byte(keyName(i))) != int64(i) {
			t.Fatalf("key %d lost in growth", i)
		}
	}
	if big.memoryBytes() > 1e5*bytesPerEntry {
		t.Fatalf("table of %d bytes beyond the dedupe buffer", big.memoryBytes())
	}
}

// TestThrottlerSleepsOnTheClock: over the rate, maybeThrottle waits on the
// injected clock until the average is back at the limit.
func TestThrottlerSleepsOnTheClock(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	th := newThrottler(clk, func() float64 { return 1000 })
	clk.Advance(300 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- th.maybeThrottle(context.Background(), 1000) }() // 1000 B in 0.3 s: 0.7 s more
	for deadline := time.Now().Add(5 * time.Second); clk.Pending() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the throttler never waited on the clock")
		}
	}
	clk.Advance(699 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("woke after 0.699 s of clock time (err %v), want 0.7 s", err)
	case <-time.After(20 * time.Millisecond):
	}
	clk.Advance(time.Millisecond)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("never woke after 0.7 s of clock time")
	}
}
