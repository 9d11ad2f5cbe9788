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

// Produced is one partition's records of a produce request with its batch
// framed and its header decoded once (ParseProduce), so that the request-level
// checks (transactional records), the validation, the producer-state checks
// and the append all use that one decoding.
type Produced struct {
	// Bytes are the records as the request sent them; Batch() is the one
	// batch in them.
	Bytes  []byte
	Header Header
	// Err is a framing or header error. It is reported by Validate, where
	// Kafka's log validator reports it, not when the request is decoded.
	Err error
	// transactional: the records start with a transactional batch header,
	// whatever follows it.
	transactional bool
}

// Batch is the produced batch: Bytes with a shorter tail that cannot be a
// batch trimmed, as Kafka trims it. Valid only when Err is nil.
func (p *Produced) Batch() []byte { return p.Bytes[:p.Header.Size()] }

// Transactional reports whether the records start with a transactional
// batch, as Kafka's RequestUtils.hasTransactionalRecords looks at the first
// batch before the records are validated.
func (p *Produced) Transactional() bool { return p.transactional }

// ParseProduce decodes the header at the start of b and frames b as
// Kafka's ProduceRequest.validateRecords sees it: bytes that hold no
// complete batch are "no batch" (INVALID_RECORD); a second complete batch is
// refused; a shorter tail that cannot be a batch is ignored (Batch trims
// it). Framing errors come before header errors.
func ParseProduce(b []byte) Produced {
	h, herr := ParseHeader(b)
	p := Produced{Bytes: b, Header: h, transactional: herr == nil && h.Transactional()}
	if len(b) < LogOverhead+5 {
		p.Err = fmt.Errorf("%w: a produce request must have at least one record batch per partition", ErrInvalidRecord)
		return p
	}
	length := int64(int32(binary.BigEndian.Uint32(b[8:])))
	if length < 14 {
		p.Err = fmt.Errorf("%w: batch length %d is less than the minimum", ErrCorrupt, length)
		return p
	}
	size := length + LogOverhead
	if size > int64(len(b)) {
		p.Err = fmt.Errorf("%w: a produce request must have at least one record batch per partition "+
			"(batch length %d exceeds the %d bytes sent)", ErrInvalidRecord, size, len(b))
		return p
	}
	if rest := b[size:]; len(rest) >= LogOverhead+5 {
		if next := int64(int32(binary.BigEndian.Uint32(rest[8:]))) + LogOverhead; next >= LogOverhead && next <= int64(len(rest)) {
			p.Err = fmt.Errorf("%w: a produce request must hold exactly one record batch", ErrInvalidRecord)
			return p
		}
	}
	// The header was decoded from b: it reads only the first HeaderSize
	// bytes, and a length that passes ParseHeader makes size at least that.
	p.Err = herr
	return p
}

// ValidateProduce parses b (ParseProduce) and validates it (Validate).
func ValidateProduce(b []byte, o *ProduceOptions) (Header, error) {
	p := ParseProduce(b)
	return p.Header, p.Validate(o)
}

// Validate checks a batch a client produced, the way Kafka's log validator
// does for magic 2: exactly one well-formed batch (Err), CRC, size, counts,
// producer fields, and (when records are walked) per-record offset deltas,
// timestamps and keys. Records are walked for uncompressed batches (cheap,
// no allocation) and for compressed ones only when keys must be checked;
// otherwise the header's base and max timestamps stand in for the
// per-record check.
func (p *Produced) Validate(o *ProduceOptions) error {
	if p.Err != nil {
		return p.Err
	}
	b, h := p.Batch(), &p.Header
	if o.MaxBatchBytes > 0 && len(b) > o.MaxBatchBytes {
		return fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes %d", ErrTooLarge, len(b), o.MaxBatchBytes)
	}
	if got := ComputeCRC(b); got != h.CRC {
		return fmt.Errorf("%w: crc %08x, computed %08x", ErrCorrupt, h.CRC, got)
	}
	if h.Codec() > CodecZstd {
		return fmt.Errorf("%w: codec %d", ErrUnsupportedCompression, h.Codec())
	}
	if h.Control() {
		return fmt.Errorf("%w: clients may not write control batches", ErrInvalidRecord)
	}
	if h.NumRecords <= 0 || h.LastOffsetDelta != h.NumRecords-1 {
		return fmt.Errorf("%w: record count %d does not match last offset delta %d", ErrInvalidRecord, h.NumRecords, h.LastOffsetDelta)
	}
	if h.Transactional() && h.ProducerID < 0 {
		return fmt.Errorf("%w: transactional batch without a producer id", ErrInvalidRecord)
	}
	if h.ProducerID >= 0 && h.BaseSequence < 0 {
		return fmt.Errorf("%w: idempotent batch with sequence %d", ErrInvalidRecord, h.BaseSequence)
	}
	checkTS := !o.LogAppendTime
	if h.Codec() != CodecNone && !o.RequireKeys {
		if checkTS {
			if err := o.checkTimestamp(0, h.BaseTimestamp); err != nil {
				return err
			}
			if err := o.checkTimestamp(int(h.LastOffsetDelta), h.MaxTimestamp); err != nil {
				return err
			}
		}
		return nil
	}
	body, err := recordsOf(b, h, o.maxOut())
	if err != nil {
		return err
	}
	return o.walkRecords(body, h, checkTS)
}

