package auth

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"
)

var (
	alice = User("alice")
	bob   = User("bob")
	admin = User("admin")
	local = netip.MustParseAddr("127.0.0.1")
	other = netip.MustParseAddr("192.0.2.7")
)

func acl(rt ResourceType, name string, pt PatternType, principal, host string, op Operation, perm Permission) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

func topicACL(name string, pt PatternType, principal string, op Operation, perm Permission) Binding {
	return acl(ResourceTopic, name, pt, principal, Wildcard, op, perm)
}

type check struct {
	p     Principal
	host  netip.Addr
	op    Operation
	rt    ResourceType
	name  string
	allow bool
}

func runChecks(t *testing.T, a *Authorizer, checks []check) {
	t.Helper()
	for _, c := range checks {
		host := c.host
		if !host.IsValid() {
			host = local
		}
		got := a.Authorize(Action{Principal: c.p, Host: host, Operation: c.op, Resource: c.rt, Name: c.name})
		if got.Allowed != c.allow {
			t.Errorf("%v from %v: %v on %v %q: allowed=%v (rule %s %v), want %v", c.p, host, c.op, c.rt, c.name, got.Allowed, got.Why, got.ACL, c.allow)
		}
	}
}

// Ports StandardAuthorizerTest.testSimpleAuthorizations and
// testFindResultImplication: prefixed and literal ACLs, the operations
// ALLOW implies and DENY does not.
func TestAuthorizeSimple(t *testing.T) {
	a := New(AuthorizerConfig{}, []Binding{
		topicACL("foo", PatternPrefixed, "User:bob", OpRead, Allow),
		topicACL("bar", PatternLiteral, "User:alice", OpAlterConfigs, Allow),
		topicACL("baz", PatternLiteral, WildcardPrincipal, OpWrite, Allow),
		topicACL("qux", PatternLiteral, "User:bob", OpRead, Deny),
		topicACL("qux", PatternLiteral, "User:bob", OpAll, Allow),
		acl(ResourceGroup, "mygroup", PatternLiteral, "User:alice", Wildcard, OpRead, Allow),
	})
	runChecks(t, a, []check{
		{p: bob, op: OpRead, rt: ResourceTopic, name: "foo", allow: true},
		{p: bob, op: OpRead, rt: ResourceTopic, name: "foobar", allow: true},
		{p: bob, op: OpDescribe, rt: ResourceTopic, name: "foobar", allow: true}, // READ implies DESCRIBE
		{p: bob, op: OpWrite, rt: ResourceTopic, name: "foobar", allow: false},
		{p: bob, op: OpRead, rt: ResourceTopic, name: "fo", allow: false}, // no ACL: default deny
		{p: alice, op: OpRead, rt: ResourceTopic, name: "foo", allow: false},
		{p: alice, op: OpAlterConfigs, rt: ResourceTopic, name: "bar", allow: true},
		{p: alice, op: OpDescribeConfigs, rt: ResourceTopic, name: "bar", allow: true}, // ALTER_CONFIGS implies DESCRIBE_CONFIGS
		{p: alice, op: OpDescribe, rt: ResourceTopic, name: "bar", allow: false},       // but not DESCRIBE
		{p: alice, op: OpAlterConfigs, rt: ResourceTopic, name: "barbar", allow: false},
		{p: alice, op: OpWrite, rt: ResourceTopic, name: "baz", allow: true},
		{p: bob, op: OpWrite, rt: ResourceTopic, name: "baz", allow: true},
		{p: bob, op: OpDescribe, rt: ResourceTopic, name: "baz", allow: true}, // WRITE implies DESCRIBE
		{p: bob, op: OpRead, rt: ResourceTopic, name: "qux", allow: false},    // DENY over ALLOW ALL
		{p: bob, op: OpWrite, rt: ResourceTopic, name: "qux", allow: true},
		{p: bob, op: OpDescribe, rt: ResourceTopic, name: "qux", allow: true}, // DENY READ does not deny DESCRIBE
		{p: alice, op: OpRead, rt: ResourceGroup, name: "mygroup", allow: true},
		{p: alice, op: OpDescribe, rt: ResourceGroup, name: "mygroup", allow: true},
		{p: alice, op: OpDelete, rt: ResourceGroup, name: "mygroup", allow: false},
		{p: alice, op: OpRead, rt: ResourceTopic, name: "mygroup", allow: false}, // resource types are separate
	})
}

