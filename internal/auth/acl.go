package auth

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
)

// ResourceType is Kafka's ResourceType, numbered as on the wire.
type ResourceType int8

const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// ClusterName is the only name of the cluster resource (Kafka's
// Resource.CLUSTER_NAME).
const ClusterName = "kafka-cluster"

// Wildcard is the resource name, host and principal name that match any.
const Wildcard = "*"

// WildcardPrincipal is the principal of ACLs that match any principal.
const WildcardPrincipal = "User:*"

var resourceNames = [...]string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"}

// ResourceTypeOf maps a wire code to a ResourceType; codes Kafka does not
// know are ResourceUnknown, as Kafka's fromCode maps them.
func ResourceTypeOf(code int8) ResourceType {
	if code < 0 || int(code) >= len(resourceNames) {
		return ResourceUnknown
	}
	return ResourceType(code)
}

func (t ResourceType) String() string {
	if t < 0 || int(t) >= len(resourceNames) {
		return "UNKNOWN"
	}
	return resourceNames[t]
}

// PatternType is Kafka's PatternType.
type PatternType int8

const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

var patternNames = [...]string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}

// PatternTypeOf maps a wire code to a PatternType (unknown codes: PatternUnknown).
func PatternTypeOf(code int8) PatternType {
	if code < 0 || int(code) >= len(patternNames) {
		return PatternUnknown
	}
	return PatternType(code)
}

func (p PatternType) String() string {
	if p < 0 || int(p) >= len(patternNames) {
		return "UNKNOWN"
	}
	return patternNames[p]
}

// Operation is Kafka's AclOperation.
type Operation int8

const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
)

var opNames = [...]string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
	"CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS"}

// OperationOf maps a wire code to an Operation (unknown codes: OpUnknown).
func OperationOf(code int8) Operation {
	if code < 0 || int(code) >= len(opNames) {
		return OpUnknown
	}
	return Operation(code)
}

func (o Operation) String() string {
	if o < 0 || int(o) >= len(opNames) {
		return "UNKNOWN"
	}
	return opNames[o]
}

// ParseOperation reads an operation name as Kafka's tools write it
// (case-insensitive, "_" or "-" or nothing between words).
func ParseOperation(s string) (Operation, error) {
	n := normName(s)
	for i, name := range opNames {
		if i > 1 && normName(name) == n {
			return Operation(i), nil
		}
	}
	return OpUnknown, fmt.Errorf("unknown ACL operation %q", s)
}

// ParseResourceType reads a resource type name (topic, group, cluster,
// transactional-id, delegation-token, user).
func ParseResourceType(s string) (ResourceType, error) {
	n := normName(s)
	for i, name := range resourceNames {
		if i > 1 && normName(name) == n {
			return ResourceType(i), nil
		}
	}
	return ResourceUnknown, fmt.Errorf("unknown resource type %q", s)
}

// ParsePatternType reads literal, prefixed (and, for filters, any, match).
func ParsePatternType(s string) (PatternType, error) {
	n := normName(s)
	for i, name := range patternNames {
		if i > 0 && normName(name) == n {
			return PatternType(i), nil
		}
	}
	return PatternUnknown, fmt.Errorf("unknown pattern type %q", s)
}

func normName(s string) string {
	return strings.NewReplacer("_", "", "-", "", ".", "", " ", "").Replace(strings.ToLower(s))
}

// Permission is Kafka's AclPermissionType.
type Permission int8

const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1
	Deny              Permission = 2
	Allow             Permission = 3
)

var permNames = [...]string{"UNKNOWN", "ANY", "DENY", "ALLOW"}

// PermissionOf maps a wire code to a Permission (unknown codes: PermissionUnknown).
func PermissionOf(code int8) Permission {
	if code < 0 || int(code) >= len(permNames) {
		return PermissionUnknown
	}
	return Permission(code)
}

func (p Permission) String() string {
	if p < 0 || int(p) >= len(permNames) {
		return "UNKNOWN"
	}
	return permNames[p]
}

