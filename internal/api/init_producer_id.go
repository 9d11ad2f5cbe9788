package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/server"
)

// InitProducerId, versions 0-5 (Kafka 4.2), for idempotent producers.
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
// Transactions are not built yet: this broker coordinates no
// __transaction_state partition, so a non-empty transactional id gets what
// Kafka's transaction coordinator answers on a broker that is not the
// coordinator of the id's partition, NOT_COORDINATOR, after Kafka's own
// checks (INVALID_TRANSACTION_TIMEOUT for a timeout that is not positive or
// exceeds transaction.max.timeout.ms). Clients then look the coordinator up
// with FindCoordinator, which answers COORDINATOR_NOT_AVAILABLE, and retry
// until their own timeout, as against a Kafka cluster whose
// __transaction_state cannot be created.
func init() { register(kmsg.InitProducerID.Int16(), 0, 5, handleInitProducerID) }

func handleInitProducerID(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	id, err := h.initProducerID(ctx, req, r)
	if err != nil {
		resp.ErrorCode = errCode(h.d.Logger, err)
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	h.d.Logger.Debug("producer id assigned", "producer_id", id, "client", clientID(r), "remote", r.Conn.Remote)
	return resp, nil
}

func (h *Handler) initProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest, r *server.Request) (int64, error) {
	// Kafka's authorization comes first: WRITE on the transactional id, or
	// for an idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE
	// on some topic (KIP-679).
	z := h.authz(r)
	if txn := req.TransactionalID; txn != nil {
		if !z.allowed(auth.OpWrite, auth.ResourceTransactionalID, *txn) {
			return -1, kerr.TransactionalIDAuthorizationFailed
		}
	} else if !z.filter(auth.OpIdempotentWrite, auth.ResourceCluster, auth.ClusterName) && !z.anyResource(auth.OpWrite, auth.ResourceTopic) {
		return -1, kerr.ClusterAuthorizationFailed
	}
	if req.Version >= 3 && (req.ProducerID == -1) != (req.ProducerEpoch == -1) {
		return -1, fmt.Errorf("%w: producer id %d with epoch %d", kerr.InvalidRequest, req.ProducerID, req.ProducerEpoch)
	}
	if txn := req.TransactionalID; txn != nil {
		if *txn == "" {
			return -1, fmt.Errorf("%w: empty transactional id", kerr.InvalidRequest)
		}
		if maxMs := h.d.Config().Int("transaction.max.timeout.ms"); req.TransactionTimeoutMillis <= 0 || req.TransactionTimeoutMillis > maxMs {
			return -1, fmt.Errorf("%w: transaction timeout %d ms is not in (0, transaction.max.timeout.ms=%d]",
				kerr.InvalidTransactionTimeout, req.TransactionTimeoutMillis, maxMs)
		}
		h.d.Logger.Debug("InitProducerId for a transactional producer: no transaction coordinator here",
			"transactional_id", *txn, "client", clientID(r), "remote", r.Conn.Remote)
		return -1, fmt.Errorf("%w: this broker has no transaction coordinator (transactions are not built yet)", kerr.NotCoordinator)
	}
	return h.d.ProducerIDs(ctx)
}

// clientID is the request's client id for logs ("" when null).