// Ports testDenyPrecedenceWithOperationAll and testTopicAclWithOperationAll.
func TestAuthorizeOperationAll(t *testing.T) {
	a := New(AuthorizerConfig{}, []Binding{
		topicACL("foo", PatternLiteral, WildcardPrincipal, OpAll, Deny),
		topicACL("foo", PatternLiteral, "User:alice", OpAll, Allow),
		topicACL("bar", PatternPrefixed, "User:alice", OpAll, Allow),
		topicACL("bar", PatternLiteral, "User:bob", OpAll, Allow),
	})
	var checks []check
	for _, op := range SupportedOperations(ResourceTopic) {
		checks = append(checks,
			check{p: alice, op: op, rt: ResourceTopic, name: "foo", allow: false}, // DENY ALL for everyone wins
			check{p: alice, op: op, rt: ResourceTopic, name: "barx", allow: true},
			check{p: bob, op: op, rt: ResourceTopic, name: "bar", allow: true},
			check{p: bob, op: op, rt: ResourceTopic, name: "barx", allow: false},
		)
	}
	runChecks(t, a, checks)
}

// Ports testPrefixAcls: several prefixes of one name, literal ACLs whose
// name is a prefix of the resource (they do not apply), and a DENY found
// through a shorter prefix.
func TestAuthorizePrefixes(t *testing.T) {
	a := New(AuthorizerConfig{}, []Binding{
		topicACL("foobar", PatternPrefixed, "User:bob", OpAll, Allow),
		topicACL("foo", PatternPrefixed, "User:bob", OpRead, Allow),
		topicACL("foob", PatternLiteral, "User:bob", OpWrite, Allow),
		topicACL("f", PatternPrefixed, "User:alice", OpRead, Allow),
		topicACL("fooba", PatternPrefixed, "User:alice", OpRead, Deny),
		topicACL("gar", PatternPrefixed, "User:bob", OpAll, Allow),
	})
	runChecks(t, a, []check{
		{p: bob, op: OpWrite, rt: ResourceTopic, name: "foobar", allow: true},
		{p: bob, op: OpWrite, rt: ResourceTopic, name: "foobarbaz", allow: true},
		{p: bob, op: OpWrite, rt: ResourceTopic, name: "foob", allow: true},   // literal
		{p: bob, op: OpWrite, rt: ResourceTopic, name: "foobx", allow: false}, // the literal foob does not apply
		{p: bob, op: OpRead, rt: ResourceTopic, name: "foox", allow: true},
		{p: alice, op: OpRead, rt: ResourceTopic, name: "fxyz", allow: true},
		{p: alice, op: OpRead, rt: ResourceTopic, name: "foobar", allow: false}, // DENY through fooba
		{p: alice, op: OpRead, rt: ResourceTopic, name: "foob", allow: true},
		{p: bob, op: OpRead, rt: ResourceTopic, name: "ga", allow: false},
		{p: bob, op: OpRead, rt: ResourceTopic, name: "", allow: false},
	})
}

// The wildcard resource, the wildcard principal and hosts; IPv6 hosts
// written as Java prints them match.
func TestAuthorizeWildcardsAndHosts(t *testing.T) {
	v6 := netip.MustParseAddr("::1")
	a := New(AuthorizerConfig{}, []Binding{
		acl(ResourceTopic, Wildcard, PatternLiteral, "User:alice", "127.0.0.1", OpRead, Allow),
		acl(ResourceTopic, "t", PatternLiteral, WildcardPrincipal, "192.0.2.7", OpWrite, Deny),
		acl(ResourceTopic, "t", PatternLiteral, "User:bob", Wildcard, OpWrite, Allow),
		acl(ResourceTopic, "six", PatternLiteral, "User:bob", "0:0:0:0:0:0:0:1", OpRead, Allow),
		acl(ResourceGroup, Wildcard, PatternLiteral, "User:alice", Wildcard, OpRead, Deny),
		acl(ResourceGroup, "g", PatternLiteral, "User:alice", Wildcard, OpRead, Allow),
	})
	runChecks(t, a, []check{
		{p: alice, op: OpRead, rt: ResourceTopic, name: "anything", allow: true},
		{p: alice, host: other, op: OpRead, rt: ResourceTopic, name: "anything", allow: false},
		{p: bob, op: OpWrite, rt: ResourceTopic, name: "t", allow: true},
		{p: bob, host: other, op: OpWrite, rt: ResourceTopic, name: "t", allow: false},
		{p: bob, host: v6, op: OpRead, rt: ResourceTopic, name: "six", allow: true},
		{p: bob, op: OpRead, rt: ResourceTopic, name: "six", allow: false},
		{p: alice, op: OpRead, rt: ResourceGroup, name: "g", allow: false}, // wildcard DENY wins
	})
}

