package txn

import (
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/coord"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// The client-facing ops of a shard, each Kafka's TransactionCoordinator
// handler with its checks in Kafka's order (the order decides which error a
// client sees when several apply).

// InitRequest is InitProducerId with a transactional id.
type InitRequest struct {
	TransactionalID string
	TimeoutMs       int32
	// ProducerID and ProducerEpoch are the caller's current ones (KIP-360,
	// v3+), -1 when not given.
	ProducerID    int64
	ProducerEpoch int16
	// NewProducerID is a fresh id the shell allocated after
	// ErrNeedProducerID, -1 before.
	NewProducerID int64
}

// ProducerIDAndEpoch is what InitProducerId and EndTxn v5 answer.
type ProducerIDAndEpoch struct {
	ProducerID    int64
	ProducerEpoch int16
}

// InitProducerID is Kafka's handleInitProducerId for a transactional id.
func (s *Shard) InitProducerID(req InitRequest, now time.Time, w coord.Waiter, out *coord.Output) {
	res, err := s.initProducerID(req, now, out)
	out.Reply(w, res, err)
}

func (s *Shard) initProducerID(req InitRequest, now time.Time, out *coord.Output) (ProducerIDAndEpoch, error) {
	t := s.txns[req.TransactionalID]
	if t == nil {
		if req.NewProducerID < 0 {
			return ProducerIDAndEpoch{}, ErrNeedProducerID
		}
		t = &Txn{ID: req.TransactionalID, ProducerID: req.NewProducerID, ProducerEpoch: -1, LastProducerEpoch: -1,
			PrevProducerID: -1, NextProducerID: -1, TimeoutMs: req.TimeoutMs, State: Empty, StartMs: -1,
			LastUpdateMs: now.UnixMilli()}
	}
	given := req.ProducerID >= 0
	// KIP-360: a caller naming a producer id must hold the current one, or
	// the previous one with an exhausted epoch (a retry of a rotation),
	// unless the metadata was just created.
	if given && t.ProducerEpoch != -1 && req.ProducerID != t.ProducerID &&
		!(req.ProducerID == t.PrevProducerID && epochExhausted(req.ProducerEpoch)) {
		return ProducerIDAndEpoch{}, fmt.Errorf("%w: producer id %d of transactional id %q is not the current %d",
			kerr.ProducerFenced, req.ProducerID, t.ID, t.ProducerID)
	}
	switch t.State {
	case PrepareCommit, PrepareAbort:
		return ProducerIDAndEpoch{}, concurrent(t)
	case Ongoing:
		// A new producer with the id fences the one with the open
		// transaction: its transaction is aborted with a bumped epoch and
		// the caller retries (CONCURRENT_TRANSACTIONS) until it completes.
		if err := s.fenceAndAbort(t, now, out, req.NewProducerID); err != nil {
			return ProducerIDAndEpoch{}, err
		}
		return ProducerIDAndEpoch{}, fmt.Errorf("%w: transactional id %q had an open transaction, now being aborted",
			kerr.ConcurrentTransactions, t.ID)
	}
	next := t.clone()
	switch {
	case epochExhausted(t.ProducerEpoch) && (!given || req.ProducerEpoch == t.ProducerEpoch):
		if req.NewProducerID < 0 {
			return ProducerIDAndEpoch{}, ErrNeedProducerID
		}
		next.PrevProducerID, next.ProducerID, next.ProducerEpoch = t.ProducerID, req.NewProducerID, 0
		next.LastProducerEpoch = -1
		if given {
			next.LastProducerEpoch = t.ProducerEpoch
		}
	case !given:
		next.ProducerEpoch, next.LastProducerEpoch = t.ProducerEpoch+1, -1
	case t.ProducerEpoch == -1 || req.ProducerEpoch == t.ProducerEpoch:
		next.ProducerEpoch, next.LastProducerEpoch = t.ProducerEpoch+1, t.ProducerEpoch
	case req.ProducerEpoch == t.LastProducerEpoch:
		// A retry of a call that succeeded: the current epoch, no bump.
	default:
		return ProducerIDAndEpoch{}, fenced(t, req.ProducerEpoch)
	}
	next.TimeoutMs, next.State, next.Partitions, next.StartMs = req.TimeoutMs, Empty, nil, -1
	next.LastUpdateMs = now.UnixMilli()
	if s.txns[t.ID] == nil {
		t = nil
	}
	s.apply(t, next, out)
	return ProducerIDAndEpoch{ProducerID: next.ProducerID, ProducerEpoch: next.ProducerEpoch}, nil
}

// AddRequest adds partitions to a producer's transaction
// (AddPartitionsToTxn, AddOffsetsToTxn, and the implicit add of a TV2
// produce or TxnOffsetCommit), or only checks them (VerifyOnly: KIP-890
// verification by a partition leader).
type AddRequest struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Partitions      []topicpart.TopicPartition
	VerifyOnly      bool
	// TV is the client's transaction version (TV2 for implicit adds).
	TV int16
}

