package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// numBatchesToRetain is how many recent batches per producer are kept for
// duplicate detection, as in Kafka.
const numBatchesToRetain = 5

type batchMeta struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	timestamp               int64
}

// ProducerEntry is what the log remembers about one producer id.
type ProducerEntry struct {
	ProducerID            int64
	Epoch                 int16
	CoordinatorEpoch      int32
	CurrentTxnFirstOffset int64 // -1 when no transaction is open
	// LastTimestamp is the max timestamp of the producer's last batch (a
	// marker's too): Kafka's lastTimestamp, which producer.id.expiration.ms
	// counts from.
	LastTimestamp int64
	// TxnStartMs is the broker's clock when the open transaction's first
	// batch was appended here (-1 when none is open, or when it was opened
	// before the log was loaded: the snapshot does not keep it, as Kafka's
	// does not). The hanging-transaction detector ages transactions by it
	// rather than by the producer's own clock.
	TxnStartMs int64
	batches    []batchMeta
}

func (e *ProducerEntry) lastSeq() int32 {
	if len(e.batches) == 0 {
		return record.NoSequence
	}
	return e.batches[len(e.batches)-1].lastSeq
}

func (e *ProducerEntry) lastOffset() int64 {
	if len(e.batches) == 0 {
		return -1
	}
	return e.batches[len(e.batches)-1].lastOffset
}

// producerState is Kafka's ProducerStateManager for one partition: the last
// batches of every idempotent producer, used to reject out-of-order and fenced
// batches and to answer retried ones with their original offsets, and the
// partition's transactions (producer_txn.go). Owned by the log's appender
// (Log.mu).
type producerState struct {
	m map[int64]*ProducerEntry
	txns
}

func newProducerState() *producerState {
	return &producerState{m: make(map[int64]*ProducerEntry), txns: newTxns()}
}

// duplicate returns the metadata of an already appended batch that h repeats.
func (p *producerState) duplicate(h *record.Header) (batchMeta, bool) {
	e := p.m[h.ProducerID]
	if e == nil || e.Epoch != h.ProducerEpoch {
		return batchMeta{}, false
	}
	for i := len(e.batches) - 1; i >= 0; i-- {
		if b := e.batches[i]; b.firstSeq == h.BaseSequence && b.lastSeq == h.LastSequence() {
			return b, true
		}
	}
	return batchMeta{}, false
}

