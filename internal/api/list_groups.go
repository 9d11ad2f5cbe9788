package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/server"
)

// ListGroups, versions 0-5 (Kafka 4.2): every group coordinated here; v4+
// filters by state and v5+ by type (case-insensitive; every group is
// "classic"). A coordinator partition still loading makes the answer
// COORDINATOR_LOAD_IN_PROGRESS.
func init() { register(kmsg.ListGroups.Int16(), 0, 5, handleListGroups) }

func handleListGroups(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	coord, err := h.groups()
	var groups []group.Listing
	if err == nil {
		groups, err = coord.List(ctx, group.ListFilter{States: req.StatesFilter, Types: req.TypesFilter})
	}
	if err != nil {
		resp.ErrorCode = errCode(h.d.Logger, err)
		return resp, nil
	}
	// Kafka lists every group to a principal that may describe the
	// cluster, and otherwise the groups it may describe.
	z := h.authz(r)
	all := z.filter(auth.OpDescribe, auth.ResourceCluster, auth.ClusterName)
	for _, g := range groups {
		if !all && !z.filter(auth.OpDescribe, auth.ResourceGroup, g.Group) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.Group, g.ProtocolType, g.State, g.Type
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
