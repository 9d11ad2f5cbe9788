package config

import (
	"fmt"
	"sort"
	"strings"
)

// Security settings fail closed: Gregor serves TLS, SASL (PLAIN,
// SCRAM-SHA-256/512, OAUTHBEARER) and ACLs (package auth), and a
// configuration that asks for anything else about authentication,
// authorization or encryption must not start a broker that ignores it.
// These rules name every setting that asks for protection and the ones
// Gregor honours.

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
			return IsSecurityConfig(setting) || strings.Contains(setting, ".sasl.") ||
				strings.HasSuffix(setting, ".connections.max.reauth.ms")
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

// honoured are the security settings Gregor implements, by their name
// without a listener prefix.
var honoured = map[string]bool{
	"ssl.keystore.type": true, "ssl.keystore.location": true, "ssl.keystore.password": true, "ssl.key.password": true,
	"ssl.keystore.key": true, "ssl.keystore.certificate.chain": true, "ssl.truststore.type": true,
	"ssl.truststore.location": true, "ssl.truststore.password": true, "ssl.truststore.certificates": true,
	"ssl.client.auth": true, "ssl.enabled.protocols": true, "ssl.protocol": true, "ssl.cipher.suites": true,
	"ssl.endpoint.identification.algorithm": true, "ssl.principal.mapping.rules": true,
	"ssl.allow.dn.changes": true, "ssl.allow.san.changes": true,
	"sasl.enabled.mechanisms": true, "sasl.mechanism.inter.broker.protocol": true,
	"sasl.mechanism.controller.protocol": true, "sasl.server.callback.handler.class": true,
	"sasl.oauthbearer.jwks.endpoint.url": true, "sasl.oauthbearer.jwks.endpoint.refresh.ms": true,
	"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": true, "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": true,
	"sasl.oauthbearer.expected.audience": true, "sasl.oauthbearer.expected.issuer": true,
	"sasl.oauthbearer.clock.skew.seconds": true, "sasl.oauthbearer.sub.claim.name": true,
	"sasl.oauthbearer.scope.claim.name": true, "connections.max.reauth.ms": true, "sasl.server.max.receive.size": true,
	"authorizer.class.name": true, "super.users": true, "allow.everyone.if.no.acl.found": true,
}

// honouredPerMechanism are the settings Gregor reads with a listener and
// SASL mechanism prefix (listener.name.NAME.MECHANISM.setting).
var honouredPerMechanism = map[string]bool{
	"sasl.jaas.config": true, "sasl.server.callback.handler.class": true, "connections.max.reauth.ms": true,
	"sasl.oauthbearer.jwks.endpoint.url": true, "sasl.oauthbearer.jwks.endpoint.refresh.ms": true,
	"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": true, "sasl.oauthbearer.expected.audience": true,
	"sasl.oauthbearer.expected.issuer": true, "sasl.oauthbearer.clock.skew.seconds": true,
	"sasl.oauthbearer.sub.claim.name": true, "sasl.oauthbearer.scope.claim.name": true,
}

var saslMechanisms = map[string]bool{"plain": true, "scram-sha-256": true, "scram-sha-512": true, "oauthbearer": true}

// IsHonouredSecurityConfig reports whether Gregor implements a security
// setting (IsSecurityConfig), with the prefixes Kafka allows.
func IsHonouredSecurityConfig(name string) bool {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return honoured[name]
	}
	_, setting, ok := strings.Cut(rest, ".")
	if !ok {
		return false
	}
	if honoured[setting] {
		return true
	}
	mech, setting, ok := strings.Cut(setting, ".")
	return ok && saslMechanisms[mech] && honouredPerMechanism[setting]
}

// SecurityUnsupported lists, sorted, the security settings set in any
// layer (defaults do not count) that Gregor does not implement: Kerberos,
// delegation tokens, custom principal builders, an authorizer's own
// settings and the like. It is empty when Gregor honours everything the
// operator asked for. Whether the values themselves can be honoured (a
// PEM key store, a supported mechanism) is checked when the listeners and
// the authorizer are built (package auth).
func (b *Broker) SecurityUnsupported() []string {
	seen := map[string]bool{}
	for _, layer := range []map[string]string{b.static, b.dynDefault, b.dynBroker} {
		for k := range layer {
			if IsSecurityConfig(k) && !IsHonouredSecurityConfig(k) {
				seen[k] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// CheckServable returns an error naming every security setting Gregor
// does not implement (SecurityUnsupported), or nil. It wraps
// ErrInvalidConfig.
func (b *Broker) CheckServable() error {
	if what := b.SecurityUnsupported(); len(what) > 0 {
		return invalidf("Gregor does not implement these security settings: %s. "+
			"Starting would ignore protection the configuration asks for, so Gregor refuses to start; "+
			"README's security section lists what Gregor serves.", strings.Join(what, ", "))
	}
	return nil
}

// dynamicSecurity checks security settings of a dynamic layer: Gregor
// changes at runtime only a listener's key and trust stores
// (listener.name.NAME.ssl.keystore.location and the like, per broker), as
// Kafka reconfigures them; every other security setting needs a restart.
func dynamicSecurity(m map[string]string, perBrokerLayer bool) error {
	var refused []string
	for _, k := range sortedKeys(m) {
		if !IsSecurityConfig(k) {
			continue
		}
		rest, prefixed := strings.CutPrefix(k, "listener.name.")
		_, setting, _ := strings.Cut(rest, ".")
		if prefixed && securityReconfigurable[setting] && perBrokerLayer {
			continue
		}
		refused = append(refused, k)
	}
	if len(refused) > 0 {
		return invalidf("Cannot update these security configs dynamically: %s. Gregor reloads only a listener's key and trust stores "+
			"(listener.name.NAME.ssl.keystore.* and ssl.truststore.*, per broker); set the others in server.properties and restart.",
			fmt.Sprint(refused))
	}
	return nil
}
