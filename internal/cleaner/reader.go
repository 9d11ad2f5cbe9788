package cleaner

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
)

// batchReader walks the batches of one segment with large sequential reads
// into a reusable buffer (log.cleaner.io.buffer.size split per worker),
// growing it for a batch larger than the buffer. Every batch is checked
// (header, CRC, offsets increasing and below limit, the next segment's base
// offset); damage is log.ErrCorruptSegment.
type batchReader struct {
	seg      log.Segment
	buf      *[]byte
	lo, hi   int   // unread bytes are (*buf)[lo:hi]
	filePos  int64 // file position of (*buf)[hi]
	next     int64 // offset the next batch must start at or after
	limit    int64 // offsets must stay below this
	onRead   func(n int) error
	batchPos int64 // position of the batch last returned
}

func newBatchReader(seg log.Segment, pos, limit int64, buf *[]byte, onRead func(int) error) *batchReader {
	return &batchReader{seg: seg, buf: buf, filePos: pos, limit: limit, onRead: onRead}
}

func (r *batchReader) corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s at position %d: %s", log.ErrCorruptSegment, r.seg.Path(), r.batchPos, fmt.Sprintf(format, args...))
}

// nextBatch returns the next batch (aliasing the buffer until the next
// call) and its header, or io.EOF at the end of the segment.
func (r *batchReader) nextBatch() ([]byte, record.Header, error) {
	for {
		b := *r.buf
		avail := r.hi - r.lo
		r.batchPos = r.filePos - int64(avail)
		need := record.LogOverhead
		if avail >= record.LogOverhead {
			size := int64(int32(binary.BigEndian.Uint32(b[r.lo+8:]))) + record.LogOverhead
			if size < record.HeaderSize {
				return nil, record.Header{}, r.corrupt("batch length %d below the header size", size)
			}
			if size > r.seg.Size-r.batchPos {
				return nil, record.Header{}, r.corrupt("batch of %d bytes runs past the end (%d)", size, r.seg.Size)
			}
			if int64(avail) >= size {
				batch := b[r.lo : r.lo+int(size)]
				h, err := record.ValidateStored(batch)
				if err != nil {
					return nil, h, r.corrupt("%v", err)
				}
				if h.BaseOffset < r.next || h.LastOffset() >= r.limit || h.LastOffsetDelta < 0 {
					return nil, h, r.corrupt("batch offsets %d..%d do not follow %d or reach %d",
						h.BaseOffset, h.LastOffset(), r.next, r.limit)
				}
				r.next = h.NextOffset()
				r.lo += int(size)
				return batch, h, nil
			}
			need = int(size)
		}
		if r.filePos >= r.seg.Size {
			if avail == 0 {
				return nil, record.Header{}, io.EOF
			}
			return nil, record.Header{}, r.corrupt("%d stray bytes at the end", avail)
		}
		if err := r.fill(need); err != nil {
			return nil, record.Header{}, err
		}
	}
}

// fill moves the unread bytes to the front and reads more, growing the
// buffer to hold need bytes.
func (r *batchReader) fill(need int) error {
	b := *r.buf
	n := copy(b, b[r.lo:r.hi])
	r.lo, r.hi = 0, n
	if need > len(b) {
		grown := make([]byte, need)
		copy(grown, b[:n])
		*r.buf, b = grown, grown
	}
	want := min(int64(len(b)-r.hi), r.seg.Size-r.filePos)
	got, err := r.seg.ReadAt(b[r.hi:r.hi+int(want)], r.filePos)
	if err != nil && !(err == io.EOF && got == int(want)) {
		return err
	}
	if got == 0 {
		return fmt.Errorf("%w: %s: short read at %d", log.ErrCorruptSegment, r.seg.Path(), r.filePos)
	}
	r.hi += got
	r.filePos += int64(got)
	if r.onRead != nil {
		return r.onRead(got)
	}
	return nil
}