// AddPartitions is Kafka's handleAddPartitionsToTransaction. Deviation: a
// transactions v2 implicit add (a Produce v12+ or TxnOffsetCommit v5 of the
// next transaction) that finds the previous one still writing its markers
// waits for them, up to parkLimit, instead of being answered
// CONCURRENT_TRANSACTIONS at once: the answer is what Kafka's would be once
// the markers are written, without the retry some clients pay a metadata
// refresh for (franz-go waits metadata.min.age, 5 s).
func (s *Shard) AddPartitions(req AddRequest, now time.Time, w coord.Waiter, out *coord.Output) {
	if t := s.txns[req.TransactionalID]; t != nil && t.State.preparing() && req.TV >= TV2 && !req.VerifyOnly &&
		(t.ProducerID == req.ProducerID && t.ProducerEpoch == req.ProducerEpoch ||
			t.NextProducerID == req.ProducerID && req.ProducerEpoch == 0) {
		s.parked = append(s.parked, parkedAdd{req: req, w: w, until: now.Add(parkLimit)})
		return
	}
	out.Reply(w, nil, s.addPartitions(req, now, out))
}

// parkLimit bounds how long an implicit add waits for the previous
// transaction's markers before it is answered CONCURRENT_TRANSACTIONS.
const parkLimit = 2 * time.Second

// parkedAdd is an implicit add waiting for its transaction to complete.
type parkedAdd struct {
	req   AddRequest
	w     coord.Waiter
	until time.Time
}

// wakeParked answers the parked adds of id (its transaction completed), or
// those past their limit (id empty): what AddPartitions answers now.
func (s *Shard) wakeParked(id string, now time.Time, out *coord.Output) {
	n := 0
	for _, p := range s.parked {
		switch {
		case p.req.TransactionalID == id:
			out.Reply(p.w, nil, s.addPartitions(p.req, now, out))
		case !now.Before(p.until):
			out.Reply(p.w, nil, s.addPartitions(p.req, now, out))
		default:
			s.parked[n] = p
			n++
		}
	}
	s.parked = s.parked[:n]
}

// producerMatches checks a request's producer id and epoch: an unknown id or
// another producer id is INVALID_PRODUCER_ID_MAPPING, another epoch
// PRODUCER_FENCED.
func (s *Shard) producerMatches(id string, pid int64, epoch int16) (*Txn, error) {
	t := s.txns[id]
	if t == nil || t.ProducerID != pid {
		return nil, mapping(id, pid)
	}
	if t.ProducerEpoch != epoch {
		return nil, fenced(t, epoch)
	}
	return t, nil
}

func (s *Shard) addPartitions(req AddRequest, now time.Time, out *coord.Output) error {
	t, err := s.producerMatches(req.TransactionalID, req.ProducerID, req.ProducerEpoch)
	if err != nil {
		return err
	}
	if t.State.preparing() {
		return concurrent(t)
	}
	if t.State == Ongoing && !slices.ContainsFunc(req.Partitions, func(tp topicpart.TopicPartition) bool { return !t.hasPartition(tp) }) {
		return nil
	}
	next := t.clone()
	if t.State != Ongoing {
		next.StartMs, next.Partitions = now.UnixMilli(), nil
	}
	next.State = Ongoing
	next.addPartitions(req.Partitions)
	next.ClientTV = req.TV
	next.LastUpdateMs = now.UnixMilli()
	s.apply(t, next, out)
	return nil
}

