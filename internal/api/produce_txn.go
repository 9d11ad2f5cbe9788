package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/txn"
)

// verified is a transactional partition's verification: the guard to
// append with, or why it may not be appended.
type verified struct {
	guard log.VerificationGuard
	err   error
}

type producerKey struct {
	pid   int64
	epoch int16
}

// verifyProduce is ReplicaManager's transaction verification of a produce
// request: for every partition whose transactional batch would open a
// transaction there, a guard from the log, then one coordinator call per
// producer, then Kafka's error translation. A partition with a transaction
// already open needs no coordinator (guard 0).
//
// v12+ (transactions v2) adds the partitions to the transaction first: the
// add may wait for the previous transaction's markers (see
// txn.Shard.AddPartitions), and a marker voids a guard taken before it, so
// the guard is taken after the add and checked with a verification, the
// order Kafka's clients reach by retrying CONCURRENT_TRANSACTIONS.
func (h *Handler) verifyProduce(ctx context.Context, req *kmsg.ProduceRequest, parsed []record.Produced) map[topicpart.TopicPartition]verified {
	out := map[topicpart.TopicPartition]verified{}
	add := req.Version >= 12
	if !add && !h.d.Config().Bool("transaction.partition.verification.enable") {
		return out
	}
	batches := transactionalBatches(h, req, parsed)
	if add {
		pending := map[producerKey][]topicpart.TopicPartition{}
		for tp, hdr := range batches {
			if !h.hasOngoing(tp, hdr) {
				k := producerKey{hdr.ProducerID, hdr.ProducerEpoch}
				pending[k] = append(pending[k], tp)
			}
		}
		for k, tps := range pending {
			errs := h.coordinatorVerify(ctx, *req.TransactionID, k, tps, true)
			for _, tp := range tps {
				if err := produceVerificationError(errs[tp], req.Version); err != nil {
					out[tp] = verified{err: err}
					delete(batches, tp)
				}
			}
		}
	}
	pending := map[producerKey][]topicpart.TopicPartition{}
	for tp, hdr := range batches {
		guard, err := h.d.Replicas.StartTransactionVerification(tp, hdr.ProducerID, hdr.BaseSequence, hdr.ProducerEpoch, add)
		if err != nil || guard == 0 {
			continue // unknown partitions are answered by the append; 0: a transaction is open there
		}
		out[tp] = verified{guard: guard}
		k := producerKey{hdr.ProducerID, hdr.ProducerEpoch}
		pending[k] = append(pending[k], tp)
	}
	for k, tps := range pending {
		errs := h.coordinatorVerify(ctx, *req.TransactionID, k, tps, false)
		for _, tp := range tps {
			if err := produceVerificationError(errs[tp], req.Version); err != nil {
				out[tp] = verified{err: err}
			}
		}
	}
	return out
}

// transactionalBatches are the request's transactional batches by
// partition (with their headers); parsed holds every partition's decoded
// header in request order.
func transactionalBatches(h *Handler, req *kmsg.ProduceRequest, parsed []record.Produced) map[topicpart.TopicPartition]record.Header {
	out := map[topicpart.TopicPartition]record.Header{}
	k := 0
	for _, t := range req.Topics {
		name, err := h.topicName(t.Topic, t.TopicID, req.Version >= 13)
		for _, p := range t.Partitions {
			b := &parsed[k]
			k++
			if err == nil && b.Err == nil && b.Transactional() {
				out[topicpart.TopicPartition{Topic: name, Partition: p.Partition}] = b.Header
			}
		}
	}
	return out
}

// hasOngoing reports whether the producer has a transaction open on tp in
// the batch's epoch (no coordinator call is needed).
func (h *Handler) hasOngoing(tp topicpart.TopicPartition, hdr record.Header) bool {
	p, ok := h.d.Replicas.Get(tp)
	return ok && p.Log.HasOngoingTransaction(hdr.ProducerID, hdr.ProducerEpoch)
}

// coordinatorVerify asks the transaction coordinator about tps: add them
// to the transaction, or check that they are in it.
func (h *Handler) coordinatorVerify(ctx context.Context, id string, k producerKey, tps []topicpart.TopicPartition, add bool) map[topicpart.TopicPartition]error {
	errs := make(map[topicpart.TopicPartition]error, len(tps))
	all := func(err error) map[topicpart.TopicPartition]error {
		for _, tp := range tps {
			errs[tp] = err
		}
		return errs
	}
	t, err := h.txns()
	if err != nil {
		return all(err)
	}
	if c := h.coordinatorBroker(t, id); c >= 0 && c != h.d.NodeID && h.d.Peers != nil {
		return h.remoteVerify(ctx, c, id, k, tps, add)
	}
	ar := txn.AddRequest{TransactionalID: id, ProducerID: k.pid, ProducerEpoch: k.epoch, Partitions: tps, VerifyOnly: !add, TV: txn.TV2}
	if add {
		return all(t.AddPartitions(ctx, ar))
	}
	per, err := t.Verify(ctx, ar)
	if err != nil {
		return all(err)
	}
	return per
}

// produceVerificationError translates a verification's answer for a
// producer of this request version: AddPartitionsToTxnManager's mapping,
// then ReplicaManager's.
func produceVerificationError(err error, version int16) error {
	if err == nil {
		return nil
	}
	err = verificationError(err, version <= 10)
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return err
	}
	switch ke {
	case kerr.InvalidTxnState:
		return fmt.Errorf("%w: Partition was not added to the transaction", kerr.InvalidTxnState)
	case kerr.ConcurrentTransactions:
		if version >= 12 {
			return err // transactions v2: common while the last commit completes; the client retries it
		}
	case kerr.NetworkException, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable, kerr.NotCoordinator:
	default:
		return err
	}
	return fmt.Errorf("%w: Unable to verify the partition has been added to the transaction. Underlying error: %s",
		kerr.NotEnoughReplicas, ke.Message)
}
