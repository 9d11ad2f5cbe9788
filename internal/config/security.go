package config

import (
	"fmt"
	"sort"
	"strings"
)

// Gregor has no TLS, SASL or ACLs yet. A configuration that asks for any of
// them must not start a broker that serves everyone on PLAINTEXT, so these
// rules name every setting that asks for protection.

// securityNames are the authentication and authorization settings Kafka
// takes without a prefix.
var securityNames = map[string]bool{
	"authorizer.class.name":          true,
	"super.users":                    true,
	"allow.everyone.if.no.acl.found": true,
	"principal.builder.class":        true,
	"connections.max.reauth.ms":      true,
	"security.providers":             true,
}

// securityPrefixes cover the families: ssl.* (TLS and ssl.client.auth),
// sasl.* (mechanisms, JAAS, Kerberos, OAuth), authorizer.* (an
// authorizer's own settings) and delegation.token.*.
var securityPrefixes = []string{"ssl.", "sasl.", "authorizer.", "delegation.token."}

// IsSecurityConfig reports whether a broker config name asks for
// authentication, authorization or encryption, with or without a listener
// prefix (listener.name.NAME.ssl.keystore.location, and mechanism-scoped SASL
// settings such as listener.name.NAME.plain.sasl.jaas.config).
func IsSecurityConfig(name string) bool {
	if rest, ok := strings.CutPrefix(name, "listener.name."); ok {
		if _, setting, ok := strings.Cut(rest, "."); ok {
			return IsSecurityConfig(setting) || strings.Contains(setting, ".sasl.")
		}
		return false
	}
	if securityNames[name] {
		return true
	}
	for _, p := range securityPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// SecurityRequested lists what in b asks for protection Gregor cannot give
// yet, sorted: every security setting set in any layer (see
// IsSecurityConfig; defaults do not count), security.inter.broker.protocol
// when it is not PLAINTEXT, and every listener whose security protocol is not
// PLAINTEXT. It is empty when the broker may serve everything on PLAINTEXT
// without ignoring anything the operator asked for.
func (b *Broker) SecurityRequested() []string {
	seen := map[string]bool{}
	for _, layer := range []map[string]string{b.static, b.dynDefault, b.dynBroker} {
		for k := range layer {
			if IsSecurityConfig(k) {
				seen[k] = true
			}
		}
	}
	if _, _, set := b.raw("security.inter.broker.protocol"); set {
		if p := b.String("security.inter.broker.protocol"); p != "PLAINTEXT" {
			seen[fmt.Sprintf("security.inter.broker.protocol=%s", p)] = true
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	protos := b.SecurityProtocolMap()
	listeners, _ := ParseEndpoints(b.List("listeners"))
	for _, ep := range listeners {
		if p := protos[ep.Listener]; p != "" && p != "PLAINTEXT" {
			out = append(out, fmt.Sprintf("listener %s (%s)", ep.Listener, p))
		}
	}
	return out
}

// securityNotImplemented is the error for a configuration that asks for
// protection (see SecurityRequested); it wraps ErrInvalidConfig.
func securityNotImplemented(what []string) error {
	return invalidf("Gregor does not implement TLS, SASL or ACLs yet, and this configuration asks for them: %s. "+
		"Starting would serve every client unauthenticated and unencrypted on PLAINTEXT, so Gregor refuses to start; "+
		"remove these settings (and every listener whose protocol is not PLAINTEXT) to run an open broker.",
		strings.Join(what, ", "))
}

// CheckServable returns an error naming every setting that asks for
// protection Gregor cannot give (SecurityRequested), or nil.
func (b *Broker) CheckServable() error {
	if what := b.SecurityRequested(); len(what) > 0 {
		return securityNotImplemented(what)
	}
	return nil
}
