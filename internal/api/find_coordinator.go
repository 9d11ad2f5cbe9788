package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/server"
)

// FindCoordinator, versions 0-6 (Kafka 4.2); v4+ batches keys. Group keys
// (type 0) create __consumer_offsets on first use and are coordinated by this
// broker; COORDINATOR_NOT_AVAILABLE while the topic cannot be created (for
// example offsets.topic.replication.factor above the number of brokers).
// Transaction keys (1) are answered COORDINATOR_NOT_AVAILABLE, as Kafka
// answers them while __transaction_state cannot be created: Gregor has no
// transaction coordinator yet. Deviation: share-group keys (2) are
// INVALID_REQUEST (share groups are not built).
func init() { register(kmsg.FindCoordinator.Int16(), 0, 6, handleFindCoordinator) }

func handleFindCoordinator(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	host, port := h.d.Advertised()
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Host, c.Port = key, h.d.NodeID, host, port
		if err := h.findCoordinator(req.CoordinatorType, key); err != nil {
			c.NodeID, c.Host, c.Port = -1, "", -1
			c.ErrorCode = errCode(h.d.Logger, err)
			c.ErrorMessage = errMessage(err)
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.Version < 4 {
		c := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.NodeID, resp.Host, resp.Port, resp.ErrorCode = c.NodeID, c.Host, c.Port, c.ErrorCode
		if req.Version >= 1 {
			resp.ErrorMessage = c.ErrorMessage
		}
	}
	return resp, nil
}

func (h *Handler) findCoordinator(keyType int8, key string) error {
	switch keyType {
	case 0:
		g, err := h.groups()
		if err != nil {
			return err
		}
		return g.EnsureTopic()
	case 1:
		return fmt.Errorf("%w: Gregor has no transaction coordinator yet (transactional id %q)", kerr.CoordinatorNotAvailable, key)
	case 2:
		return fmt.Errorf("%w: share groups are not supported", kerr.InvalidRequest)
	default:
		return fmt.Errorf("%w: unknown coordinator type %d", kerr.InvalidRequest, keyType)
	}
}