// super.users and allow.everyone.if.no.acl.found.
func TestAuthorizeDefaults(t *testing.T) {
	acls := []Binding{topicACL("named", PatternLiteral, "User:bob", OpRead, Allow)}
	for _, allowIfNone := range []bool{false, true} {
		a := New(AuthorizerConfig{SuperUsers: map[Principal]bool{admin: true}, AllowIfNoACL: allowIfNone}, acls)
		runChecks(t, a, []check{
			{p: admin, op: OpAlter, rt: ResourceCluster, name: ClusterName, allow: true},
			{p: admin, op: OpWrite, rt: ResourceTopic, name: "named", allow: true},
			{p: alice, op: OpRead, rt: ResourceTopic, name: "unnamed", allow: allowIfNone},
			// An ACL names the topic, for someone else: the default does not apply.
			{p: alice, op: OpRead, rt: ResourceTopic, name: "named", allow: false},
			{p: bob, op: OpWrite, rt: ResourceTopic, name: "named", allow: false},
		})
	}
}

// Ports the authorizeByResourceType cases of Kafka's AuthorizerTest.
func TestAuthorizeByResourceType(t *testing.T) {
	for _, tc := range []struct {
		name         string
		acls         []Binding
		allowIfNone  bool
		superUser    bool
		want         bool
		wantOtherOps bool
	}{
		{name: "no ACLs, default deny", want: false},
		{name: "no ACLs, allow.everyone.if.no.acl.found", allowIfNone: true, want: true, wantOtherOps: true},
		{name: "super user", superUser: true, want: true, wantOtherOps: true},
		{name: "literal allow", acls: []Binding{topicACL("t1", PatternLiteral, "User:alice", OpWrite, Allow)}, want: true},
		{name: "allow ALL operation", acls: []Binding{topicACL("t1", PatternLiteral, "User:alice", OpAll, Allow)}, want: true, wantOtherOps: true},
		{name: "allow for all principals", acls: []Binding{topicACL("t1", PatternLiteral, WildcardPrincipal, OpWrite, Allow)}, want: true},
		{name: "allow for another host", acls: []Binding{acl(ResourceTopic, "t1", PatternLiteral, "User:alice", "10.0.0.1", OpWrite, Allow)}},
		{name: "literal deny takes precedence", acls: []Binding{
			topicACL("t1", PatternLiteral, "User:alice", OpWrite, Allow),
			topicACL("t1", PatternLiteral, "User:alice", OpWrite, Deny)}},
		{name: "prefixed deny dominates", acls: []Binding{
			topicACL("abc", PatternLiteral, "User:alice", OpWrite, Allow),
			topicACL("abcd", PatternPrefixed, "User:alice", OpWrite, Allow),
			topicACL("ab", PatternPrefixed, "User:alice", OpWrite, Deny)}},
		{name: "prefixed deny of a longer name does not dominate", acls: []Binding{
			topicACL("abc", PatternPrefixed, "User:alice", OpWrite, Allow),
			topicACL("abcd", PatternPrefixed, "User:alice", OpWrite, Deny)}, want: true},
		{name: "wildcard deny dominates", acls: []Binding{
			topicACL("t1", PatternLiteral, "User:alice", OpWrite, Allow),
			topicACL(Wildcard, PatternLiteral, "User:alice", OpWrite, Deny)}},
		{name: "wildcard allow", acls: []Binding{
			topicACL("t1", PatternLiteral, "User:alice", OpWrite, Deny),
			topicACL(Wildcard, PatternLiteral, "User:alice", OpWrite, Allow)}, want: true},
	} {
		cfg := AuthorizerConfig{AllowIfNoACL: tc.allowIfNone}
		if tc.superUser {
			cfg.SuperUsers = map[Principal]bool{alice: true}
		}
		a := New(cfg, tc.acls)
		if got := a.AuthorizeByResourceType(alice, local, OpWrite, ResourceTopic); got != tc.want {
			t.Errorf("%s: WRITE on any topic = %v, want %v", tc.name, got, tc.want)
		}
		if got := a.AuthorizeByResourceType(alice, local, OpRead, ResourceTopic); got != tc.wantOtherOps {
			t.Errorf("%s: READ on any topic = %v, want %v", tc.name, got, tc.wantOtherOps)
		}
	}
}

func TestAuthorizedOperations(t *testing.T) {
	a := New(AuthorizerConfig{}, []Binding{
		topicACL("t", PatternLiteral, "User:alice", OpRead, Allow),
		topicACL("t", PatternLiteral, "User:alice", OpAlterConfigs, Allow),
	})
	got := a.AuthorizedOperations(alice, local, ResourceTopic, "t")
	want := int32(1<<OpRead | 1<<OpDescribe | 1<<OpAlterConfigs | 1<<OpDescribeConfigs)
	if got != want {
		t.Errorf("authorized operations %b, want %b", got, want)
	}
}

