package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/txn"
)

// FindCoordinator, versions 0-6 (Kafka 4.2); v4+ batches keys. A group key
// (type 0) is coordinated by the leader of the group's __consumer_offsets
// partition, a transaction key (1) by the leader of the transactional id's
// __transaction_state partition, wherever it is: this broker answers with
// that broker's endpoint. The topic is created on first use (through the
// controller); COORDINATOR_NOT_AVAILABLE while it cannot be (for example a
// replication factor above what the cluster allows) or while the partition
// has no leader. Deviation: share-group keys (2) are INVALID_REQUEST (share
// groups are not built).
func init() { register(kmsg.FindCoordinator.Int16(), 0, 6, handleFindCoordinator) }

func handleFindCoordinator(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	z := h.authz(r)
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		var id, port int32
		var host string
		err := coordinatorKeyAuthorization(z, req.CoordinatorType, key)
		if err == nil {
			id, host, port, err = h.findCoordinator(ctx, req.CoordinatorType, key, r.Conn.Listener)
		}
		if err != nil {
			c.NodeID, c.Host, c.Port = -1, "", -1
			c.ErrorCode = errCode(h.d.Logger, err)
			c.ErrorMessage = errMessage(err)
		} else {
			c.NodeID, c.Host, c.Port = id, host, port
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

// coordinatorKeyAuthorization is Kafka's check of a coordinator key:
// DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or on the
// transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
func coordinatorKeyAuthorization(z authz, keyType int8, key string) error {
	switch {
	case keyType == 0 && !z.allowed(auth.OpDescribe, auth.ResourceGroup, key):
		return kerr.GroupAuthorizationFailed
	case keyType == 1 && !z.allowed(auth.OpDescribe, auth.ResourceTransactionalID, key):
		return kerr.TransactionalIDAuthorizationFailed
	}
	return nil
}

// findCoordinator finds the coordinator of key and its endpoint on the
// listener the request came on.
func (h *Handler) findCoordinator(ctx context.Context, keyType int8, key, listener string) (int32, string, int32, error) {
	switch keyType {
	case 0:
		g, err := h.groups()
		if err != nil {
			return 0, "", 0, err
		}
		if err := g.EnsureTopic(ctx); err != nil {
			return 0, "", 0, err
		}
		return h.partitionLeader(group.OffsetsTopic, g.PartitionFor(key), listener)
	case 1:
		t, err := h.txns()
		if err != nil {
			return 0, "", 0, err
		}
		if err := t.EnsureTopic(ctx); err != nil {
			return 0, "", 0, err
		}
		return h.partitionLeader(txn.StateTopic, t.PartitionFor(key), listener)
	case 2:
		return 0, "", 0, fmt.Errorf("%w: share groups are not supported", kerr.InvalidRequest)
	default:
		return 0, "", 0, fmt.Errorf("%w: unknown coordinator type %d", kerr.InvalidRequest, keyType)
	}
}

// partitionLeader is the broker leading a coordinator topic's partition and
// its endpoint on listener.
func (h *Handler) partitionLeader(topic string, p int32, listener string) (int32, string, int32, error) {
	im := h.d.Metadata.Image()
	pi := im.Partition(topic, p)
	if pi == nil || pi.Leader < 0 {
		return 0, "", 0, fmt.Errorf("%w: %s-%d has no leader", kerr.CoordinatorNotAvailable, topic, p)
	}
	ep, _, ok := h.endpointOn(im, pi.Leader, listener)
	if !ok {
		return 0, "", 0, fmt.Errorf("%w: broker %d, the leader of %s-%d, is not available", kerr.CoordinatorNotAvailable,
			pi.Leader, topic, p)
	}
	return pi.Leader, ep.Host, ep.Port, nil
}
