package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/server"
)

// DescribeAcls, versions 1-3 (Kafka 4.2). Needs DESCRIBE on the cluster
// (CLUSTER_AUTHORIZATION_FAILED); without an authorizer it is
// SECURITY_DISABLED, "No Authorizer is configured on the broker". The ACLs
// the filter matches are grouped by resource pattern, in the authorizer's
// order (resource type, name, pattern type). A filter with an UNKNOWN
// field closes the connection.
func init() { register(kmsg.DescribeACLs.Int16(), 1, 3, handleDescribeAcls) }

func handleDescribeAcls(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	f := aclFilter(req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	if f.IsUnknown() {
		return nil, errUnknownACLElements
	}
	z := h.authz(r)
	switch {
	case !z.cluster(auth.OpDescribe):
		setError(&resp.ErrorCode, &resp.ErrorMessage, errClusterDenied, h)
		return resp, nil
	case !z.enabled():
		resp.ErrorCode = kerr.SecurityDisabled.Code
		resp.ErrorMessage = strp("No Authorizer is configured on the broker")
		return resp, nil
	}
	for _, b := range z.a.ACLs(f) {
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceType != kmsg.ACLResourceType(b.ResourceType) ||
			resp.Resources[n-1].ResourceName != b.ResourceName || resp.Resources[n-1].ResourcePatternType != kmsg.ACLResourcePatternType(b.PatternType) {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName = kmsg.ACLResourceType(b.ResourceType), b.ResourceName
			res.ResourcePatternType = kmsg.ACLResourcePatternType(b.PatternType)
			resp.Resources = append(resp.Resources, res)
			n++
		}
		acl := kmsg.NewDescribeACLsResponseResourceACL()
		acl.Principal, acl.Host = b.Principal, b.Host
		acl.Operation, acl.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, acl)
	}
	return resp, nil
}
