package cleaner

import (
	"fmt"
	"math"
	"sort"

	"github.com/gregor-broker/gregor/internal/topicpart"
)

// This file is the cleaner's decision logic: which part of a log may be
// cleaned, whether it should be, and which log goes first. It is a pure
// function of its inputs (no clock, no files), as Kafka's
// LogCleanerManager.cleanableOffsets, maxCompactionDelay and
// grabFilthiestCompactedLog are.

// Reason says where and why the cleanable part of a log stops.
type Reason string

// Reasons the cleanable range stops (the first uncleanable offset).
const (
	// The active segment is never cleaned.
	ReasonActiveSegment Reason = "active segment"
	// A segment holds a record younger than min.compaction.lag.ms.
	ReasonMinCompactionLag Reason = "min.compaction.lag.ms"
	// An open transaction holds the last stable offset back.
	ReasonOpenTransaction Reason = "open transaction (last stable offset)"
	// Records at and above the high watermark are not yet committed.
	ReasonHighWatermark Reason = "high watermark"
)

// SegmentState is what the decision needs to know of one segment.
type SegmentState struct {
	BaseOffset int64
	Size       int64
	// LargestTimestamp: the largest record timestamp (Kafka's
	// LogSegment.largestTimestamp), compared with min.compaction.lag.ms.
	LargestTimestamp int64
	// FirstBatchTimestamp: the first batch's max timestamp, compared with
	// max.compaction.lag.ms; -1 when unknown or empty.
	FirstBatchTimestamp int64
	OffsetIndexBytes    int64
	TimeIndexBytes      int64
}

// LogState is one log as the cleaner sees it at one instant.
type LogState struct {
	Segments         []SegmentState // oldest first; the last is the active segment
	LogStartOffset   int64
	LastStableOffset int64
	HighWatermark    int64
	LogEndOffset     int64
	// CleanerPoint is the offset from cleaner-offset-checkpoint, -1 if none.
	CleanerPoint int64

	Compact                bool
	MinCleanableDirtyRatio float64
	MinCompactionLagMs     int64
	MaxCompactionLagMs     int64

	InProgress bool
	// RetryAtMs: after a failure the partition is uncleanable until then (0: not failed).
	RetryAtMs int64
	// DeleteHorizonMs: the earliest delete horizon the last cleaning left on
	// a tombstone or transaction marker batch (0: none known). When it has
	// passed the log is cleaned again even without new dirty bytes, so the
	// tombstones go.
	DeleteHorizonMs int64
}

// Assessment is the verdict on one log.
type Assessment struct {
	// FirstDirtyOffset is where cleaning starts: the cleaner point, or the
	// log start offset when there is none or it is out of range.
	FirstDirtyOffset int64
	// ResetCleanerPoint: the checkpointed cleaner point was outside [log
	// start offset, log end offset] and should be rewritten.
	ResetCleanerPoint bool
	// FirstUncleanableOffset is where the cleanable range ends: the base
	// offset of the first segment that may not be cleaned, and why.
	FirstUncleanableOffset int64
	UncleanableReason      Reason

	CleanBytes       int64 // segments below the first dirty offset
	DirtyBytes       int64 // cleanable: from the first dirty to the first uncleanable offset
	UncleanableBytes int64 // from the first uncleanable offset to the log end
	DirtyRatio       float64

	// MaxCompactionDelayMs: how long the oldest dirty record has waited
	// beyond max.compaction.lag.ms (0 if none has).
	MaxCompactionDelayMs int64
	NeedCompactionNow    bool
	HorizonPassed        bool // a delete horizon from the last cleaning has passed

	// Eligible: the log is a candidate this round; Why says why or why not.
	Eligible bool
	Why      string
	// NextEligibleMs: when the log becomes a candidate if nothing else is
	// written (now if Eligible; -1 if only more writes can make it one).
	NextEligibleMs int64
}

// Assess decides on one log at time nowMs (Kafka's cleanableOffsets,
// calculateCleanableBytes and maxCompactionDelay).
func Assess(s LogState, nowMs int64) Assessment {
	var a Assessment
	if len(s.Segments) == 0 {
		a.Why, a.NextEligibleMs = "log has no segments", -1
		return a
	}
	a.FirstDirtyOffset = s.CleanerPoint
	switch {
	case s.CleanerPoint < 0:
		a.FirstDirtyOffset = s.LogStartOffset
	case s.CleanerPoint < s.LogStartOffset || s.CleanerPoint > s.LogEndOffset:
		a.FirstDirtyOffset, a.ResetCleanerPoint = s.LogStartOffset, true
	}
	limit, reason := uncleanableLimit(s, nowMs, a.FirstDirtyOffset, true)
	a.FirstUncleanableOffset, a.UncleanableReason = floorBase(s.Segments, max(limit, a.FirstDirtyOffset)), reason
	a.CleanBytes, a.DirtyBytes, a.UncleanableBytes = byteSplit(s.Segments, a.FirstDirtyOffset, a.FirstUncleanableOffset)
	if total := a.CleanBytes + a.DirtyBytes; total > 0 {
		a.DirtyRatio = float64(a.DirtyBytes) / float64(total)
	}
	a.MaxCompactionDelayMs = maxCompactionDelay(s, a.FirstDirtyOffset, nowMs)
	a.NeedCompactionNow = a.MaxCompactionDelayMs > 0
	a.HorizonPassed = s.DeleteHorizonMs > 0 && s.DeleteHorizonMs <= nowMs && a.CleanBytes > 0
	a.Eligible, a.Why = eligibility(s, &a, nowMs)
	a.NextEligibleMs = nextEligible(s, &a, nowMs)
	return a
}

