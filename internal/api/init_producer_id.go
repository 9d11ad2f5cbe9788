package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/txn"
)

// InitProducerId, versions 0-5 (Kafka 4.2).
//
// A null transactional id gets a new producer id with epoch 0, as Kafka's
// transaction coordinator does: even on v3+ when the producer names its
// current id and epoch (KIP-360), since an idempotent producer bumps its
// epoch itself and only asks again when it must leave its id. Producer ids
// come from blocks the controller reserves durably, so none is handed out
// twice, across restarts too. As in Kafka, v3+ with exactly one of
// ProducerId and ProducerEpoch set (not -1) is INVALID_REQUEST, and an empty
// transactional id is INVALID_REQUEST.
//
// A transactional id goes to the transaction coordinator (txn.Shard's
// InitProducerID: fencing, epoch bump, KIP-360 recovery, producer id
// rotation at epoch exhaustion), after Kafka's own check of the timeout
// (INVALID_TRANSACTION_TIMEOUT when not positive or above
// transaction.max.timeout.ms). PRODUCER_FENCED is INVALID_PRODUCER_EPOCH
// before v4.
func init() { register(kmsg.InitProducerID.Int16(), 0, 5, handleInitProducerID) }

func handleInitProducerID(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	res, err := h.initProducerID(ctx, req, r)
	if err != nil {
		resp.ErrorCode = errCode(h.d.Logger, fencedBefore(err, req.Version, 4))
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.ProducerEpoch
	h.d.Logger.Debug("producer id assigned", "producer_id", res.ProducerID, "epoch", res.ProducerEpoch,
		"client", clientID(r), "remote", r.Conn.Remote)
	return resp, nil
}

func (h *Handler) initProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest, r *server.Request) (txn.ProducerIDAndEpoch, error) {
	// Kafka's authorization comes first: WRITE on the transactional id, or
	// for an idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE
	// on some topic (KIP-679).
	z := h.authz(r)
	if id := req.TransactionalID; id != nil {
		if !z.allowed(auth.OpWrite, auth.ResourceTransactionalID, *id) {
			return txn.ProducerIDAndEpoch{}, kerr.TransactionalIDAuthorizationFailed
		}
	} else if !z.filter(auth.OpIdempotentWrite, auth.ResourceCluster, auth.ClusterName) && !z.anyResource(auth.OpWrite, auth.ResourceTopic) {
		return txn.ProducerIDAndEpoch{}, kerr.ClusterAuthorizationFailed
	}
	if req.Version >= 3 && (req.ProducerID == -1) != (req.ProducerEpoch == -1) {
		return txn.ProducerIDAndEpoch{}, fmt.Errorf("%w: producer id %d with epoch %d", kerr.InvalidRequest, req.ProducerID, req.ProducerEpoch)
	}
	id := req.TransactionalID
	if id == nil {
		pid, err := h.d.ProducerIDs(ctx)
		return txn.ProducerIDAndEpoch{ProducerID: pid}, err
	}
	if *id == "" {
		return txn.ProducerIDAndEpoch{}, fmt.Errorf("%w: empty transactional id", kerr.InvalidRequest)
	}
	if maxMs := h.d.Config().Int("transaction.max.timeout.ms"); req.TransactionTimeoutMillis <= 0 || req.TransactionTimeoutMillis > maxMs {
		return txn.ProducerIDAndEpoch{}, fmt.Errorf("%w: transaction timeout %d ms is not in (0, transaction.max.timeout.ms=%d]",
			kerr.InvalidTransactionTimeout, req.TransactionTimeoutMillis, maxMs)
	}
	t, err := h.txns()
	if err != nil {
		return txn.ProducerIDAndEpoch{}, err
	}
	ir := txn.InitRequest{TransactionalID: *id, TimeoutMs: req.TransactionTimeoutMillis, ProducerID: -1, ProducerEpoch: -1}
	if req.Version >= 3 {
		ir.ProducerID, ir.ProducerEpoch = req.ProducerID, req.ProducerEpoch
	}
	return t.InitProducerID(ctx, ir)
}

// clientID is the request's client id for logs ("" when null).
