package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ProduceOptions are the topic's rules a produced batch is checked against.
type ProduceOptions struct {
	MaxBatchBytes   int   // max.message.bytes
	RequireKeys     bool  // cleanup.policy includes compact
	LogAppendTime   bool  // message.timestamp.type=LogAppendTime
	NowMs           int64 // broker time, for timestamp bounds
	BeforeMaxMs     int64 // message.timestamp.before.max.ms
	AfterMaxMs      int64 // message.timestamp.after.max.ms
	MaxDecompressed int   // output cap when records must be decompressed
}

// RecordError is a validation failure attributed to one record of a batch;
// Kafka reports these in the produce response's record errors.
type RecordError struct {
	Index int
	Err   error
	Msg   string
}

func (e *RecordError) Error() string { return fmt.Sprintf("record %d: %s", e.Index, e.Msg) }
func (e *RecordError) Unwrap() error { return e.Err }

// ValidateProduce checks a batch a client produced, the way Kafka's log
// validator does for magic 2: exactly one well-formed batch, CRC, size,
// counts, producer fields, and (when records are walked) per-record offset
// deltas, timestamps and keys. Records are walked for uncompressed batches
// (cheap, no allocation) and for compressed ones only when keys must be
// checked; otherwise the header's base and max timestamps stand in for the
// per-record check.
func ValidateProduce(b []byte, o *ProduceOptions) (Header, error) {
	// Framing first, as Kafka's ProduceRequest.validateRecords sees it: bytes
	// that hold no complete batch are "no batch" (INVALID_RECORD); a second
	// complete batch is refused; a shorter tail that cannot be a batch is
	// ignored and trimmed (the returned header's Size says what to append).
	if len(b) < LogOverhead+5 {
		return Header{}, fmt.Errorf("%w: a produce request must have at least one record batch per partition", ErrInvalidRecord)
	}
	length := int64(int32(binary.BigEndian.Uint32(b[8:])))
	if length < 14 {
		return Header{}, fmt.Errorf("%w: batch length %d is less than the minimum", ErrCorrupt, length)
	}
	size := length + LogOverhead
	if size > int64(len(b)) {
		return Header{}, fmt.Errorf("%w: a produce request must have at least one record batch per partition "+
			"(batch length %d exceeds the %d bytes sent)", ErrInvalidRecord, size, len(b))
	}
	if rest := b[size:]; len(rest) >= LogOverhead+5 {
		if next := int64(int32(binary.BigEndian.Uint32(rest[8:]))) + LogOverhead; next >= LogOverhead && next <= int64(len(rest)) {
			return Header{}, fmt.Errorf("%w: a produce request must hold exactly one record batch", ErrInvalidRecord)
		}
	}
	b = b[:size]
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if o.MaxBatchBytes > 0 && len(b) > o.MaxBatchBytes {
		return h, fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes %d", ErrTooLarge, len(b), o.MaxBatchBytes)
	}
	if got := ComputeCRC(b); got != h.CRC {
		return h, fmt.Errorf("%w: crc %08x, computed %08x", ErrCorrupt, h.CRC, got)
	}
	if h.Codec() > CodecZstd {
		return h, fmt.Errorf("%w: codec %d", ErrUnsupportedCompression, h.Codec())
	}
	if h.Control() {
		return h, fmt.Errorf("%w: clients may not write control batches", ErrInvalidRecord)
	}
	if h.NumRecords <= 0 || h.LastOffsetDelta != h.NumRecords-1 {
		return h, fmt.Errorf("%w: record count %d does not match last offset delta %d", ErrInvalidRecord, h.NumRecords, h.LastOffsetDelta)
	}
	if h.Transactional() && h.ProducerID < 0 {
		return h, fmt.Errorf("%w: transactional batch without a producer id", ErrInvalidRecord)
	}
	if h.ProducerID >= 0 && h.BaseSequence < 0 {
		return h, fmt.Errorf("%w: idempotent batch with sequence %d", ErrInvalidRecord, h.BaseSequence)
	}
	checkTS := !o.LogAppendTime
	if h.Codec() != CodecNone && !o.RequireKeys {
		if checkTS {
			if err := o.checkTimestamp(0, h.BaseTimestamp); err != nil {
				return h, err
			}
			if err := o.checkTimestamp(int(h.LastOffsetDelta), h.MaxTimestamp); err != nil {
				return h, err
			}
		}
		return h, nil
	}
	body, err := Records(b, o.maxOut())
	if err != nil {
		return h, err
	}
	// A plain loop over a local Record (not IterateRaw's callback) keeps the
	// record on the stack: validation allocates nothing per batch.
	var r Record
	for i := 0; i < int(h.NumRecords); i++ {
		if body, err = decodeRecord(body, &r, false); err != nil {
			return h, fmt.Errorf("record %d: %w", i, err)
		}
		if r.OffsetDelta != int32(i) {
			return h, &RecordError{Index: i, Err: ErrInvalidRecord,
				Msg: fmt.Sprintf("offset delta %d, expected %d", r.OffsetDelta, i)}
		}
		if o.RequireKeys && r.Key == nil {
			return h, &RecordError{Index: i, Err: ErrInvalidRecord,
				Msg: "compacted topic cannot accept a record without a key"}
		}
		if checkTS {
			if err := o.checkTimestamp(i, h.BaseTimestamp+r.TimestampDelta); err != nil {
				return h, err
			}
		}
	}
	if len(body) != 0 {
		return h, fmt.Errorf("%w: %d bytes after the last of %d records", ErrCorrupt, len(body), h.NumRecords)
	}
	return h, nil
}