// uncleanableLimit is the smallest offset that may not be cleaned and why:
// the last stable offset (itself at most the high watermark), the active
// segment, and, with lag, the first dirty closed segment holding a record
// younger than min.compaction.lag.ms. On ties the reason listed first wins.
func uncleanableLimit(s LogState, nowMs, firstDirty int64, lag bool) (int64, Reason) {
	active := s.Segments[len(s.Segments)-1]
	limit, reason := active.BaseOffset, ReasonActiveSegment
	if lag && s.MinCompactionLagMs > 0 {
		for _, seg := range closedFrom(s.Segments, firstDirty) {
			if seg.LargestTimestamp > nowMs-s.MinCompactionLagMs {
				if seg.BaseOffset < limit {
					limit, reason = seg.BaseOffset, ReasonMinCompactionLag
				}
				break
			}
		}
	}
	if s.LastStableOffset < limit {
		limit, reason = s.LastStableOffset, ReasonOpenTransaction
		if s.LastStableOffset >= s.HighWatermark {
			reason = ReasonHighWatermark
		}
	}
	return limit, reason
}

// closedFrom returns the closed segments from the one holding offset on.
func closedFrom(segs []SegmentState, offset int64) []SegmentState {
	closed := segs[:len(segs)-1]
	i := max(floorIndex(closed, offset), 0)
	return closed[i:]
}

// floorIndex is the index of the last segment whose base is <= offset, -1 if none.
func floorIndex(segs []SegmentState, offset int64) int {
	return sort.Search(len(segs), func(i int) bool { return segs[i].BaseOffset > offset }) - 1
}

// floorBase rounds offset down to the base of the segment holding it
// (Kafka's floorLogSegment): cleaning works on whole segments.
func floorBase(segs []SegmentState, offset int64) int64 {
	if i := floorIndex(segs, offset); i >= 0 {
		return segs[i].BaseOffset
	}
	return offset
}

// byteSplit sums segment sizes as Kafka's LogToClean does: a segment
// starting at or above uncleanable is uncleanable; one from the segment
// holding firstDirty on is dirty; those before are clean.
func byteSplit(segs []SegmentState, firstDirty, uncleanable int64) (clean, dirty, rest int64) {
	dirtyFrom := floorBase(segs, firstDirty)
	for _, seg := range segs {
		switch {
		case seg.BaseOffset >= uncleanable:
			rest += seg.Size
		case seg.BaseOffset >= dirtyFrom:
			dirty += seg.Size
		default:
			clean += seg.Size
		}
	}
	return clean, dirty, rest
}

// maxCompactionDelay is how far past max.compaction.lag.ms the oldest dirty
// closed segment's first batch is.
func maxCompactionDelay(s LogState, firstDirty, nowMs int64) int64 {
	earliest := int64(math.MaxInt64)
	for _, seg := range closedFrom(s.Segments, firstDirty) {
		if seg.FirstBatchTimestamp > 0 && seg.FirstBatchTimestamp < earliest {
			earliest = seg.FirstBatchTimestamp
		}
	}
	if earliest == math.MaxInt64 || s.MaxCompactionLagMs <= 0 {
		return 0
	}
	cleanUntil := nowMs - s.MaxCompactionLagMs
	if s.MaxCompactionLagMs > nowMs { // no overflow below zero
		return 0
	}
	if earliest < cleanUntil {
		return cleanUntil - earliest
	}
	return 0
}

func eligibility(s LogState, a *Assessment, nowMs int64) (bool, string) {
	switch {
	case !s.Compact:
		return false, "cleanup.policy does not include compact"
	case s.InProgress:
		return false, "being cleaned"
	case s.RetryAtMs > nowMs:
		return false, "uncleanable after an error; retried later"
	case a.CleanBytes+a.DirtyBytes == 0:
		return false, "nothing to clean below the " + string(a.UncleanableReason)
	case a.NeedCompactionNow && a.DirtyBytes > 0:
		return true, fmt.Sprintf("a record has waited %d ms past max.compaction.lag.ms=%d",
			a.MaxCompactionDelayMs, s.MaxCompactionLagMs)
	case a.DirtyRatio > s.MinCleanableDirtyRatio:
		return true, fmt.Sprintf("dirty ratio %.3f above min.cleanable.dirty.ratio=%g", a.DirtyRatio, s.MinCleanableDirtyRatio)
	case a.HorizonPassed:
		return true, "the delete horizon of tombstones or transaction markers has passed"
	}
	return false, fmt.Sprintf("dirty ratio %.3f not above min.cleanable.dirty.ratio=%g", a.DirtyRatio, s.MinCleanableDirtyRatio)
}

