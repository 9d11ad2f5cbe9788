package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/txn"
)

// AddOffsetsToTxn, versions 0-4 (Kafka 4.2): adds the group's
// __consumer_offsets partition to the producer's transaction, as
// AddPartitionsToTxn would (PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before
// v2), so that the transaction's markers reach the offsets a
// TxnOffsetCommit then writes there.
func init() { register(kmsg.AddOffsetsToTxn.Int16(), 0, 4, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	// Kafka: WRITE on the transactional id, then READ on the group.
	z := h.authz(r)
	switch {
	case !z.allowed(auth.OpWrite, auth.ResourceTransactionalID, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case !z.allowed(auth.OpRead, auth.ResourceGroup, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	default:
		resp.ErrorCode = errCode(h.d.Logger, fencedBefore(h.addOffsetsToTxn(ctx, req), req.Version, 2))
	}
	return resp, nil
}

func (h *Handler) addOffsetsToTxn(ctx context.Context, req *kmsg.AddOffsetsToTxnRequest) error {
	if req.TransactionalID == "" {
		return fmt.Errorf("%w: empty transactional id", kerr.InvalidRequest)
	}
	t, err := h.txns()
	if err != nil {
		return err
	}
	g, err := h.groups()
	if err != nil {
		return err
	}
	tp := topicpart.TopicPartition{Topic: group.OffsetsTopic, Partition: g.PartitionFor(req.Group)}
	return t.AddPartitions(ctx, txn.AddRequest{TransactionalID: req.TransactionalID, ProducerID: req.ProducerID,
		ProducerEpoch: req.ProducerEpoch, Partitions: []topicpart.TopicPartition{tp}, TV: txn.TV0})
}
