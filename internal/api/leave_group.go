package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/server"
)

// LeaveGroup, versions 0-5 (Kafka 4.2). v3+ removes a batch of members, by
// member id or (administratively) by group.instance.id alone; v0-v2 one
// member, whose error is the top-level error.
func init() { register(kmsg.LeaveGroup.Int16(), 0, 5, handleLeaveGroup) }

func handleLeaveGroup(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	lr := &group.LeaveRequest{Group: req.Group}
	if req.Version < 3 {
		lr.Members = []group.LeaveMember{{MemberID: req.MemberID}}
	}
	for _, m := range req.Members {
		lm := group.LeaveMember{MemberID: m.MemberID, InstanceID: m.InstanceID}
		if m.Reason != nil {
			lm.Reason = *m.Reason
		}
		lr.Members = append(lr.Members, lm)
	}
	var res *group.LeaveResult
	coord, err := h.groups()
	switch {
	case !h.authz(r).allowed(auth.OpRead, auth.ResourceGroup, req.Group):
		err = kerr.GroupAuthorizationFailed
	case req.Group == "":
		err = errEmptyGroupID
	case err == nil:
		res, err = coord.Leave(ctx, lr)
	}
	if err == nil {
		err = res.Err
	}
	if err != nil {
		resp.ErrorCode = errCode(h.d.Logger, err)
		return resp, nil
	}
	for i, m := range lr.Members {
		code := errCode(h.d.Logger, res.Members[i])
		if req.Version < 3 {
			resp.ErrorCode = code
			continue
		}
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, code
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
