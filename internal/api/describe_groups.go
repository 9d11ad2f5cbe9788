package api

import (
	"context"
	"errors"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/server"
)

// DescribeGroups, versions 0-6 (Kafka 4.2). Member metadata and assignments
// are shown only for Stable groups. An unknown group is GROUP_ID_NOT_FOUND
// with a message in v6 (KIP-1043) and state "Dead" without error before.
func init() { register(kmsg.DescribeGroups.Int16(), 0, 6, handleDescribeGroups) }

func handleDescribeGroups(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	coord, cerr := h.groups()
	z := h.authz(r)
	for _, id := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		rg.AuthorizedOperations = math.MinInt32
		err := cerr
		if !z.allowed(auth.OpDescribe, auth.ResourceGroup, id) {
			err = kerr.GroupAuthorizationFailed
		} else {
			rg.AuthorizedOperations = z.operations(req.IncludeAuthorizedOperations, auth.ResourceGroup, id)
		}
		if err == nil {
			d, derr := coord.Describe(ctx, id)
			switch {
			case derr != nil:
				err = derr
			case errors.Is(d.Err, kerr.GroupIDNotFound) && req.Version < 6:
				rg.State = d.State
			case d.Err != nil:
				err = d.Err
			default:
				rg.State, rg.ProtocolType, rg.Protocol = d.State, d.ProtocolType, d.Protocol
				for _, m := range d.Members {
					rm := kmsg.NewDescribeGroupsResponseGroupMember()
					rm.MemberID, rm.InstanceID, rm.ClientID, rm.ClientHost = m.MemberID, m.InstanceID, m.ClientID, m.ClientHost
					rm.ProtocolMetadata, rm.MemberAssignment = m.Metadata, m.Assignment
					rg.Members = append(rg.Members, rm)
				}
			}
		}
		if err != nil {
			rg.ErrorCode = errCode(h.d.Logger, err)
			if req.Version >= 6 {
				rg.ErrorMessage = errMessage(err)
			}
			if errors.Is(err, kerr.GroupIDNotFound) {
				rg.State = "Dead"
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
