package txn

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/coord"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// Config is what a shard reads of the broker's configuration.
type Config struct {
	MaxTimeoutMs      int32 // transaction.max.timeout.ms
	AbortCheckMs      int64 // transaction.abort.timed.out.transaction.cleanup.interval.ms
	ExpirationCheckMs int64 // transaction.remove.expired.transaction.cleanup.interval.ms
	IDExpirationMs    int64 // transactional.id.expiration.ms
	// ValueVersion is the TransactionLogValue version written: 1 once
	// transaction.version ≥ 1 is finalized, else 0.
	ValueVersion int16
}

// DefaultConfig is Kafka's defaults.
func DefaultConfig() Config {
	return Config{MaxTimeoutMs: 900000, AbortCheckMs: 10000, ExpirationCheckMs: 3600000,
		IDExpirationMs: 604800000, ValueVersion: 1}
}

// maxExpirationsPerTick bounds the tombstones one expiration pass writes
// (Kafka batches them up to max.message.bytes); more wait for the next pass.
const maxExpirationsPerTick = 500

// Shard is the state of one __transaction_state partition: the
// transactional ids that hash to it. It is a deterministic state machine
// used only by the partition's owner goroutine (internal/coord): every
// method takes the time, and effects are returned in a coord.Output —
// records to append, replies, and MarkerJobs for the shell to carry out once
// the records are durable.
type Shard struct {
	partition        int32
	coordinatorEpoch int32
	cfg              func() Config
	logger           *slog.Logger
	txns             map[string]*Txn

	loaded          bool
	nextAbortCheck  time.Time
	nextExpiryCheck time.Time
	// resend: Prepare* transactions loaded from the log whose markers must
	// be written again (the first Tick after Loaded hands them over).
	resend bool
	// parked are implicit adds waiting for a transaction to complete.
	parked []parkedAdd
}

// NewShard returns an empty shard for partition, loaded at coordinator
// epoch coordinatorEpoch (the partition's leader epoch).
func NewShard(partition, coordinatorEpoch int32, cfg func() Config, logger *slog.Logger) *Shard {
	if logger == nil {
		logger = slog.Default()
	}
	return &Shard{partition: partition, coordinatorEpoch: coordinatorEpoch, cfg: cfg, logger: logger,
		txns: make(map[string]*Txn)}
}

// MarkerJob asks the shell to write a decided transaction's markers to its
// partitions and then complete it (CompleteTxn).
type MarkerJob struct {
	TransactionalID      string
	CoordinatorPartition int32
	CoordinatorEpoch     int32
	ProducerID           int64
	ProducerEpoch        int16
	Commit               bool
	TransactionVersion   int16
	Partitions           []topicpart.TopicPartition
}

// NeedProducerID asks the shell for a fresh producer id to abort a timed-out
// transaction whose epoch would overflow (AbortTimedOut).
type NeedProducerID struct{ TransactionalID string }

// ErrNeedProducerID: the op needs a fresh producer id (a new transactional
// id, or a producer id rotation at epoch exhaustion); the shell allocates
// one and runs the op again with it.
var ErrNeedProducerID = errors.New("a new producer id is needed")

// Replay applies one __transaction_state record.
func (s *Shard) Replay(_ int64, r coord.Record) error {
	id, ok, err := decodeKey(r.Key)
	if err != nil {
		return err
	}
	if !ok {
		s.logger.Warn("skipping a __transaction_state record of an unknown key version", "transactional_id", id)
		return nil
	}
	if r.Value == nil {
		delete(s.txns, id)
		return nil
	}
	t, err := decodeValue(id, r.Value)
	if err != nil {
		return err
	}
	s.txns[id] = t
	return nil
}

// Loaded arms the timers; decided transactions are re-driven by the first
// Tick (Kafka's load re-sends the markers of every Prepare* it loads).
func (s *Shard) Loaded(now time.Time) {
	s.loaded = true
	cfg := s.cfg()
	s.nextAbortCheck = now.Add(time.Duration(cfg.AbortCheckMs) * time.Millisecond)
	s.nextExpiryCheck = now.Add(time.Duration(cfg.ExpirationCheckMs) * time.Millisecond)
	for _, t := range s.txns {
		s.resend = s.resend || t.State.preparing()
	}
}

