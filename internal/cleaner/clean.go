package cleaner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
)

// errStopped: the cleaner is stopping; the round is abandoned, not failed.
var errStopped = errors.New("cleaner stopped")

// RunStats describes one cleaning of one log.
type RunStats struct {
	StartMs           int64   `json:"start_ms"`
	DurationMs        int64   `json:"duration_ms"`
	FirstDirtyOffset  int64   `json:"first_dirty_offset"`
	EndOffset         int64   `json:"end_offset"` // the new cleaner point
	UpperBound        int64   `json:"upper_bound_offset"`
	MapFull           bool    `json:"offset_map_full"` // the dirty range had more keys than the map: continued next round
	MapUtilization    float64 `json:"offset_map_utilization"`
	MapRecordsRead    int64   `json:"offset_map_records_read"`
	MapBytesRead      int64   `json:"offset_map_bytes_read"`
	BytesRead         int64   `json:"bytes_read"` // by pass 2 (the recopy)
	BytesWritten      int64   `json:"bytes_written"`
	RecordsRead       int64   `json:"records_read"`
	RecordsRemoved    int64   `json:"records_removed"`
	TombstonesRemoved int64   `json:"tombstones_removed"`
	SegmentsRead      int     `json:"segments_read"`
	SegmentsWritten   int     `json:"segments_written"`
	DeleteHorizonMs   int64   `json:"earliest_delete_horizon_ms,omitempty"`
	ThrottledMs       int64   `json:"throttled_ms,omitempty"`
	RecopyPercent     float64 `json:"recopy_percent"`
}

// worker is one cleaner thread's reusable state: its offset map and I/O
// buffers (log.cleaner.dedupe.buffer.size and log.cleaner.io.buffer.size
// divided among the threads).
type worker struct {
	id       int
	offsets  *offsetMap
	readBuf  []byte
	ioBuf    int
	clock    clock.Clock
	throttle *throttler
	last     RunStats
	lastSet  bool
	codecs   codecs
}

// round is one cleaning of one log.
type round struct {
	w     *worker
	ctx   context.Context
	l     *log.Log
	snap  log.CleanSnapshot
	a     Assessment
	nowMs int64
	stats RunStats
	pass1 bool // reads count as the offset map's
}

func (rd *round) maxOut() int { return max(int(rd.snap.Config.MaxMessageBytes), 1<<20) * 64 }

func (rd *round) onRead(n int) error {
	if rd.pass1 {
		rd.stats.MapBytesRead += int64(n)
	} else {
		rd.stats.BytesRead += int64(n)
	}
	return rd.w.throttle.maybeThrottle(rd.ctx, n)
}

func (rd *round) nextBase(i int) int64 {
	if i+1 < len(rd.snap.Segments) {
		return rd.snap.Segments[i+1].BaseOffset
	}
	return math.MaxInt64
}

// clean runs both passes and swaps the cleaned segments in. It returns the
// new cleaner point in stats.EndOffset.
func (rd *round) clean() error {
	segs := rd.snap.Segments
	start, upper := rd.a.FirstDirtyOffset, rd.a.FirstUncleanableOffset
	rd.stats.StartMs, rd.stats.FirstDirtyOffset, rd.stats.UpperBound = rd.nowMs, start, upper
	rd.pass1 = true
	aborted, err := rd.buildOffsetMap(start, upper)
	rd.pass1 = false
	if err != nil {
		return err
	}
	end := rd.w.offsets.latest + 1
	rd.stats.EndOffset = end
	rd.stats.MapUtilization = rd.w.offsets.utilization()
	env := &filterEnv{nowMs: rd.nowMs, deleteRetentionMs: rd.snap.Config.DeleteRetentionMs, offsets: rd.w.offsets,
		producers: rd.l.LastRecordsOfActiveProducers(), txns: newCleanedTxns(aborted), maxOut: rd.maxOut(),
		codecs: &rd.w.codecs}
	n := 0
	for n < len(segs)-1 && segs[n].BaseOffset < end {
		n++
	}
	states := make([]SegmentState, n)
	for i := range states {
		states[i] = SegmentState{BaseOffset: segs[i].BaseOffset, Size: segs[i].Size,
			OffsetIndexBytes: segs[i].OffsetIndexBytes, TimeIndexBytes: segs[i].TimeIndexBytes}
	}
	cfg := rd.snap.Config
	for _, g := range groupSegments(states, rd.nextBase, cfg.SegmentBytes, int64(cfg.SegmentIndexBytes)) {
		if err := rd.cleanGroup(env, g, end); err != nil {
			return err
		}
	}
	if rd.stats.BytesRead > 0 {
		rd.stats.RecopyPercent = 100 * float64(rd.stats.BytesWritten) / float64(rd.stats.BytesRead)
	}
	return nil
}