// Binding is one ACL: Kafka's AclBinding (a resource pattern and an access
// control entry).
type Binding struct {
	ResourceType ResourceType
	ResourceName string
	PatternType  PatternType
	Principal    string // "Type:name", e.g. User:alice or User:*
	Host         string // an IP address or *
	Operation    Operation
	Permission   Permission
}

func (b Binding) String() string {
	return fmt.Sprintf("(pattern=ResourcePattern(resourceType=%v, name=%s, patternType=%v), entry=(principal=%s, host=%s, operation=%v, permissionType=%v))",
		b.ResourceType, b.ResourceName, b.PatternType, b.Principal, b.Host, b.Operation, b.Permission)
}

// IsUnknown reports whether any field is UNKNOWN: Kafka refuses such a
// request as malformed (the connection is closed).
func (b Binding) IsUnknown() bool {
	return b.ResourceType == ResourceUnknown || b.PatternType == PatternUnknown ||
		b.Operation == OpUnknown || b.Permission == PermissionUnknown
}

// Compare orders bindings by resource type, name, pattern type, then entry:
// the order DescribeAcls answers and snapshots are written in.
func Compare(a, b Binding) int {
	return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), strings.Compare(a.ResourceName, b.ResourceName),
		cmp.Compare(a.PatternType, b.PatternType), strings.Compare(a.Principal, b.Principal),
		strings.Compare(a.Host, b.Host), cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Permission, b.Permission))
}

// ErrInvalidACL wraps the reasons an ACL cannot be created; the message is
// Kafka's, and the error is answered as INVALID_REQUEST.
var ErrInvalidACL = errors.New("invalid ACL")

// ValidateNew checks an ACL to be created as Kafka's broker (AclApis) and
// controller (AclControlManager.validateNewAcl) do, in their order.
func ValidateNew(b Binding) error {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidACL}, args...)...)
	}
	switch {
	case b.ResourceType == ResourceCluster && b.ResourceName != ClusterName:
		return invalid("The only valid name for the CLUSTER resource is %s", ClusterName)
	case b.ResourceName == "":
		return invalid("Invalid empty resource name")
	case b.ResourceType == ResourceUnknown || b.ResourceType == ResourceAny:
		return invalid("Invalid resourceType %v", b.ResourceType)
	case b.PatternType != PatternLiteral && b.PatternType != PatternPrefixed:
		return invalid("Invalid patternType %v", b.PatternType)
	case b.Operation == OpUnknown || b.Operation == OpAny:
		return invalid("Invalid operation %v", b.Operation)
	case b.Permission != Allow && b.Permission != Deny:
		return invalid("Invalid permissionType %v", b.Permission)
	}
	if _, err := ParsePrincipal(b.Principal); err != nil {
		return invalid("%v", err)
	}
	return nil
}

// Filter selects ACLs, as Kafka's AclBindingFilter: ANY (or a nil string)
// matches everything in that field; PatternMatch matches the ACLs that
// would apply to the named resource (literal equal or wildcard, or a prefix
// of it).
type Filter struct {
	ResourceType ResourceType
	ResourceName *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// MatchAll is the filter every ACL matches.
var MatchAll = Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}

// IsUnknown reports whether any field is UNKNOWN (a malformed request).
func (f Filter) IsUnknown() bool {
	return f.ResourceType == ResourceUnknown || f.PatternType == PatternUnknown ||
		f.Operation == OpUnknown || f.Permission == PermissionUnknown
}

// Matches reports whether b is selected by f.
func (f Filter) Matches(b Binding) bool {
	return f.matchesPattern(b) &&
		(f.Principal == nil || *f.Principal == b.Principal) &&
		(f.Host == nil || *f.Host == b.Host) &&
		(f.Operation == OpAny || f.Operation == b.Operation) &&
		(f.Permission == PermissionAny || f.Permission == b.Permission)
}

// matchesPattern is Kafka's ResourcePatternFilter.matches.
func (f Filter) matchesPattern(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName == nil {
		return true
	}
	name := *f.ResourceName
	if f.PatternType == PatternAny || f.PatternType == b.PatternType {
		return name == b.ResourceName
	}
	switch b.PatternType {
	case PatternLiteral:
		return name == b.ResourceName || b.ResourceName == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}
