package log

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// This file is retention's decision, kept apart from its I/O: PlanRetention
// is a pure function of a Snapshot and a time. DeleteOldSegments deletes
// exactly the prefix it names, and the admin API and `gregor why retention`
// show the same plan, so what they say goes next is what the next pass
// removes.

// SegmentInfo is one segment as a Snapshot saw it.
type SegmentInfo struct {
	BaseOffset int64
	Size       int64 // bytes of the .log file
	// LargestTimestamp is what retention.ms measures: the largest batch max
	// timestamp, or the segment's creation (or file modification) time when
	// no batch has one.
	LargestTimestamp int64
}

// Snapshot is a consistent view of a log's offsets and segments, taken under
// Log.mu: what a retention pass decides on, and what the admin API shows.
type Snapshot struct {
	// Segments, oldest first; the last is the active segment.
	Segments         []SegmentInfo
	LogStartOffset   int64
	LastStableOffset int64
	HighWatermark    int64
	LogEndOffset     int64
	RecoveryPoint    int64
	// ActiveRollMs is when segment.ms lets the active segment roll: the first
	// append of a batch with a max timestamp at or after it (before any batch:
	// the first append at or after it) starts a new segment. math.MaxInt64
	// when never.
	ActiveRollMs int64
	Config       Config
}

// Snapshot returns the log's offsets and segments as they are now.
func (l *Log) Snapshot() (Snapshot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return Snapshot{}, ErrClosed
	}
	return l.snapshotLocked(), nil
}

func (l *Log) snapshotLocked() Snapshot {
	segs := l.segments()
	s := Snapshot{
		Segments:       make([]SegmentInfo, len(segs)),
		LogStartOffset: l.logStart.Load(),
		HighWatermark:  l.hw.Load(),
		LogEndOffset:   l.leo.Load(),
		RecoveryPoint:  l.RecoveryPoint(),
		Config:         *l.config(),
	}
	s.LastStableOffset = s.HighWatermark
	if fu, ok := l.producers.firstUnstableOffset(); ok && fu < s.LastStableOffset {
		// DeleteRecords may pass an open transaction's first offset (it is
		// bounded by the HW only); as in Kafka the LSO is then the log start.
		s.LastStableOffset = max(fu, s.LogStartOffset)
	}
	for i, seg := range segs {
		s.Segments[i] = SegmentInfo{BaseOffset: seg.baseOffset, Size: seg.size.Load(), LargestTimestamp: seg.largestTimestamp()}
	}
	act := segs[len(segs)-1]
	from := act.createdMs
	if act.firstBatchMaxTimestamp >= 0 {
		from = act.firstBatchMaxTimestamp
	}
	// shouldRoll rolls once the wait exceeds segment.ms minus the jitter.
	s.ActiveRollMs = addMs(from, s.Config.SegmentMs-act.rollJitterMs, 1)
	return s
}

// RetentionRange is a prefix of a log's segments that retention deletes.
type RetentionRange struct {
	Segments   int
	Bytes      int64
	FromOffset int64 // base offset of the first segment deleted
	ToOffset   int64 // base offset of the first segment kept: the new log start offset
	// Reason is what deletes the range: "log start offset", "retention.ms"
	// or "retention.bytes" (the last rule that extended it).
	Reason string
	// DueMs is the unix ms from which a retention pass deletes the range.
	DueMs int64
}

// RetentionPlan is what retention does to a log.
type RetentionPlan struct {
	// Now is the prefix a retention pass at the planned time deletes;
	// Segments is 0 when it deletes nothing.
	Now RetentionRange
	// Next is Now when Now has segments; otherwise the prefix that goes first
	// as time passes (retention.ms), with the time it becomes due, assuming
	// no more data arrives. Nil when nothing will go without more data.
	Next *RetentionRange
	// Why is a plain sentence: what goes and why, or why nothing does and
	// which config or event would change that.
	Why string
}