// walkRecords checks every record of an uncompressed (or decompressed)
// batch body: framing, offset deltas 0..n-1, keys when required and
// timestamps. It is decodeRecord's checks without filling a Record, with
// one- and two-byte varints decoded inline and the timestamp bounds computed
// once: on 100-byte records this loop, not the CRC, is most of the cost of
// accepting a produce. Any record it cannot accept goes through decodeRecord
// and checkTimestamp again, so the error is theirs, word for word.
func (o *ProduceOptions) walkRecords(body []byte, h *Header, checkTS bool) error {
	lo, hi := int64(0), int64(math.MaxInt64) // timestamps accepted without a closer look
	if checkTS {
		if o.BeforeMaxMs >= 0 && o.BeforeMaxMs < math.MaxInt64 {
			lo = max(lo, o.NowMs-o.BeforeMaxMs)
		}
		if o.AfterMaxMs >= 0 && o.AfterMaxMs < math.MaxInt64 {
			hi = o.NowMs + o.AfterMaxMs
		}
	}
	n := int(h.NumRecords)
	p := 0
	for i := 0; i < n; i++ {
		next, tsDelta, hasKey, ok := skimRecord(body, p, i)
		ts := h.BaseTimestamp + tsDelta
		if !ok || (o.RequireKeys && !hasKey) || (checkTS && (ts < lo || ts > hi) && ts != NoTimestamp) {
			return o.recordError(body[p:], h, i, checkTS)
		}
		p = next
	}
	if p != len(body) {
		return fmt.Errorf("%w: %d bytes after the last of %d records", ErrCorrupt, len(body)-p, n)
	}
	return nil
}

// skimRecord walks the record at b[p:], which must have offset delta i. It
// returns where the next record starts, the record's timestamp delta and
// whether it has a key; ok is false if anything is malformed or unexpected.
func skimRecord(b []byte, p, i int) (next int, tsDelta int64, hasKey, ok bool) {
	length, p, ok := fastVarint(b, p)
	if !ok || length < 1 || length > int64(len(b)-p) {
		return 0, 0, false, false
	}
	end := p + int(length)
	r := b[:end]
	p++ // attributes
	if tsDelta, p, ok = fastVarint(r, p); !ok {
		return 0, 0, false, false
	}
	var od, l int64
	if od, p, ok = fastVarint(r, p); !ok || od != int64(i) {
		return 0, 0, false, false
	}
	if l, p, ok = fastVarint(r, p); !ok || l < -1 || l > int64(end-p) {
		return 0, 0, false, false
	}
	hasKey = l >= 0
	p += int(max(l, 0))
	if l, p, ok = fastVarint(r, p); !ok || l < -1 || l > int64(end-p) {
		return 0, 0, false, false
	}
	p += int(max(l, 0))
	var nh int64
	if nh, p, ok = fastVarint(r, p); !ok || nh < 0 || nh > int64(end-p) {
		return 0, 0, false, false
	}
	for ; nh > 0; nh-- {
		if l, p, ok = fastVarint(r, p); !ok || l < 0 || l > int64(end-p) {
			return 0, 0, false, false
		}
		p += int(l)
		if l, p, ok = fastVarint(r, p); !ok || l < -1 || l > int64(end-p) {
			return 0, 0, false, false
		}
		p += int(max(l, 0))
	}
	return end, tsDelta, hasKey, p == end
}

// fastVarint decodes the zig-zag varint at b[p:], returning the position
// after it; one- and two-byte values (almost every length and delta in a
// batch) take no call.
func fastVarint(b []byte, p int) (int64, int, bool) {
	if p < len(b) && b[p] < 0x80 {
		u := uint64(b[p])
		return int64(u>>1) ^ -int64(u&1), p + 1, true
	}
	if p+1 < len(b) && b[p+1] < 0x80 {
		u := uint64(b[p]&0x7f) | uint64(b[p+1])<<7
		return int64(u>>1) ^ -int64(u&1), p + 2, true
	}
	if p >= len(b) {
		return 0, p, false
	}
	v, n := binary.Varint(b[p:])
	if n <= 0 {
		return 0, p, false
	}
	return v, p + n, true
}

// recordError re-reads record i (at the start of b) with checkRecord,
// returning the error Kafka's validator would give for it.
func (o *ProduceOptions) recordError(b []byte, h *Header, i int, checkTS bool) error {
	if _, err := o.checkRecord(b, h, i, checkTS); err != nil {
		return err
	}
	// skimRecord and checkRecord disagree: a bug, not the client's.
	return fmt.Errorf("%w: record %d failed validation", ErrCorrupt, i)
}

// checkRecord decodes record i at the start of b and checks it the plain
// way (decodeRecord, then offset delta, key and checkTimestamp), returning
// the bytes after it. It words every record error; walkRecords' skim must
// agree with it on every input (FuzzWalkRecords).
func (o *ProduceOptions) checkRecord(b []byte, h *Header, i int, checkTS bool) ([]byte, error) {
	var r Record
	rest, err := decodeRecord(b, &r, false)
	if err != nil {
		return nil, fmt.Errorf("record %d: %w", i, err)
	}
	if r.OffsetDelta != int32(i) {
		return nil, &RecordError{Index: i, Err: ErrInvalidRecord,
			Msg: fmt.Sprintf("offset delta %d, expected %d", r.OffsetDelta, i)}
	}
	if o.RequireKeys && r.Key == nil {
		return nil, &RecordError{Index: i, Err: ErrInvalidRecord,
			Msg: "compacted topic cannot accept a record without a key"}
	}
	if checkTS {
		if err := o.checkTimestamp(i, h.BaseTimestamp+r.TimestampDelta); err != nil {
			return nil, err
		}
	}
	return rest, nil
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
