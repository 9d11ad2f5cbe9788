package cleaner

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
)

// filterEnv is what pass 2 decides each batch of the cleaned range by
// (Kafka's LogCleaner RecordFilter over MemoryRecords.filterTo).
type filterEnv struct {
	nowMs             int64
	deleteRetentionMs int64
	offsets           *offsetMap
	producers         map[int64]log.ProducerLastRecord
	txns              *cleanedTxns
	maxOut            int // decompression cap
	codecs            *codecs
}

// filtered is the verdict on one batch.
type filtered struct {
	out               []byte // what to write: the batch itself, a rebuilt one or an empty one; nil drops it
	verbatim          bool   // out is the input batch
	records           int    // records read
	removed           int    // records dropped
	tombstonesRemoved int    // of which tombstones
	horizonMs         int64  // delete horizon of out while it holds tombstones or a removable marker (0: none)
}

// retainRecord is Kafka's Cleaner.shouldRetainRecord: a record stays if it is
// past the map's range, or the latest for its key and either has a value or
// is a tombstone whose batch's delete horizon has not passed. Records
// without a key are dropped, as Kafka drops them.
func (e *filterEnv) retainRecord(h *record.Header, r *record.Record) bool {
	off := h.BaseOffset + int64(r.OffsetDelta)
	if off > e.offsets.latest {
		return true
	}
	if r.Key == nil {
		return false
	}
	if off < e.offsets.get(r.Key) {
		return false
	}
	if r.Value != nil {
		return true
	}
	return !h.HasDeleteHorizon() || e.nowMs < h.BaseTimestamp
}

// lastOfProducer says whether the batch holds an active producer's last
// sequence (or, for a producer with only markers, its current marker): such a
// batch is kept, emptied if need be, so producer state survives cleaning.
func (e *filterEnv) lastOfProducer(h *record.Header) bool {
	if h.ProducerID < 0 {
		return false
	}
	p, ok := e.producers[h.ProducerID]
	if !ok {
		return false
	}
	if p.LastDataOffset >= 0 {
		return h.LastOffset() == p.LastDataOffset
	}
	return h.Control() && h.ProducerEpoch == p.Epoch
}

// filter decides one batch of the cleaned range.
func (e *filterEnv) filter(batch []byte, h *record.Header) (filtered, error) {
	var f filtered
	var canDiscard bool
	if h.Control() {
		canDiscard = e.txns.onControl(h, controlTypeOf(batch, e.maxOut))
	} else {
		canDiscard = e.txns.onBatch(h)
	}
	discardRecords := canDiscard
	if h.Control() {
		discardRecords = canDiscard && h.HasDeleteHorizon() && h.BaseTimestamp <= e.nowMs
	}
	retainEmpty := e.lastOfProducer(h)
	var kept []record.BuildRecord
	tombstones := false
	err := e.codecs.iterate(batch, h, e.maxOut, func(r *record.Record) error {
		f.records++
		if !discardRecords && (h.Control() || e.retainRecord(h, r)) {
			br := record.BuildRecord{OffsetDelta: r.OffsetDelta, Timestamp: h.BaseTimestamp + r.TimestampDelta,
				Key: r.Key, Value: r.Value}
			if len(r.Headers) > 0 {
				br.Headers = append([]record.RecordHeader(nil), r.Headers...)
			}
			kept = append(kept, br)
			tombstones = tombstones || (r.Value == nil && !h.Control())
			return nil
		}
		f.removed++
		if r.Value == nil {
			f.tombstonesRemoved++
		}
		return nil
	})
	if err != nil {
		return f, fmt.Errorf("%w: batch at offset %d: %v", log.ErrCorruptSegment, h.BaseOffset, err)
	}
	if len(kept) == 0 {
		if retainEmpty {
			f.out = emptyBatch(h, true)
		}
		return f, nil
	}
	// A horizon matters (and is reported) while the batch holds a
	// tombstone or a marker that may go once it passes. It starts when the
	// whole batch has moved into the clean section: a batch the cleaner
	// point cuts gets it in a later round.
	pending := (tombstones || (canDiscard && h.Control())) && h.LastOffset() <= e.offsets.latest
	needHorizon := pending && !h.HasDeleteHorizon()
	horizon := int64(0)
	switch {
	case needHorizon:
		horizon = saturatingAdd(e.nowMs, e.deleteRetentionMs)
	case h.HasDeleteHorizon():
		horizon = h.BaseTimestamp
	}
	if pending {
		f.horizonMs = horizon
	}
	if f.removed == 0 && !needHorizon {
		f.out, f.verbatim = batch, true
		return f, nil
	}
	f.out, err = rebuild(e.codecs, h, kept, horizon)
	return f, err
}

// rebuild encodes the kept records as a batch with the original's base
// offset, last offset delta (so the producer's last sequence and the
// batch's offset range stay), leader epoch, producer fields, attributes and
// codec; horizonMs > 0 stores a delete horizon.
func rebuild(c *codecs, h *record.Header, kept []record.BuildRecord, horizonMs int64) ([]byte, error) {
	spec := &record.BatchSpec{
		BaseOffset: h.BaseOffset, LeaderEpoch: h.LeaderEpoch, Codec: h.Codec(),
		LogAppendTime: h.LogAppendTime(), Transactional: h.Transactional(), Control: h.Control(),
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
		DeleteHorizonMs: horizonMs, Records: kept,
	}
	b, err := c.build(spec)
	if err != nil {
		return nil, fmt.Errorf("rebuild batch at offset %d: %w", h.BaseOffset, err)
	}
	binary.BigEndian.PutUint32(b[23:], uint32(h.LastOffsetDelta))
	if h.LogAppendTime() {
		binary.BigEndian.PutUint64(b[35:], uint64(h.MaxTimestamp))
	}
	binary.BigEndian.PutUint32(b[17:], record.ComputeCRC(b))
	return b, nil
}

// emptyBatch is a batch with h's offsets and no records (Kafka's
// DefaultRecordBatch.writeEmptyHeader): base and max timestamp are h's max
// timestamp, the codec none. With producer it keeps h's producer id, epoch,
// sequence and transactional and control bits (what producer state needs);
// without, it is a plain batch that only holds the offset range.
func emptyBatch(h *record.Header, producer bool) []byte {
	b := make([]byte, record.HeaderSize)
	be := binary.BigEndian
	attrs := uint16(h.Attributes) & record.AttrLogAppendTime
	pid, epoch, seq := record.NoProducerID, int16(-1), record.NoSequence
	if producer {
		attrs |= uint16(h.Attributes) & (record.AttrTransactional | record.AttrControl)
		pid, epoch, seq = h.ProducerID, h.ProducerEpoch, h.BaseSequence
	}
	be.PutUint64(b[0:], uint64(h.BaseOffset))
	be.PutUint32(b[8:], uint32(record.HeaderSize-record.LogOverhead))
	be.PutUint32(b[12:], uint32(h.LeaderEpoch))
	b[16] = record.Magic
	be.PutUint16(b[21:], attrs)
	be.PutUint32(b[23:], uint32(h.LastOffsetDelta))
	be.PutUint64(b[27:], uint64(h.MaxTimestamp))
	be.PutUint64(b[35:], uint64(h.MaxTimestamp))
	be.PutUint64(b[43:], uint64(pid))
	be.PutUint16(b[51:], uint16(epoch))
	be.PutUint32(b[53:], uint32(seq))
	be.PutUint32(b[57:], 0)
	be.PutUint32(b[17:], record.ComputeCRC(b))
	return b
}

func saturatingAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
