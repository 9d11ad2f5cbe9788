package auth

import (
	"net/netip"
	"slices"
)

// AuthorizerConfig is what the authorizer reads from the broker config.
type AuthorizerConfig struct {
	// SuperUsers are allowed everything.
	SuperUsers map[Principal]bool
	// AllowIfNoACL is allow.everyone.if.no.acl.found: the answer for a
	// resource no ACL names at all.
	AllowIfNoACL bool
}

// Action is one authorization question: may Principal, connected from Host,
// perform Operation on the resource (a literal name)?
type Action struct {
	Principal Principal
	Host      netip.Addr
	Operation Operation
	Resource  ResourceType
	Name      string
}

// Authorizer is Kafka's StandardAuthorizer over one set of ACLs, immutable:
// a change of ACLs or of configuration builds a new one (New), so readers
// never lock. ACLs are indexed per resource type by literal name and by
// prefix; a question looks up the literal name, each prefix length that
// some PREFIXED ACL has, and the wildcard, so its cost does not grow with
// the number of ACLs.
type Authorizer struct {
	cfg   AuthorizerConfig
	types [len(resourceNames)]typeIndex
	all   []Binding // sorted by Compare
}

type typeIndex struct {
	literal  map[string][]entry
	prefixed map[string][]entry
	// prefixLens are the distinct lengths of PREFIXED names, ascending.
	prefixLens []int
	wildcard   []entry
	all        []entry
}

// entry is an ACL with its principal and host parsed once.
type entry struct {
	b         Binding
	principal Principal
	host      netip.Addr // invalid for * or an unparsable host
}

// principalMatches reports whether the ACL is for p or for User:*.
func (e *entry) principalMatches(p Principal) bool {
	return e.principal == p || e.principal == wildcardPrincipal
}

var wildcardPrincipal = User(Wildcard)

// hostMatches reports whether the ACL's host is * or the client's address.
// Hosts are compared as addresses, so an IPv6 ACL written the way Java
// prints addresses (0:0:0:0:0:0:0:1) matches ::1.
func (e *entry) hostMatches(client netip.Addr) bool {
	switch {
	case e.b.Host == Wildcard:
		return true
	case e.host.IsValid():
		return e.host == client.Unmap()
	}
	return e.b.Host == client.String()
}

// New builds an authorizer over acls.
func New(cfg AuthorizerConfig, acls []Binding) *Authorizer {
	a := &Authorizer{cfg: cfg, all: slices.Clone(acls)}
	slices.SortFunc(a.all, Compare)
	a.all = slices.CompactFunc(a.all, func(x, y Binding) bool { return x == y })
	for _, b := range a.all {
		if b.ResourceType <= ResourceAny || int(b.ResourceType) >= len(a.types) {
			continue
		}
		e := entry{b: b}
		e.principal, _ = ParsePrincipal(b.Principal)
		if b.Host != Wildcard {
			if h, err := netip.ParseAddr(b.Host); err == nil {
				e.host = h.Unmap()
			}
		}
		t := &a.types[b.ResourceType]
		t.all = append(t.all, e)
		switch {
		case b.PatternType == PatternLiteral && b.ResourceName == Wildcard:
			t.wildcard = append(t.wildcard, e)
		case b.PatternType == PatternLiteral:
			if t.literal == nil {
				t.literal = map[string][]entry{}
			}
			t.literal[b.ResourceName] = append(t.literal[b.ResourceName], e)
		case b.PatternType == PatternPrefixed:
			if t.prefixed == nil {
				t.prefixed = map[string][]entry{}
			}
			if len(t.prefixed[b.ResourceName]) == 0 && !slices.Contains(t.prefixLens, len(b.ResourceName)) {
				t.prefixLens = append(t.prefixLens, len(b.ResourceName))
			}
			t.prefixed[b.ResourceName] = append(t.prefixed[b.ResourceName], e)
		}
	}
	for i := range a.types {
		slices.Sort(a.types[i].prefixLens)
	}
	return a
}

// Config is the configuration the authorizer was built with.
func (a *Authorizer) Config() AuthorizerConfig { return a.cfg }

