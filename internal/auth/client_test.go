package auth

import (
	"strings"
	"testing"
)

// TestClientMechanism: the inter-broker client authenticates with the
// username/password of its listener's JAAS config, as Kafka's brokers do:
// PLAIN and SCRAM (xdg-go's client against Gregor's server) succeed as
// that user; a wrong password is refused; a mechanism the listener does
// not enable, or a JAAS config without a username, is a configuration
// error naming the setting.
func TestClientMechanism(t *testing.T) {
	scramJAAS := func(pw string) string {
		return `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="` + pw + `";`
	}
	for _, tc := range []struct{ mech, jaasKey, jaas string }{
		{"PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config", plainJAAS},
		{"SCRAM-SHA-256", "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config", scramJAAS("broker-pw")},
		{"SCRAM-SHA-512", "sasl.jaas.config", scramJAAS("broker-pw")},
	} {
		f := newSASLFixture(t, tc.jaasKey, tc.jaas)
		f.scram.set(t, "broker", "broker-pw", ScramSHA256)
		f.scram.set(t, "broker", "broker-pw", ScramSHA512)
		m, err := f.l.ClientMechanism(brokerConfig(t, "sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", tc.jaasKey, tc.jaas), tc.mech)
		if err != nil {
			t.Fatalf("%s: %v", tc.mech, err)
		}
		s := f.session(t)
		want := User("broker")
		if tc.mech == "PLAIN" {
			want = User("admin")
		}
		if _, err := login(s, m); err != nil || s.Principal() != want {
			t.Errorf("%s: %v, principal %v", tc.mech, err, s.Principal())
		}
	}

	f := newSASLFixture(t)
	f.scram.set(t, "broker", "broker-pw", ScramSHA256)
	key := "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config"
	m, err := f.l.ClientMechanism(brokerConfig(t, key, scramJAAS("wrong")), "SCRAM-SHA-256")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := login(f.session(t), m); err == nil {
		t.Error("a wrong SCRAM password authenticated")
	}

	for _, tc := range []struct {
		mech string
		kv   []string
		want string
	}{
		{"GSSAPI", nil, "must be included in sasl.enabled.mechanisms"},
		{"SCRAM-SHA-256", nil, "scram-sha-256.sasl.jaas.config is not set"},
		{"SCRAM-SHA-256", []string{key, `org.apache.kafka.common.security.scram.ScramLoginModule required;`}, "has no username"},
		{"SCRAM-SHA-256", []string{key, plainJAAS}, "needs " + ScramLoginModule},
		{"OAUTHBEARER", nil, "speaks PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512"},
	} {
		_, err := f.l.ClientMechanism(brokerConfig(t, tc.kv...), tc.mech)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want %q", tc.mech, tc.kv, err, tc.want)
		}
	}
}