// nextEligible is when the log would become a candidate with no more writes.
func nextEligible(s LogState, a *Assessment, nowMs int64) int64 {
	if !s.Compact {
		return -1
	}
	if s.RetryAtMs > nowMs {
		return s.RetryAtMs
	}
	if a.Eligible || s.InProgress {
		return nowMs
	}
	next := int64(-1)
	earlier := func(t int64) {
		if t > nowMs && (next < 0 || t < next) {
			next = t
		}
	}
	if s.DeleteHorizonMs > nowMs {
		earlier(s.DeleteHorizonMs)
	}
	// max.compaction.lag.ms: the oldest dirty closed segment's first batch.
	if s.MaxCompactionLagMs > 0 && s.MaxCompactionLagMs < math.MaxInt64/2 {
		for _, seg := range closedFrom(s.Segments, a.FirstDirtyOffset) {
			if seg.FirstBatchTimestamp > 0 {
				earlier(seg.FirstBatchTimestamp + s.MaxCompactionLagMs + 1)
				break
			}
		}
	}
	// min.compaction.lag.ms holding back segments that would tip the ratio.
	if a.UncleanableReason == ReasonMinCompactionLag {
		limit, _ := uncleanableLimit(s, nowMs, a.FirstDirtyOffset, false)
		end := floorBase(s.Segments, max(limit, a.FirstDirtyOffset))
		clean, dirty, _ := byteSplit(s.Segments, a.FirstDirtyOffset, end)
		if clean+dirty > 0 && float64(dirty)/float64(clean+dirty) > s.MinCleanableDirtyRatio {
			var youngest int64
			for _, seg := range closedFrom(s.Segments, a.FirstUncleanableOffset) {
				if seg.BaseOffset >= end {
					break
				}
				youngest = max(youngest, seg.LargestTimestamp)
			}
			earlier(youngest + s.MinCompactionLagMs + 1)
		}
	}
	return next
}

// Candidate is one log's assessment, named for selection.
type Candidate struct {
	topicpart.TopicPartition
	Assessment Assessment
	// Excluded: being cleaned or uncleanable; it counts for nothing, not
	// even the dirtiest ratio (as in Kafka).
	Excluded bool
}

// Filthiest picks the log to clean next, Kafka's grabFilthiestCompactedLog:
// the eligible log with the highest dirty ratio (ties go to the smallest
// topic-partition, so the choice is deterministic). It returns -1 when no
// log is eligible, and the highest dirty ratio of the logs not excluded
// (Kafka's max-dirty-percent gauge).
func Filthiest(cands []Candidate) (int, float64) {
	best, dirtiest := -1, 0.0
	for i, c := range cands {
		a := &c.Assessment
		if c.Excluded {
			continue
		}
		dirtiest = max(dirtiest, a.DirtyRatio)
		if !a.Eligible {
			continue
		}
		if best < 0 || better(c, cands[best]) {
			best = i
		}
	}
	return best, dirtiest
}

func better(a, b Candidate) bool {
	if a.Assessment.DirtyRatio != b.Assessment.DirtyRatio {
		return a.Assessment.DirtyRatio > b.Assessment.DirtyRatio
	}
	return topicpart.Compare(a.TopicPartition, b.TopicPartition) < 0
}

// groupSegments is Kafka's groupSegmentsBySize: consecutive segments are
// merged into one cleaned segment while the sum of their sizes stays within
// maxSize, their offset and time index sizes within maxIndexSize, and their
// offsets within 2^31 of the group's base offset. nextBase(i) is the base
// offset of the segment after segs[i] in the log. Empty segments are left
// alone (a cleaned segment must reach into its group's last segment).
func groupSegments(segs []SegmentState, nextBase func(i int) int64, maxSize, maxIndexSize int64) [][]int {
	var groups [][]int
	for i := 0; i < len(segs); {
		if segs[i].Size == 0 {
			i++
			continue
		}
		g := []int{i}
		size, idx, tidx := segs[i].Size, segs[i].OffsetIndexBytes, segs[i].TimeIndexBytes
		base := segs[i].BaseOffset
		i++
		for i < len(segs) && segs[i].Size > 0 &&
			size+segs[i].Size <= maxSize &&
			idx+segs[i].OffsetIndexBytes <= maxIndexSize &&
			tidx+segs[i].TimeIndexBytes <= maxIndexSize &&
			nextBase(i)-1-base <= math.MaxInt32 {
			g = append(g, i)
			size += segs[i].Size
			idx += segs[i].OffsetIndexBytes
			tidx += segs[i].TimeIndexBytes
			i++
		}
		groups = append(groups, g)
	}
	return groups
}

// uncleanableBackoffMs is how long a partition stays uncleanable after its
// n-th consecutive failure: twice log.cleaner.backoff.ms (at least a
// second), doubling, at most an hour.
func uncleanableBackoffMs(backoffMs int64, failures int) int64 {
	const maxMs = 3600_000
	d := max(backoffMs, 1000) * 2
	for i := 1; i < failures && d < maxMs; i++ {
		d *= 2
	}
	return min(d, maxMs)
}