// NextDeadline is the earliest timer: now when markers wait to be re-driven.
func (s *Shard) NextDeadline() (time.Time, bool) {
	if !s.loaded {
		return time.Time{}, false
	}
	if s.resend {
		return time.Time{}, true
	}
	at := s.nextAbortCheck
	if s.nextExpiryCheck.Before(at) {
		at = s.nextExpiryCheck
	}
	for _, p := range s.parked {
		if p.until.Before(at) {
			at = p.until
		}
	}
	return at, true
}

// Tick re-drives loaded Prepare* transactions, aborts timed-out ones and
// expires idle transactional ids.
func (s *Shard) Tick(now time.Time, out *coord.Output) {
	if s.resend {
		s.resend = false
		for _, id := range s.sortedIDs() {
			if t := s.txns[id]; t.State.preparing() {
				out.Effect(s.markerJob(t, t.State == PrepareCommit))
			}
		}
	}
	s.wakeParked("", now, out)
	cfg := s.cfg()
	if !now.Before(s.nextAbortCheck) {
		s.nextAbortCheck = now.Add(time.Duration(cfg.AbortCheckMs) * time.Millisecond)
		s.abortTimedOut(now, out)
	}
	if !now.Before(s.nextExpiryCheck) {
		s.nextExpiryCheck = now.Add(time.Duration(cfg.ExpirationCheckMs) * time.Millisecond)
		if s.expire(now, cfg, out) {
			s.nextExpiryCheck = now // more to expire: go on at once
		}
	}
}