// Verify is Kafka's handleVerifyPartitionsInTransaction: per partition, nil
// if it is in the producer's ongoing transaction, TRANSACTION_ABORTABLE if
// not. The whole request fails as AddPartitions would, except that a
// transition in flight is not waited for (KAFKA-14904).
func (s *Shard) Verify(req AddRequest, _ time.Time, w coord.Waiter, out *coord.Output) {
	t, err := s.producerMatches(req.TransactionalID, req.ProducerID, req.ProducerEpoch)
	if err == nil && t.State.preparing() {
		err = concurrent(t)
	}
	if err != nil {
		out.Reply(w, nil, err)
		return
	}
	res := make(map[topicpart.TopicPartition]error, len(req.Partitions))
	for _, tp := range req.Partitions {
		if t.State != Ongoing || !t.hasPartition(tp) {
			res[tp] = fmt.Errorf("%w: %s is not in the ongoing transaction of %q", kerr.TransactionAbortable, tp, t.ID)
		} else {
			res[tp] = nil
		}
	}
	out.Reply(w, res, nil)
}

// EndRequest is EndTxn.
type EndRequest struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Commit          bool
	// TV2: the request is EndTxn v5+ (KIP-890 part 2: the epoch is bumped).
	TV2 bool
	// NewProducerID is a fresh id after ErrNeedProducerID, -1 before.
	NewProducerID int64
}

// EndTxn is Kafka's endTransaction for a client's EndTxn.
func (s *Shard) EndTxn(req EndRequest, now time.Time, w coord.Waiter, out *coord.Output) {
	var res ProducerIDAndEpoch
	var err error
	if req.TV2 {
		res, err = s.endTxnTV2(req, now, out)
	} else {
		res, err = s.endTxnTV1(req, now, out)
	}
	out.Reply(w, res, err)
}

func (s *Shard) endTxnTV1(req EndRequest, now time.Time, out *coord.Output) (ProducerIDAndEpoch, error) {
	t, err := s.producerMatches(req.TransactionalID, req.ProducerID, req.ProducerEpoch)
	if err != nil {
		return ProducerIDAndEpoch{}, err
	}
	res := ProducerIDAndEpoch{ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch}
	same := (t.State == PrepareCommit || t.State == CompleteCommit) == req.Commit
	switch t.State {
	case Ongoing:
		_, err := s.prepareEnd(t, req.Commit, false, now, out, -1)
		return res, err
	case PrepareCommit, PrepareAbort:
		if same {
			return res, concurrent(t)
		}
	case CompleteCommit, CompleteAbort:
		if same {
			return res, nil // a retry of an end that completed
		}
	}
	return res, invalidState(t, endWord(req.Commit))
}

func endWord(commit bool) string {
	if commit {
		return "commit"
	}
	return "abort"
}

