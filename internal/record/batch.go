package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// HeaderSize is the size of a v2 batch header; LogOverhead is the part before
// and including batchLength.
const (
	HeaderSize  = 61
	LogOverhead = 12
	Magic       = 2
)

// Attribute bits.
const (
	AttrCodecMask        = 0x07
	AttrLogAppendTime    = 0x08
	AttrTransactional    = 0x10
	AttrControl          = 0x20
	AttrHasDeleteHorizon = 0x40
)

// Codec is a batch compression codec.
type Codec int8

const (
	CodecNone Codec = iota
	CodecGzip
	CodecSnappy
	CodecLz4
	CodecZstd
)

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLz4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// NoTimestamp is Kafka's "no timestamp" value (-1).
const NoTimestamp int64 = -1

// NoProducerID, NoSequence are Kafka's values for non-idempotent batches.
const (
	NoProducerID int64 = -1
	NoSequence   int32 = -1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is the decoded fixed part of a batch.
type Header struct {
	BaseOffset      int64
	Length          int32 // batchLength: bytes after this field
	LeaderEpoch     int32
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	NumRecords      int32
}

// ParseHeader decodes the header at the start of b. It checks only that the
// header bytes are present and that the length field is plausible; use
// Validate for the full checks.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < LogOverhead+5 {
		return Header{}, fmt.Errorf("%w: %d bytes, need at least %d", ErrCorrupt, len(b), LogOverhead+5)
	}
	var h Header
	h.BaseOffset = int64(binary.BigEndian.Uint64(b[0:]))
	h.Length = int32(binary.BigEndian.Uint32(b[8:]))
	h.LeaderEpoch = int32(binary.BigEndian.Uint32(b[12:]))
	h.Magic = int8(b[16])
	if h.Magic != Magic {
		if h.Magic == 0 || h.Magic == 1 {
			return h, fmt.Errorf("%w: magic %d", ErrUnsupportedMagic, h.Magic)
		}
		return h, fmt.Errorf("%w: magic %d", ErrCorrupt, h.Magic)
	}
	if h.Length < HeaderSize-LogOverhead {
		return h, fmt.Errorf("%w: batch length %d below header size", ErrCorrupt, h.Length)
	}
	if len(b) < HeaderSize {
		return h, fmt.Errorf("%w: %d bytes, need %d for the header", ErrCorrupt, len(b), HeaderSize)
	}
	h.CRC = binary.BigEndian.Uint32(b[17:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[21:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[23:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[27:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[35:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[43:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[51:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[53:]))
	h.NumRecords = int32(binary.BigEndian.Uint32(b[57:]))
	return h, nil
}

// Size is the batch's total size on disk and on the wire.
func (h *Header) Size() int { return int(h.Length) + LogOverhead }

// LastOffset is the offset of the batch's last record.
func (h *Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch.
func (h *Header) NextOffset() int64 { return h.LastOffset() + 1 }

func (h *Header) Codec() Codec { return Codec(h.Attributes & AttrCodecMask) }

func (h *Header) LogAppendTime() bool    { return h.Attributes&AttrLogAppendTime != 0 }
func (h *Header) Transactional() bool    { return h.Attributes&AttrTransactional != 0 }
func (h *Header) Control() bool          { return h.Attributes&AttrControl != 0 }
func (h *Header) HasDeleteHorizon() bool { return h.Attributes&AttrHasDeleteHorizon != 0 }

// LastSequence is the sequence of the batch's last record (wrapping as Kafka does).
func (h *Header) LastSequence() int32 {
	if h.BaseSequence == NoSequence {
		return NoSequence
	}
	return IncrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

// IncrementSequence adds n to seq, wrapping at MaxInt32 to 0 as Kafka does.
func IncrementSequence(seq, n int32) int32 {
	if seq > (1<<31-1)-n {
		return n - ((1<<31 - 1) - seq) - 1
	}
	return seq + n
}

// Idempotent reports whether the batch carries a producer id.
func (h *Header) Idempotent() bool { return h.ProducerID >= 0 }

// ComputeCRC returns the CRC32C of b[21:], the range the batch CRC covers.
func ComputeCRC(b []byte) uint32 { return crc32.Checksum(b[21:], castagnoli) }

// SetBaseOffset writes off into the batch in place. The CRC does not cover it.
func SetBaseOffset(b []byte, off int64) { binary.BigEndian.PutUint64(b[0:], uint64(off)) }

// SetLeaderEpoch writes the partition leader epoch in place (not CRC-covered).
func SetLeaderEpoch(b []byte, epoch int32) { binary.BigEndian.PutUint32(b[12:], uint32(epoch)) }

// SetLogAppendTime marks the batch LogAppendTime, sets its max timestamp to ts
// and recomputes the CRC, as Kafka does when message.timestamp.type=LogAppendTime.
func SetLogAppendTime(b []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(b[21:]) | AttrLogAppendTime
	binary.BigEndian.PutUint16(b[21:], attrs)
	binary.BigEndian.PutUint64(b[35:], uint64(ts))
	binary.BigEndian.PutUint32(b[17:], ComputeCRC(b))
}

// SetDeleteHorizon records a delete horizon in the batch (attribute bit 6 and
// the base timestamp field) and recomputes the CRC. Record timestamps are
// deltas from the base timestamp, so a caller sets this only on a batch whose
// records it encoded against the horizon (the cleaner does).
func SetDeleteHorizon(b []byte, horizonMs int64) {
	attrs := binary.BigEndian.Uint16(b[21:]) | AttrHasDeleteHorizon
	binary.BigEndian.PutUint16(b[21:], attrs)
	binary.BigEndian.PutUint64(b[27:], uint64(horizonMs))
	binary.BigEndian.PutUint32(b[17:], ComputeCRC(b))
}

// Split returns the first batch in b and the rest. It checks only that the
// length field fits in b; ok is false when b holds no complete batch.
func Split(b []byte) (batch, rest []byte, ok bool) {
	if len(b) < LogOverhead {
		return nil, b, false
	}
	n := int64(int32(binary.BigEndian.Uint32(b[8:]))) + LogOverhead
	if n < HeaderSize || n > int64(len(b)) {
		return nil, b, false
	}
	return b[:n], b[n:], true
}
