package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/server"
)

// DeleteAcls, versions 1-3 (Kafka 4.2). Needs ALTER on the cluster
// (CLUSTER_AUTHORIZATION_FAILED for every filter); without an authorizer
// every filter is SECURITY_DISABLED. A filter with an UNKNOWN field closes
// the connection. The rest is forwarded to the active controller: each
// filter's result lists the ACLs it matched, every one deleted.
func init() {
	register(kmsg.DeleteACLs.Int16(), 1, 3, handleDeleteAcls)
	registerController(kmsg.DeleteACLs.Int16(), 1, 3, controllerDeleteAcls)
}

func deleteAclsFilters(req *kmsg.DeleteACLsRequest) ([]auth.Filter, bool) {
	out := make([]auth.Filter, 0, len(req.Filters))
	for _, f := range req.Filters {
		filter := aclFilter(f.ResourceType, f.ResourceName, f.ResourcePatternType, f.Principal, f.Host, f.Operation, f.PermissionType)
		if filter.IsUnknown() {
			return nil, false
		}
		out = append(out, filter)
	}
	return out, true
}

func handleDeleteAcls(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteACLsRequest)
	if _, ok := deleteAclsFilters(req); !ok {
		return nil, errUnknownACLElements
	}
	if !h.authz(r).enabled() {
		return failDeleteAcls(req, kerr.SecurityDisabled.Code, strp("No Authorizer is configured.")), nil
	}
	return handleForwarded(ctx, h, r)
}

// failDeleteAcls answers every filter with code.
func failDeleteAcls(req *kmsg.DeleteACLsRequest, code int16, msg *string) *kmsg.DeleteACLsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = code, msg
		resp.Results = append(resp.Results, res)
	}
	return resp
}

func controllerDeleteAcls(ctx context.Context, h *ControllerHandler, kr kmsg.Request) (kmsg.Response, uint64, error) {
	req := kr.(*kmsg.DeleteACLsRequest)
	fs, ok := deleteAclsFilters(req)
	if !ok {
		return failDeleteAcls(req, kerr.InvalidRequest.Code, strp("ACL request contains UNKNOWN elements")), 0, nil
	}
	out, index, err := h.d.Controller.DeleteAcls(ctx, &controller.DeleteAclsRequest{Filters: fs})
	if err != nil {
		return failDeleteAcls(req, h.code(err), kafkaMessage(err)), 0, nil
	}
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for _, fr := range out.Results {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = h.code(fr.Err), kafkaMessage(fr.Err)
		for _, b := range fr.Deleted {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(b.ResourceType), b.ResourceName
			m.ResourcePatternType = kmsg.ACLResourcePatternType(b.PatternType)
			m.Principal, m.Host = b.Principal, b.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
			res.MatchingACLs = append(res.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, index, nil
}
