package log

import (
	"fmt"
	"sync/atomic"

	"github.com/gregor-broker/gregor/internal/record"
)

// CompletedTxn is a transaction a marker ended on this partition: Kafka's
// CompletedTxn. FirstOffset is its first data offset here, LastOffset the
// marker's offset.
type CompletedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
	Aborted     bool
}

// txns is the transactional part of a partition's producer state (Kafka's
// ProducerStateManager ongoingTxns, unreplicatedTxns and verification
// entries). The first unstable offset is the smallest first offset among
// the open transactions and the decided ones whose marker the high
// watermark has not passed yet: a leader that loses its marker before the
// followers copy it must not have exposed the transaction's records as
// stable.
type txns struct {
	// ongoing maps a producer to the first offset of its open transaction;
	// it mirrors the entries' CurrentTxnFirstOffset.
	ongoing map[int64]int64
	// unreplicated holds decided transactions, in marker order, whose
	// marker is at or above the high watermark.
	unreplicated []CompletedTxn
	// verifying holds the producers whose next transactional batch is being
	// verified with the transaction coordinator (KIP-890).
	verifying map[int64]*verification
}

// lastGuard makes guards unique in the process, across truncations and
// reloads that replace a log's producer state.
var lastGuard atomic.Uint64

func newTxns() txns {
	return txns{ongoing: make(map[int64]int64), verifying: make(map[int64]*verification)}
}

func (t *txns) begin(pid, first int64) { t.ongoing[pid] = first }

// endTxn applies a marker (Kafka's appendEndTxnMarker): the producer's
// epoch and coordinator epoch are updated, and its open transaction, if it
// has one, becomes a CompletedTxn (unreplicated until the high watermark
// passes the marker). A marker for a producer with no open transaction here
// completes nothing: no index entry, no effect on the last stable offset.
// An empty control batch (the cleaner may leave one) changes nothing else.
func (p *producerState) endTxn(e *ProducerEntry, h *record.Header, m *record.Marker) *CompletedTxn {
	if m == nil || (m.Type != record.ControlAbort && m.Type != record.ControlCommit) {
		return nil
	}
	e.CoordinatorEpoch = m.CoordinatorEpoch
	p.clearVerification(e.ProducerID)
	if e.CurrentTxnFirstOffset < 0 {
		return nil
	}
	c := CompletedTxn{ProducerID: e.ProducerID, FirstOffset: e.CurrentTxnFirstOffset,
		LastOffset: h.BaseOffset, Aborted: m.Type == record.ControlAbort}
	e.CurrentTxnFirstOffset, e.TxnStartMs = -1, -1
	delete(p.ongoing, e.ProducerID)
	p.unreplicated = append(p.unreplicated, c)
	return &c
}

// lastStableOffsetAfter is the last stable offset recorded with an aborted
// transaction in the index (Kafka's ProducerStateManager.lastStableOffset
// of a completed transaction): the first offset of the earliest transaction
// of another producer still open, or the marker's offset plus one.
func (t *txns) lastStableOffsetAfter(c CompletedTxn) int64 {
	lso, found := int64(0), false
	for pid, first := range t.ongoing {
		if pid != c.ProducerID && (!found || first < lso) {
			lso, found = first, true
		}
	}
	if !found {
		return c.LastOffset + 1
	}
	return lso
}

// onHighWatermark drops the decided transactions whose marker lies below hw
// (Kafka's onHighWatermarkUpdated).
func (t *txns) onHighWatermark(hw int64) {
	n := 0
	for _, c := range t.unreplicated {
		if c.LastOffset >= hw {
			t.unreplicated[n] = c
			n++
		}
	}
	t.unreplicated = t.unreplicated[:n]
}

// firstUnstableOffset is the smallest first offset among open transactions
// and decided ones not yet under the high watermark.
func (t *txns) firstUnstableOffset() (int64, bool) {
	min, ok := int64(0), false
	for _, first := range t.ongoing {
		if !ok || first < min {
			min, ok = first, true
		}
	}
	for _, c := range t.unreplicated {
		if !ok || c.FirstOffset < min {
			min, ok = c.FirstOffset, true
		}
	}
	return min, ok
}

// hasOngoing is Kafka's hasOngoingTransaction: the producer has a
// transaction open here in this epoch.
func (p *producerState) hasOngoing(pid int64, epoch int16) bool {
	e := p.m[pid]
	return e != nil && e.CurrentTxnFirstOffset >= 0 && e.Epoch == epoch
}

// Transaction versions (the transaction.version feature): 0 and 1 use the
// original protocol; 2 (KIP-890 part 2) bumps the epoch at every commit or
// abort. TVUnknown is a replica's view: the version is not in the batch.
const (
	TVUnknown int16 = -1
	TV0       int16 = 0
	TV1       int16 = 1
	TV2       int16 = 2
)

