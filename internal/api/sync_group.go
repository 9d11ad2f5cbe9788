package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/server"
)

// SyncGroup, versions 0-5 (Kafka 4.2). The leader's assignment is written to
// __consumer_offsets as the group's metadata; every member's SyncGroup is
// answered once that write is durable. v5+ checks the protocol type and name.
func init() { register(kmsg.SyncGroup.Int16(), 0, 5, handleSyncGroup) }

func handleSyncGroup(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	resp.MemberAssignment = []byte{}
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
	sr := &group.SyncRequest{Group: req.Group, Generation: req.Generation, MemberID: req.MemberID, InstanceID: req.InstanceID}
	if req.Version >= 5 {
		sr.ProtocolType, sr.Protocol = req.ProtocolType, req.Protocol
	}
	for _, a := range req.GroupAssignment {
		sr.Assignments = append(sr.Assignments, group.Assignment{MemberID: a.MemberID, Assignment: a.MemberAssignment})
	}
	res, err := coord.Sync(ctx, sr)
	if err != nil {
		return fail(err)
	}
	resp.ErrorCode = errCode(h.d.Logger, res.Err)
	resp.ProtocolType, resp.Protocol, resp.MemberAssignment = res.ProtocolType, res.Protocol, res.Assignment
	return resp, nil
}
