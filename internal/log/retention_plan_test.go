package log

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// planLog builds a Snapshot of segments with the given base offsets, sizes
// and largest timestamps; the last is the active segment, ending at leo.
func planLog(bases, sizes, largest []int64, leo int64) Snapshot {
	s := Snapshot{LogEndOffset: leo, HighWatermark: leo, LastStableOffset: leo, RecoveryPoint: leo,
		LogStartOffset: bases[0], ActiveRollMs: math.MaxInt64, Config: DefaultConfig()}
	for i := range bases {
		s.Segments = append(s.Segments, SegmentInfo{BaseOffset: bases[i], Size: sizes[i], LargestTimestamp: largest[i]})
	}
	return s
}

func TestPlanRetention(t *testing.T) {
	const hour = int64(3600_000)
	now := t0.UnixMilli()
	ago := func(h int64) int64 { return now - h*hour }
	// Four segments, 100 bytes each, written 10, 8, 9 and 1 hours ago
	// (the third has an older largest timestamp than the second's).
	four := func(mod func(*Snapshot)) Snapshot {
		s := planLog([]int64{0, 10, 20, 30}, []int64{100, 100, 100, 100}, []int64{ago(10), ago(8), ago(9), ago(1)}, 35)
		s.Config.RetentionMs = 5 * hour
		mod(&s)
		return s
	}
	tests := []struct {
		name string
		snap Snapshot
		now  RetentionRange
		next *RetentionRange // nil: want no prediction
		why  []string        // substrings of Why
	}{{
		name: "empty log",
		snap: planLog([]int64{0}, []int64{0}, []int64{now}, 0),
		why:  []string{"the log is empty"},
	}, {
		name: "retention.ms expires a prefix and stops at the first segment not expired",
		snap: four(func(s *Snapshot) { s.Config.RetentionMs = 8*hour + 30*60_000 }),
		now:  RetentionRange{Segments: 1, Bytes: 100, FromOffset: 0, ToOffset: 10, Reason: "retention.ms", DueMs: now},
		next: &RetentionRange{Segments: 1, Bytes: 100, FromOffset: 0, ToOffset: 10, Reason: "retention.ms", DueMs: now},
		why:  []string{"deletes 1 segment (offsets 0–9, 100 bytes): largest timestamps older than retention.ms=30600000"},
	}, {
		name: "retention.ms expires every segment, the active one too: the check rolls it",
		snap: four(func(s *Snapshot) { s.Config.RetentionMs = 0 }),
		now:  RetentionRange{Segments: 4, Bytes: 400, FromOffset: 0, ToOffset: 35, Reason: "retention.ms", DueMs: now},
		next: &RetentionRange{Segments: 4, Bytes: 400, FromOffset: 0, ToOffset: 35, Reason: "retention.ms", DueMs: now},
		why: []string{"deletes 4 segments (offsets 0–34, 400 bytes)",
			"the active segment (offsets 30–34) passed retention.ms at " + time.UnixMilli(ago(1)+1).UTC().Format(time.RFC3339Nano),
			"the check rolls it (a new empty segment starts at the log end offset 35) and deletes it, so the log start offset becomes 35"},
	}, {
		name: "the active segment is not wholly below the high watermark: the closed ones go",
		snap: four(func(s *Snapshot) { s.Config.RetentionMs, s.HighWatermark, s.LastStableOffset = 0, 33, 33 }),
		now:  RetentionRange{Segments: 3, Bytes: 300, FromOffset: 0, ToOffset: 30, Reason: "retention.ms", DueMs: now},
		next: &RetentionRange{Segments: 3, Bytes: 300, FromOffset: 0, ToOffset: 30, Reason: "retention.ms", DueMs: now},
		why: []string{"deletes 3 segments (offsets 0–29, 300 bytes)",
			"the active segment (offsets 30–34) goes with every segment before it: the log passed retention.ms at",
			"once the high watermark 33 reaches the log end offset 35"},
	}, {
		name: "closed segments expired, the active one not yet: when it goes",
		snap: four(func(s *Snapshot) { s.Config.RetentionMs = 5 * hour }),
		now:  RetentionRange{Segments: 3, Bytes: 300, FromOffset: 0, ToOffset: 30, Reason: "retention.ms", DueMs: now},
		next: &RetentionRange{Segments: 3, Bytes: 300, FromOffset: 0, ToOffset: 30, Reason: "retention.ms", DueMs: now},
		why: []string{"the active segment (offsets 30–34) goes with every segment before it: the log passes retention.ms at " +
			time.UnixMilli(ago(1)+5*hour+1).UTC().Format(time.RFC3339Nano)},
	}, {
		name: "retention.bytes=0 deletes everything below the high watermark at the log end offset",
		snap: four(func(s *Snapshot) { s.Config.RetentionMs, s.Config.RetentionBytes = -1, 0 }),
		now:  RetentionRange{Segments: 4, Bytes: 400, FromOffset: 0, ToOffset: 35, Reason: "retention.bytes", DueMs: now},
		next: &RetentionRange{Segments: 4, Bytes: 400, FromOffset: 0, ToOffset: 35, Reason: "retention.bytes", DueMs: now},
		why:  []string{"retention.bytes=0 keeps nothing, so the active segment (offsets 30–34) goes too: the check rolls it"},
	}, {
		name: "retention.bytes=0 stops at the high watermark",
		snap: four(func(s *Snapshot) {
			s.Config.RetentionMs, s.Config.RetentionBytes, s.HighWatermark, s.LastStableOffset = -1, 0, 34, 34
		}),
		now:  RetentionRange{Segments: 3, Bytes: 300, FromOffset: 0, ToOffset: 30, Reason: "retention.bytes", DueMs: now},
		next: &RetentionRange{Segments: 3, Bytes: 300, FromOffset: 0, ToOffset: 30, Reason: "retention.bytes", DueMs: now},
	}, {
		name: "an empty active segment is never deleted by retention.ms",
		snap: func() Snapshot {
			s := planLog([]int64{0, 10, 20, 30}, []int64{100, 100, 100, 0}, []int64{ago(10), ago(8), ago(9), ago(5)}, 30)
			s.Config.RetentionMs = 0
			return s
		}(),
		now:  RetentionRange{Segments: 3, Bytes: 300, FromOffset: 0, ToOffset: 30, Reason: "retention.ms", DueMs: now},
		next: &RetentionRange{Segments: 3, Bytes: 300, FromOffset: 0, ToOffset: 30, Reason: "retention.ms", DueMs: now},
	}, {
		name: "an empty active segment is never deleted by retention.bytes=0",
		snap: func() Snapshot {
			s := planLog([]int64{0, 10, 20, 30}, []int64{100, 100, 100, 0}, []int64{ago(10), ago(8), ago(9), ago(5)}, 30)
			s.Config.RetentionMs, s.Config.RetentionBytes = -1, 0
			return s
		}(),
		now:  RetentionRange{Segments: 3, Bytes: 300, FromOffset: 0, ToOffset: 30, Reason: "retention.bytes", DueMs: now},
		next: &RetentionRange{Segments: 3, Bytes: 300, FromOffset: 0, ToOffset: 30, Reason: "retention.bytes", DueMs: now},
	}, {
		name: "an empty log after retention deleted everything",
		snap: func() Snapshot {
			s := planLog([]int64{35}, []int64{0}, []int64{ago(5)}, 35)
			s.Config.RetentionMs, s.Config.RetentionBytes = 0, 0
			return s
		}(),
		why: []string{"the log is empty"},
	}, {
		name: "nothing expired yet: the oldest goes first, with what expired behind it",
		snap: four(func(s *Snapshot) { s.Config.RetentionMs = 12 * hour }),
		// At ago(10)+12h+1ms segment 0 passes; segment 1 (ago 8) has not,
		// so the prefix stops there even though segment 2 is older.
		next: &RetentionRange{Segments: 1, Bytes: 100, FromOffset: 0, ToOffset: 10, Reason: "retention.ms", DueMs: ago(10) + 12*hour + 1},
		why: []string{"the oldest segment (offsets 0–9, largest timestamp " + time.UnixMilli(ago(10)).UTC().Format(time.RFC3339Nano) +
			") passes retention.ms=43200000 at " + time.UnixMilli(ago(10)+12*hour+1).UTC().Format(time.RFC3339Nano),
			"the retention check after that deletes 1 segment (100 bytes)", "retention.bytes=-1",
			"the active segment (offsets 30–34) goes with every segment before it: the log passes retention.ms at " +
				time.UnixMilli(ago(1)+12*hour+1).UTC().Format(time.RFC3339Nano)},
	}, {
		name: "nothing expired yet: segments out of timestamp order go together",
		snap: func() Snapshot {
			s := four(func(s *Snapshot) { s.Config.RetentionMs = 12 * hour })
			s.Segments[0].LargestTimestamp = ago(7)
			return s
		}(),
		next: &RetentionRange{Segments: 3, Bytes: 300, FromOffset: 0, ToOffset: 30, Reason: "retention.ms", DueMs: ago(7) + 12*hour + 1},
		why:  []string{"deletes 3 segments (300 bytes)"},
	}, {
		name: "retention.ms of Long.MaxValue never expires anything",
		snap: four(func(s *Snapshot) { s.Config.RetentionMs = math.MaxInt64 }),
		why:  []string{"retention.ms=9223372036854775807 never expires the oldest segment"},
	}, {
		name: "retention.bytes deletes the oldest segments that keep the log over it",
		snap: four(func(s *Snapshot) { s.Config.RetentionMs, s.Config.RetentionBytes = -1, 150 }),
		now:  RetentionRange{Segments: 2, Bytes: 200, FromOffset: 0, ToOffset: 20, Reason: "retention.bytes", DueMs: now},
		next: &RetentionRange{Segments: 2, Bytes: 200, FromOffset: 0, ToOffset: 20, Reason: "retention.bytes", DueMs: now},
		why:  []string{"the next retention check deletes 2 segments (offsets 0–19, 200 bytes): the log (400 bytes) is over retention.bytes=150"},
	}, {
		name: "retention.bytes after retention.ms",
		snap: four(func(s *Snapshot) { s.Config.RetentionMs, s.Config.RetentionBytes = 9*hour+1, 100 }),
		now:  RetentionRange{Segments: 3, Bytes: 300, FromOffset: 0, ToOffset: 30, Reason: "retention.bytes", DueMs: now},
		next: &RetentionRange{Segments: 3, Bytes: 300, FromOffset: 0, ToOffset: 30, Reason: "retention.bytes", DueMs: now},
	}, {
		name: "under retention.bytes",
		snap: four(func(s *Snapshot) { s.Config.RetentionMs, s.Config.RetentionBytes = -1, 1000 }),
		why:  []string{"retention.ms=-1", "the log (400 bytes) is 600 bytes under retention.bytes=1000"},
	}, {
		name: "over retention.bytes by less than the oldest segment",
		snap: four(func(s *Snapshot) { s.Config.RetentionMs, s.Config.RetentionBytes = -1, 350 }),
		why:  []string{"50 bytes over retention.bytes=350, less than its oldest segment's 100 bytes", "grows by 50 bytes"},
	}, {
		name: "unlimited retention",
		snap: four(func(s *Snapshot) { s.Config.RetentionMs, s.Config.RetentionBytes = -1, -1 }),
		why:  []string{"retention.ms=-1 and retention.bytes=-1"},
	}, {
		name: "compact only: no time or size retention",
		snap: four(func(s *Snapshot) { s.Config.Delete, s.Config.Compact, s.Config.RetentionMs = false, true, 0 }),
		why:  []string{"cleanup.policy=compact", "DeleteRecords"},
	}, {
		name: "compact only: segments below the log start offset still go",
		snap: four(func(s *Snapshot) { s.Config.Delete, s.Config.Compact, s.LogStartOffset = false, true, 25 }),
		now:  RetentionRange{Segments: 2, Bytes: 200, FromOffset: 0, ToOffset: 20, Reason: "log start offset", DueMs: now},
		next: &RetentionRange{Segments: 2, Bytes: 200, FromOffset: 0, ToOffset: 20, Reason: "log start offset", DueMs: now},
		why:  []string{"deletes 2 segments (offsets 0–19, 200 bytes): wholly below the log start offset 25"},
	}, {
		name: "retention.ms continues after the log start offset",
		snap: four(func(s *Snapshot) { s.LogStartOffset, s.Config.RetentionMs = 10, 8*hour-1 }),
		now:  RetentionRange{Segments: 3, Bytes: 300, FromOffset: 0, ToOffset: 30, Reason: "retention.ms", DueMs: now},
		next: &RetentionRange{Segments: 3, Bytes: 300, FromOffset: 0, ToOffset: 30, Reason: "retention.ms", DueMs: now},
	}, {
		name: "the high watermark holds back an expired segment",
		snap: four(func(s *Snapshot) { s.Config.RetentionMs, s.HighWatermark, s.LastStableOffset = 0, 25, 25 }),
		now:  RetentionRange{Segments: 2, Bytes: 200, FromOffset: 0, ToOffset: 20, Reason: "retention.ms", DueMs: now},
		next: &RetentionRange{Segments: 2, Bytes: 200, FromOffset: 0, ToOffset: 20, Reason: "retention.ms", DueMs: now},
	}, {
		name: "the oldest closed segment is not wholly committed",
		snap: four(func(s *Snapshot) { s.Config.RetentionMs, s.HighWatermark, s.LastStableOffset = 0, 5, 5 }),
		why:  []string{"the oldest closed segment (offsets 0–9) is not wholly below the high watermark 5"},
	}, {
		name: "only the active segment has data, past retention.ms: the check rolls it and deletes it",
		snap: func() Snapshot {
			s := planLog([]int64{0}, []int64{500}, []int64{ago(30)}, 7)
			s.Config.RetentionMs, s.ActiveRollMs = hour, now+hour
			return s
		}(),
		now:  RetentionRange{Segments: 1, Bytes: 500, FromOffset: 0, ToOffset: 7, Reason: "retention.ms", DueMs: now},
		next: &RetentionRange{Segments: 1, Bytes: 500, FromOffset: 0, ToOffset: 7, Reason: "retention.ms", DueMs: now},
		why: []string{"the next retention check deletes 1 segment (offsets 0–6, 500 bytes)",
			"the active segment (offsets 0–6) passed retention.ms at " + time.UnixMilli(ago(29)+1).UTC().Format(time.RFC3339Nano) +
				": the check rolls it (a new empty segment starts at the log end offset 7) and deletes it, so the log start offset becomes 7"},
	}, {
		name: "only the active segment has data, not yet past retention.ms: when it goes",
		snap: func() Snapshot {
			s := planLog([]int64{0}, []int64{500}, []int64{now - hour/2}, 7)
			s.Config.RetentionMs, s.ActiveRollMs = hour, now+hour
			return s
		}(),
		next: &RetentionRange{Segments: 1, Bytes: 500, FromOffset: 0, ToOffset: 7, Reason: "retention.ms", DueMs: now + hour/2 + 1},
		why: []string{"the active segment (offsets 0–6, largest timestamp " + time.UnixMilli(now-hour/2).UTC().Format(time.RFC3339Nano) +
			") passes retention.ms=3600000 at " + time.UnixMilli(now+hour/2+1).UTC().Format(time.RFC3339Nano),
			"the retention check after that deletes 1 segment (500 bytes), rolling the active segment first, so the log start offset becomes the log end offset 7"},
	}, {
		name: "only the active segment has data, not wholly committed",
		snap: func() Snapshot {
			s := planLog([]int64{0}, []int64{500}, []int64{ago(30)}, 7)
			s.Config.RetentionMs, s.HighWatermark, s.LastStableOffset = hour, 5, 5
			return s
		}(),
		why: []string{"the active segment (offsets 0–6) is not wholly below the high watermark 5"},
	}, {
		name: "only the active segment, over retention.bytes: it goes after it rolls",
		snap: func() Snapshot {
			s := planLog([]int64{0}, []int64{500}, []int64{now}, 7)
			s.Config.RetentionMs, s.Config.RetentionBytes, s.ActiveRollMs = -1, 200, now+hour
			return s
		}(),
		why: []string{"the log is 300 bytes over retention.bytes=200, all in the active segment", "segment.bytes=1073741824",
			"first append after " + time.UnixMilli(now+hour).UTC().Format(time.RFC3339Nano) + ", segment.ms=604800000"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanRetention(&tc.snap, now)
			if diff := cmp.Diff(tc.now, p.Now); diff != "" {
				t.Errorf("Now (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.next, p.Next); diff != "" {
				t.Errorf("Next (-want +got):\n%s", diff)
			}
			for _, w := range tc.why {
				if !strings.Contains(p.Why, w) {
					t.Errorf("Why %q\nlacks %q", p.Why, w)
				}
			}
			if p.Next != nil && p.Next.Segments > 0 {
				// The prediction is what a pass at its due time deletes.
				if at := PlanRetention(&tc.snap, p.Next.DueMs); at.Now.Segments != p.Next.Segments {
					t.Errorf("a pass at DueMs deletes %+v, predicted %+v", at.Now, *p.Next)
				}
				if p.Next.DueMs > now {
					if before := PlanRetention(&tc.snap, p.Next.DueMs-1); before.Now.Segments != 0 {
						t.Errorf("a pass 1ms before DueMs already deletes %+v", before.Now)
					}
				}
			}
		})
	}
}

// TestDeleteOldSegmentsFollowsPlan runs a log through time and checks each
// retention pass removes exactly the prefix RetentionPlan announced, and that
// the prediction made while nothing was due comes true at its time.
func TestDeleteOldSegmentsFollowsPlan(t *testing.T) {
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.RetentionMs = 3600_000
	cfg.FileDeleteDelayMs = 0
	l := openTest(t, vfs.NewMem(), clk, cfg, false)
	defer l.Close()
	for i := 0; i < 40; i++ {
		if _, err := l.Append(testBatch(t, 3, clk.Now().UnixMilli(), "k"), OriginClient, 0); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if l.NumSegments() < 4 {
		t.Fatalf("want several segments, have %d", l.NumSegments())
	}

	plan, err := l.RetentionPlan(clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if plan.Now.Segments != 0 || plan.Next == nil || plan.Next.Reason != "retention.ms" {
		t.Fatalf("fresh log: %+v", plan)
	}
	next := *plan.Next
	t.Logf("%d segments; plan: %s", l.NumSegments(), plan.Why)
	snap, err := l.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if want := snap.Segments[0].LargestTimestamp + cfg.RetentionMs + 1; next.DueMs != want {
		t.Fatalf("due %d, want largest timestamp + retention.ms + 1 = %d", next.DueMs, want)
	}

	check := func(at time.Time, wantSegments int) {
		t.Helper()
		plan, err := l.RetentionPlan(at)
		if err != nil {
			t.Fatal(err)
		}
		before, err := l.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		res, err := l.DeleteOldSegments(at)
		if err != nil {
			t.Fatal(err)
		}
		if res.Segments != plan.Now.Segments || res.Segments != wantSegments || res.Bytes != plan.Now.Bytes ||
			res.Reason != plan.Now.Reason {
			t.Fatalf("at %v: deleted %+v, plan %+v, want %d segments", at, res, plan.Now, wantSegments)
		}
		after, err := l.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		left := before.Segments[res.Segments:]
		if res.Segments == len(before.Segments) {
			// Every segment went: the pass rolled an empty one at the LEO
			// first, created now.
			left = []SegmentInfo{{BaseOffset: before.LogEndOffset, LargestTimestamp: clk.Now().UnixMilli()}}
		}
		if diff := cmp.Diff(left, after.Segments); diff != "" {
			t.Fatalf("segments left (-want +got):\n%s", diff)
		}
		if after.LogEndOffset != before.LogEndOffset {
			t.Fatalf("retention moved the LEO from %d to %d", before.LogEndOffset, after.LogEndOffset)
		}
		if res.Segments > 0 && (after.LogStartOffset != plan.Now.ToOffset || res.LogStartOffset != plan.Now.ToOffset) {
			t.Fatalf("log start offset %d (result %d), plan %d", after.LogStartOffset, res.LogStartOffset, plan.Now.ToOffset)
		}
	}
	check(time.UnixMilli(next.DueMs-1), 0)
	check(time.UnixMilli(next.DueMs), next.Segments)
	// Retention by size on top: keep about two segments' worth.
	snap, _ = l.Snapshot()
	cfg.RetentionBytes = snap.Segments[len(snap.Segments)-2].Size + snap.Segments[len(snap.Segments)-1].Size
	l.SetConfig(cfg)
	check(time.UnixMilli(next.DueMs), len(snap.Segments)-2)
	cfg.Delete, cfg.Compact = false, true
	l.SetConfig(cfg)
	plan, _ = l.RetentionPlan(clk.Now())
	if plan.Now.Segments != 0 || plan.Next != nil || !strings.Contains(plan.Why, "cleanup.policy=compact") {
		t.Fatalf("compacted log: %+v", plan)
	}
	// The rest goes by retention.ms, each prefix when the plan said, the
	// active segment last: rolled, so the log start offset becomes the LEO.
	cfg.RetentionBytes, cfg.Delete, cfg.Compact = -1, true, false
	l.SetConfig(cfg)
	at := time.UnixMilli(next.DueMs)
	for range 10 {
		plan, err := l.RetentionPlan(at)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Next == nil {
			if plan.Why != "the log is empty" {
				t.Fatalf("nothing predicted: %s", plan.Why)
			}
			break
		}
		snap, _ := l.Snapshot()
		if all := plan.Next.Segments == len(snap.Segments); all != strings.Contains(plan.Why, "rolling the active segment first") ||
			all != (plan.Next.ToOffset == snap.LogEndOffset) {
			t.Fatalf("%d segments, plan %+v", len(snap.Segments), plan)
		}
		at = time.UnixMilli(plan.Next.DueMs)
		check(at.Add(-time.Millisecond), 0)
		check(at, plan.Next.Segments)
	}
	if snap, _ := l.Snapshot(); len(snap.Segments) != 1 || snap.Segments[0].Size != 0 || snap.LogStartOffset != snap.LogEndOffset {
		t.Fatalf("after the last segments went: %+v", snap)
	}
}

// TestSnapshotLSONotBelowLogStart: DeleteRecords may move the log start
// offset past the first offset of a transaction still open (it is bounded by
// the high watermark only); the last stable offset then is the log start
// offset, as in Kafka, so a Snapshot keeps log start ≤ LSO ≤ HW ≤ LEO.
func TestSnapshotLSONotBelowLogStart(t *testing.T) {
	clk := clock.NewFake(t0)
	l := openTest(t, vfs.NewMem(), clk, smallConfig(), false)
	defer l.Close()
	spec := &record.BatchSpec{Transactional: true, ProducerID: 7, ProducerEpoch: 0, BaseSequence: 0}
	for i := range 3 {
		spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: t0.UnixMilli(), Value: []byte("t")})
	}
	txn, err := record.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, txn, 0) // offsets 0-2, transaction left open
	mustAppend(t, l, testBatch(t, 5, t0.UnixMilli(), "k"), 0)
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.IncrementLogStartOffset(4); err != nil {
		t.Fatal(err)
	}
	s, err := l.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !(s.LogStartOffset <= s.LastStableOffset && s.LastStableOffset <= s.HighWatermark && s.HighWatermark <= s.LogEndOffset) {
		t.Fatalf("log start %d, LSO %d, HW %d, LEO %d: out of order", s.LogStartOffset, s.LastStableOffset, s.HighWatermark, s.LogEndOffset)
	}
	if s.LastStableOffset != 4 {
		t.Fatalf("LSO %d, want the log start offset 4 (the open transaction began below it)", s.LastStableOffset)
	}
	if got := l.LastStableOffset(); got != 4 {
		t.Fatalf("LastStableOffset() %d, want 4 as in the snapshot", got)
	}
}