// checkMarker validates a marker a coordinator (or an admin abort) wants
// written, as Kafka's ProducerAppendInfo.appendEndTxnMarker does: the
// producer epoch must not go back (under TV2 it must move forward, except
// for an idempotent retry of a marker already written: same epoch and no
// transaction open, KAFKA-19999), and the coordinator epoch must not be
// older than the last marker's (TRANSACTION_COORDINATOR_FENCED).
func (p *producerState) checkMarker(pid int64, epoch int16, m record.Marker, tv int16) error {
	e := p.m[pid]
	if e == nil {
		return nil
	}
	switch {
	case tv >= TV2 && epoch < e.Epoch, tv >= TV2 && epoch == e.Epoch && e.CurrentTxnFirstOffset >= 0:
		return fmt.Errorf("%w: transactions v2 marker of producer %d with epoch %d, current epoch %d",
			ErrInvalidProducerEpoch, pid, epoch, e.Epoch)
	case tv < TV2 && epoch < e.Epoch:
		return fmt.Errorf("%w: marker of producer %d with epoch %d is older than the current epoch %d",
			ErrInvalidProducerEpoch, pid, epoch, e.Epoch)
	}
	if m.CoordinatorEpoch < e.CoordinatorEpoch {
		return fmt.Errorf("%w: marker of producer %d from coordinator epoch %d, the last was %d",
			ErrTransactionCoordinatorFenced, pid, m.CoordinatorEpoch, e.CoordinatorEpoch)
	}
	return nil
}

// VerificationGuard ties a verified transactional produce to the
// verification it passed (KAFKA-14884): the log accepts the producer's first
// transactional batch on the partition only with the guard that is still
// current, so a verification overtaken by a marker (and perhaps the next
// transaction) cannot let an old batch in. The zero value is Kafka's
// SENTINEL: no verification.
type VerificationGuard uint64

// verification is Kafka's VerificationStateEntry.
type verification struct {
	guard             VerificationGuard
	lowestSequence    int32
	epoch             int16
	supportsEpochBump bool
	createdMs         int64
}

// startVerification is Kafka's maybeStartTransactionVerification: the guard
// for a transactional batch that opens a transaction here (zero when one is
// already open in this epoch and no verification is needed). A producer
// already being verified keeps its guard; its entry tracks the highest
// epoch and the lowest sequence seen, so that of several batches in flight
// only the first in sequence may open the transaction.
func (p *producerState) startVerification(pid int64, seq int32, epoch int16, supportsEpochBump bool, nowMs int64) VerificationGuard {
	if p.hasOngoing(pid, epoch) {
		return 0
	}
	v := p.verifying[pid]
	if v == nil {
		v = &verification{guard: VerificationGuard(lastGuard.Add(1)), lowestSequence: seq, epoch: epoch,
			supportsEpochBump: supportsEpochBump, createdMs: nowMs}
		p.verifying[pid] = v
		return v.guard
	}
	switch {
	case epoch > v.epoch:
		v.epoch, v.lowestSequence = epoch, seq
	case epoch == v.epoch:
		v.lowestSequence = min(v.lowestSequence, seq)
	}
	v.supportsEpochBump = supportsEpochBump
	return v.guard
}

func (t *txns) clearVerification(pid int64) { delete(t.verifying, pid) }

func (t *txns) removeExpiredVerifications(nowMs, expirationMs int64) {
	for pid, v := range t.verifying {
		if expirationMs > 0 && nowMs-v.createdMs >= expirationMs {
			delete(t.verifying, pid)
		}
	}
}

// checkTransactional is the client-side gate for data batches of a
// producer id, in Kafka's order: the epoch first (KAFKA-19690: a fenced
// producer learns it is fenced, INVALID_PRODUCER_EPOCH, not
// INVALID_TXN_STATE), then for a transactional batch that would open a
// transaction the verification guard (when verification is on), then the
// sequence, then a plain batch while a transaction is open
// (INVALID_TXN_STATE).
func (p *producerState) checkClient(h *record.Header, guard VerificationGuard, verify bool) error {
	if err := p.checkEpoch(h); err != nil {
		return err
	}
	v := p.verifying[h.ProducerID]
	if h.Transactional() && !p.hasOngoing(h.ProducerID, h.ProducerEpoch) && verify &&
		(guard == 0 || v == nil || v.guard != guard) {
		return fmt.Errorf("%w: record was not part of an ongoing transaction (producer %d epoch %d)",
			ErrInvalidTxnState, h.ProducerID, h.ProducerEpoch)
	}
	if err := p.checkSequence(h, v); err != nil {
		return err
	}
	return p.checkTxnFlag(h)
}

// checkTxnFlag refuses a plain batch from a producer with a transaction open
// here (Kafka's appendDataBatch).
func (p *producerState) checkTxnFlag(h *record.Header) error {
	if e := p.m[h.ProducerID]; e != nil && e.CurrentTxnFirstOffset >= 0 && !h.Transactional() {
		return fmt.Errorf("%w: expected a transactional write from producer %d, which has a transaction open at offset %d",
			ErrInvalidTxnState, h.ProducerID, e.CurrentTxnFirstOffset)
	}
	return nil
}