// RetentionPlan is the plan for a retention pass at now.
func (l *Log) RetentionPlan(now time.Time) (RetentionPlan, error) {
	s, err := l.Snapshot()
	if err != nil {
		return RetentionPlan{}, err
	}
	return PlanRetention(&s, now.UnixMilli()), nil
}

// PlanRetention decides what a retention pass at nowMs deletes from a log in
// state s, Kafka's UnifiedLog.deleteOldSegments: with any cleanup.policy the
// segments wholly below the log start offset; with cleanup.policy=delete then
// the oldest segments whose largest timestamp is more than retention.ms
// before nowMs, then the oldest that keep the log over retention.bytes. Only
// a prefix of closed segments wholly below the high watermark is ever
// deleted, never the active segment.
func PlanRetention(s *Snapshot, nowMs int64) RetentionPlan {
	var p RetentionPlan
	n, reason := retentionPrefix(s, nowMs)
	p.Now = s.retentionRange(n, reason, nowMs)
	if n > 0 {
		next := p.Now
		p.Next = &next
		p.Why = s.dueWhy(p.Now)
		return p
	}
	p.Next, p.Why = s.notDue()
	return p
}

// retentionPrefix is the number of leading segments a pass at nowMs deletes,
// and the rule that deleted the last of them.
func retentionPrefix(s *Snapshot, nowMs int64) (int, string) {
	segs, cfg := s.Segments, &s.Config
	n, reason := 0, ""
	for n < len(segs)-1 && segs[n+1].BaseOffset <= s.LogStartOffset {
		n, reason = n+1, "log start offset"
	}
	if cfg.Delete && cfg.RetentionMs >= 0 {
		k := n
		for s.deletable(k) && nowMs-segs[k].LargestTimestamp > cfg.RetentionMs {
			k++
		}
		if k > n {
			n, reason = k, "retention.ms"
		}
	}
	if cfg.Delete && cfg.RetentionBytes >= 0 {
		var total int64
		for _, seg := range segs[n:] {
			total += seg.Size
		}
		diff := total - cfg.RetentionBytes
		k := n
		for s.deletable(k) && diff-segs[k].Size >= 0 {
			diff -= segs[k].Size
			k++
		}
		if k > n {
			n, reason = k, "retention.bytes"
		}
	}
	return n, reason
}

// deletable: segment i is closed and every offset in it is below the HW.
func (s *Snapshot) deletable(i int) bool {
	return i < len(s.Segments)-1 && s.Segments[i+1].BaseOffset <= s.HighWatermark
}

func (s *Snapshot) retentionRange(n int, reason string, dueMs int64) RetentionRange {
	if n == 0 {
		return RetentionRange{}
	}
	r := RetentionRange{Segments: n, FromOffset: s.Segments[0].BaseOffset, ToOffset: s.Segments[n].BaseOffset,
		Reason: reason, DueMs: dueMs}
	for _, seg := range s.Segments[:n] {
		r.Bytes += seg.Size
	}
	return r
}

func (s *Snapshot) size() int64 {
	var n int64
	for _, seg := range s.Segments {
		n += seg.Size
	}
	return n
}

// dueWhy explains a range the next pass deletes.
func (s *Snapshot) dueWhy(r RetentionRange) string {
	what := fmt.Sprintf("%s (offsets %s, %d bytes)", plural(r.Segments, "segment"), offsetSpan(r.FromOffset, r.ToOffset), r.Bytes)
	switch r.Reason {
	case "log start offset":
		return fmt.Sprintf("the next retention check deletes %s: wholly below the log start offset %d", what, s.LogStartOffset)
	case "retention.ms":
		return fmt.Sprintf("the next retention check deletes %s: largest timestamps older than retention.ms=%d", what, s.Config.RetentionMs)
	default:
		return fmt.Sprintf("the next retention check deletes %s: the log (%d bytes) is over retention.bytes=%d",
			what, s.size(), s.Config.RetentionBytes)
	}
}