// buildOffsetMap is pass 1: the offset map over [start, upper), stopping
// early when it is full. It returns the aborted transactions of the range.
// A transaction whose outcome the first scan could not know (its marker
// beyond where the scan stopped, or its aborted records already mapped)
// costs a header scan of the range and a second pass that stops before any
// transaction without a marker below upper.
func (rd *round) buildOffsetMap(start, upper int64) ([]abortedTxn, error) {
	scan := newTxnScan(nil)
	if err := rd.mapRange(start, upper, scan); err != nil {
		return nil, err
	}
	scan.finish()
	if !scan.redo {
		return scan.aborted, nil
	}
	headers := newTxnScan(nil)
	if err := rd.walkRange(start, upper, func(batch []byte, h *record.Header) (bool, error) {
		if h.Control() {
			headers.marker(h, controlTypeOf(batch, rd.maxOut()))
		} else {
			headers.dataBatch(h)
		}
		return true, nil
	}); err != nil {
		return nil, err
	}
	end := upper
	if firstUnknown := headers.finish(); firstUnknown >= 0 {
		end = min(end, firstUnknown)
	}
	final := newTxnScan(headers.aborted)
	rd.stats.MapRecordsRead = 0
	if err := rd.mapRange(start, end, final); err != nil {
		return nil, err
	}
	return headers.aborted, nil
}

// mapRange fills the offset map from [start, end), Kafka's
// buildOffsetMapForSegment over every dirty segment. Records are mapped in
// order until one with a new key does not fit; the map then covers exactly
// the records up to the one before it (latest, perhaps in the middle of a
// batch), and the next round starts there. A map with room for one key
// always progresses.
func (rd *round) mapRange(start, end int64, scan *txnScan) error {
	m := rd.w.offsets
	m.reset(start)
	rd.stats.MapFull = false
	full := false
	err := rd.walkRange(start, end, func(batch []byte, h *record.Header) (bool, error) {
		if h.LastOffset() < start {
			return true, nil
		}
		if h.Control() {
			scan.marker(h, controlTypeOf(batch, rd.maxOut()))
			m.latest = max(m.latest, h.LastOffset())
			return true, nil
		}
		if scan.dataBatch(h) {
			m.latest = max(m.latest, h.LastOffset())
			return true, nil
		}
		put := false
		err := rd.w.codecs.iterate(batch, h, rd.maxOut(), func(r *record.Record) error {
			off := h.BaseOffset + int64(r.OffsetDelta)
			if off < start {
				return nil
			}
			if r.Key != nil && !m.put(r.Key, off) {
				full = true
				return errFirstRecord
			}
			rd.stats.MapRecordsRead++
			put = put || r.Key != nil
			m.latest = max(m.latest, off)
			return nil
		})
		if err != nil && err != errFirstRecord {
			return false, fmt.Errorf("%w: batch at offset %d: %v", log.ErrCorruptSegment, h.BaseOffset, err)
		}
		if put && h.Transactional() {
			scan.mapped(h.ProducerID)
		}
		if full {
			rd.stats.MapFull = true
			return false, nil
		}
		m.latest = max(m.latest, h.LastOffset())
		return true, nil
	}, func(segEnd int64) {
		if !full {
			m.latest = max(m.latest, segEnd-1)
		}
	})
	if err == nil && m.latest >= end {
		err = fmt.Errorf("offset map reached %d past the end of the dirty range %d", m.latest, end)
	}
	return err
}

// walkRange calls fn for every batch of the segments holding [start, end)
// from the one holding start, stopping at the first batch at or past end or
// when fn returns false; segDone, if given, is called after each segment
// walked whole with its end (min of the next base offset and end).
func (rd *round) walkRange(start, end int64, fn func(batch []byte, h *record.Header) (bool, error), segDone ...func(segEnd int64)) error {
	segs := rd.snap.Segments
	for i := max(floorSegment(segs, start), 0); i < len(segs)-1 && segs[i].BaseOffset < end; i++ {
		seg := segs[i]
		pos := int64(0)
		if seg.BaseOffset <= start {
			pos = seg.PositionFor(start)
		}
		rd.stats.SegmentsRead++
		r := newBatchReader(seg, pos, rd.nextBase(i), &rd.w.readBuf, rd.onRead)
		for {
			if err := rd.ctx.Err(); err != nil {
				return errStopped
			}
			batch, h, err := r.nextBatch()
			if err == io.EOF {
				break
			}
			if err != nil {
				return rd.readErr(seg, err)
			}
			if h.BaseOffset >= end {
				return nil
			}
			more, err := fn(batch, &h)
			if err != nil || !more {
				return err
			}
		}
		for _, f := range segDone {
			f(min(rd.nextBase(i), end))
		}
	}
	return nil
}

// readErr tells a segment removed or cut under the reader (retention,
// DeleteRecords, truncation: the round is abandoned) from damage.
func (rd *round) readErr(seg log.Segment, err error) error {
	if !rd.l.SegmentsLive([]log.Segment{seg}) {
		return fmt.Errorf("%w: %v", log.ErrSegmentsChanged, err)
	}
	return err
}

func floorSegment(segs []log.Segment, offset int64) int {
	i := -1
	for k, s := range segs {
		if s.BaseOffset > offset {
			break
		}
		i = k
	}
	return i
}