// endTxnTV2 follows the TV2 table of Kafka's TransactionCoordinator: a
// retry carries the epoch before the bump (epoch - 1, or the previous
// producer id after a rotation), the current epoch starts an end.
func (s *Shard) endTxnTV2(req EndRequest, now time.Time, out *coord.Output) (ProducerIDAndEpoch, error) {
	t := s.txns[req.TransactionalID]
	if t == nil {
		return ProducerIDAndEpoch{}, mapping(req.TransactionalID, req.ProducerID)
	}
	sameID := req.ProducerID == t.ProducerID
	retryRotated := req.ProducerID == t.PrevProducerID && t.ProducerEpoch == 0 && epochExhausted(req.ProducerEpoch+1) &&
		(t.State == CompleteCommit || t.State == CompleteAbort)
	if !sameID && !retryRotated {
		return ProducerIDAndEpoch{}, mapping(t.ID, req.ProducerID)
	}
	retry := retryRotated || (sameID && req.ProducerEpoch == t.ProducerEpoch-1)
	current := sameID && req.ProducerEpoch == t.ProducerEpoch
	if !retry && !current {
		return ProducerIDAndEpoch{}, fenced(t, req.ProducerEpoch)
	}
	result := func(t *Txn) ProducerIDAndEpoch {
		if t.NextProducerID >= 0 {
			return ProducerIDAndEpoch{ProducerID: t.NextProducerID, ProducerEpoch: 0}
		}
		return ProducerIDAndEpoch{ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch}
	}
	end := func() (ProducerIDAndEpoch, error) {
		next, err := s.prepareEnd(t, req.Commit, true, now, out, req.NewProducerID)
		if err != nil {
			return ProducerIDAndEpoch{}, err
		}
		return result(next), nil
	}
	switch t.State {
	case Ongoing:
		if !current {
			return ProducerIDAndEpoch{}, fenced(t, req.ProducerEpoch)
		}
		return end()
	case PrepareCommit, PrepareAbort:
		if current {
			// The end of the client's next transaction (the epoch this
			// end bumped to) while this one's markers are still being
			// written: retriable, as the next transaction's adds are.
			// Deviation: Kafka's table answers this only for a retry;
			// kgo ends an empty next transaction at once, and in a
			// cluster the markers take long enough for it to get here.
			return ProducerIDAndEpoch{}, concurrent(t)
		}
		if (t.State == PrepareCommit) == req.Commit {
			return ProducerIDAndEpoch{}, concurrent(t)
		}
	case CompleteCommit, CompleteAbort:
		same := (t.State == CompleteCommit) == req.Commit
		switch {
		case retry && same:
			return result(t), nil
		case current && !req.Commit:
			return end() // an abort the client is unsure it needs: an empty one
		}
	case Empty:
		if retry {
			return ProducerIDAndEpoch{}, fenced(t, req.ProducerEpoch)
		}
		if !req.Commit {
			return end()
		}
	}
	return ProducerIDAndEpoch{}, invalidState(t, endWord(req.Commit))
}

// Description is DescribeTransactions' answer for one id.
type Description struct {
	TransactionalID string
	State           State
	TimeoutMs       int32
	StartMs         int64
	ProducerID      int64
	ProducerEpoch   int16
	Partitions      []topicpart.TopicPartition
	LastUpdateMs    int64
	ClientTV        int16
}

func describe(t *Txn) Description {
	return Description{TransactionalID: t.ID, State: t.State, TimeoutMs: t.TimeoutMs, StartMs: t.StartMs,
		ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch, Partitions: slices.Clone(t.Partitions),
		LastUpdateMs: t.LastUpdateMs, ClientTV: t.ClientTV}
}

// Describe answers DescribeTransactions for one id:
// TRANSACTIONAL_ID_NOT_FOUND when unknown.
func (s *Shard) Describe(id string, _ time.Time, w coord.Waiter, out *coord.Output) {
	t := s.txns[id]
	if t == nil {
		out.Reply(w, nil, fmt.Errorf("%w: %q", kerr.TransactionalIDNotFound, id))
		return
	}
	out.Reply(w, describe(t), nil)
}

// ListFilter is ListTransactions' filters (empty: any).
type ListFilter struct {
	States      []State
	ProducerIDs []int64
	// MinDurationMs (v1, KIP-994): only transactions running longer; -1 any.
	MinDurationMs int64
	// IDPattern (v2, KIP-1152), nil for any.
	IDPattern *regexp.Regexp
}

// List answers ListTransactions for this shard (Kafka's
// listTransactionStates): the matching transactions, Dead excluded.
func (s *Shard) List(f ListFilter, now time.Time, w coord.Waiter, out *coord.Output) {
	var res []Description
	for _, id := range s.sortedIDs() {
		t := s.txns[id]
		switch {
		case t.State == Dead,
			len(f.ProducerIDs) > 0 && !slices.Contains(f.ProducerIDs, t.ProducerID),
			len(f.States) > 0 && !slices.Contains(f.States, t.State),
			f.MinDurationMs >= 0 && now.UnixMilli()-t.StartMs <= f.MinDurationMs,
			f.IDPattern != nil && !f.IDPattern.MatchString(id):
			continue
		}
		res = append(res, describe(t))
	}
	out.Reply(w, res, nil)
}
