package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/server"
)

// JoinGroup, versions 0-9 (Kafka 4.2), the classic protocol. v4+ new dynamic
// members first get MEMBER_ID_REQUIRED with their id; v5+ static members
// (group.instance.id); v9+ a static leader rejoining a stable group gets
// SkipAssignment. The request is parked until the join phase completes
// (bounded by the group's rebalance timeout); other connections are not
// blocked.
func init() { register(kmsg.JoinGroup.Int16(), 0, 9, handleJoinGroup) }

func handleJoinGroup(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.Generation, resp.MemberID = -1, req.MemberID
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode = errCode(h.d.Logger, err)
		return resp, nil
	}
	if !h.authz(r).allowed(auth.OpRead, auth.ResourceGroup, req.Group) {
		return fail(kerr.GroupAuthorizationFailed)
	}
	if req.Group == "" {
		return fail(errEmptyGroupID)
	}
	coord, err := h.groups()
	if err != nil {
		return fail(err)
	}
	clientID, host := clientInfo(r)
	jr := &group.JoinRequest{
		Group: req.Group, MemberID: req.MemberID, InstanceID: req.InstanceID,
		ClientID: clientID, ClientHost: host,
		SessionTimeoutMs: req.SessionTimeoutMillis, RebalanceTimeoutMs: req.RebalanceTimeoutMillis,
		ProtocolType:           req.ProtocolType,
		RequireKnownMemberID:   req.Version >= 4,
		SupportsSkipAssignment: req.Version >= 9,
	}
	if req.Version == 0 {
		jr.RebalanceTimeoutMs = req.SessionTimeoutMillis
	}
	if req.Reason != nil {
		jr.Reason = *req.Reason
	}
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	res, err := coord.Join(ctx, jr)
	if err != nil {
		return fail(err)
	}
	resp.ErrorCode = errCode(h.d.Logger, res.Err)
	resp.Generation, resp.MemberID, resp.LeaderID = res.Generation, res.MemberID, res.Leader
	resp.ProtocolType, resp.Protocol, resp.SkipAssignment = res.ProtocolType, res.Protocol, res.SkipAssignment
	for _, m := range res.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = m.MemberID, m.InstanceID, m.Metadata
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
