package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/server"
)

// Heartbeat, versions 0-4 (Kafka 4.2): extends a member's session;
// REBALANCE_IN_PROGRESS tells it to rejoin.
func init() { register(kmsg.Heartbeat.Int16(), 0, 4, handleHeartbeat) }

func handleHeartbeat(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if !h.authz(r).allowed(auth.OpRead, auth.ResourceGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if req.Group == "" {
		resp.ErrorCode = errCode(h.d.Logger, errEmptyGroupID)
		return resp, nil
	}
	coord, err := h.groups()
	if err == nil {
		err = coord.Heartbeat(ctx, &group.HeartbeatRequest{Group: req.Group, Generation: req.Generation,
			MemberID: req.MemberID, InstanceID: req.InstanceID})
	}
	resp.ErrorCode = errCode(h.d.Logger, err)
	return resp, nil
}
