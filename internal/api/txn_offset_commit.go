package api

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/txn"
)

// TxnOffsetCommit, versions 0-5 (Kafka 4.2): a transactional producer
// commits a group's offsets inside its transaction. Partitions of unknown
// topics are UNKNOWN_TOPIC_OR_PARTITION (once this broker has caught up with
// the metadata log: caughtUpImage). With
// transaction.partition.verification.enable the group's __consumer_offsets
// partition is first verified to be in the producer's ongoing transaction
// (KIP-890 part 1; v5, transactions v2, adds it instead): a fenced producer
// gets INVALID_PRODUCER_EPOCH, a partition not in the transaction
// TRANSACTION_ABORTABLE (INVALID_TXN_STATE before v4). The group coordinator
// then checks the member and generation (v3+, KIP-447: UNKNOWN_MEMBER_ID,
// ILLEGAL_GENERATION, FENCED_INSTANCE_ID) and writes the offsets in a
// transactional batch; they are pending until the transaction's marker.
func init() { register(kmsg.TxnOffsetCommit.Int16(), 0, 5, handleTxnOffsetCommit) }

func handleTxnOffsetCommit(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	cr := &group.TxnCommitRequest{Group: req.Group, TransactionalID: req.TransactionalID, ProducerID: req.ProducerID,
		ProducerEpoch: req.ProducerEpoch, Generation: -1}
	if req.Version >= 3 {
		cr.Generation, cr.MemberID, cr.InstanceID = req.Generation, req.MemberID, req.InstanceID
	}
	type slot struct {
		err  error
		t, p int
	}
	// Kafka: WRITE on the transactional id, then READ on the group; a
	// denial answers every partition.
	var authErr error
	switch z := h.authz(r); {
	case !z.allowed(auth.OpWrite, auth.ResourceTransactionalID, req.TransactionalID):
		authErr = kerr.TransactionalIDAuthorizationFailed
	case !z.allowed(auth.OpRead, auth.ResourceGroup, req.Group):
		authErr = kerr.GroupAuthorizationFailed
	}
	slots := make([][]slot, len(req.Topics))
	im := h.d.Metadata.Image()
	missing := slices.ContainsFunc(req.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) bool {
		return slices.ContainsFunc(t.Partitions, func(p kmsg.TxnOffsetCommitRequestTopicPartition) bool {
			return !hasPartition(im, t.Topic, p.Partition)
		})
	})
	if missing && authErr == nil {
		im = h.caughtUpImage(ctx, im)
	}
	for i, t := range req.Topics {
		slots[i] = make([]slot, len(t.Partitions))
		ct := group.CommitTopic{Topic: t.Topic}
		for j, p := range t.Partitions {
			if !hasPartition(im, t.Topic, p.Partition) {
				slots[i][j].err = fmt.Errorf("%w: %s-%d", kerr.UnknownTopicOrPartition, t.Topic, p.Partition)
				continue
			}
			epoch := p.LeaderEpoch
			if req.Version < 2 {
				epoch = -1
			}
			slots[i][j] = slot{t: len(cr.Topics), p: len(ct.Partitions)}
			ct.Partitions = append(ct.Partitions, group.CommitPartition{Partition: p.Partition, Offset: p.Offset,
				LeaderEpoch: epoch, Metadata: p.Metadata})
		}
		if len(ct.Partitions) > 0 {
			cr.Topics = append(cr.Topics, ct)
		}
	}
	var res *group.CommitResult
	err := authErr
	if authErr == nil {
		err = h.txnCommit(ctx, req, cr, &res)
	}
	for i, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch s := slots[i][j]; {
			case authErr != nil:
				rp.ErrorCode = errCode(h.d.Logger, authErr)
			case s.err != nil:
				rp.ErrorCode = errCode(h.d.Logger, s.err)
			case err != nil:
				rp.ErrorCode = errCode(h.d.Logger, err)
			default:
				rp.ErrorCode = errCode(h.d.Logger, res.Errs[s.t][s.p])
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (h *Handler) txnCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest, cr *group.TxnCommitRequest, res **group.CommitResult) error {
	g, err := h.groups()
	switch {
	case err != nil:
		return err
	case req.Group == "":
		return errEmptyGroupID
	case req.TransactionalID == "":
		return fmt.Errorf("%w: empty transactional id", kerr.InvalidRequest)
	case len(cr.Topics) == 0:
		return nil
	}
	if err := h.verifyOffsetsPartition(ctx, req, g.PartitionFor(req.Group)); err != nil {
		return err
	}
	*res, err = g.TxnCommit(ctx, cr)
	return err
}

// verifyOffsetsPartition checks (or, v5, adds) the group's
// __consumer_offsets partition in the producer's transaction, mapping the
// coordinator's answer as Kafka's AddPartitionsToTxnManager does for a
// TxnOffsetCommit of this version.
func (h *Handler) verifyOffsetsPartition(ctx context.Context, req *kmsg.TxnOffsetCommitRequest, partition int32) error {
	add := req.Version >= 5
	if !add && !h.d.Config().Bool("transaction.partition.verification.enable") {
		return nil
	}
	t, err := h.txns()
	if err != nil {
		return err
	}
	tp := topicpart.TopicPartition{Topic: group.OffsetsTopic, Partition: partition}
	ar := txn.AddRequest{TransactionalID: req.TransactionalID, ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch,
		Partitions: []topicpart.TopicPartition{tp}, VerifyOnly: !add, TV: txn.TV2}
	switch c := h.coordinatorBroker(t, req.TransactionalID); {
	case c >= 0 && c != h.d.NodeID && h.d.Peers != nil:
		err = h.remoteVerify(ctx, c, req.TransactionalID, producerKey{req.ProducerID, req.ProducerEpoch},
			ar.Partitions, add)[tp]
	case add:
		err = t.AddPartitions(ctx, ar)
	default:
		var per map[topicpart.TopicPartition]error
		if per, err = t.Verify(ctx, ar); err == nil {
			err = per[tp]
		}
	}
	return verificationError(err, req.Version < 4)
}

// verificationError is Kafka's AddPartitionsToTxnManager translation of a
// verification's answer for the client: PRODUCER_FENCED becomes
// INVALID_PRODUCER_EPOCH, and TRANSACTION_ABORTABLE INVALID_TXN_STATE for
// clients too old to know it.
func verificationError(err error, old bool) error {
	switch {
	case errors.Is(err, kerr.ProducerFenced):
		return fmt.Errorf("%w: %v", kerr.InvalidProducerEpoch, err)
	case old && errors.Is(err, kerr.TransactionAbortable):
		return fmt.Errorf("%w: %v", kerr.InvalidTxnState, err)
	}
	return err
}
