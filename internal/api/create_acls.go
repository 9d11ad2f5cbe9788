package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/server"
)

// CreateAcls, versions 1-3 (Kafka 4.2; v0 was removed in 4.0). Needs ALTER
// on the cluster (CLUSTER_AUTHORIZATION_FAILED for every creation); without
// an authorizer every creation is SECURITY_DISABLED. An ACL with an UNKNOWN
// field closes the connection, as Kafka's request parser does. The rest is
// forwarded to the active controller, which checks each ACL as Kafka does
// (INVALID_REQUEST with Kafka's message) and writes the new ones; the
// answer waits until this broker has published them.
func init() {
	register(kmsg.CreateACLs.Int16(), 1, 3, handleCreateAcls)
	registerController(kmsg.CreateACLs.Int16(), 1, 3, controllerCreateAcls)
}

func createAclsBindings(req *kmsg.CreateACLsRequest) ([]auth.Binding, bool) {
	out := make([]auth.Binding, 0, len(req.Creations))
	for _, c := range req.Creations {
		b := auth.Binding{ResourceType: auth.ResourceTypeOf(int8(c.ResourceType)), ResourceName: c.ResourceName,
			PatternType: auth.PatternTypeOf(int8(c.ResourcePatternType)), Principal: c.Principal, Host: c.Host,
			Operation: auth.OperationOf(int8(c.Operation)), Permission: auth.PermissionOf(int8(c.PermissionType))}
		if b.IsUnknown() {
			return nil, false
		}
		out = append(out, b)
	}
	return out, true
}

func handleCreateAcls(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateACLsRequest)
	if _, ok := createAclsBindings(req); !ok {
		return nil, errUnknownACLElements
	}
	if !h.authz(r).enabled() {
		return failCreateAcls(req, kerr.SecurityDisabled.Code, strp("No Authorizer is configured.")), nil
	}
	return handleForwarded(ctx, h, r)
}

// failCreateAcls answers every creation with code.
func failCreateAcls(req *kmsg.CreateACLsRequest, code int16, msg *string) *kmsg.CreateACLsResponse {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for range req.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = code, msg
		resp.Results = append(resp.Results, res)
	}
	return resp
}

func controllerCreateAcls(ctx context.Context, h *ControllerHandler, kr kmsg.Request) (kmsg.Response, uint64, error) {
	req := kr.(*kmsg.CreateACLsRequest)
	bs, ok := createAclsBindings(req)
	if !ok {
		return failCreateAcls(req, kerr.InvalidRequest.Code, strp("ACL request contains UNKNOWN elements")), 0, nil
	}
	out, index, err := h.d.Controller.CreateAcls(ctx, &controller.CreateAclsRequest{Creations: bs})
	if err != nil {
		return failCreateAcls(req, h.code(err), kafkaMessage(err)), 0, nil
	}
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for _, err := range out.Results {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = h.code(err), kafkaMessage(err)
		resp.Results = append(resp.Results, res)
	}
	return resp, index, nil
}
