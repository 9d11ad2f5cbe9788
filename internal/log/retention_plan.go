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
	// Segments, oldest first; the last is the active segment. There is
	// always at least one.
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
	s.LastStableOffset = l.lsoLocked()
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
// When it is every segment, the active one included, the pass first rolls a
// new empty active segment at the log end offset, as Kafka does, so the log
// keeps one segment and ToOffset is the log end offset.
type RetentionRange struct {
	Segments   int
	Bytes      int64
	FromOffset int64 // base offset of the first segment deleted
	// ToOffset is the base offset of the first segment kept (the log end
	// offset when every segment goes): the new log start offset.
	ToOffset int64
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
// before nowMs, then the oldest that keep the log over retention.bytes. As in
// Kafka's deletableSegments the walk includes the active segment: a segment
// may go when every offset in it is below the high watermark (for the active
// one: the high watermark is the log end offset) and it is not the active
// segment with no bytes. So a prefix is deleted, and it is every segment only
// when the active one holds expired, committed data; DeleteOldSegments then
// rolls a new active segment first.
func PlanRetention(s *Snapshot, nowMs int64) RetentionPlan {
	var p RetentionPlan
	n, reason := retentionPrefix(s, nowMs)
	p.Now = s.retentionRange(n, reason, nowMs)
	if n > 0 {
		next := p.Now
		p.Next = &next
		p.Why = s.dueWhy(p.Now, nowMs)
		return p
	}
	p.Next, p.Why = s.notDue(nowMs)
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

// deletable is Kafka's bound on what retention may delete: every offset in
// segment i is below the high watermark (so the log start offset never
// passes it), and segment i is not the active segment with no bytes, which
// deleting would only re-create.
func (s *Snapshot) deletable(i int) bool {
	switch last := len(s.Segments) - 1; {
	case i > last:
		return false
	case i == last && s.Segments[i].Size == 0:
		return false
	}
	return s.upperBound(i) <= s.HighWatermark
}

// upperBound is the offset after segment i: the next segment's base offset,
// or the log end offset for the active segment.
func (s *Snapshot) upperBound(i int) int64 {
	if i+1 < len(s.Segments) {
		return s.Segments[i+1].BaseOffset
	}
	return s.LogEndOffset
}

func (s *Snapshot) isActive(i int) bool { return i == len(s.Segments)-1 }

func (s *Snapshot) retentionRange(n int, reason string, dueMs int64) RetentionRange {
	if n == 0 {
		return RetentionRange{}
	}
	r := RetentionRange{Segments: n, FromOffset: s.Segments[0].BaseOffset, ToOffset: s.upperBound(n - 1),
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

// dueWhy explains a range the next pass at nowMs deletes.
func (s *Snapshot) dueWhy(r RetentionRange, nowMs int64) string {
	what := fmt.Sprintf("%s (offsets %s, %d bytes)", plural(r.Segments, "segment"), offsetSpan(r.FromOffset, r.ToOffset), r.Bytes)
	var why string
	switch r.Reason {
	case "log start offset":
		why = fmt.Sprintf("the next retention check deletes %s: wholly below the log start offset %d", what, s.LogStartOffset)
	case "retention.ms":
		why = fmt.Sprintf("the next retention check deletes %s: largest timestamps older than retention.ms=%d", what, s.Config.RetentionMs)
	default:
		why = fmt.Sprintf("the next retention check deletes %s: the log (%d bytes) is over retention.bytes=%d",
			what, s.size(), s.Config.RetentionBytes)
	}
	if s.isActive(r.Segments - 1) {
		return why + "; " + s.activeGoes(r.Reason)
	}
	if w := s.activeExpiry(r.Segments, nowMs); w != "" {
		why += "; " + w
	}
	return why
}

// activeGoes explains a range that ends with the active segment.
func (s *Snapshot) activeGoes(reason string) string {
	act := s.Segments[len(s.Segments)-1]
	// retention.bytes takes the last segment only when the log without it
	// is still at least retention.bytes: retention.bytes=0.
	what := fmt.Sprintf("retention.bytes=%d keeps nothing, so the active segment (offsets %s) goes too",
		s.Config.RetentionBytes, offsetSpan(act.BaseOffset, s.LogEndOffset))
	if reason == "retention.ms" {
		what = fmt.Sprintf("the active segment (offsets %s) passed retention.ms at %s",
			offsetSpan(act.BaseOffset, s.LogEndOffset), formatMs(addMs(act.LargestTimestamp, s.Config.RetentionMs, 1)))
	}
	return fmt.Sprintf("%s: the check rolls it (a new empty segment starts at the log end offset %d) and deletes it, "+
		"so the log start offset becomes %d", what, s.LogEndOffset, s.LogEndOffset)
}

// activeExpiry says when retention.ms takes the active segment, if segments
// from on are left and the active one has data: retention deletes a prefix,
// so the active segment goes at the first check after retention.ms has
// passed for the newest largest timestamp among them, and only once the high
// watermark has reached the log end offset. "" when retention.ms does not
// apply or never expires it.
func (s *Snapshot) activeExpiry(from int, nowMs int64) string {
	segs, cfg := s.Segments, &s.Config
	act := segs[len(segs)-1]
	if !cfg.Delete || cfg.RetentionMs < 0 || act.Size == 0 || from >= len(segs) {
		return ""
	}
	newest := int64(math.MinInt64)
	for _, seg := range segs[from:] {
		newest = max(newest, seg.LargestTimestamp)
	}
	due := addMs(newest, cfg.RetentionMs, 1)
	if due == math.MaxInt64 {
		return ""
	}
	verb := "passes retention.ms at %s (the newest largest timestamp, %s, with retention.ms=%d)"
	if due <= nowMs {
		verb = "passed retention.ms at %s (the newest largest timestamp, %s, with retention.ms=%d)"
	}
	w := fmt.Sprintf("the active segment (offsets %s) goes with every segment before it: the log "+verb+
		"; the check after that rolls the active segment and deletes it", offsetSpan(act.BaseOffset, s.LogEndOffset),
		formatMs(due), formatMs(newest), cfg.RetentionMs)
	if s.HighWatermark < s.LogEndOffset {
		w += fmt.Sprintf(", once the high watermark %d reaches the log end offset %d", s.HighWatermark, s.LogEndOffset)
	}
	return w
}

// oldestName names the oldest segment in a sentence.
func (s *Snapshot) oldestName() string {
	if s.isActive(0) {
		return "the active segment"
	}
	return "the oldest segment"
}

// notDue explains why a pass at nowMs deletes nothing, and predicts what
// goes first as time passes.
func (s *Snapshot) notDue(nowMs int64) (*RetentionRange, string) {
	segs, cfg := s.Segments, &s.Config
	switch {
	case len(segs) == 1 && segs[0].Size == 0:
		return nil, "the log is empty"
	case !cfg.Delete:
		return nil, fmt.Sprintf("cleanup.policy=%s: retention.ms and retention.bytes do not apply; only DeleteRecords "+
			"(moving the log start offset) removes segments", policyName(cfg))
	case cfg.RetentionMs < 0 && cfg.RetentionBytes < 0:
		return nil, "retention.ms=-1 and retention.bytes=-1: retention deletes nothing; set either to bound the log"
	case !s.deletable(0):
		name := "the oldest closed segment"
		if s.isActive(0) {
			name = "the active segment"
		}
		return nil, fmt.Sprintf("%s (offsets %s) is not wholly below the high watermark %d; "+
			"retention deletes only committed segments", name, offsetSpan(segs[0].BaseOffset, s.upperBound(0)), s.HighWatermark)
	}
	var next *RetentionRange
	var why []string
	if cfg.RetentionMs >= 0 {
		due := addMs(segs[0].LargestTimestamp, cfg.RetentionMs, 1)
		if due == math.MaxInt64 {
			why = append(why, fmt.Sprintf("retention.ms=%d never expires %s", cfg.RetentionMs, s.oldestName()))
		} else {
			n, reason := retentionPrefix(s, due)
			r := s.retentionRange(n, reason, due)
			next = &r
			w := fmt.Sprintf("%s (offsets %s, largest timestamp %s) passes retention.ms=%d at %s; "+
				"the retention check after that deletes %s (%d bytes)", s.oldestName(), offsetSpan(segs[0].BaseOffset, s.upperBound(0)),
				formatMs(segs[0].LargestTimestamp), cfg.RetentionMs, formatMs(due), plural(r.Segments, "segment"), r.Bytes)
			if s.isActive(n - 1) {
				w += fmt.Sprintf(", rolling the active segment first, so the log start offset becomes the log end offset %d", s.LogEndOffset)
			}
			why = append(why, w)
			if w := s.activeExpiry(n, nowMs); w != "" {
				why = append(why, w)
			}
		}
	} else {
		why = append(why, "retention.ms=-1")
	}
	why = append(why, s.bytesNotDue())
	return next, strings.Join(why, "; ")
}

// bytesNotDue explains why retention.bytes deletes nothing now.
func (s *Snapshot) bytesNotDue() string {
	segs, cfg := s.Segments, &s.Config
	switch total := s.size(); {
	case cfg.RetentionBytes < 0:
		return "retention.bytes=-1"
	case total <= cfg.RetentionBytes:
		return fmt.Sprintf("the log (%d bytes) is %d bytes under retention.bytes=%d",
			total, cfg.RetentionBytes-total, cfg.RetentionBytes)
	case len(segs) == 1:
		// A segment goes only when the log without it still reaches
		// retention.bytes: never the only one while retention.bytes > 0.
		return fmt.Sprintf("the log is %d bytes over retention.bytes=%d, all in the active segment; a segment goes only when "+
			"the segments after it hold retention.bytes, so it goes after it rolls (at segment.bytes=%d or the first append after %s, "+
			"segment.ms=%d) and %d more bytes arrive", total-cfg.RetentionBytes, cfg.RetentionBytes, cfg.SegmentBytes,
			formatMs(s.ActiveRollMs), cfg.SegmentMs, cfg.RetentionBytes)
	default:
		over := total - cfg.RetentionBytes
		return fmt.Sprintf("the log is %d bytes over retention.bytes=%d, less than its oldest segment's %d bytes; "+
			"that segment goes once the log grows by %d bytes", over, cfg.RetentionBytes, segs[0].Size, segs[0].Size-over)
	}
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