// ACLs returns every ACL the filter selects, in Compare order.
func (a *Authorizer) ACLs(f Filter) []Binding {
	var out []Binding
	for _, b := range a.all {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// Count is the number of ACLs.
func (a *Authorizer) Count() int { return len(a.all) }

// Rule says why a question was answered as it was, for audit logs.
type Rule struct {
	Allowed bool
	// Why is SuperUser, DefaultAllow, DefaultDeny, or MatchingAcl with ACL.
	Why string
	ACL Binding
}

// Authorize answers one question as Kafka's StandardAuthorizer does: a
// super user is allowed; otherwise a matching DENY wins over any ALLOW; a
// matching ALLOW allows; a resource that some ACL names (for any principal,
// host or operation) but none allows is denied; a resource no ACL names
// gets allow.everyone.if.no.acl.found.
func (a *Authorizer) Authorize(act Action) Rule {
	if a.cfg.SuperUsers[act.Principal] {
		return Rule{Allowed: true, Why: "SuperUser"}
	}
	if act.Resource <= ResourceAny || int(act.Resource) >= len(a.types) {
		return Rule{Why: "DefaultDeny"}
	}
	t := &a.types[act.Resource]
	m := matcher{act: act}
	if m.scan(t.literal[act.Name]) || m.scanPrefixes(t, act.Name) || m.scan(t.wildcard) {
		return Rule{Why: "MatchingAcl", ACL: m.deny}
	}
	switch {
	case m.allowed:
		return Rule{Allowed: true, Why: "MatchingAcl", ACL: m.allow}
	case m.found:
		return Rule{Why: "DefaultDeny"}
	case a.cfg.AllowIfNoACL:
		return Rule{Allowed: true, Why: "DefaultAllow"}
	}
	return Rule{Why: "DefaultDeny"}
}

// Allowed is Authorize's answer alone.
func (a *Authorizer) Allowed(act Action) bool { return a.Authorize(act).Allowed }

type matcher struct {
	act         Action
	found       bool // some ACL names the resource
	allowed     bool
	allow, deny Binding
}

// scanPrefixes scans the PREFIXED ACLs whose name is a prefix of name.
func (m *matcher) scanPrefixes(t *typeIndex, name string) bool {
	for _, n := range t.prefixLens {
		if n > len(name) {
			break
		}
		if m.scan(t.prefixed[name[:n]]) {
			return true
		}
	}
	return false
}

// scan applies ACLs already known to name the resource; it returns true at
// the first DENY that applies.
func (m *matcher) scan(es []entry) bool {
	for i := range es {
		m.found = true
		switch applies(&m.act, &es[i]) {
		case Deny:
			m.deny = es[i].b
			return true
		case Allow:
			if !m.allowed {
				m.allowed, m.allow = true, es[i].b
			}
		}
	}
	return false
}

// impliesDescribe and impliesDescribeConfigs are the operations whose
// ALLOW ACLs also allow DESCRIBE and DESCRIBE_CONFIGS; DENY ACLs imply
// nothing.
var impliesDescribe = [len(opNames)]bool{OpDescribe: true, OpRead: true, OpWrite: true, OpDelete: true, OpAlter: true}
var impliesDescribeConfigs = [len(opNames)]bool{OpDescribeConfigs: true, OpAlterConfigs: true}

// applies is Kafka's StandardAuthorizerData.findResult: the permission of
// an ACL that applies to the action, or PermissionUnknown.
func applies(act *Action, e *entry) Permission {
	b := &e.b
	if !e.principalMatches(act.Principal) {
		return PermissionUnknown
	}
	if !e.hostMatches(act.Host) {
		return PermissionUnknown
	}
	if b.Operation != OpAll {
		switch {
		case b.Permission != Allow:
			if act.Operation != b.Operation {
				return PermissionUnknown
			}
		case act.Operation == OpDescribe:
			if !impliesDescribe[b.Operation] {
				return PermissionUnknown
			}
		case act.Operation == OpDescribeConfigs:
			if !impliesDescribeConfigs[b.Operation] {
				return PermissionUnknown
			}
		case act.Operation != b.Operation:
			return PermissionUnknown
		}
	}
	return b.Permission
}

// AuthorizeByResourceType is Kafka's Authorizer.authorizeByResourceType:
// whether the principal may perform op on at least one resource of the
// type: a super user, a resource type with no ACLs at all under
// allow.everyone.if.no.acl.found, a wildcard ALLOW, or an ALLOW pattern not
// covered by a DENY (literal DENY of the same name, or a PREFIXED DENY of a
// prefix of it). A wildcard DENY denies. Used for IDEMPOTENT_WRITE through
// WRITE on any topic (KIP-679) and for listing transactions.
func (a *Authorizer) AuthorizeByResourceType(p Principal, host netip.Addr, op Operation, rt ResourceType) bool {
	if a.Allowed(Action{Principal: p, Host: host, Operation: op, Resource: rt, Name: "hardcode"}) {
		return true
	}
	if rt <= ResourceAny || int(rt) >= len(a.types) {
		return false
	}
	denyLiteral, denyPrefix := map[string]bool{}, map[string]bool{}
	var allowLiteral, allowPrefix []string
	for i := range a.types[rt].all {
		e := &a.types[rt].all[i]
		b := &e.b
		if !e.hostMatches(host) {
			continue
		}
		if !e.principalMatches(p) {
			continue
		}
		if b.Operation != op && b.Operation != OpAll {
			continue
		}
		switch {
		case b.Permission == Deny && b.PatternType == PatternLiteral && b.ResourceName == Wildcard:
			return false
		case b.Permission == Deny && b.PatternType == PatternLiteral:
			denyLiteral[b.ResourceName] = true
		case b.Permission == Deny && b.PatternType == PatternPrefixed:
			denyPrefix[b.ResourceName] = true
		case b.Permission == Allow && b.PatternType == PatternLiteral && b.ResourceName == Wildcard:
			return true
		case b.Permission == Allow && b.PatternType == PatternLiteral:
			allowLiteral = append(allowLiteral, b.ResourceName)
		case b.Permission == Allow && b.PatternType == PatternPrefixed:
			allowPrefix = append(allowPrefix, b.ResourceName)
		}
	}
	dominated := func(name string) bool {
		for n := 1; n <= len(name); n++ {
			if denyPrefix[name[:n]] {
				return true
			}
		}
		return false
	}
	for _, name := range allowLiteral {
		if !denyLiteral[name] && !dominated(name) {
			return true
		}
	}
	for _, name := range allowPrefix {
		if !dominated(name) {
			return true
		}
	}
	return false
}

// SupportedOperations are the operations each resource type knows (Kafka's
// AclEntry.supportedOperations), in the order of their codes: the bits of
// the authorized-operations fields of Metadata, DescribeGroups and
// DescribeCluster.
func SupportedOperations(rt ResourceType) []Operation {
	switch rt {
	case ResourceTopic:
		return []Operation{OpRead, OpWrite, OpCreate, OpDelete, OpAlter, OpDescribe, OpDescribeConfigs, OpAlterConfigs}
	case ResourceGroup:
		return []Operation{OpRead, OpDelete, OpDescribe}
	case ResourceCluster:
		return []Operation{OpCreate, OpAlter, OpDescribe, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite}
	case ResourceTransactionalID:
		return []Operation{OpWrite, OpDescribe}
	case ResourceDelegationToken:
		return []Operation{OpDescribe}
	case ResourceUser:
		return []Operation{OpCreateTokens, OpDescribeTokens}
	}
	return nil
}

// AuthorizedOperations is the bit field (1<<code) of the supported
// operations the principal may perform on the resource.
func (a *Authorizer) AuthorizedOperations(p Principal, host netip.Addr, rt ResourceType, name string) int32 {
	var bits int32
	for _, op := range SupportedOperations(rt) {
		if a.Allowed(Action{Principal: p, Host: host, Operation: op, Resource: rt, Name: name}) {
			bits |= 1 << op
		}
	}
	return bits
}
