package auth

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/config"
)

// Security protocols of listeners.
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// ListenerOptions build a Listener.
type ListenerOptions struct {
	// Name is the listener name (upper case), Protocol its security
	// protocol (listener.security.protocol.map).
	Name, Protocol string
	Config         *config.Broker
	Clock          clock.Clock
	Audit          *Audit
	// Scram finds SCRAM credentials in the current metadata.
	Scram ScramLookup
	// ReadFile reads key stores, trust stores and file: JWKS URLs.
	ReadFile func(path string) ([]byte, error)
	// FetchURL reads an https: JWKS URL.
	FetchURL func(ctx context.Context, url string) ([]byte, error)
}

// Listener is the security of one listener: its TLS configuration (which
// Reload replaces), the principal mapping of client certificates, and its
// SASL mechanisms. Secure is the hook the Kafka listener calls for each
// new connection.
type Listener struct {
	name, protocol string
	sasl           bool
	o              ListenerOptions
	clock          clock.Clock
	audit          *Audit

	tlsConfig *tls.Config // the listener's, with GetConfigForClient
	current   atomic.Pointer[tls.Config]
	// verifyHost: dialling a peer (ClientTLS) checks its host name
	// (ssl.endpoint.identification.algorithm).
	verifyHost atomic.Bool
	reloadMu   sync.Mutex
	keys       keystore

	mapper          *SSLPrincipalMapper
	mechanisms      []Mechanism
	maxReauth       map[string]time.Duration
	failedAuthDelay time.Duration
	// maxToken is sasl.server.max.receive.size: the largest SASL token a
	// client may send outside Kafka's framing (SaslHandshake v0).
	maxToken int
}

// settings reads a listener's view of the broker config: the
// listener.name.<name>. prefixed setting, else the plain one.
type settings struct {
	cfg      *config.Broker
	listener string // lower case, as Kafka's prefixes are
}

func (s settings) get(name string) (string, bool) {
	if v, _, ok := s.cfg.Value("listener.name." + s.listener + "." + name); ok {
		return v, true
	}
	v, _, ok := s.cfg.Value(name)
	return v, ok
}

// mech reads a SASL setting with the listener and mechanism prefix
// (listener.name.<l>.<mechanism>.<name>), then as get does.
func (s settings) mech(mechanism, name string) (string, bool) {
	if v, _, ok := s.cfg.Value("listener.name." + s.listener + "." + strings.ToLower(mechanism) + "." + name); ok {
		return v, true
	}
	return s.get(name)
}

// NewListener builds the security of one listener from the broker config,
// refusing (fail closed) what Gregor cannot honour.
func NewListener(o ListenerOptions) (*Listener, error) {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Audit == nil {
		o.Audit = NewAudit(nil, nil, o.Clock)
	}
	l := &Listener{name: o.Name, protocol: o.Protocol, o: o, clock: o.Clock, audit: o.Audit,
		sasl: o.Protocol == SASLPlaintext || o.Protocol == SASLSSL, maxReauth: map[string]time.Duration{}}
	s := settings{cfg: o.Config, listener: strings.ToLower(o.Name)}
	switch o.Protocol {
	case Plaintext, SSL, SASLPlaintext, SASLSSL:
	default:
		return nil, fmt.Errorf("listener %s: unknown security protocol %q", o.Name, o.Protocol)
	}
	l.failedAuthDelay = time.Duration(o.Config.Long("connection.failed.authentication.delay.ms")) * time.Millisecond
	l.maxToken = int(o.Config.Int("sasl.server.max.receive.size"))
	if o.Protocol == SSL || o.Protocol == SASLSSL {
		if err := l.buildTLS(s); err != nil {
			return nil, fmt.Errorf("listener %s (%s): %w", o.Name, o.Protocol, err)
		}
	}
	if l.sasl {
		if err := l.buildSASL(s); err != nil {
			return nil, fmt.Errorf("listener %s (%s): %w", o.Name, o.Protocol, err)
		}
	}
	o.Audit.listener(o.Name)
	return l, nil
}

// Name is the listener name.
func (l *Listener) Name() string { return l.name }

// Protocol is the listener's security protocol.
func (l *Listener) Protocol() string { return l.protocol }

func (l *Listener) tlsSettings(s settings) tlsSettings {
	ts := tlsSettings{get: s.get, readFile: l.o.ReadFile, clientAuth: "none"}
	// As in Kafka, a SASL_SSL listener asks for client certificates only
	// when ssl.client.auth is set with the listener prefix.
	if l.protocol == SSL {
		ts.clientAuth, _ = s.get("ssl.client.auth")
	} else if v, _, ok := s.cfg.Value("listener.name." + s.listener + ".ssl.client.auth"); ok {
		ts.clientAuth = v
	}
	switch ts.clientAuth {
	case "none", "requested", "required":
	default:
		ts.clientAuth = "invalid: " + ts.clientAuth
	}
	return ts
}

