package log

import (
	"fmt"
	"sort"

	"github.com/gregor-broker/gregor/internal/record"
)

// segmentFor returns the index in segs of the last segment whose base offset
// is <= offset, or -1.
func segmentFor(segs []*segment, offset int64) int {
	return sort.Search(len(segs), func(i int) bool { return segs[i].baseOffset > offset }) - 1
}

// Read appends to dst the raw bytes of whole batches starting with the batch
// that contains offset, stopping before maxOffset (exclusive: the high
// watermark, last stable offset or log end offset, depending on the reader)
// and after about maxBytes. When minOneBatch is set the first batch is
// returned whole even if it alone exceeds maxBytes (KIP-74). Reading at the
// log end offset, or at maxOffset, returns nothing. Offsets below the log start
// offset or above the log end offset are ErrOffsetOutOfRange.
func (l *Log) Read(dst []byte, offset int64, maxBytes int, maxOffset int64, minOneBatch bool) ([]byte, error) {
	segs := l.segments()
	leo := l.leo.Load()
	if offset < l.logStart.Load() || offset > leo {
		return dst, fmt.Errorf("%w: offset %d, log start offset %d, log end offset %d",
			ErrOffsetOutOfRange, offset, l.logStart.Load(), leo)
	}
	if maxOffset > leo {
		maxOffset = leo
	}
	if offset >= maxOffset {
		return dst, nil
	}
	for i := max(segmentFor(segs, offset), 0); i < len(segs); i++ {
		s := segs[i]
		if s.baseOffset >= maxOffset {
			return dst, nil
		}
		size := s.size.Load()
		start, ok, err := s.findBatch(offset, size)
		if err != nil {
			return dst, err
		}
		if !ok {
			continue // compacted away, or offset past this segment: try the next
		}
		if start.hdr.BaseOffset >= maxOffset {
			return dst, nil
		}
		limit := size
		if maxOffset < leo {
			if end, ok, err := s.findBatch(maxOffset, size); err != nil {
				return dst, err
			} else if ok {
				limit = end.pos
			}
		}
		want := limit - start.pos
		if want > int64(maxBytes) {
			want = int64(maxBytes)
			if want < int64(start.hdr.Size()) {
				if !minOneBatch {
					return dst, nil
				}
				want = int64(start.hdr.Size())
			}
		}
		n := len(dst)
		dst = append(dst, make([]byte, want)...)
		if _, err := s.readAt(dst[n:], start.pos); err != nil {
			return dst[:n], fmt.Errorf("read %s: %w", s.path(LogSuffix), err)
		}
		return dst[:n+wholeBatches(dst[n:])], nil
	}
	return dst, nil
}

// wholeBatches is the length of the prefix of b made of complete batches.
func wholeBatches(b []byte) int {
	n := 0
	for {
		batch, rest, ok := record.Split(b[n:])
		if !ok {
			return n
		}
		n += len(batch)
		_ = rest
	}
}

// TimestampOffset is a ListOffsets answer.
type TimestampOffset struct {
	Timestamp   int64
	Offset      int64
	LeaderEpoch int32
}

// FindOffsetByTimestamp returns the first record at or after ts (ListOffsets
// by timestamp): the offset of the earliest record whose timestamp is >= ts.
// ok is false when no record is that late.
func (l *Log) FindOffsetByTimestamp(ts int64) (TimestampOffset, bool, error) {
	segs := l.segments()
	logStart := l.logStart.Load()
	for _, s := range segs {
		l.mu.Lock()
		segMax := s.maxTimestamp
		l.mu.Unlock()
		if segMax < ts {
			continue
		}
		from := max(s.timeIndex.lookup(ts), logStart)
		_, pos := s.index.lookup(from)
		var found *batchPos
		if err := s.scanFrom(pos, s.size.Load(), func(bp batchPos) bool {
			if bp.hdr.LastOffset() >= from && bp.hdr.MaxTimestamp >= ts {
				found = &bp
				return false
			}
			return true
		}); err != nil {
			return TimestampOffset{}, false, err
		}
		if found == nil {
			continue
		}
		return l.recordAtOrAfter(s, found, func(rts int64) bool { return rts >= ts }, logStart)
	}
	return TimestampOffset{}, false, nil
}

// recordAtOrAfter finds the first record of the batch at bp matching pred.
func (l *Log) recordAtOrAfter(s *segment, bp *batchPos, pred func(int64) bool, logStart int64) (TimestampOffset, bool, error) {
	h := bp.hdr
	if h.LogAppendTime() {
		return TimestampOffset{Timestamp: h.MaxTimestamp, Offset: max(h.BaseOffset, logStart), LeaderEpoch: h.LeaderEpoch}, true, nil
	}
	buf := make([]byte, h.Size())
	if _, err := s.readAt(buf, bp.pos); err != nil {
		return TimestampOffset{}, false, err
	}
	var out TimestampOffset
	found := false
	err := record.Iterate(buf, int(l.config().MaxMessageBytes)*64+(1<<20), func(r *record.Record) error {
		off := h.BaseOffset + int64(r.OffsetDelta)
		rts := h.BaseTimestamp + r.TimestampDelta
		if off >= logStart && pred(rts) {
			out = TimestampOffset{Timestamp: rts, Offset: off, LeaderEpoch: h.LeaderEpoch}
			found = true
			return errStop
		}
		return nil
	})
	if err != nil && err != errStop {
		return TimestampOffset{}, false, err
	}
	return out, found, nil
}

var errStop = fmt.Errorf("stop")

// MaxTimestampOffset is ListOffsets' MAX_TIMESTAMP (-3): the offset and
// timestamp of the record with the largest timestamp (the first such record).
func (l *Log) MaxTimestampOffset() (TimestampOffset, bool, error) {
	var best *segment
	var bestTS, bestOff int64 = -1, -1
	l.mu.Lock()
	for _, s := range l.segments() {
		if s.maxTimestamp > bestTS {
			best, bestTS, bestOff = s, s.maxTimestamp, s.offsetOfMaxTimestamp
		}
	}
	l.mu.Unlock()
	if best == nil {
		return TimestampOffset{}, false, nil
	}
	bp, ok, err := best.findBatch(bestOff, best.size.Load())
	if err != nil || !ok {
		return TimestampOffset{}, false, err
	}
	return l.recordAtOrAfter(best, &bp, func(rts int64) bool { return rts == bestTS }, l.logStart.Load())
}

// EpochForOffset is the leader epoch of the record at offset, from the
// leader-epoch cache (-1 when unknown).
func (l *Log) EpochForOffset(offset int64) int32 {
	epoch := int32(-1)
	for _, e := range l.epochs.snapshot() {
		if e.StartOffset > offset {
			break
		}
		epoch = e.Epoch
	}
	return epoch
}
