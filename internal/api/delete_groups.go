package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/server"
)

// DeleteGroups, versions 0-2 (Kafka 4.2): only empty groups may be deleted
// (NON_EMPTY_GROUP otherwise, GROUP_ID_NOT_FOUND for unknown ones); their
// committed offsets and metadata are tombstoned in __consumer_offsets and the
// response waits for the tombstones to be durable.
func init() { register(kmsg.DeleteGroups.Int16(), 0, 2, handleDeleteGroups) }

func handleDeleteGroups(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	z := h.authz(r)
	var allowed []string
	for _, id := range req.Groups {
		if z.allowed(auth.OpDelete, auth.ResourceGroup, id) {
			allowed = append(allowed, id)
		}
	}
	coord, err := h.groups()
	var errs []error
	if err == nil && len(allowed) > 0 {
		errs = coord.Delete(ctx, allowed)
	}
	next := 0
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		switch {
		case next >= len(allowed) || allowed[next] != id:
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case err != nil:
			rg.ErrorCode = errCode(h.d.Logger, err)
			next++
		default:
			rg.ErrorCode = errCode(h.d.Logger, errs[next])
			next++
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
