package api

import (
	"net/netip"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/server"
)

// Authorization: each handler asks, as Kafka's KafkaApis does, whether the
// request's principal may perform an operation on a resource, and answers
// with Kafka's error (TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED,
// CLUSTER_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED) where
// it is denied. Authorization comes before existence, so a client that may
// not describe a topic cannot learn whether it exists. Without an
// authorizer (authorizer.class.name unset) everything is allowed and the
// questions cost one atomic load.

// session is the connection's security session: the one the listener made,
// or, for a connection without one (tests that hand requests to the
// handler directly), an ANONYMOUS session.
func session(r *server.Request) (auth.Principal, netip.Addr) {
	if s, ok := r.Conn.Session.(*auth.Session); ok {
		return s.Principal(), s.Host()
	}
	var host netip.Addr
	if r.Conn.Remote != nil {
		if ap, err := netip.ParseAddrPort(r.Conn.Remote.String()); err == nil {
			host = ap.Addr().Unmap()
		}
	}
	return auth.Anonymous, host
}

// authz is one request's view of the authorizer.
type authz struct {
	a     *auth.Authorizer
	p     auth.Principal
	host  netip.Addr
	api   string
	audit *auth.Audit
}

func (h *Handler) authz(r *server.Request) authz {
	if h.d.Authorizer == nil {
		return authz{}
	}
	a := h.d.Authorizer()
	if a == nil {
		return authz{}
	}
	p, host := session(r)
	return authz{a: a, p: p, host: host, api: kmsg.NameForKey(r.Key), audit: h.d.Audit}
}

// enabled reports whether an authorizer is configured.
func (z authz) enabled() bool { return z.a != nil }

// allowed asks for a resource the request names explicitly: a denial is
// counted and logged (Kafka's logIfDenied).
func (z authz) allowed(op auth.Operation, rt auth.ResourceType, name string) bool {
	if z.a == nil {
		return true
	}
	act := auth.Action{Principal: z.p, Host: z.host, Operation: op, Resource: rt, Name: name}
	if z.a.Allowed(act) {
		return true
	}
	if z.audit != nil {
		z.audit.Denied(z.api, act)
	}
	return false
}

// filter asks for a resource the request did not name (a listing, the
// authorized operations): a denial just leaves it out.
func (z authz) filter(op auth.Operation, rt auth.ResourceType, name string) bool {
	return z.a == nil || z.a.Allowed(auth.Action{Principal: z.p, Host: z.host, Operation: op, Resource: rt, Name: name})
}

// anyResource asks whether the principal may perform op on some resource
// of the type (Kafka's authorizeByResourceType).
func (z authz) anyResource(op auth.Operation, rt auth.ResourceType) bool {
	return z.a == nil || z.a.AuthorizeByResourceType(z.p, z.host, op, rt)
}

// cluster asks for an operation on the cluster.
func (z authz) cluster(op auth.Operation) bool {
	return z.allowed(op, auth.ResourceCluster, auth.ClusterName)
}

// operations is the authorized-operations bit field of a resource, or
// Kafka's "not requested" value when the client did not ask.
func (z authz) operations(requested bool, rt auth.ResourceType, name string) int32 {
	if !requested {
		return -2147483648
	}
	if z.a == nil {
		var bits int32
		for _, op := range auth.SupportedOperations(rt) {
			bits |= 1 << op
		}
		return bits
	}
	return z.a.AuthorizedOperations(z.p, z.host, rt, name)
}