func (o *ProduceOptions) maxOut() int {
	if o.MaxDecompressed > 0 {
		return o.MaxDecompressed
	}
	return 64 << 20
}

func (o *ProduceOptions) checkTimestamp(i int, ts int64) error {
	if ts < 0 && ts != NoTimestamp {
		return &RecordError{Index: i, Err: ErrInvalidTimestamp, Msg: fmt.Sprintf("timestamp %d is negative", ts)}
	}
	if ts == NoTimestamp {
		return nil
	}
	if o.BeforeMaxMs >= 0 && o.BeforeMaxMs < math.MaxInt64 && ts < o.NowMs-o.BeforeMaxMs {
		return &RecordError{Index: i, Err: ErrInvalidTimestamp, Msg: fmt.Sprintf(
			"timestamp %d is more than message.timestamp.before.max.ms=%d before broker time %d", ts, o.BeforeMaxMs, o.NowMs)}
	}
	if o.AfterMaxMs >= 0 && o.AfterMaxMs < math.MaxInt64 && ts > o.NowMs+o.AfterMaxMs {
		return &RecordError{Index: i, Err: ErrInvalidTimestamp, Msg: fmt.Sprintf(
			"timestamp %d is more than message.timestamp.after.max.ms=%d after broker time %d", ts, o.AfterMaxMs, o.NowMs)}
	}
	return nil
}

// ValidateStored checks a batch read back from a segment: header, length
// against the bytes present, and CRC. Recovery and the cleaner use it.
func ValidateStored(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Size() > len(b) {
		return h, fmt.Errorf("%w: batch length %d beyond %d bytes present", ErrCorrupt, h.Size(), len(b))
	}
	if got := ComputeCRC(b[:h.Size()]); got != h.CRC {
		return h, fmt.Errorf("%w: crc %08x, computed %08x", ErrCorrupt, h.CRC, got)
	}
	if h.LastOffsetDelta < 0 {
		return h, fmt.Errorf("%w: negative last offset delta", ErrCorrupt)
	}
	return h, nil
}

// IsRecordError reports whether err came from one record of the batch.
func IsRecordError(err error) (*RecordError, bool) {
	var re *RecordError
	ok := errors.As(err, &re)
	return re, ok
}
