package api

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/txn"
)

// AddPartitionsToTxn, versions 0-5 (Kafka 4.2).
//
// v0-3 come from producers: one transaction, answered per partition. As in
// KafkaApis, partitions of unknown topics are UNKNOWN_TOPIC_OR_PARTITION and
// then every other partition OPERATION_NOT_ATTEMPTED without asking the
// coordinator (unknown once this broker has caught up with the metadata
// log: caughtUpImage, in every version); otherwise every partition gets the coordinator's answer
// (PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2). v4+ come from
// partition leaders and batch transactions: VerifyOnly ones are KIP-890
// verification (per partition: NONE, or TRANSACTION_ABORTABLE when not in
// the ongoing transaction), the others a transactions v2 implicit add (a
// Produce v12+). With an authorizer, v4+ needs CLUSTER_ACTION on the
// cluster (CLUSTER_AUTHORIZATION_FAILED) and v0-3 WRITE on the
// transactional id (every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
// and on each topic, as KafkaApis checks: a partition of a topic the
// principal may not WRITE, or of an internal topic (whatever the ACLs, as
// in Kafka), is TOPIC_AUTHORIZATION_FAILED, one of an unknown topic
// UNKNOWN_TOPIC_OR_PARTITION, and when any is, every other partition is
// OPERATION_NOT_ATTEMPTED and the coordinator is not asked.
func init() { register(kmsg.AddPartitionsToTxn.Int16(), 0, 5, handleAddPartitionsToTxn) }

func handleAddPartitionsToTxn(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	// Kafka: v4+ (from brokers) CLUSTER_ACTION on the cluster; v0-3 WRITE
	// on the transactional id, else every partition is refused.
	z := h.authz(r)
	if req.Version >= 4 && !z.cluster(auth.OpClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if req.Version < 4 && !z.allowed(auth.OpWrite, auth.ResourceTransactionalID, req.TransactionalID) {
		for _, t := range req.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.TransactionalIDAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	if req.Version < 4 {
		tx := kmsg.AddPartitionsToTxnRequestTransaction{TransactionalID: req.TransactionalID,
			ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch}
		for _, t := range req.Topics {
			tx.Topics = append(tx.Topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
		writable := func(topic string) bool {
			return !isInternal(topic) && z.allowed(auth.OpWrite, auth.ResourceTopic, topic)
		}
		res := h.addPartitionsToTxn(ctx, req.Version, &tx, writable)
		for _, t := range res.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	for i := range req.Transactions {
		resp.Transactions = append(resp.Transactions, h.addPartitionsToTxn(ctx, req.Version, &req.Transactions[i], nil))
	}
	return resp, nil
}

// addPartitionsToTxn answers one transaction; writable (nil: all are)
// says which topics a client's request may add.
func (h *Handler) addPartitionsToTxn(ctx context.Context, version int16, tx *kmsg.AddPartitionsToTxnRequestTransaction,
	writable func(topic string) bool) kmsg.AddPartitionsToTxnResponseTransaction {
	res := kmsg.NewAddPartitionsToTxnResponseTransaction()
	res.TransactionalID = tx.TransactionalID
	codes := map[topicpart.TopicPartition]error{}
	var tps []topicpart.TopicPartition
	for _, t := range tx.Topics {
		for _, p := range t.Partitions {
			tps = append(tps, topicpart.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	// Authorization first, so that a denied topic's existence never shows.
	failed := false
	allowed := map[string]bool{}
	for _, tp := range tps {
		ok, asked := allowed[tp.Topic]
		if !asked {
			ok = writable == nil || writable(tp.Topic)
			allowed[tp.Topic] = ok
		}
		if !ok {
			codes[tp], failed = kerr.TopicAuthorizationFailed, true
		}
	}
	im := h.d.Metadata.Image()
	missing := func(tp topicpart.TopicPartition) bool {
		return allowed[tp.Topic] && !hasPartition(im, tp.Topic, tp.Partition)
	}
	if slices.ContainsFunc(tps, missing) {
		im = h.caughtUpImage(ctx, im)
	}
	for _, tp := range tps {
		if missing(tp) {
			codes[tp], failed = kerr.UnknownTopicOrPartition, true
		}
	}
	switch {
	case failed:
		for _, tp := range tps {
			if codes[tp] == nil {
				codes[tp] = kerr.OperationNotAttempted
			}
		}
	default:
		h.coordinateAdd(ctx, version, tx, tps, codes)
	}
	for _, t := range tx.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
			rp.Partition = p
			rp.ErrorCode = errCode(h.d.Logger, codes[topicpart.TopicPartition{Topic: t.Topic, Partition: p}])
			rt.Partitions = append(rt.Partitions, rp)
		}
		res.Topics = append(res.Topics, rt)
	}
	return res
}

// coordinateAdd asks the coordinator to add (or verify) tps and fills codes.
func (h *Handler) coordinateAdd(ctx context.Context, version int16, tx *kmsg.AddPartitionsToTxnRequestTransaction,
	tps []topicpart.TopicPartition, codes map[topicpart.TopicPartition]error) {
	t, err := h.txns()
	req := txn.AddRequest{TransactionalID: tx.TransactionalID, ProducerID: tx.ProducerID, ProducerEpoch: tx.ProducerEpoch,
		Partitions: tps, VerifyOnly: version >= 4 && tx.VerifyOnly, TV: txn.TV0}
	if version >= 4 && !tx.VerifyOnly {
		req.TV = txn.TV2
	}
	switch {
	case err != nil:
	case tx.TransactionalID == "":
		err = fmt.Errorf("%w: empty transactional id", kerr.InvalidRequest)
	case req.VerifyOnly:
		var per map[topicpart.TopicPartition]error
		if per, err = t.Verify(ctx, req); err == nil {
			for tp, e := range per {
				codes[tp] = e
			}
			return
		}
	default:
		err = fencedBefore(t.AddPartitions(ctx, req), version, 2)
	}
	for _, tp := range tps {
		codes[tp] = err
	}
}
