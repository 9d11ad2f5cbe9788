package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSecurityUnsupported(t *testing.T) {
	for _, tc := range []struct {
		name string
		kv   []string
		want []string
	}{
		{"plain broker", nil, []string{}},
		{"the README's TLS + SCRAM + ACL server.properties", []string{
			"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users", "User:admin",
			"allow.everyone.if.no.acl.found", "false",
			"listeners", "PLAINTEXT://:9092,SASL_SSL://:9093",
			"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
			"sasl.enabled.mechanisms", "SCRAM-SHA-256,PLAIN",
			"ssl.keystore.type", "PEM", "ssl.keystore.location", "/k.pem",
			"listener.name.sasl_ssl.plain.sasl.jaas.config", "x",
			"listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.jwks.endpoint.url", "file:/jwks.json",
			"listener.name.sasl_ssl.scram-sha-256.connections.max.reauth.ms", "60000",
			"connections.max.reauth.ms", "1000",
		}, []string{}},
		{"what Gregor does not implement", []string{
			"principal.builder.class", "x.Builder",
			"delegation.token.secret.key", "k",
			"sasl.kerberos.service.name", "kafka",
			"authorizer.custom.setting", "1",
			"ssl.engine.factory.class", "x.Factory",
			"listener.name.external.gssapi.sasl.jaas.config", "x",
			"listener.name.external.max.connections", "10",
		}, []string{"authorizer.custom.setting", "delegation.token.secret.key", "listener.name.external.gssapi.sasl.jaas.config",
			"principal.builder.class", "sasl.kerberos.service.name", "ssl.engine.factory.class"}},
	} {
		b := mustBroker(t, minimal(tc.kv...))
		got := b.SecurityUnsupported()
		if !cmp.Equal(got, tc.want) {
			t.Errorf("%s: SecurityUnsupported %q, want %q", tc.name, got, tc.want)
		}
		err := b.CheckServable()
		if (err == nil) != (len(tc.want) == 0) {
			t.Errorf("%s: CheckServable %v", tc.name, err)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%s: %v does not wrap ErrInvalidConfig", tc.name, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: %q does not name %s", tc.name, err, w)
				}
			}
		}
	}
}

// AlterConfigs changes a listener's key and trust stores per broker, and no
// other security setting.
func TestDynamicSecurityConfigs(t *testing.T) {
	b := mustBroker(t, minimal())
	for _, m := range []map[string]string{
		{"super.users": "User:admin"},
		{"sasl.enabled.mechanisms": "PLAIN"},
		{"listener.name.external.plain.sasl.jaas.config": "x"},
		{"listener.name.external.ssl.client.auth": "required"},
	} {
		if _, err := b.WithDynamicPerBroker(m); err == nil || !strings.Contains(err.Error(), firstKey(m)) {
			t.Errorf("per-broker %v: %v", m, err)
		}
		if _, err := b.WithDynamic(m); err == nil {
			t.Errorf("cluster default %v accepted", m)
		}
	}
	// Unprefixed key store settings: only per listener, as Kafka says.
	if _, err := b.WithDynamicPerBroker(map[string]string{"ssl.keystore.location": "/k"}); err == nil ||
		!strings.Contains(err.Error(), "only per-listener") {
		t.Errorf("unprefixed key store: %v", err)
	}
	for _, k := range []string{"listener.name.external.ssl.keystore.location", "listener.name.external.ssl.truststore.certificates"} {
		if _, err := b.WithDynamicPerBroker(map[string]string{k: "/k"}); err != nil {
			t.Errorf("per-broker %s: %v", k, err)
		}
		if _, err := b.WithDynamic(map[string]string{k: "/k"}); err == nil {
			t.Errorf("cluster default %s accepted", k)
		}
	}
	if _, err := b.WithDynamicPerBroker(map[string]string{"listener.name.external.max.connections": "10"}); err != nil {
		t.Errorf("a listener-prefixed setting that is not about security: %v", err)
	}
}

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}
