package log

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"

	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
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
//
// Read is Locate then Span.AppendTo; a caller that wants to pick the buffer
// once it knows the size calls those itself.
func (l *Log) Read(dst []byte, offset int64, maxBytes int, maxOffset int64, minOneBatch bool) ([]byte, error) {
	sp, err := l.Locate(offset, maxBytes, maxOffset, minOneBatch)
	if err != nil || sp.Size() == 0 {
		return dst, err
	}
	return sp.AppendTo(dst)
}

// A Span is the part of one segment file a read returns, located but not yet
// read: Size bytes starting at a batch boundary, of which AppendTo keeps the
// whole batches below the read's bound. The zero Span is empty.
type Span struct {
	seg       *segment
	pos       int64
	size      int
	maxOffset int64
	// whole: the span is known to hold only whole batches below maxOffset.
	whole bool
	// next is, for a whole span, an offset at or after the end of its last
	// batch and at most the next batch's base offset (-1 when not known).
	next int64
}

// Size is the number of bytes AppendTo reads; it returns at most that many.
func (sp Span) Size() int { return sp.size }

// Locate finds the bytes Read(nil, offset, maxBytes, maxOffset, minOneBatch)
// returns without reading them, with the same errors.
func (l *Log) Locate(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) (Span, error) {
	// The log end offset is loaded before the segment list: the appender
	// publishes a new segment before it writes into it, so every batch below
	// leo is in this view. Segment sizes are loaded later still and may take
	// in batches appended since; AppendTo cuts those off.
	leo := l.leo.Load()
	segs := l.segments()
	if logStart := l.logStart.Load(); offset < logStart || offset > leo {
		return Span{}, fmt.Errorf("%w: offset %d, log start offset %d, log end offset %d",
			ErrOffsetOutOfRange, offset, logStart, leo)
	}
	if maxOffset > leo {
		maxOffset = leo
	}
	if offset >= maxOffset {
		return Span{}, nil
	}
	for i := max(segmentFor(segs, offset), 0); i < len(segs); i++ {
		s := segs[i]
		if s.baseOffset >= maxOffset {
			return Span{}, nil
		}
		size := s.size.Load()
		start, ok, err := s.findBatch(offset, size)
		if err != nil {
			return Span{}, err
		}
		if !ok {
			continue // compacted away, or offset past this segment: try the next
		}
		if start.hdr.LastOffset() >= maxOffset {
			return Span{}, nil // the batch holding maxOffset is never returned
		}
		want := size - start.pos
		// The rest of a segment that a later one follows at or below
		// maxOffset is whole batches below maxOffset.
		whole := i+1 < len(segs) && segs[i+1].baseOffset <= maxOffset
		next := int64(-1)
		if whole {
			next = segs[i+1].baseOffset
		}
		if want > int64(maxBytes) {
			want, whole, next = max(int64(maxBytes), 0), false, -1
			if want < int64(start.hdr.Size()) {
				if !minOneBatch {
					return Span{}, nil
				}
				want, whole, next = int64(start.hdr.Size()), true, start.hdr.NextOffset()
			}
		}
		return Span{seg: s, pos: start.pos, size: int(want), maxOffset: maxOffset, whole: whole, next: next}, nil
	}
	return Span{}, nil
}

// AppendTo reads the span and appends its whole batches below the read's
// bound to dst. It allocates only when dst lacks room for Size more bytes,
// and never clears the bytes it reads into.
func (sp Span) AppendTo(dst []byte) ([]byte, error) {
	if sp.size == 0 {
		return dst, nil
	}
	n := len(dst)
	dst = slices.Grow(dst, sp.size)[:n+sp.size]
	if _, err := sp.seg.readAt(dst[n:], sp.pos); err != nil {
		return dst[:n], fmt.Errorf("read %s: %w", sp.seg.path(LogSuffix), err)
	}
	return dst[:n+batchesBelow(dst[n:], sp.maxOffset)], nil
}

// Whole returns the span cut to exactly the bytes AppendTo would keep: whole
// batches, all below the read's bound. It reads no record data, only batch
// headers from the last offset index entry before the span's end (a few KiB
// at most, index.interval.bytes apart), so a caller can size a response
// before reading it and read it later, piece by piece (ReadAt).
func (sp Span) Whole() (Span, error) {
	if sp.size == 0 || sp.whole {
		sp.whole = true
		return sp, nil
	}
	s := sp.seg
	end := sp.pos + int64(sp.size)
	// Every batch before the one a found entry points at ends before it
	// and has smaller offsets: the scan starts at the earlier of the last
	// entry at or before end and the last one wholly below maxOffset.
	from := sp.pos
	if _, p, ok := s.index.lookupPosition(end); ok {
		_, q := s.index.lookup(sp.maxOffset - 1)
		from = max(from, min(p, q))
	}
	cut, next := from, int64(-1)
	err := s.scanFrom(from, s.size.Load(), func(bp batchPos) bool {
		if bp.pos+int64(bp.hdr.Size()) > end || bp.hdr.LastOffset() >= sp.maxOffset {
			return false
		}
		cut, next = bp.pos+int64(bp.hdr.Size()), bp.hdr.NextOffset()
		return true
	})
	if err != nil {
		return Span{}, err
	}
	sp.size, sp.whole, sp.next = int(cut-sp.pos), true, next
	return sp, nil
}

