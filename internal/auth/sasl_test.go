package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/config"
)

func brokerConfig(t testing.TB, kv ...string) *config.Broker {
	t.Helper()
	m := map[string]string{"node.id": "1", "process.roles": "broker,controller", "controller.listener.names": "CONTROLLER"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, err := config.NewBroker(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// scramStore is an in-memory credential store keyed by user and mechanism.
type scramStore map[string]ScramCredential

func (s scramStore) set(t testing.TB, user, password string, m ScramMechanism) {
	salt := make([]byte, 16)
	rand.Read(salt)
	salted, err := SaltPassword(m, password, salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	s[user+"/"+m.String()] = DeriveScramCredential(m, salt, salted, 4096)
}

func (s scramStore) lookup(user string, m ScramMechanism) (ScramCredential, bool) {
	c, ok := s[user+"/"+m.String()]
	return c, ok
}

var quiet = slog.New(slog.DiscardHandler)

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required
	username="admin" password="admin-secret"
	user_admin="admin-secret" user_alice="alice-secret";`

type saslFixture struct {
	l      *Listener
	clock  *clock.Fake
	scram  scramStore
	closed atomic.Int32
}

func newSASLFixture(t testing.TB, kv ...string) *saslFixture {
	t.Helper()
	f := &saslFixture{clock: clock.NewFake(time.Unix(1_700_000_000, 0)), scram: scramStore{}}
	kv = append([]string{
		"sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config", plainJAAS,
	}, kv...)
	l, err := NewListener(ListenerOptions{Name: "SASL_PLAINTEXT", Protocol: SASLPlaintext, Config: brokerConfig(t, kv...),
		Clock: f.clock, Scram: f.scram.lookup, Audit: NewAudit(quiet, nil, f.clock)})
	if err != nil {
		t.Fatal(err)
	}
	f.l = l
	return f
}

func (f *saslFixture) session(t testing.TB) *Session {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	_, s := f.l.Wrap(a)
	s.close = func() { f.closed.Add(1) }
	return s
}

// login runs a franz-go client mechanism against the session, as
// SaslHandshake then SaslAuthenticate requests would.
func login(s *Session, m sasl.Mechanism) (lifetimeMs int64, err error) {
	if e, _ := s.Handshake(1, m.Name()); e != nil {
		return 0, e
	}
	sess, msg, err := m.Authenticate(context.Background(), "broker:9092")
	if err != nil {
		return 0, err
	}
	for {
		out, life, se := s.Authenticate(2, msg)
		if se != nil {
			return 0, se
		}
		done, next, err := sess.Challenge(out)
		if err != nil {
			return 0, err
		}
		if done {
			if s.state != stateAuthenticated {
				return 0, errors.New("client done, server not")
			}
			return life, nil
		}
		msg = next
	}
}

func TestPlain(t *testing.T) {
	f := newSASLFixture(t)
	s := f.session(t)
	if err := s.Admit(3); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("Metadata before authenticating: %v", err)
	}
	if err := s.Admit(keyApiVersions); err != nil {
		t.Fatalf("ApiVersions before authenticating: %v", err)
	}
	if _, err := login(s, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()); err != nil {
		t.Fatal(err)
	}
	if s.Principal() != User("alice") || s.Admit(3) != nil {
		t.Fatalf("after PLAIN: principal %v, admit %v", s.Principal(), s.Admit(3))
	}
	if _, _, e := s.Authenticate(2, []byte("x")); e == nil || e.Err != kerr.IllegalSaslState {
		t.Errorf("SaslAuthenticate after authentication: %v", e)
	}
	for _, tc := range []struct {
		msg  string
		want string
	}{
		{"\x00alice\x00wrong", "Authentication failed: Invalid username or password"},
		{"\x00nobody\x00alice-secret", "Authentication failed: Invalid username or password"},
		{"bob\x00alice\x00alice-secret", "Client requested an authorization id that is different from username"},
		{"\x00\x00pw", "Authentication failed: username not specified"},
		{"\x00alice\x00", "Authentication failed: password not specified"},
		// Truncated or malformed: Kafka's generic message, not the detail.
		{"alice\x00alice-secret", "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN"},
		{"", "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN"},
	} {
		s := f.session(t)
		if e, _ := s.Handshake(1, "PLAIN"); e != nil {
			t.Fatal(e)
		}
		_, _, se := s.Authenticate(2, []byte(tc.msg))
		if se == nil || se.Err != kerr.SaslAuthenticationFailed || !strings.Contains(se.Message, tc.want) {
			t.Errorf("%q: %v, want SASL_AUTHENTICATION_FAILED %q", tc.msg, se, tc.want)
		}
		if err := s.Admit(3); err == nil {
			t.Errorf("%q: a request is admitted after failed authentication", tc.msg)
		}
	}
}

func TestHandshakeStates(t *testing.T) {
	f := newSASLFixture(t)
	s := f.session(t)
	if _, _, se := s.Authenticate(2, []byte("\x00alice\x00alice-secret")); se == nil || se.Err != kerr.IllegalSaslState {
		t.Errorf("SaslAuthenticate before SaslHandshake: %v", se)
	}
	f.clock.Advance(time.Second)
	closed := f.closed.Load()
	s = f.session(t)
	e, mechs := s.Handshake(1, "GSSAPI")
	if e != kerr.UnsupportedSaslMechanism || strings.Join(mechs, ",") != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER" {
		t.Errorf("unsupported mechanism: %v %v", e, mechs)
	}
	// The failed connection is closed after connection.failed.authentication.delay.ms.
	f.clock.Advance(99 * time.Millisecond)
	if f.closed.Load() != closed {
		t.Error("closed before the delay")
	}
	f.clock.Advance(time.Millisecond)
	if f.closed.Load() != closed+1 {
		t.Errorf("closes after the delay: %d", f.closed.Load())
	}
	// A PLAINTEXT listener answers SASL requests ILLEGAL_SASL_STATE.
	pl, err := NewListener(ListenerOptions{Name: "PLAINTEXT", Protocol: Plaintext, Config: brokerConfig(t)})
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	_, ps := pl.Wrap(a)
	if e, _ := ps.Handshake(1, "PLAIN"); e != kerr.IllegalSaslState {
		t.Errorf("SaslHandshake on PLAINTEXT: %v", e)
	}
	if ps.Admit(0) != nil || ps.Principal() != Anonymous {
		t.Errorf("PLAINTEXT session: %v %v", ps.Admit(0), ps.Principal())
	}
}

func TestSCRAM(t *testing.T) {
	f := newSASLFixture(t)
	f.scram.set(t, "alice", "alice-pw", ScramSHA256)
	f.scram.set(t, "bob", "bob-pw", ScramSHA512)
	if _, err := login(f.session(t), scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()); err != nil {
		t.Errorf("SCRAM-SHA-256: %v", err)
	}
	s := f.session(t)
	if _, err := login(s, scram.Auth{User: "bob", Pass: "bob-pw"}.AsSha512Mechanism()); err != nil || s.Principal() != User("bob") {
		t.Errorf("SCRAM-SHA-512: %v %v", err, s.Principal())
	}
	generic := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
	for name, m := range map[string]sasl.Mechanism{
		"wrong password":               scram.Auth{User: "alice", Pass: "nope"}.AsSha256Mechanism(),
		"unknown user":                 scram.Auth{User: "mallory", Pass: "x"}.AsSha256Mechanism(),
		"other mechanism's credential": scram.Auth{User: "bob", Pass: "bob-pw"}.AsSha256Mechanism(),
	} {
		_, err := login(f.session(t), m)
		var se *SASLError
		if !errors.As(err, &se) || se.Err != kerr.SaslAuthenticationFailed || se.Message != generic {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A client-final message replayed into another exchange fails: the
	// server's nonce differs.
	s1 := f.session(t)
	s1.Handshake(1, "SCRAM-SHA-256")
	cs, first, _ := scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism().Authenticate(context.Background(), "")
	serverFirst, _, _ := s1.Authenticate(2, first)
	_, final, err := cs.Challenge(serverFirst)
	if err != nil {
		t.Fatal(err)
	}
	s2 := f.session(t)
	s2.Handshake(1, "SCRAM-SHA-256")
	if _, _, se := s2.Authenticate(2, first); se != nil {
		t.Fatal(se)
	}
	if _, _, se := s2.Authenticate(2, final); se == nil || se.Message != generic {
		t.Errorf("replayed client-final: %v", se)
	}
	if _, _, se := s1.Authenticate(2, final); se != nil {
		t.Errorf("the original exchange: %v", se)
	}
}

func unsecuredToken(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
}

func TestOAuthBearerUnsecured(t *testing.T) {
	f := newSASLFixture(t, "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config",
		OAuthBearerLoginModule+` required unsecuredValidatorRequiredScope="kafka";`)
	now := f.clock.Now()
	tok := func(claims string) sasl.Mechanism { return oauth.Auth{Token: unsecuredToken(claims)}.AsMechanism() }
	s := f.session(t)
	life, err := login(s, tok(fmt.Sprintf(`{"sub":"svc","exp":%d,"scope":"kafka other"}`, now.Add(time.Hour).Unix())))
	if err != nil || s.Principal() != User("svc") {
		t.Fatalf("valid token: %v %v", err, s.Principal())
	}
	// The session lasts as long as the token (KIP-368), even without
	// connections.max.reauth.ms.
	if life != time.Hour.Milliseconds() {
		t.Errorf("session lifetime %dms, want the token's hour", life)
	}
	for name, tc := range map[string]struct{ claims, want string }{
		"expired":       {fmt.Sprintf(`{"sub":"svc","exp":%d,"scope":"kafka"}`, now.Add(-time.Minute).Unix()), `{"status":"invalid_token"}`},
		"no exp":        {`{"sub":"svc","scope":"kafka"}`, `{"status":"invalid_token"}`},
		"no sub":        {fmt.Sprintf(`{"exp":%d,"scope":"kafka"}`, now.Add(time.Hour).Unix()), `{"status":"invalid_token"}`},
		"missing scope": {fmt.Sprintf(`{"sub":"svc","exp":%d,"scope":"other"}`, now.Add(time.Hour).Unix()), `{"status":"insufficient_scope", "scope":"kafka"}`},
	} {
		s := f.session(t)
		_, err := login(s, tok(tc.claims))
		var se *SASLError
		if !errors.As(err, &se) || se.Err != kerr.SaslAuthenticationFailed || se.Message != tc.want {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED %s", name, err, tc.want)
		}
	}
	// A signed token is not an unsecured one.
	s = f.session(t)
	s.Handshake(1, "OAUTHBEARER")
	out, _, se := s.Authenticate(2, []byte("n,,\x01auth=Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln\x01\x01"))
	if se != nil || string(out) != `{"status":"invalid_token"}` {
		t.Errorf("signed token: %q %v", out, se)
	}
	// Malformed first messages.
	for _, msg := range []string{"", "n,,", "y,,\x01auth=Bearer x\x01\x01", "n,,\x01auth=Basic abc\x01\x01", "n,,\x01\x01"} {
		s := f.session(t)
		s.Handshake(1, "OAUTHBEARER")
		if _, _, se := s.Authenticate(2, []byte(msg)); se == nil || se.Err != kerr.SaslAuthenticationFailed {
			t.Errorf("%q: %v", msg, se)
		}
	}
}

// KIP-368: with connections.max.reauth.ms, a session must be
// re-authenticated before it expires; re-authentication keeps the
// principal and the mechanism.
func TestReauthentication(t *testing.T) {
	f := newSASLFixture(t, "connections.max.reauth.ms", "1000")
	mech := plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()
	s := f.session(t)
	life, err := login(s, mech)
	if err != nil || life != 1000 {
		t.Fatalf("login: %v, lifetime %d", err, life)
	}
	f.clock.Advance(999 * time.Millisecond)
	if err := s.Admit(0); err != nil {
		t.Fatalf("before expiry: %v", err)
	}
	if _, err := login(s, mech); err != nil {
		t.Fatalf("re-authentication: %v", err)
	}
	f.clock.Advance(999 * time.Millisecond)
	if err := s.Admit(0); err != nil {
		t.Fatalf("the re-authenticated session expired early: %v", err)
	}
	f.clock.Advance(time.Millisecond)
	if err := s.Admit(0); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("a request after expiry: %v", err)
	}
	// An expired session may still re-authenticate.
	if _, err := login(s, mech); err != nil || s.Admit(0) != nil {
		t.Fatalf("re-authentication after expiry: %v", err)
	}
	// Another principal is refused, and so is another mechanism.
	if _, err := login(s, plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()); err == nil ||
		!strings.Contains(err.Error(), "Cannot change principals during re-authentication") {
		t.Errorf("principal change: %v", err)
	}
	s = f.session(t)
	login(s, mech)
	f.scram.set(t, "alice", "pw", ScramSHA256)
	if _, err := login(s, scram.Auth{User: "alice", Pass: "pw"}.AsSha256Mechanism()); err == nil {
		t.Error("mechanism change accepted")
	}
	// A client that used SaslAuthenticate v0 cannot re-authenticate.
	s = f.session(t)
	s.Handshake(1, "PLAIN")
	if _, _, se := s.Authenticate(0, []byte("\x00alice\x00alice-secret")); se != nil {
		t.Fatal(se)
	}
	if e, _ := s.Handshake(1, "PLAIN"); e != kerr.IllegalSaslState {
		t.Errorf("SaslHandshake after a v0 authentication: %v", e)
	}
}

// Bad bytes on the SASL path fail the authentication; they never panic.
func FuzzSASLExchanges(f *testing.F) {
	for _, s := range []string{"\x00a\x00b", "n,,n=alice,r=abc", "n,,\x01auth=Bearer a.b.\x01\x01", "c=biws,r=x,p=eA==", "\x01"} {
		f.Add([]byte(s), []byte(s))
	}
	fx := newSASLFixture(f)
	fx.scram.set(f, "alice", "pw", ScramSHA256)
	f.Fuzz(func(t *testing.T, first, second []byte) {
		for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"} {
			ex := fx.l.mechanism(mech).Start(fx.clock.Now())
			if _, done, err := ex.Step(first); err == nil && !done {
				ex.Step(second)
			}
		}
	})
}

// librdkafka sends its client nonce again before the nonce the server gave
// (r=cnonce+cnonce+snonce); Kafka accepts a nonce that ends with the
// server's, and so does Gregor, with the proof checked as usual.
func TestSCRAMRepeatedClientNonce(t *testing.T) {
	f := newSASLFixture(t)
	f.scram.set(t, "alice", "alice-pw", ScramSHA256)
	cred, _ := f.scram.lookup("alice", ScramSHA256)
	finalFor := func(password, clientFirst, serverFirst, nonce string) string {
		salted, _ := SaltPassword(ScramSHA256, password, cred.Salt, int(cred.Iterations))
		mac := func(key []byte, msg string) []byte {
			h := hmac.New(sha256.New, key)
			h.Write([]byte(msg))
			return h.Sum(nil)
		}
		clientKey := mac(salted, "Client Key")
		stored := sha256.Sum256(clientKey)
		withoutProof := "c=biws,r=" + nonce
		sig := mac(stored[:], strings.TrimPrefix(clientFirst, "n,,")+","+serverFirst+","+withoutProof)
		for i := range clientKey {
			clientKey[i] ^= sig[i]
		}
		return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(clientKey)
	}
	for _, tc := range []struct {
		password string
		repeat   bool
		ok       bool
	}{{"alice-pw", true, true}, {"alice-pw", false, true}, {"wrong", true, false}} {
		s := f.session(t)
		s.Handshake(1, "SCRAM-SHA-256")
		clientFirst := "n,,n=alice,r=cnonce123"
		serverFirst, _, se := s.Authenticate(2, []byte(clientFirst))
		if se != nil {
			t.Fatal(se)
		}
		nonce := strings.TrimPrefix(strings.Split(string(serverFirst), ",")[0], "r=")
		if tc.repeat {
			nonce = "cnonce123" + nonce
		}
		out, _, se := s.Authenticate(2, []byte(finalFor(tc.password, clientFirst, string(serverFirst), nonce)))
		if (se == nil) != tc.ok || tc.ok && !strings.HasPrefix(string(out), "v=") {
			t.Errorf("password %s, repeated nonce %v: %q %v", tc.password, tc.repeat, out, se)
		}
	}
}