// checkSequence validates a client batch's sequence against the state, as
// Kafka's ProducerAppendInfo.checkSequence does (the epoch was checked
// first). v is the producer's verification entry, nil when none.
func (p *producerState) checkSequence(h *record.Header, v *verification) error {
	e := p.m[h.ProducerID]
	empty := e == nil || len(e.batches) == 0
	if v != nil && v.supportsEpochBump && h.BaseSequence != 0 && empty {
		return fmt.Errorf("%w: producer %d epoch %d: a transactions v2 producer with no state here must start at sequence 0, got %d",
			ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
	}
	if v != nil && h.BaseSequence > v.lowestSequence && empty {
		return fmt.Errorf("%w: producer %d epoch %d: sequence %d, but %d was verified first",
			ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence, v.lowestSequence)
	}
	if e == nil {
		return nil // unknown producer (new, or expired): any sequence, as Kafka accepts it
	}
	if h.ProducerEpoch != e.Epoch {
		if h.BaseSequence != 0 {
			return fmt.Errorf("%w: producer %d new epoch %d must start at sequence 0, got %d",
				ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
		}
		return nil
	}
	last := e.lastSeq()
	if !(h.BaseSequence == last+1 || (h.BaseSequence == 0 && last == 1<<31-1)) {
		return fmt.Errorf("%w: producer %d epoch %d: sequence %d after %d",
			ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence, last)
	}
	return nil
}

// checkEpoch refuses a batch from an older epoch than the producer's
// (INVALID_PRODUCER_EPOCH, Kafka's checkProducerEpoch for data batches).
func (p *producerState) checkEpoch(h *record.Header) error {
	if e := p.m[h.ProducerID]; e != nil && h.ProducerEpoch < e.Epoch {
		return fmt.Errorf("%w: producer %d epoch %d is older than the current epoch %d",
			ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.Epoch)
	}
	return nil
}

// update records an appended batch (with its assigned offsets): m is the
// marker of a control batch (nil for data), appendMs the broker's clock. It
// returns the transaction a marker completes, if the producer had one open.
// update never refuses: the checks came before the write.
func (p *producerState) update(h *record.Header, m *record.Marker, appendMs int64) *CompletedTxn {
	if h.ProducerID < 0 {
		return nil
	}
	e := p.m[h.ProducerID]
	if e == nil {
		e = &ProducerEntry{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, CoordinatorEpoch: -1,
			CurrentTxnFirstOffset: -1, TxnStartMs: -1}
		p.m[h.ProducerID] = e
	}
	if h.ProducerEpoch != e.Epoch {
		e.Epoch = h.ProducerEpoch
		e.batches = e.batches[:0]
	}
	e.LastTimestamp = h.MaxTimestamp
	if h.Control() {
		return p.endTxn(e, h, m)
	}
	if h.Transactional() && e.CurrentTxnFirstOffset < 0 {
		e.CurrentTxnFirstOffset, e.TxnStartMs = h.BaseOffset, appendMs
		p.begin(e.ProducerID, h.BaseOffset)
		p.clearVerification(e.ProducerID)
	}
	if h.BaseSequence < 0 {
		return nil
	}
	if len(e.batches) == numBatchesToRetain {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:numBatchesToRetain-1]
	}
	e.batches = append(e.batches, batchMeta{firstSeq: h.BaseSequence, lastSeq: h.LastSequence(),
		firstOffset: h.BaseOffset, lastOffset: h.LastOffset(), timestamp: h.MaxTimestamp})
	return nil
}

// expired is Kafka's isProducerExpired: no open transaction, and at least
// expirationMs since the max timestamp of the producer's last batch.
// expirationMs ≤ 0 never expires (the config requires ≥ 1).
func (e *ProducerEntry) expired(nowMs, expirationMs int64) bool {
	return expirationMs > 0 && e.CurrentTxnFirstOffset < 0 && nowMs-e.LastTimestamp >= expirationMs
}

// removeExpired forgets every expired producer (Kafka's
// removeExpiredProducers) and verification entry, and returns how many
// producers it forgot. Only time removes a producer: a log start offset
// passing its batches does not.
func (p *producerState) removeExpired(nowMs, expirationMs int64) int {
	n := 0
	for pid, e := range p.m {
		if e.expired(nowMs, expirationMs) {
			delete(p.m, pid)
			n++
		}
	}
	p.removeExpiredVerifications(nowMs, expirationMs)
	return n
}

// Snapshot files: <20-digit offset>.snapshot in Kafka's ProducerSnapshot
// version 1 layout: int16 version, uint32 CRC32C of what follows, int32 entry
// count, then per producer: int64 id, int16 epoch, int32 last sequence, int64
// last offset, int32 offset delta (last - first offset of the last batch),
// int64 timestamp (the entry's last timestamp: the max timestamp of its last
// batch), int32 coordinator epoch, int64 current txn first offset. As in
// Kafka only the last batch of each producer is kept, and a producer stays in
// the snapshots, with its last batch, after retention has deleted that batch
// (until it expires).
const (
	snapshotVersion   = 1
	snapshotEntrySize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (p *producerState) encodeSnapshot() []byte {
	ids := make([]int64, 0, len(p.m))
	for id := range p.m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	b := make([]byte, 10, 10+len(ids)*snapshotEntrySize)
	binary.BigEndian.PutUint16(b, snapshotVersion)
	binary.BigEndian.PutUint32(b[6:], uint32(len(ids)))
	be := binary.BigEndian
	for _, id := range ids {
		e := p.m[id]
		var last batchMeta
		if n := len(e.batches); n > 0 {
			last = e.batches[n-1]
		} else {
			last = batchMeta{firstSeq: -1, lastSeq: -1, firstOffset: -1, lastOffset: -1, timestamp: e.LastTimestamp}
		}
		b = be.AppendUint64(b, uint64(id))
		b = be.AppendUint16(b, uint16(e.Epoch))
		b = be.AppendUint32(b, uint32(last.lastSeq))
		b = be.AppendUint64(b, uint64(last.lastOffset))
		b = be.AppendUint32(b, uint32(last.lastOffset-last.firstOffset))
		b = be.AppendUint64(b, uint64(e.LastTimestamp))
		b = be.AppendUint32(b, uint32(e.CoordinatorEpoch))
		b = be.AppendUint64(b, uint64(e.CurrentTxnFirstOffset))
	}
	be.PutUint32(b[2:], crc32.Checksum(b[6:], castagnoli))
	return b
}

func decodeSnapshot(b []byte) (*producerState, error) {
	if len(b) < 10 {
		return nil, fmt.Errorf("%w: producer snapshot of %d bytes", ErrCorruptSegment, len(b))
	}
	be := binary.BigEndian
	if v := be.Uint16(b); v != snapshotVersion {
		return nil, fmt.Errorf("%w: producer snapshot version %d", ErrCorruptSegment, v)
	}
	if crc32.Checksum(b[6:], castagnoli) != be.Uint32(b[2:]) {
		return nil, fmt.Errorf("%w: producer snapshot crc mismatch", ErrCorruptSegment)
	}
	n := int(be.Uint32(b[6:]))
	if n < 0 || len(b)-10 != n*snapshotEntrySize {
		return nil, fmt.Errorf("%w: producer snapshot with %d entries in %d bytes", ErrCorruptSegment, n, len(b))
	}
	p := newProducerState()
	for q := b[10:]; len(q) > 0; q = q[snapshotEntrySize:] {
		e := &ProducerEntry{
			TxnStartMs:            -1,
			ProducerID:            int64(be.Uint64(q)),
			Epoch:                 int16(be.Uint16(q[8:])),
			LastTimestamp:         int64(be.Uint64(q[26:])),
			CoordinatorEpoch:      int32(be.Uint32(q[34:])),
			CurrentTxnFirstOffset: int64(be.Uint64(q[38:])),
		}
		lastSeq := int32(be.Uint32(q[10:]))
		lastOff := int64(be.Uint64(q[14:]))
		delta := int32(be.Uint32(q[22:]))
		if lastSeq >= 0 && lastOff >= 0 {
			first := int64(lastSeq) - int64(delta)
			if first < 0 {
				first += 1 << 31
			}
			e.batches = []batchMeta{{firstSeq: int32(first), lastSeq: lastSeq, firstOffset: lastOff - int64(delta),
				lastOffset: lastOff, timestamp: e.LastTimestamp}}
		}
		p.m[e.ProducerID] = e
		if e.CurrentTxnFirstOffset >= 0 {
			p.begin(e.ProducerID, e.CurrentTxnFirstOffset)
		}
	}
	return p, nil
}

// listSnapshots returns the offsets of the snapshot files in dir, ascending.
func listSnapshots(fs vfs.FS, dir string) ([]int64, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	return snapshotOffsets(names), nil
}

// snapshotOffsets returns the offsets of the snapshot files among a
// directory's names, ascending.
func snapshotOffsets(names []string) []int64 {
	var offs []int64
	for _, n := range names {
		if !strings.HasSuffix(n, SnapshotSuffix) || len(n) != 20+len(SnapshotSuffix) {
			continue
		}
		if off, ok := ParseFileName(n); ok {
			offs = append(offs, off)
		}
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	return offs
}

func snapshotPath(dir string, off int64) string {
	return filepath.Join(dir, FileName(off)+SnapshotSuffix)
}