func (l *Listener) buildTLS(s settings) error {
	ts := l.tlsSettings(s)
	if strings.HasPrefix(ts.clientAuth, "invalid") {
		return fmt.Errorf("ssl.client.auth must be none, requested or required")
	}
	cfg, ks, err := ts.serverTLS()
	if err != nil {
		return err
	}
	verify, err := verifiesHost(s)
	if err != nil {
		return err
	}
	l.verifyHost.Store(verify)
	rules, _ := s.get("ssl.principal.mapping.rules")
	if l.mapper, err = ParseSSLPrincipalMappingRules(rules); err != nil {
		return err
	}
	l.current.Store(cfg)
	l.keys = ks
	// Connections take the configuration current when they start, so a
	// reload applies to new connections and leaves open ones alone.
	l.tlsConfig = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return l.current.Load(), nil }}
	return nil
}

func (l *Listener) buildSASL(s settings) error {
	list, _ := s.get("sasl.enabled.mechanisms")
	names := splitComma(list)
	if len(names) == 0 {
		return errors.New("sasl.enabled.mechanisms is empty")
	}
	for _, name := range names {
		m, err := l.buildMechanism(s, strings.ToUpper(name))
		if err != nil {
			return fmt.Errorf("SASL mechanism %s: %w", name, err)
		}
		l.mechanisms = append(l.mechanisms, m)
		reauth, _ := s.mech(name, "connections.max.reauth.ms")
		if reauth != "" {
			ms, err := strconv.ParseInt(reauth, 10, 64)
			if err != nil {
				return fmt.Errorf("connections.max.reauth.ms %q is not a number", reauth)
			}
			l.maxReauth[strings.ToUpper(name)] = time.Duration(ms) * time.Millisecond
		}
	}
	return nil
}

// Kafka's callback handler classes that Gregor's mechanisms stand for.
const (
	oauthValidatorHandler = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
	oauthUnsecuredHandler = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"
)

func (l *Listener) buildMechanism(s settings, name string) (Mechanism, error) {
	handler, _ := s.mech(name, "sasl.server.callback.handler.class")
	if handler != "" && !(name == "OAUTHBEARER" && (handler == oauthValidatorHandler || handler == oauthUnsecuredHandler)) {
		return nil, fmt.Errorf("sasl.server.callback.handler.class %s is not supported (Gregor runs no Java classes)", handler)
	}
	jaasText, _, _ := s.cfg.Value("listener.name." + s.listener + "." + strings.ToLower(name) + ".sasl.jaas.config")
	var jaas JAASEntry
	if jaasText != "" {
		var err error
		if jaas, err = ParseJAAS(jaasText); err != nil {
			return nil, err
		}
	}
	switch name {
	case "PLAIN":
		if jaasText == "" {
			return nil, fmt.Errorf("listener.name.%s.plain.sasl.jaas.config is not set: PLAIN needs its users there, as %s user_NAME=\"password\"", s.listener, PlainLoginModule)
		}
		return newPlain(jaas)
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		if l.o.Scram == nil {
			return nil, errors.New("no SCRAM credential store")
		}
		return newScram(ScramMechanismNamed(name), l.o.Scram)
	case "OAUTHBEARER":
		v, err := l.buildValidator(s, handler, jaas)
		if err != nil {
			return nil, err
		}
		return &oauthMechanism{v: v}, nil
	case "GSSAPI":
		return nil, errors.New("Kerberos (GSSAPI) is not supported; enable PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER in sasl.enabled.mechanisms")
	}
	return nil, errors.New("unknown SASL mechanism")
}

