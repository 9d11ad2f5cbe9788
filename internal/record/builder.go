package record

import (
	"encoding/binary"
	"fmt"
)

// BatchSpec describes a batch for Build. Timestamps of records are absolute
// milliseconds; Build computes base and max timestamps and deltas.
type BatchSpec struct {
	BaseOffset    int64
	LeaderEpoch   int32
	Codec         Codec
	LogAppendTime bool
	Transactional bool
	Control       bool
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	// DeleteHorizonMs, when > 0, is stored in the base timestamp field with
	// attribute bit 6 set; record timestamps are encoded relative to it.
	DeleteHorizonMs int64
	Records         []BuildRecord
}

// BuildRecord is one record for Build.
type BuildRecord struct {
	OffsetDelta int32
	Timestamp   int64
	Key, Value  []byte
	Headers     []RecordHeader
}

// Build encodes spec as a v2 batch with a correct CRC. Offset deltas are
// taken from the records (the cleaner keeps gaps); LastOffsetDelta is the
// last record's delta. Build is for tests, tools and the cleaner, not the
// produce path.
func Build(spec *BatchSpec) ([]byte, error) {
	if len(spec.Records) == 0 {
		return nil, fmt.Errorf("%w: a batch needs at least one record", ErrInvalidRecord)
	}
	base := spec.Records[0].Timestamp
	maxTS := base
	for _, r := range spec.Records {
		if r.Timestamp < base {
			base = r.Timestamp
		}
		if r.Timestamp > maxTS {
			maxTS = r.Timestamp
		}
	}
	attrs := uint16(spec.Codec) & AttrCodecMask
	if spec.LogAppendTime {
		attrs |= AttrLogAppendTime
	}
	if spec.Transactional {
		attrs |= AttrTransactional
	}
	if spec.Control {
		attrs |= AttrControl
	}
	if spec.DeleteHorizonMs > 0 {
		attrs |= AttrHasDeleteHorizon
		base = spec.DeleteHorizonMs
	}
	var body []byte
	var rec Record
	for _, r := range spec.Records {
		rec = Record{TimestampDelta: r.Timestamp - base, OffsetDelta: r.OffsetDelta,
			Key: r.Key, Value: r.Value, Headers: r.Headers}
		body = AppendRecord(body, &rec)
	}
	if spec.Codec != CodecNone {
		var err error
		if body, err = Compress(spec.Codec, body); err != nil {
			return nil, err
		}
	}
	b := make([]byte, HeaderSize, HeaderSize+len(body))
	b = append(b, body...)
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(spec.BaseOffset))
	be.PutUint32(b[8:], uint32(len(b)-LogOverhead))
	be.PutUint32(b[12:], uint32(spec.LeaderEpoch))
	b[16] = Magic
	be.PutUint16(b[21:], attrs)
	be.PutUint32(b[23:], uint32(spec.Records[len(spec.Records)-1].OffsetDelta))
	be.PutUint64(b[27:], uint64(base))
	be.PutUint64(b[35:], uint64(maxTS))
	be.PutUint64(b[43:], uint64(spec.ProducerID))
	be.PutUint16(b[51:], uint16(spec.ProducerEpoch))
	be.PutUint32(b[53:], uint32(spec.BaseSequence))
	be.PutUint32(b[57:], uint32(len(spec.Records)))
	be.PutUint32(b[17:], ComputeCRC(b))
	return b, nil
}
