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

// EndTxn, versions 0-5 (Kafka 4.2): commits or aborts the producer's
// transaction. The answer waits for the decision (PrepareCommit or
// PrepareAbort) to be durable in __transaction_state; the markers follow.
// v5 is transactions v2 (KIP-890 part 2): the epoch is bumped and the
// answer carries the producer id and epoch to use next. Before v2,
// PRODUCER_FENCED is INVALID_PRODUCER_EPOCH.
func init() { register(kmsg.EndTxn.Int16(), 0, 5, handleEndTxn) }

func handleEndTxn(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	var res txn.ProducerIDAndEpoch
	var err error
	if h.authz(r).allowed(auth.OpWrite, auth.ResourceTransactionalID, req.TransactionalID) {
		res, err = h.endTxn(ctx, req)
	} else {
		err = kerr.TransactionalIDAuthorizationFailed // Kafka: WRITE on the transactional id
	}
	if err != nil {
		resp.ErrorCode = errCode(h.d.Logger, fencedBefore(err, req.Version, 2))
		h.d.Logger.Debug("EndTxn refused", "transactional_id", req.TransactionalID, "commit", req.Commit,
			"producer_id", req.ProducerID, "epoch", req.ProducerEpoch, "client", clientID(r), "err", err)
		return resp, nil
	}
	if req.Version >= 5 {
		resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.ProducerEpoch
	}
	return resp, nil
}

func (h *Handler) endTxn(ctx context.Context, req *kmsg.EndTxnRequest) (txn.ProducerIDAndEpoch, error) {
	if req.TransactionalID == "" {
		return txn.ProducerIDAndEpoch{}, fmt.Errorf("%w: empty transactional id", kerr.InvalidRequest)
	}
	t, err := h.txns()
	if err != nil {
		return txn.ProducerIDAndEpoch{}, err
	}
	return t.EndTxn(ctx, txn.EndRequest{TransactionalID: req.TransactionalID, ProducerID: req.ProducerID,
		ProducerEpoch: req.ProducerEpoch, Commit: req.Commit, TV2: req.Version >= 5, NewProducerID: -1})
}
