package auth

import (
	"fmt"
	"strings"
)

// Principal is Kafka's KafkaPrincipal: a type (User) and a name.
type Principal struct {
	Type, Name string
}

// UserType is the principal type of every principal Gregor builds.
const UserType = "User"

// Anonymous is the principal of an unauthenticated connection (PLAINTEXT,
// or SSL without a client certificate), Kafka's KafkaPrincipal.ANONYMOUS.
var Anonymous = Principal{Type: UserType, Name: "ANONYMOUS"}

// User returns the User principal called name.
func User(name string) Principal { return Principal{Type: UserType, Name: name} }

func (p Principal) String() string { return p.Type + ":" + p.Name }

// ParsePrincipal reads "Type:name" as Kafka's SecurityUtils.parseKafkaPrincipal
// does: split at the first colon, which must be there.
func ParsePrincipal(s string) (Principal, error) {
	typ, name, ok := strings.Cut(s, ":")
	if !ok || s == "" {
		return Principal{}, fmt.Errorf("Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", s)
	}
	return Principal{Type: typ, Name: name}, nil
}

// ParseSuperUsers reads super.users: principals separated by semicolons, as
// Kafka splits them.
func ParseSuperUsers(s string) (map[Principal]bool, error) {
	out := map[Principal]bool{}
	for _, p := range strings.Split(s, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		pr, err := ParsePrincipal(p)
		if err != nil {
			return nil, fmt.Errorf("super.users: %v", err)
		}
		out[pr] = true
	}
	return out, nil
}