// notDue explains why a pass now deletes nothing, and predicts what goes
// first as time passes.
func (s *Snapshot) notDue() (*RetentionRange, string) {
	segs, cfg := s.Segments, &s.Config
	active := segs[len(segs)-1]
	switch {
	case len(segs) == 1 && active.Size == 0:
		return nil, "the log is empty"
	case !cfg.Delete:
		return nil, fmt.Sprintf("cleanup.policy=%s: retention.ms and retention.bytes do not apply; only DeleteRecords "+
			"(moving the log start offset) removes segments", policyName(cfg))
	case cfg.RetentionMs < 0 && cfg.RetentionBytes < 0:
		return nil, "retention.ms=-1 and retention.bytes=-1: retention deletes nothing; set either to bound the log"
	case len(segs) == 1:
		return nil, fmt.Sprintf("only the active segment has data (offsets %s, %d bytes); retention deletes closed segments only, "+
			"and the active one rolls when it reaches segment.bytes=%d or at the first append after %s (segment.ms=%d)",
			offsetSpan(active.BaseOffset, s.LogEndOffset), active.Size, cfg.SegmentBytes, formatMs(s.ActiveRollMs), cfg.SegmentMs)
	case !s.deletable(0):
		return nil, fmt.Sprintf("the oldest closed segment (offsets %s) is not wholly below the high watermark %d; "+
			"retention deletes only committed segments", offsetSpan(segs[0].BaseOffset, segs[1].BaseOffset), s.HighWatermark)
	}
	var next *RetentionRange
	var why []string
	if cfg.RetentionMs >= 0 {
		due := addMs(segs[0].LargestTimestamp, cfg.RetentionMs, 1)
		if due == math.MaxInt64 {
			why = append(why, fmt.Sprintf("retention.ms=%d never expires the oldest segment", cfg.RetentionMs))
		} else {
			n, reason := retentionPrefix(s, due)
			r := s.retentionRange(n, reason, due)
			next = &r
			why = append(why, fmt.Sprintf("the oldest segment (offsets %s, largest timestamp %s) passes retention.ms=%d at %s; "+
				"the retention check after that deletes %s (%d bytes)", offsetSpan(segs[0].BaseOffset, segs[1].BaseOffset), formatMs(segs[0].LargestTimestamp),
				cfg.RetentionMs, formatMs(due), plural(r.Segments, "segment"), r.Bytes))
		}
	} else {
		why = append(why, "retention.ms=-1")
	}
	switch total := s.size(); {
	case cfg.RetentionBytes < 0:
		why = append(why, "retention.bytes=-1")
	case total <= cfg.RetentionBytes:
		why = append(why, fmt.Sprintf("the log (%d bytes) is %d bytes under retention.bytes=%d",
			total, cfg.RetentionBytes-total, cfg.RetentionBytes))
	default:
		over := total - cfg.RetentionBytes
		why = append(why, fmt.Sprintf("the log is %d bytes over retention.bytes=%d, less than its oldest segment's %d bytes; "+
			"that segment goes once the log grows by %d bytes", over, cfg.RetentionBytes, segs[0].Size, segs[0].Size-over))
	}
	return next, strings.Join(why, "; ")
}

func policyName(cfg *Config) string {
	switch {
	case cfg.Compact && cfg.Delete:
		return "compact,delete"
	case cfg.Compact:
		return "compact"
	case cfg.Delete:
		return "delete"
	}
	return `""`
}

// addMs is a+b+c, saturating at math.MaxInt64 (retention.ms and segment.ms
// may be Long.MaxValue).
func addMs(a, b, c int64) int64 {
	sum := a
	for _, d := range []int64{b, c} {
		if d > 0 && sum > math.MaxInt64-d {
			return math.MaxInt64
		}
		sum += d
	}
	return sum
}

func formatMs(ms int64) string {
	if ms == math.MaxInt64 {
		return "never"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

// offsetSpan shows [from, to) as the offsets it holds.
func offsetSpan(from, to int64) string {
	if to <= from {
		return fmt.Sprintf("none from %d", from)
	}
	return fmt.Sprintf("%d–%d", from, to-1)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