// NextOffset is, for a span Whole returned, an offset after its last batch
// and no later than the base offset of the batch that follows: the upper
// bound of the aborted transactions a read_committed reader of the span
// needs (AbortedTransactions). It is -1 for an empty span.
func (sp Span) NextOffset() int64 {
	if sp.size == 0 {
		return -1
	}
	return sp.next
}

// NextOffsetOf is the offset after the last whole batch in b (-1 if none).
func NextOffsetOf(b []byte) int64 {
	next := int64(-1)
	for len(b) > 0 {
		batch, rest, ok := record.Split(b)
		if !ok || len(batch) < record.HeaderSize {
			break
		}
		next = int64(binary.BigEndian.Uint64(batch[0:])) + int64(int32(binary.BigEndian.Uint32(batch[23:]))) + 1
		b = rest
	}
	return next
}

// ReadAt reads len(p) bytes of the span from byte off of it (io.ReaderAt),
// straight from the segment file; meant for a span from Whole. The segment's
// bytes below what Locate saw never change, and a removed segment's file
// stays readable for file.delete.delay.ms.
func (sp Span) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(sp.size) {
		return 0, fmt.Errorf("read at %d of a %d-byte span", off, sp.size)
	}
	if rest := int64(sp.size) - off; int64(len(p)) > rest {
		p = p[:rest]
		n, err := sp.seg.readAt(p, sp.pos+off)
		if err == nil {
			err = io.EOF
		}
		return n, err
	}
	return sp.seg.readAt(p, sp.pos+off)
}

// File returns the segment file and the span's position in it, so the
// bytes ReadAt gives can be sent with sendfile(2) (server.FileBody); ok is
// false when the file is not an operating system file (MemFS). The file is
// the segment's own: it must only be read at explicit offsets.
func (sp Span) File() (*os.File, int64, bool) {
	if sp.seg == nil {
		return nil, 0, false
	}
	f, ok := vfs.OSFile(sp.seg.file)
	return f, sp.pos, ok
}

// batchesBelow is the length of the prefix of b made of complete batches
// whose last offset is below maxOffset.
func batchesBelow(b []byte, maxOffset int64) int {
	n := 0
	for {
		batch, _, ok := record.Split(b[n:])
		if !ok || len(batch) < record.HeaderSize {
			return n
		}
		last := int64(binary.BigEndian.Uint64(batch[0:])) + int64(int32(binary.BigEndian.Uint32(batch[23:])))
		if last >= maxOffset {
			return n
		}
		n += len(batch)
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
		// The batch reaches ts, but perhaps only with records below the log
		// start offset: then the answer lies further on.
		res, ok, err := l.recordAtOrAfter(s, found, func(rts int64) bool { return rts >= ts }, logStart)
		if err != nil || ok {
			return res, ok, err
		}
		if res, ok, err = l.findInSegmentAfter(s, found, ts, logStart); err != nil || ok {
			return res, ok, err
		}
	}
	return TimestampOffset{}, false, nil
}

// findInSegmentAfter continues FindOffsetByTimestamp in s after the batch at bp.
func (l *Log) findInSegmentAfter(s *segment, bp *batchPos, ts, logStart int64) (TimestampOffset, bool, error) {
	var res TimestampOffset
	var found bool
	var ierr error
	err := s.scanFrom(bp.pos+int64(bp.hdr.Size()), s.size.Load(), func(next batchPos) bool {
		if next.hdr.MaxTimestamp < ts || next.hdr.LastOffset() < logStart {
			return true
		}
		res, found, ierr = l.recordAtOrAfter(s, &next, func(rts int64) bool { return rts >= ts }, logStart)
		return ierr == nil && !found
	})
	if err == nil {
		err = ierr
	}
	return res, found, err
}

// recordAtOrAfter finds the first record of the batch at bp matching pred.
func (l *Log) recordAtOrAfter(s *segment, bp *batchPos, pred func(int64) bool, logStart int64) (TimestampOffset, bool, error) {
	h := bp.hdr
	if h.LogAppendTime() {
		// Every record has the append time; the first one not below the
		// log start offset, if the batch has one.
		off := max(h.BaseOffset, logStart)
		if off > h.LastOffset() || !pred(h.MaxTimestamp) {
			return TimestampOffset{}, false, nil
		}
		return TimestampOffset{Timestamp: h.MaxTimestamp, Offset: off, LeaderEpoch: h.LeaderEpoch}, true, nil
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