func (s *Shard) sortedIDs() []string {
	ids := make([]string, 0, len(s.txns))
	for id := range s.txns {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// abortTimedOut is Kafka's abortTimedOutTransactions: every Ongoing
// transaction past its timeout is fenced (epoch bump) and aborted.
func (s *Shard) abortTimedOut(now time.Time, out *coord.Output) {
	nowMs := now.UnixMilli()
	for _, id := range s.sortedIDs() {
		t := s.txns[id]
		if t.State != Ongoing || t.StartMs+int64(t.TimeoutMs) >= nowMs {
			continue
		}
		s.logger.Info("aborting a timed-out transaction", "transactional_id", id, "producer_id", t.ProducerID,
			"producer_epoch", t.ProducerEpoch, "timeout_ms", t.TimeoutMs)
		if err := s.fenceAndAbort(t, now, out, -1); errors.Is(err, ErrNeedProducerID) {
			out.Effect(NeedProducerID{TransactionalID: id})
		}
	}
}

// AbortTimedOut aborts a timed-out transaction with a fresh producer id for
// the rotation its epoch needs (after NeedProducerID).
func (s *Shard) AbortTimedOut(id string, newPID int64, now time.Time, w coord.Waiter, out *coord.Output) {
	t := s.txns[id]
	if t != nil && t.State == Ongoing && t.StartMs+int64(t.TimeoutMs) < now.UnixMilli() {
		out.Reply(w, nil, s.fenceAndAbort(t, now, out, newPID))
		return
	}
	out.Reply(w, nil, nil)
}

// expire writes tombstones for transactional ids idle past
// transactional.id.expiration.ms in Empty or Complete* (Kafka's
// removeExpiredTransactionalIds, through the transient Dead state). It
// reports whether more wait.
func (s *Shard) expire(now time.Time, cfg Config, out *coord.Output) bool {
	n := 0
	for _, id := range s.sortedIDs() {
		t := s.txns[id]
		if !t.State.expirationAllowed() || t.LastUpdateMs > now.UnixMilli()-cfg.IDExpirationMs {
			continue
		}
		if n == maxExpirationsPerTick {
			return true
		}
		s.logger.Info("transactional id expired", "transactional_id", id, "producer_id", t.ProducerID)
		delete(s.txns, id)
		out.Write(tombstone(id))
		n++
	}
	return false
}

// apply records a transition of t (nil for a new id) to next: the
// invariants of Kafka's completeTransitionTo are checked, the state
// replaced and the record written.
func (s *Shard) apply(t, next *Txn, out *coord.Output) {
	if t != nil {
		switch {
		case !canTransition(t.State, next.State):
			panic(fmt.Sprintf("txn: %s: transition %s → %s", next.ID, t.State, next.State))
		case next.ProducerID == t.ProducerID && next.ProducerEpoch < t.ProducerEpoch:
			panic(fmt.Sprintf("txn: %s: epoch %d → %d", next.ID, t.ProducerEpoch, next.ProducerEpoch))
		case next.LastUpdateMs < t.LastUpdateMs:
			next.LastUpdateMs = t.LastUpdateMs // a clock step back does not rewind the record
		}
	}
	s.txns[next.ID] = next
	out.Write(record(next, s.cfg().ValueVersion))
}

func (s *Shard) markerJob(t *Txn, commit bool) MarkerJob {
	return MarkerJob{TransactionalID: t.ID, CoordinatorPartition: s.partition, CoordinatorEpoch: s.coordinatorEpoch,
		ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch, Commit: commit,
		TransactionVersion: max(t.ClientTV, TV1), Partitions: slices.Clone(t.Partitions)}
}

// prepareEnd decides t: PrepareCommit or PrepareAbort is written and the
// markers handed to the shell. bump is a TV2 end (the epoch goes up by one,
// and a producer id rotation is prepared when it is exhausted).
func (s *Shard) prepareEnd(t *Txn, commit, bump bool, now time.Time, out *coord.Output, newPID int64) (*Txn, error) {
	next := t.clone()
	if bump {
		next.LastProducerEpoch = t.ProducerEpoch
		next.ProducerEpoch = t.ProducerEpoch + 1
		if epochExhausted(next.ProducerEpoch) {
			if newPID < 0 {
				return nil, ErrNeedProducerID
			}
			next.NextProducerID = newPID
		}
	}
	next.State = PrepareAbort
	if commit {
		next.State = PrepareCommit
	}
	next.LastUpdateMs = now.UnixMilli()
	s.apply(t, next, out)
	out.Effect(s.markerJob(next, commit))
	return next, nil
}

// fenceAndAbort fences an Ongoing transaction's producer (Kafka's
// prepareFenceProducerEpoch: epoch + 1) and aborts the transaction with the
// new epoch (under TV2 the abort bumps it once more).
func (s *Shard) fenceAndAbort(t *Txn, now time.Time, out *coord.Output, newPID int64) error {
	fenced := t.clone()
	fenced.LastProducerEpoch = t.ProducerEpoch
	fenced.ProducerEpoch = t.ProducerEpoch + 1
	fenced.State = PrepareEpochFence
	_, err := s.prepareEnd(fenced, false, t.ClientTV >= TV2, now, out, newPID)
	return err
}

// CompleteTxn ends a decided transaction once all its markers are written
// (CompleteCommit or CompleteAbort; a prepared producer id rotation takes
// effect). A request that no longer matches — another coordinator epoch, or
// the transaction moved on — changes nothing.
func (s *Shard) CompleteTxn(job MarkerJob, now time.Time, w coord.Waiter, out *coord.Output) {
	t := s.txns[job.TransactionalID]
	want := PrepareAbort
	if job.Commit {
		want = PrepareCommit
	}
	if t == nil || job.CoordinatorEpoch != s.coordinatorEpoch || t.State != want ||
		t.ProducerID != job.ProducerID || t.ProducerEpoch != job.ProducerEpoch {
		out.Reply(w, false, nil)
		return
	}
	next := t.clone()
	next.State = CompleteAbort
	if job.Commit {
		next.State = CompleteCommit
	}
	next.Partitions = nil
	next.LastUpdateMs = now.UnixMilli()
	if next.NextProducerID >= 0 {
		next.PrevProducerID, next.ProducerID, next.ProducerEpoch = t.ProducerID, t.NextProducerID, 0
		next.NextProducerID = -1
	}
	s.apply(t, next, out)
	out.Reply(w, true, nil)
	s.wakeParked(t.ID, now, out)
}

// fenced is PRODUCER_FENCED with Kafka's words.
func fenced(t *Txn, epoch int16) error {
	return fmt.Errorf("%w: producer epoch %d of transactional id %q is not the current epoch %d",
		kerr.ProducerFenced, epoch, t.ID, t.ProducerEpoch)
}

func mapping(id string, pid int64) error {
	return fmt.Errorf("%w: producer id %d does not match transactional id %q", kerr.InvalidProducerIDMapping, pid, id)
}

func concurrent(t *Txn) error {
	return fmt.Errorf("%w: transactional id %q is in state %s", kerr.ConcurrentTransactions, t.ID, t.State)
}

func invalidState(t *Txn, what string) error {
	return fmt.Errorf("%w: %s in state %s (transactional id %q)", kerr.InvalidTxnState, what, t.State, t.ID)
}
