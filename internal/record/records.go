package record

import (
	"encoding/binary"
	"fmt"
)

// Record is one decoded record. Key and Value alias the batch (or the
// decompressed buffer); a nil Key or Value is Kafka's null.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	Headers        []RecordHeader
}

// RecordHeader is a record's header pair.
type RecordHeader struct {
	Key   string
	Value []byte
}

// Records returns the (uncompressed) records section of batch: the bytes
// after the header for an uncompressed batch, or the decompressed bytes,
// capped at maxOut, otherwise.
func Records(batch []byte, maxOut int) ([]byte, error) {
	h, err := ParseHeader(batch)
	if err != nil {
		return nil, err
	}
	return recordsOf(batch, &h, maxOut)
}

// recordsOf is Records with batch's header already decoded.
func recordsOf(batch []byte, h *Header, maxOut int) ([]byte, error) {
	if h.Size() > len(batch) {
		return nil, fmt.Errorf("%w: batch length %d beyond %d bytes present", ErrCorrupt, h.Size(), len(batch))
	}
	body := batch[HeaderSize:h.Size()]
	if h.Codec() == CodecNone {
		return body, nil
	}
	return Decompress(h.Codec(), body, maxOut)
}

// Iterate calls fn for each record of batch in order, decompressing with an
// output cap of maxOut bytes. The Record passed to fn is reused between calls.
// It checks that the records section holds exactly the header's record count
// and nothing else.
func Iterate(batch []byte, maxOut int, fn func(r *Record) error) error {
	h, err := ParseHeader(batch)
	if err != nil {
		return err
	}
	body, err := recordsOf(batch, &h, maxOut)
	if err != nil {
		return err
	}
	return IterateRaw(body, int(h.NumRecords), fn)
}

// IterateRaw walks n records encoded back to back in body.
func IterateRaw(body []byte, n int, fn func(r *Record) error) error {
	if n < 0 {
		return fmt.Errorf("%w: negative record count %d", ErrCorrupt, n)
	}
	var r Record
	for i := 0; i < n; i++ {
		rest, err := decodeRecord(body, &r, true)
		if err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		body = rest
		if err := fn(&r); err != nil {
			return err
		}
	}
	if len(body) != 0 {
		return fmt.Errorf("%w: %d bytes after the last of %d records", ErrCorrupt, len(body), n)
	}
	return nil
}

// decodeRecord decodes one record into r. Without wantHeaders the headers
// are checked but not kept (no allocation).
func decodeRecord(b []byte, r *Record, wantHeaders bool) ([]byte, error) {
	length, n := binary.Varint(b)
	if n <= 0 || length < 0 || length > int64(len(b)-n) {
		return nil, fmt.Errorf("%w: bad record length", ErrCorrupt)
	}
	body, rest := b[n:n+int(length)], b[n+int(length):]
	if len(body) < 1 {
		return nil, fmt.Errorf("%w: empty record", ErrCorrupt)
	}
	r.Attributes = int8(body[0])
	p := body[1:]
	var ok bool
	if r.TimestampDelta, p, ok = varlong(p); !ok {
		return nil, fmt.Errorf("%w: bad timestamp delta", ErrCorrupt)
	}
	var od int64
	if od, p, ok = varlong(p); !ok || od < 0 || od > 1<<31-1 {
		return nil, fmt.Errorf("%w: bad offset delta", ErrCorrupt)
	}
	r.OffsetDelta = int32(od)
	if r.Key, p, ok = varbytes(p); !ok {
		return nil, fmt.Errorf("%w: bad key", ErrCorrupt)
	}
	if r.Value, p, ok = varbytes(p); !ok {
		return nil, fmt.Errorf("%w: bad value", ErrCorrupt)
	}
	nh, p, ok := varlong(p)
	if !ok || nh < 0 || nh > int64(len(p)) {
		return nil, fmt.Errorf("%w: bad header count", ErrCorrupt)
	}
	r.Headers = r.Headers[:0]
	for i := int64(0); i < nh; i++ {
		var k, v []byte
		if k, p, ok = varbytes(p); !ok || k == nil {
			return nil, fmt.Errorf("%w: bad header key", ErrCorrupt)
		}
		if v, p, ok = varbytes(p); !ok {
			return nil, fmt.Errorf("%w: bad header value", ErrCorrupt)
		}
		if wantHeaders {
			r.Headers = append(r.Headers, RecordHeader{Key: string(k), Value: v})
		}
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes in record", ErrCorrupt, len(p))
	}
	return rest, nil
}

func varlong(b []byte) (int64, []byte, bool) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, b, false
	}
	return v, b[n:], true
}

// varbytes reads a varint length then that many bytes; length -1 is null.
func varbytes(b []byte) ([]byte, []byte, bool) {
	l, rest, ok := varlong(b)
	if !ok || l < -1 || l > int64(len(rest)) {
		return nil, b, false
	}
	if l == -1 {
		return nil, rest, true
	}
	return rest[:l:l], rest[l:], true
}

// AppendRecord encodes r onto dst in Kafka's v2 record format.
func AppendRecord(dst []byte, r *Record) []byte {
	var tmp [binary.MaxVarintLen64]byte
	size := 1 + varintLen(r.TimestampDelta) + varintLen(int64(r.OffsetDelta)) +
		bytesLen(r.Key) + bytesLen(r.Value) + varintLen(int64(len(r.Headers)))
	for _, h := range r.Headers {
		size += varintLen(int64(len(h.Key))) + len(h.Key) + bytesLen(h.Value)
	}
	dst = append(dst, tmp[:binary.PutVarint(tmp[:], int64(size))]...)
	dst = append(dst, byte(r.Attributes))
	dst = append(dst, tmp[:binary.PutVarint(tmp[:], r.TimestampDelta)]...)
	dst = append(dst, tmp[:binary.PutVarint(tmp[:], int64(r.OffsetDelta))]...)
	dst = appendBytes(dst, r.Key)
	dst = appendBytes(dst, r.Value)
	dst = append(dst, tmp[:binary.PutVarint(tmp[:], int64(len(r.Headers)))]...)
	for _, h := range r.Headers {
		dst = append(dst, tmp[:binary.PutVarint(tmp[:], int64(len(h.Key)))]...)
		dst = append(dst, h.Key...)
		dst = appendBytes(dst, h.Value)
	}
	return dst
}

func appendBytes(dst, b []byte) []byte {
	var tmp [binary.MaxVarintLen64]byte
	if b == nil {
		return append(dst, tmp[:binary.PutVarint(tmp[:], -1)]...)
	}
	dst = append(dst, tmp[:binary.PutVarint(tmp[:], int64(len(b)))]...)
	return append(dst, b...)
}

func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

func bytesLen(b []byte) int {
	if b == nil {
		return 1
	}
	return varintLen(int64(len(b))) + len(b)
}