func TestFilterMatches(t *testing.T) {
	str := func(s string) *string { return &s }
	lit := topicACL("foo", PatternLiteral, "User:alice", OpRead, Allow)
	pre := topicACL("fo", PatternPrefixed, "User:alice", OpRead, Allow)
	wild := topicACL(Wildcard, PatternLiteral, "User:bob", OpWrite, Deny)
	all := []Binding{lit, pre, wild}
	for _, tc := range []struct {
		name string
		f    Filter
		want []Binding
	}{
		{"any", MatchAll, all},
		{"literal name", Filter{ResourceType: ResourceTopic, ResourceName: str("foo"), PatternType: PatternLiteral, Operation: OpAny, Permission: PermissionAny}, []Binding{lit}},
		{"any pattern, exact name", Filter{ResourceType: ResourceAny, ResourceName: str("fo"), PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}, []Binding{pre}},
		{"match", Filter{ResourceType: ResourceTopic, ResourceName: str("foo"), PatternType: PatternMatch, Operation: OpAny, Permission: PermissionAny}, all},
		{"match another name", Filter{ResourceType: ResourceTopic, ResourceName: str("bar"), PatternType: PatternMatch, Operation: OpAny, Permission: PermissionAny}, []Binding{wild}},
		{"principal", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Principal: str("User:bob"), Operation: OpAny, Permission: PermissionAny}, []Binding{wild}},
		{"operation and permission", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpRead, Permission: Allow}, []Binding{lit, pre}},
		{"group type", Filter{ResourceType: ResourceGroup, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}, nil},
	} {
		var got []Binding
		for _, b := range all {
			if tc.f.Matches(b) {
				got = append(got, b)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestValidateNew(t *testing.T) {
	ok := topicACL("t", PatternLiteral, "User:alice", OpRead, Allow)
	for _, tc := range []struct {
		mut  func(*Binding)
		want string
	}{
		{func(b *Binding) {}, ""},
		{func(b *Binding) { b.ResourceType = ResourceCluster }, "The only valid name for the CLUSTER resource is kafka-cluster"},
		{func(b *Binding) { b.ResourceType, b.ResourceName = ResourceCluster, ClusterName }, ""},
		{func(b *Binding) { b.ResourceName = "" }, "Invalid empty resource name"},
		{func(b *Binding) { b.ResourceType = ResourceAny }, "Invalid resourceType ANY"},
		{func(b *Binding) { b.PatternType = PatternMatch }, "Invalid patternType MATCH"},
		{func(b *Binding) { b.Operation = OpAny }, "Invalid operation ANY"},
		{func(b *Binding) { b.Permission = PermissionAny }, "Invalid permissionType ANY"},
		{func(b *Binding) { b.Principal = "alice" }, "no colon is present"},
	} {
		b := ok
		tc.mut(&b)
		err := ValidateNew(b)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", b, err, tc.want)
		}
	}
}

// With 10,000 ACLs (literal, prefixed, wildcard, for many principals), a
// question costs a few map lookups: far below a microsecond, where a scan
// of every ACL would cost tens of microseconds.
func TestAuthorizeManyACLsIsIndexed(t *testing.T) {
	a, names := manyACLs(10000, 1)
	start := time.Now()
	const n = 20000
	allowed := 0
	for i := range n {
		if a.Allowed(Action{Principal: User(fmt.Sprintf("u%d", i%50)), Host: local, Operation: OpWrite, Resource: ResourceTopic, Name: names[i%len(names)]}) {
			allowed++
		}
	}
	per := time.Since(start) / n
	t.Logf("%d ACLs: %v per question (%d of %d allowed)", a.Count(), per, allowed, n)
	if allowed == 0 || allowed == n {
		t.Errorf("the questions do not exercise both answers: %d of %d allowed", allowed, n)
	}
	if per > 20*time.Microsecond {
		t.Errorf("a question took %v with %d ACLs: the index is not used", per, a.Count())
	}
}

func manyACLs(n int, seed uint64) (*Authorizer, []string) {
	r := rand.New(rand.NewPCG(seed, seed))
	var acls []Binding
	var names []string
	for i := range n {
		name := fmt.Sprintf("team%d.service%d.events", i%200, i)
		pt := PatternLiteral
		if i%3 == 0 {
			pt, name = PatternPrefixed, fmt.Sprintf("team%d.service%d", i%200, i)
		}
		perm := Allow
		if r.IntN(10) == 0 {
			perm = Deny
		}
		acls = append(acls, topicACL(name, pt, fmt.Sprintf("User:u%d", i%50), OpWrite, perm))
		names = append(names, fmt.Sprintf("team%d.service%d.events", i%200, i))
	}
	return New(AuthorizerConfig{}, acls), names
}

func BenchmarkAuthorize10kACLs(b *testing.B) {
	a, names := manyACLs(10000, 1)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		a.Allowed(Action{Principal: User("u7"), Host: local, Operation: OpWrite, Resource: ResourceTopic, Name: names[i%len(names)]})
	}
}
