package api

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
)

// errUnknownACLElements closes the connection of an ACL request with an
// UNKNOWN resource type, pattern type, operation or permission: Kafka's
// request parser refuses those (IllegalArgumentException → the connection
// is closed).
var errUnknownACLElements = errors.New("ACL request contains UNKNOWN elements")

// errClusterDenied is the answer of a request that needs an operation on
// the cluster the principal may not perform.
var errClusterDenied = fmt.Errorf("%w: Cluster authorization failed.", kerr.ClusterAuthorizationFailed)

func aclFilter(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string,
	op kmsg.ACLOperation, perm kmsg.ACLPermissionType) auth.Filter {
	return auth.Filter{ResourceType: auth.ResourceTypeOf(int8(rt)), ResourceName: name, PatternType: auth.PatternTypeOf(int8(pt)),
		Principal: principal, Host: host, Operation: auth.OperationOf(int8(op)), Permission: auth.PermissionOf(int8(perm))}
}

// setError fills a response's error code and message from err.
func setError(code *int16, msg **string, err error, h *Handler) {
	if err == nil {
		return
	}
	*code = kafkaError(h.d.Logger, err).Code
	*msg = kafkaMessage(err)
}