// cleanGroup is pass 2 for one group of segments: every batch is recopied
// into <base>.log.cleaned, filtered when below end (the new cleaner point)
// and verbatim above it, then the cleaned segment replaces the group.
func (rd *round) cleanGroup(env *filterEnv, group []int, end int64) error {
	segs := rd.snap.Segments
	first := segs[group[0]]
	w, err := rd.l.NewCleanedSegment(first.BaseOffset, rd.w.ioBuf)
	if err != nil {
		return err
	}
	old := make([]log.Segment, 0, len(group))
	unchanged := true
	var last record.Header
	aborted, err := groupAborted(segs, group)
	if err != nil {
		w.Abort()
		return err
	}
	for _, i := range group {
		old = append(old, segs[i])
		rd.stats.SegmentsRead++
		r := newBatchReader(segs[i], 0, rd.nextBase(i), &rd.w.readBuf, rd.onRead)
		for {
			if err := rd.ctx.Err(); err != nil {
				w.Abort()
				return errStopped
			}
			batch, h, err := r.nextBatch()
			if err == io.EOF {
				break
			}
			if err != nil {
				w.Abort()
				return rd.readErr(segs[i], err)
			}
			last = h
			out := batch
			if h.BaseOffset < end {
				f, err := env.filter(batch, &h)
				if err != nil {
					w.Abort()
					return err
				}
				rd.stats.RecordsRead += int64(f.records)
				rd.stats.RecordsRemoved += int64(f.removed)
				rd.stats.TombstonesRemoved += int64(f.tombstonesRemoved)
				if f.horizonMs > 0 && (rd.stats.DeleteHorizonMs == 0 || f.horizonMs < rd.stats.DeleteHorizonMs) {
					rd.stats.DeleteHorizonMs = f.horizonMs
				}
				unchanged = unchanged && f.verbatim
				out = f.out
			}
			if out == nil {
				continue
			}
			if err := w.Append(out); err != nil {
				w.Abort()
				return err
			}
			if a, ok := aborted[h.BaseOffset]; ok && h.Control() && keepsRecords(out) {
				if err := w.AppendAborted(a); err != nil {
					w.Abort()
					return err
				}
			}
		}
	}
	// The cleaned segment ends where the group did: when the group's last
	// batch went, an empty batch keeps its offsets. So a crash between the
	// swap's renames cannot leave the group's last segment's old batches
	// after the new ones (the .swap file covers the whole group), and a
	// consumer reaching the end of the group moves on to the next segment
	// even when that one is empty.
	if w.NextOffset() <= last.BaseOffset && last.Length > 0 {
		if err := w.Append(emptyBatch(&last, false)); err != nil {
			w.Abort()
			return err
		}
	}
	if unchanged && len(group) == 1 {
		w.Abort() // byte for byte the same: leave the segment alone
		return nil
	}
	written := w.Size()
	if err := rd.l.ReplaceSegments(w, old); err != nil {
		return err
	}
	rd.stats.BytesWritten += written
	rd.stats.SegmentsWritten++
	return rd.w.throttle.maybeThrottle(rd.ctx, int(written))
}

// cleanLog runs one cleaning of l with this worker. nowMs is the time the
// round decided with.
func (w *worker) cleanLog(ctx context.Context, l *log.Log, snap log.CleanSnapshot, a Assessment, nowMs int64) (RunStats, error) {
	rd := &round{w: w, ctx: ctx, l: l, snap: snap, a: a, nowMs: nowMs}
	start := w.clock.Now()
	before := w.throttle.slept()
	err := rd.clean()
	rd.stats.DurationMs = w.clock.Now().Sub(start).Milliseconds()
	rd.stats.ThrottledMs = (w.throttle.slept() - before).Milliseconds()
	if cap(w.readBuf) > 4*w.ioBuf {
		w.readBuf = make([]byte, w.ioBuf) // give back a buffer grown for one huge batch
	}
	return rd.stats, err
}

// slept is the total time the throttler has slept.
func (t *throttler) slept() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.throttle
}

// groupAborted maps the ABORT markers of a group's segments to their
// aborted-transaction index entries, so those the cleaning keeps keep their
// entries (Kafka re-appends them to the cleaned segment's index).
func groupAborted(segs []log.Segment, group []int) (map[int64]log.AbortedTxn, error) {
	var out map[int64]log.AbortedTxn
	for _, i := range group {
		entries, err := segs[i].AbortedTxns()
		if err != nil {
			return nil, err
		}
		for _, a := range entries {
			if out == nil {
				out = make(map[int64]log.AbortedTxn)
			}
			out[a.LastOffset] = a
		}
	}
	return out, nil
}

// keepsRecords reports whether a batch written to a cleaned segment still
// has records (an emptied batch keeps only a producer's offsets).
func keepsRecords(batch []byte) bool {
	h, err := record.ParseHeader(batch)
	return err == nil && h.NumRecords > 0
}
