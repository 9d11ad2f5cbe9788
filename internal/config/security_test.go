package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSecurityRequested(t *testing.T) {
	for _, tc := range []struct {
		name string
		kv   []string
		want []string
	}{
		{"plain broker", nil, []string{}},
		{"the issue's server.properties", []string{
			"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users", "User:admin",
			"allow.everyone.if.no.acl.found", "false",
			"listeners", "PLAINTEXT://:9092,SASL_PLAINTEXT://:9093",
			"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		}, []string{"allow.everyone.if.no.acl.found", "authorizer.class.name", "super.users", "listener SASL_PLAINTEXT (SASL_PLAINTEXT)"}},
		{"a listener name mapped to SSL", []string{
			"listeners", "PLAINTEXT://:9092,CLIENTS://:9094",
			"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CLIENTS:SSL,CONTROLLER:PLAINTEXT",
		}, []string{"listener CLIENTS (SSL)"}},
		{"SASL and TLS settings without a listener", []string{
			"sasl.enabled.mechanisms", "PLAIN", "ssl.client.auth", "required", "principal.builder.class", "x.Builder",
			"connections.max.reauth.ms", "1000", "delegation.token.secret.key", "k",
		}, []string{"connections.max.reauth.ms", "delegation.token.secret.key", "principal.builder.class", "sasl.enabled.mechanisms", "ssl.client.auth"}},
		{"listener-prefixed security settings", []string{
			"listener.name.sasl_ssl.plain.sasl.jaas.config", "x",
			"listener.name.external.ssl.keystore.location", "/k",
			"listener.name.external.max.connections", "10",
		}, []string{"listener.name.external.ssl.keystore.location", "listener.name.sasl_ssl.plain.sasl.jaas.config"}},
		{"inter-broker protocol", []string{"security.inter.broker.protocol", "SSL"}, []string{"security.inter.broker.protocol=SSL"}},
		{"inter-broker protocol PLAINTEXT", []string{"security.inter.broker.protocol", "PLAINTEXT"}, []string{}},
	} {
		b := mustBroker(t, minimal(tc.kv...))
		got := b.SecurityRequested()
		if !cmp.Equal(got, tc.want) {
			t.Errorf("%s: SecurityRequested %q, want %q", tc.name, got, tc.want)
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

// AlterConfigs cannot bring in what a static configuration may not have.
func TestDynamicSecurityConfigsRefused(t *testing.T) {
	b := mustBroker(t, minimal())
	for _, m := range []map[string]string{
		{"super.users": "User:admin"},
		{"listener.name.external.ssl.keystore.location": "/k"},
		{"sasl.enabled.mechanisms": "PLAIN"},
	} {
		if _, err := b.WithDynamicPerBroker(m); err == nil || !strings.Contains(err.Error(), "does not implement TLS, SASL or ACLs") {
			t.Errorf("per-broker %v: %v", m, err)
		}
		if _, err := b.WithDynamic(m); err == nil {
			t.Errorf("cluster default %v accepted", m)
		}
		k := firstKey(m)
		v := m[k]
		if _, err := ApplyIncremental(nil, []AlterEntry{{Name: k, Op: AlterSet, Value: &v}}, false); err == nil {
			t.Errorf("incremental %v accepted", m)
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