// buildValidator picks the OAUTHBEARER validator: the JWKS one when
// sasl.server.callback.handler.class names it or a JWKS URL is set (Gregor
// never falls back to accepting unsigned tokens when a key set is
// configured), else Kafka's default, the unsecured validator.
func (l *Listener) buildValidator(s settings, handler string, jaas JAASEntry) (TokenValidator, error) {
	get := func(n string) string { v, _ := s.mech("OAUTHBEARER", n); return v }
	url := get("sasl.oauthbearer.jwks.endpoint.url")
	if handler == oauthUnsecuredHandler || handler == "" && url == "" {
		return NewUnsecuredValidator(jaas.Options)
	}
	if url == "" {
		return nil, errors.New("OAuthBearerValidatorCallbackHandler needs sasl.oauthbearer.jwks.endpoint.url")
	}
	ms := func(n string) time.Duration {
		v, _ := strconv.ParseInt(get(n), 10, 64)
		return time.Duration(v) * time.Millisecond
	}
	cfg := JWKSConfig{URL: url, Refresh: ms("sasl.oauthbearer.jwks.endpoint.refresh.ms"),
		RetryBackoff: ms("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms"),
		Audience:     splitComma(get("sasl.oauthbearer.expected.audience")), Issuer: get("sasl.oauthbearer.expected.issuer"),
		ClockSkew: 1000 * ms("sasl.oauthbearer.clock.skew.seconds"),
		SubClaim:  get("sasl.oauthbearer.sub.claim.name"), ScopeClaim: get("sasl.oauthbearer.scope.claim.name")}
	cfg.Fetch = func(ctx context.Context, u string) ([]byte, error) {
		switch {
		case strings.HasPrefix(u, "file:"):
			return l.o.ReadFile(strings.TrimPrefix(strings.TrimPrefix(u, "file:"), "//"))
		case strings.HasPrefix(u, "https:") && l.o.FetchURL != nil:
			return l.o.FetchURL(ctx, u)
		}
		return nil, fmt.Errorf("JWKS URL %s: only file: and https: URLs are read", u)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return NewJWKSValidator(ctx, cfg, l.clock.Now())
}

// Reload rebuilds the listener's TLS configuration from cfg (the ssl.*
// settings after an AlterConfigs): new connections use it, open ones keep
// theirs. The key store must keep its subject and alternative names
// (ssl.allow.dn.changes, ssl.allow.san.changes). Reload of a listener
// without TLS does nothing. On error nothing changes.
func (l *Listener) Reload(cfg *config.Broker, apply bool) error {
	if l.tlsConfig == nil {
		return nil
	}
	l.reloadMu.Lock()
	defer l.reloadMu.Unlock()
	s := settings{cfg: cfg, listener: strings.ToLower(l.name)}
	ts := l.tlsSettings(s)
	next, ks, err := ts.serverTLS()
	if err != nil {
		return fmt.Errorf("listener %s: %w", l.name, err)
	}
	if err := ts.checkReload(l.keys, ks); err != nil {
		return fmt.Errorf("listener %s: %w", l.name, err)
	}
	verify, err := verifiesHost(s)
	if err != nil {
		return fmt.Errorf("listener %s: %w", l.name, err)
	}
	if apply {
		l.current.Store(next)
		l.keys = ks
		l.verifyHost.Store(verify)
	}
	return nil
}

// Wrap is the Kafka listener's connection hook, called as a connection is
// accepted: it does no I/O. On a TLS listener it wraps the connection in
// TLS; the handshake runs on the connection's first read (under the
// listener's read deadline), a failed one is counted as a failed
// authentication, and an SSL connection's principal is taken from its
// client certificate before its first request is admitted. It returns the
// connection to use and its Session.
func (l *Listener) Wrap(nc net.Conn) (net.Conn, *Session) {
	s := &Session{l: l, principal: Anonymous, close: func() { nc.Close() }}
	if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
		s.host = ap.Addr().Unmap()
	}
	if l.sasl {
		s.state = stateHandshake
	} else {
		s.state = stateAuthenticated
	}
	var out net.Conn = nc
	if l.tlsConfig != nil {
		s.tls = tls.Server(nc, l.tlsConfig)
		out = &tlsConn{Conn: s.tls, raw: nc, s: s}
	} else if !l.sasl {
		l.audit.authenticated(s, s.principal, false)
	}
	if l.sasl {
		out = &saslConn{Conn: out, s: s}
	}
	return out, s
}

// tlsConn is a TLS connection that closes its socket without sending
// close_notify (a close must never wait on a write to a stalled client)
// and reports a failed handshake once.
type tlsConn struct {
	*tls.Conn
	raw      net.Conn
	s        *Session
	reported atomic.Bool
}

func (c *tlsConn) Close() error { return c.raw.Close() }

func (c *tlsConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && !c.Conn.ConnectionState().HandshakeComplete && c.reported.CompareAndSwap(false, true) {
		c.s.l.audit.tlsFailed(c.s.l.name, c.raw.RemoteAddr().String(), err)
	}
	return n, err
}

// NetConn is the socket under the TLS connection.
func (c *tlsConn) NetConn() net.Conn { return c.raw }

// establish finishes what the TLS handshake decides: an SSL connection's
// principal from its client certificate (ANONYMOUS without one). It runs
// before the connection's first request is admitted.
func (s *Session) establish() error {
	if s.tls == nil || s.established {
		return nil
	}
	st := s.tls.ConnectionState()
	if !st.HandshakeComplete {
		return fmt.Errorf("%w: the TLS handshake is not complete", ErrUnauthenticated)
	}
	s.established = true
	if s.l.sasl {
		return nil
	}
	p, err := s.l.mapper.CertificatePrincipal(st.PeerCertificates)
	if err != nil {
		s.state = stateFailed
		s.l.audit.tlsFailed(s.l.name, s.host.String(), err)
		return fmt.Errorf("%w: %v", ErrUnauthenticated, err)
	}
	s.principal = p
	s.l.audit.authenticated(s, p, false)
	return nil
}
