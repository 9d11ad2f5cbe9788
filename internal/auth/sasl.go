package auth

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Exchange is one SASL authentication exchange on the server side (Java's
// SaslServer).
type Exchange interface {
	// Step takes the client's next message and returns the server's answer.
	// done is true once the client is authenticated; an error fails the
	// authentication (see SASLError).
	Step(in []byte) (out []byte, done bool, err error)
	// Outcome is the authenticated principal and when its credential
	// expires (zero: never); valid once Step returned done.
	Outcome() (Principal, time.Time)
}

// Mechanism is a server-side SASL mechanism.
type Mechanism interface {
	Name() string
	Start(now time.Time) Exchange
}

// SASLError fails an authentication. Message is what the client is told;
// Cause, when set, is logged but never sent (it may say whether a user
// exists).
type SASLError struct {
	Err     *kerr.Error
	Message string
	Cause   error
}

func (e *SASLError) Error() string {
	if e.Cause != nil {
		return e.Message + ": " + e.Cause.Error()
	}
	return e.Message
}

// authFailed is Kafka's SaslAuthenticationException: the message goes to
// the client as it is.
func authFailed(format string, args ...any) *SASLError {
	return &SASLError{Err: kerr.SaslAuthenticationFailed, Message: fmt.Sprintf(format, args...)}
}

// invalidCredentials is any other SaslException: the client gets Kafka's
// generic message, the log gets the cause.
func invalidCredentials(mech string, reauth bool, cause error) *SASLError {
	what := "authentication"
	if reauth {
		what = "re-authentication"
	}
	return &SASLError{Err: kerr.SaslAuthenticationFailed, Cause: cause,
		Message: fmt.Sprintf("Authentication failed during %s due to invalid credentials with SASL mechanism %s", what, mech)}
}

type sessionState uint8

const (
	// stateHandshake: a SASL listener waits for SaslHandshake (ApiVersions
	// is answered meanwhile).
	stateHandshake sessionState = iota
	// stateAuthenticate: a mechanism was chosen; SaslAuthenticate steps it.
	stateAuthenticate
	stateAuthenticated
	// stateFailed: authentication failed; the connection is closing.
	stateFailed
)

// Request keys the session treats specially (Kafka's api keys).
const (
	keyApiVersions      int16 = 18
	keySaslHandshake    int16 = 17
	keySaslAuthenticate int16 = 36
)

// ErrUnauthenticated closes a connection that sent a request its
// authentication state does not allow (Kafka's IllegalSaslStateException
// in the authenticator) or whose session expired (KIP-368).
var ErrUnauthenticated = errors.New("unauthenticated request")

// Session is one connection's security state: the principal, the SASL
// exchange in progress and the re-authentication deadline. Its methods are
// called from the connection's request goroutine only (Handle runs one
// request at a time per connection, in order), so it has no lock; close
// may be called from a timer.
type Session struct {
	l     *Listener
	host  netip.Addr
	close func()
	// tls is the connection's TLS, nil on a plaintext listener;
	// established once its outcome (the principal) has been taken.
	tls         *tls.Conn
	established bool
	state       sessionState
	principal   Principal
	// mech and ex: the chosen mechanism and its exchange.
	mech string
	ex   Exchange
	// expiry is when the authenticated session ends (zero: never); a
	// request after it, other than a SaslHandshake that starts
	// re-authentication, closes the connection.
	expiry time.Time
	// reauth: this exchange re-authenticates an authenticated session;
	// prev is the principal it must keep.
	reauth bool
	prev   Principal
	// supportsReauth: the client used SaslAuthenticate v1 or later.
	supportsReauth bool
	// raw: a SaslHandshake v0 chose the mechanism, so the tokens come
	// outside Kafka's framing (rawsasl.go) until authentication ends.
	raw bool
}

// Principal is the connection's principal (ANONYMOUS until it
// authenticates).
func (s *Session) Principal() Principal { return s.principal }

// Host is the client's address, as ACLs name it.
func (s *Session) Host() netip.Addr { return s.host }

// Listener is the listener the connection arrived on.
func (s *Session) Listener() *Listener { return s.l }

// Admit decides whether a request of api key may be handled now. SASL
// requests are always admitted (SaslHandshake and SaslAuthenticate answer
// by state); ApiVersions too. Anything else needs an authenticated, unexpired
// session: otherwise ErrUnauthenticated, and the connection must be closed.
func (s *Session) Admit(key int16) error {
	if err := s.establish(); err != nil {
		return err
	}
	switch key {
	case keyApiVersions, keySaslHandshake, keySaslAuthenticate:
		return nil
	}
	switch s.state {
	case stateAuthenticated:
		if !s.reauth && (s.expiry.IsZero() || s.l.clock.Now().Before(s.expiry)) {
			return nil
		}
		if !s.reauth {
			s.l.audit.expired(s)
			return fmt.Errorf("%w: the session of %v expired at %v and was not re-authenticated (connections.max.reauth.ms)",
				ErrUnauthenticated, s.principal, s.expiry.Format(time.RFC3339Nano))
		}
		return fmt.Errorf("%w: a request of api key %d during SASL re-authentication", ErrUnauthenticated, key)
	case stateFailed:
		return fmt.Errorf("%w: request after failed authentication", ErrUnauthenticated)
	}
	return fmt.Errorf("%w: Unexpected Kafka request of api key %d during SASL handshake", ErrUnauthenticated, key)
}

// Authenticating is the server's AuthGate: a SASL connection is
// authenticating until an exchange succeeded, and again while it
// re-authenticates (and after a failure, until it closes); meanwhile its
// requests are read one at a time and at most sasl.server.max.receive.size
// bytes each, as Kafka's SaslServerAuthenticator reads them. Called from
// the connection's reader goroutine, like Admit.
func (s *Session) Authenticating() (maxFrame int32, authenticating bool) {
	if !s.l.sasl {
		return 0, false
	}
	return int32(min(s.l.maxToken, math.MaxInt32)), s.state != stateAuthenticated || s.reauth
}

// Handshake answers SaslHandshake: the error (nil or a Kafka error) and the
// mechanisms enabled on the listener. An unsupported mechanism fails the
// authentication, and the connection is closed after the answer.
func (s *Session) Handshake(version int16, mechanism string) (*kerr.Error, []string) {
	enabled := s.l.mechanismNames()
	if !s.l.sasl {
		return kerr.IllegalSaslState, nil
	}
	switch s.state {
	case stateHandshake:
	case stateAuthenticated:
		// KIP-368: a SaslHandshake on an authenticated connection starts
		// re-authentication, if the client said it can.
		if !s.supportsReauth || s.reauth {
			return kerr.IllegalSaslState, enabled
		}
		s.reauth, s.prev = true, s.principal
	default:
		return kerr.IllegalSaslState, enabled
	}
	m := s.l.mechanism(mechanism)
	if m == nil {
		s.fail(fmt.Errorf("Unsupported SASL mechanism %s", mechanism))
		return kerr.UnsupportedSaslMechanism, enabled
	}
	if s.reauth && mechanism != s.mech {
		s.fail(fmt.Errorf("Reauthentication mechanism (%s) differs from previous (%s)", mechanism, s.mech))
		return kerr.UnsupportedSaslMechanism, enabled
	}
	s.mech, s.ex, s.state = mechanism, m.Start(s.l.clock.Now()), stateAuthenticate
	s.raw = version == 0
	return nil, enabled
}

// Authenticate answers SaslAuthenticate: the server's bytes and, once the
// client is authenticated, the session lifetime in milliseconds (KIP-368; 0
// for none). A failure is a *SASLError to answer with; the connection is
// closed after the answer.
func (s *Session) Authenticate(version int16, in []byte) (out []byte, lifetimeMs int64, err *SASLError) {
	if !s.l.sasl || s.state == stateAuthenticated {
		return nil, 0, &SASLError{Err: kerr.IllegalSaslState, Message: "SaslAuthenticate request received after successful authentication"}
	}
	if s.state != stateAuthenticate || s.raw && !rawToken(version) {
		e := &SASLError{Err: kerr.IllegalSaslState, Message: "Unexpected SaslAuthenticate request before SaslHandshake"}
		s.fail(e)
		return nil, 0, e
	}
	if version > 0 {
		s.supportsReauth = true
	}
	out, done, stepErr := s.ex.Step(in)
	if stepErr != nil {
		var se *SASLError
		if !errors.As(stepErr, &se) {
			se = invalidCredentials(s.mech, s.reauth, stepErr)
		}
		s.fail(se)
		return nil, 0, se
	}
	if !done {
		return out, 0, nil
	}
	p, credentialExpiry := s.ex.Outcome()
	if s.reauth && p != s.prev {
		se := authFailed("Cannot change principals during re-authentication from %v to %v", s.prev, p)
		s.fail(se)
		return nil, 0, se
	}
	now := s.l.clock.Now()
	lifetime := s.l.sessionLifetime(s.mech, now, credentialExpiry)
	s.expiry = time.Time{}
	if lifetime >= 0 {
		s.expiry = now.Add(lifetime)
	}
	s.l.audit.authenticated(s, p, s.reauth)
	s.principal, s.state, s.ex, s.reauth, s.raw = p, stateAuthenticated, nil, false, false
	return out, max(lifetime, 0).Milliseconds(), nil
}

// rawToken tells Authenticate's callers apart: saslConn steps a v0
// exchange with version 0 while Authenticate from a SaslAuthenticate
// request during it is out of turn. Only saslConn passes rawTokenVersion.
func rawToken(version int16) bool { return version == rawTokenVersion }

// fail ends the session: it is counted and logged, later requests are
// refused, and the connection is closed after
// connection.failed.authentication.delay.ms (Kafka delays the close so a
// client cannot retry at full speed; the answer is written meanwhile).
func (s *Session) fail(err error) {
	reauth := s.reauth
	s.state, s.ex, s.reauth, s.raw = stateFailed, nil, false, false
	s.l.audit.failed(s, reauth, err)
	if s.close != nil {
		s.l.clock.AfterFunc(s.l.failedAuthDelay, s.close)
	}
}

// sessionLifetime is Kafka's ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs:
// the shorter of connections.max.reauth.ms (when positive) and the time
// left on the credential (when it expires); -1 when neither applies.
func (l *Listener) sessionLifetime(mech string, now, credentialExpiry time.Time) time.Duration {
	maxReauth := l.maxReauth[mech]
	switch {
	case credentialExpiry.IsZero() && maxReauth <= 0:
		return -1
	case credentialExpiry.IsZero():
		return maxReauth
	case maxReauth <= 0:
		return max(credentialExpiry.Sub(now), 0)
	}
	return max(min(credentialExpiry.Sub(now), maxReauth), 0)
}

func (l *Listener) mechanism(name string) Mechanism {
	for _, m := range l.mechanisms {
		if m.Name() == name {
			return m
		}
	}
	return nil
}

func (l *Listener) mechanismNames() []string {
	names := make([]string, len(l.mechanisms))
	for i, m := range l.mechanisms {
		names[i] = m.Name()
	}
	return slices.Clip(names)
}
