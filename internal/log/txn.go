package log

import (
	"sort"

	"github.com/gregor-broker/gregor/internal/record"
)

// This file is the log's transactional surface: markers, verification,
// the aborted transactions a read_committed fetch needs, and the producer
// state the admin APIs describe.

// MarkerSpec is a transaction marker to write (WriteTxnMarkers on the
// partition leader).
type MarkerSpec struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	// TransactionVersion decides the epoch rule (see checkMarker): TV2
	// markers must carry a newer epoch than the producer's, except an
	// idempotent retry.
	TransactionVersion int16
}

// AppendMarker writes a transaction marker as a control batch of its own
// (one offset), with leaderEpoch, after checking it against the producer
// state (INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED). A marker
// that aborts a transaction the producer has open here adds an entry to the
// aborted-transaction index. Durability is separate, as for Append.
func (l *Log) AppendMarker(m MarkerSpec, leaderEpoch int32) (AppendResult, error) {
	now := l.nowMs()
	batch := record.BuildMarker(record.MarkerSpec{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
		Commit: m.Commit, CoordinatorEpoch: m.CoordinatorEpoch, Timestamp: now})
	h, err := record.ParseHeader(batch)
	if err != nil {
		return AppendResult{}, err
	}
	typ := record.ControlAbort
	if m.Commit {
		typ = record.ControlCommit
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return AppendResult{}, err
	}
	if err := l.producers.checkMarker(m.ProducerID, m.ProducerEpoch,
		record.Marker{Type: typ, CoordinatorEpoch: m.CoordinatorEpoch}, m.TransactionVersion); err != nil {
		return AppendResult{}, err
	}
	leo := l.leo.Load()
	record.SetBaseOffset(batch, leo)
	record.SetLeaderEpoch(batch, leaderEpoch)
	h.BaseOffset, h.LeaderEpoch = leo, leaderEpoch
	if err := l.appendLocked(batch, &h, now); err != nil {
		return AppendResult{}, err
	}
	return AppendResult{BaseOffset: leo, LastOffset: leo, LogAppendTime: -1, LogStartOffset: l.logStart.Load()}, nil
}

// StartTransactionVerification returns the guard a client's transactional
// batch must carry to open a transaction on this partition, once the
// transaction coordinator has confirmed the partition is in the producer's
// ongoing transaction (Kafka's maybeStartTransactionVerification). Zero
// means no verification is needed: the producer has a transaction open here
// in this epoch already. supportsEpochBump is true for a transactions v2
// producer, whose first batch here must then carry sequence 0.
func (l *Log) StartTransactionVerification(pid int64, seq int32, epoch int16, supportsEpochBump bool) VerificationGuard {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.producers.startVerification(pid, seq, epoch, supportsEpochBump, l.nowMs())
}

// HasOngoingTransaction is Kafka's hasOngoingTransaction: pid has a
// transaction open here in epoch.
func (l *Log) HasOngoingTransaction(pid int64, epoch int16) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.producers.hasOngoing(pid, epoch)
}

// ProducerEpoch is the epoch the log last saw from pid (ok false when it
// does not know pid): a produce from an older epoch is refused before any
// verification (KAFKA-19690).
func (l *Log) ProducerEpoch(pid int64) (int16, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.producers.m[pid]; e != nil {
		return e.Epoch, true
	}
	return 0, false
}

// AbortedTransactions lists the aborted transactions a read_committed
// consumer reading [fetchOffset, upperBound) must filter out (Kafka's
// collectAbortedTransactions): the index entries overlapping that range,
// from the segment holding fetchOffset onwards, stopping at the first entry
// whose recorded last stable offset reaches upperBound. upperBound is the
// offset after the last batch returned. A transaction's entry lives with its
// ABORT marker, which may lie in any later segment, so the walk is not
// bounded by upperBound; segments without aborted transactions cost nothing.
func (l *Log) AbortedTransactions(fetchOffset, upperBound int64) ([]AbortedTxn, error) {
	segs := l.segments()
	var out []AbortedTxn
	for i := max(segmentFor(segs, fetchOffset), 0); i < len(segs); i++ {
		if segs[i].txn.count() == 0 {
			continue
		}
		var done bool
		var err error
		if out, done, err = segs[i].txn.collect(out, fetchOffset, upperBound); err != nil || done {
			return out, err
		}
	}
	return out, nil
}

// OpenTxn is a transaction open on the partition, or decided but with its
// marker not yet under the high watermark (Unreplicated): what holds the
// last stable offset back.
type OpenTxn struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	FirstOffset      int64
	// StartMs is the broker's clock at the transaction's first append here
	// (-1 when it began before the log was loaded); LastTimestamp the
	// producer's last batch max timestamp.
	StartMs       int64
	LastTimestamp int64
	// Unreplicated: decided, the marker at MarkerOffset is in the log but
	// not yet under the high watermark.
	Unreplicated bool
	Aborted      bool
	MarkerOffset int64
}

// OpenTransactions lists what holds the last stable offset back, earliest
// first offset first.
func (l *Log) OpenTransactions() []OpenTxn {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []OpenTxn
	for pid, first := range l.producers.ongoing {
		e := l.producers.m[pid]
		out = append(out, OpenTxn{ProducerID: pid, ProducerEpoch: e.Epoch, CoordinatorEpoch: e.CoordinatorEpoch,
			FirstOffset: first, StartMs: e.TxnStartMs, LastTimestamp: e.LastTimestamp, MarkerOffset: -1})
	}
	for _, c := range l.producers.unreplicated {
		o := OpenTxn{ProducerID: c.ProducerID, FirstOffset: c.FirstOffset, StartMs: -1, Unreplicated: true,
			Aborted: c.Aborted, MarkerOffset: c.LastOffset, ProducerEpoch: -1, CoordinatorEpoch: -1, LastTimestamp: -1}
		if e := l.producers.m[c.ProducerID]; e != nil {
			o.ProducerEpoch, o.CoordinatorEpoch, o.LastTimestamp = e.Epoch, e.CoordinatorEpoch, e.LastTimestamp
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FirstOffset < out[j].FirstOffset })
	return out
}

// ActiveProducer is one producer the partition knows (DescribeProducers).
type ActiveProducer struct {
	ProducerID            int64
	ProducerEpoch         int16
	LastSequence          int32 // -1 when the producer has no batch here
	LastTimestamp         int64
	CoordinatorEpoch      int32
	CurrentTxnStartOffset int64 // -1 when no transaction is open
}

// ActiveProducers lists every producer the partition knows, by id.
func (l *Log) ActiveProducers() []ActiveProducer {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]ActiveProducer, 0, len(l.producers.m))
	for pid, e := range l.producers.m {
		out = append(out, ActiveProducer{ProducerID: pid, ProducerEpoch: e.Epoch, LastSequence: e.lastSeq(),
			LastTimestamp: e.LastTimestamp, CoordinatorEpoch: e.CoordinatorEpoch, CurrentTxnStartOffset: e.CurrentTxnFirstOffset})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}
