package auth

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"strings"
	"time"
)

// plainMechanism is SASL/PLAIN with Kafka's PlainServerCallbackHandler: the
// users are the user_NAME="password" options of the listener's
// PlainLoginModule JAAS entry.
type plainMechanism struct {
	users map[string]string
}

func newPlain(jaas JAASEntry) (*plainMechanism, error) {
	if jaas.Module != PlainLoginModule {
		return nil, fmt.Errorf("PLAIN needs %s in its sasl.jaas.config, not %s", PlainLoginModule, jaas.Module)
	}
	m := &plainMechanism{users: map[string]string{}}
	for k, v := range jaas.Options {
		if user, ok := strings.CutPrefix(k, "user_"); ok {
			m.users[user] = v
		}
	}
	return m, nil
}

func (m *plainMechanism) Name() string { return "PLAIN" }

func (m *plainMechanism) Start(time.Time) Exchange { return &plainExchange{m: m} }

type plainExchange struct {
	m    *plainMechanism
	user string
}

// Step checks the one PLAIN message, authzid NUL authcid NUL password, in
// Kafka's order and with its messages.
func (e *plainExchange) Step(in []byte) ([]byte, bool, error) {
	tokens := bytes.Split(in, []byte{0})
	if len(tokens) != 3 {
		return nil, false, fmt.Errorf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", len(tokens))
	}
	authzid, user, password := string(tokens[0]), string(tokens[1]), tokens[2]
	if user == "" {
		return nil, false, authFailed("Authentication failed: username not specified")
	}
	if len(password) == 0 {
		return nil, false, authFailed("Authentication failed: password not specified")
	}
	want, ok := e.m.users[user]
	// Compare even for an unknown user, so the time taken does not say
	// whether the user exists.
	match := subtle.ConstantTimeCompare(password, []byte(want)) == 1
	if !ok || !match {
		return nil, false, authFailed("Authentication failed: Invalid username or password")
	}
	if authzid != "" && authzid != user {
		return nil, false, authFailed("Authentication failed: Client requested an authorization id that is different from username")
	}
	e.user = user
	return nil, true, nil
}

func (e *plainExchange) Outcome() (Principal, time.Time) { return User(e.user), time.Time{} }
