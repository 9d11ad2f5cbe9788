package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
// Deviation: transactions are not implemented yet. A non-empty transactional
// id is answered UNSUPPORTED_VERSION and logged. Kafka has no code meaning
// "this broker has no transaction coordinator"; its coordinator answers
// UNSUPPORTED_VERSION to InitProducerId features it does not serve (Kafka
// 4.2, KIP-939's KeepPreparedTxn), and clients take it as fatal at once (Java:
// "Unexpected error in InitProducerIdResponse; The version of API is not
// supported.", franz-go: UNSUPPORTED_VERSION), whereas COORDINATOR_NOT_AVAILABLE
// would have them retry until they time out, and
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED would send the user to the ACLs.
func init() { register(kmsg.InitProducerID.Int16(), 0, 5, handleInitProducerID) }

func handleInitProducerID(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	id, err := h.initProducerID(req, r)
	if err != nil {
		resp.ErrorCode = errCode(h.d.Logger, err)
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	h.d.Logger.Debug("producer id assigned", "producer_id", id, "client", clientID(r), "remote", r.Conn.Remote)
	return resp, nil
}

func (h *Handler) initProducerID(req *kmsg.InitProducerIDRequest, r *server.Request) (int64, error) {
	if req.Version >= 3 && (req.ProducerID == -1) != (req.ProducerEpoch == -1) {
		return -1, fmt.Errorf("%w: producer id %d with epoch %d", kerr.InvalidRequest, req.ProducerID, req.ProducerEpoch)
	}
	if txn := req.TransactionalID; txn != nil {
		if *txn == "" {
			return -1, fmt.Errorf("%w: empty transactional id", kerr.InvalidRequest)
		}
		h.d.Logger.Warn("refusing InitProducerId for a transactional producer: transactions are not supported yet",
			"transactional_id", *txn, "client", clientID(r), "remote", r.Conn.Remote)
		return -1, kerr.UnsupportedVersion
	}
	return h.d.ProducerIDs()
}

// clientID is the request's client id for logs ("" when null).
