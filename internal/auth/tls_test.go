package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/youmark/pkcs8"

	"github.com/gregor-broker/gregor/internal/testpki"
)

// files is an in-memory file system for key stores.
type files map[string][]byte

func (f files) read(path string) ([]byte, error) {
	b, ok := f[path]
	if !ok {
		return nil, fmt.Errorf("open %s: %w", path, os.ErrNotExist)
	}
	return b, nil
}

func tlsListener(t *testing.T, fs files, protocol string, kv ...string) *Listener {
	t.Helper()
	l, err := NewListener(ListenerOptions{Name: "SECURE", Protocol: protocol, Config: brokerConfig(t, kv...), ReadFile: fs.read,
		Audit: NewAudit(quiet, nil, nil), Scram: scramStore{}.lookup})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// dial runs a TLS client against l.Secure over a loopback TCP connection
// (a kernel-buffered one, so an alert the server sends never blocks it).
func dial(t *testing.T, l *Listener, client *tls.Config) (*Session, *tls.ConnectionState, error) {
	t.Helper()
	a, b := tcpPair(t)
	type result struct {
		s   *Session
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := serverHandshake(l, a)
		if err != nil {
			a.Close()
		}
		done <- result{s, err}
	}()
	c := tls.Client(b, client)
	b.SetDeadline(time.Now().Add(10 * time.Second))
	cerr := c.Handshake()
	r := <-done
	if r.err != nil {
		return nil, nil, r.err
	}
	if cerr != nil {
		return nil, nil, cerr
	}
	st := c.ConnectionState()
	return r.s, &st, nil
}

// serverHandshake runs what the Kafka listener does with a new connection
// up to its first request: Wrap, the TLS handshake (here explicit, in the
// listener on the first read), and Admit, which takes the principal.
func serverHandshake(l *Listener, nc net.Conn) (*Session, error) {
	wrapped, s := l.Wrap(nc)
	if sc, ok := wrapped.(*saslConn); ok {
		wrapped = sc.Conn
	}
	if tc, ok := wrapped.(*tlsConn); ok {
		if err := tc.HandshakeContext(context.Background()); err != nil {
			return nil, err
		}
	}
	if err := s.Admit(keyApiVersions); err != nil {
		return nil, err
	}
	return s, nil
}

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

func TestTLSListener(t *testing.T) {
	pki := testpki.New(t)
	server := pki.Issue(t, "broker", []string{"localhost"})
	client := pki.Issue(t, "client", nil)
	fs := files{"/ks.pem": append(server.KeyPEM, server.CertPEM...), "/ca.pem": pki.CAPEM}
	base := []string{"ssl.keystore.type", "PEM", "ssl.keystore.location", "/ks.pem", "ssl.truststore.type", "PEM", "ssl.truststore.location", "/ca.pem"}
	clientCfg := func(cert *testpki.Cert) *tls.Config {
		c := &tls.Config{RootCAs: pki.Pool(), ServerName: "localhost"}
		if cert != nil {
			c.Certificates = []tls.Certificate{cert.TLS(t)}
		}
		return c
	}

	t.Run("server only", func(t *testing.T) {
		l := tlsListener(t, fs, SSL, base...)
		s, st, err := dial(t, l, clientCfg(nil))
		if err != nil {
			t.Fatal(err)
		}
		if s.Principal() != Anonymous || st.Version != tls.VersionTLS13 {
			t.Errorf("principal %v, version %x", s.Principal(), st.Version)
		}
	})
	t.Run("mTLS principal with mapping rules", func(t *testing.T) {
		l := tlsListener(t, fs, SSL, append(base, "ssl.client.auth", "required",
			"ssl.principal.mapping.rules", "RULE:^CN=([^,]+),.*$/$1/L,DEFAULT")...)
		s, _, err := dial(t, l, clientCfg(client))
		if err != nil {
			t.Fatal(err)
		}
		if s.Principal() != User("client") {
			t.Errorf("principal %v", s.Principal())
		}
		l = tlsListener(t, fs, SSL, append(base, "ssl.client.auth", "required")...)
		s, _, err = dial(t, l, clientCfg(client))
		if err != nil || s.Principal() != User("CN=client,O=Gregor Test") {
			t.Errorf("DEFAULT rule: %v %v", s, err)
		}
		if _, _, err := dial(t, l, clientCfg(nil)); err == nil {
			t.Error("ssl.client.auth=required accepted a client without a certificate")
		}
		other := testpki.New(t).Issue(t, "client", nil)
		if _, _, err := dial(t, l, clientCfg(other)); err == nil {
			t.Error("a certificate of an untrusted CA was accepted")
		}
	})
	t.Run("requested", func(t *testing.T) {
		l := tlsListener(t, fs, SSL, append(base, "ssl.client.auth", "requested")...)
		if s, _, err := dial(t, l, clientCfg(nil)); err != nil || s.Principal() != Anonymous {
			t.Errorf("without a certificate: %v %v", s, err)
		}
	})
	t.Run("SASL_SSL ignores an unprefixed ssl.client.auth", func(t *testing.T) {
		l := tlsListener(t, fs, SASLSSL, append(base, "ssl.client.auth", "required", "sasl.enabled.mechanisms", "SCRAM-SHA-256")...)
		if s, _, err := dial(t, l, clientCfg(nil)); err != nil || s.state != stateHandshake {
			t.Errorf("%v %v", s, err)
		}
	})
	t.Run("versions", func(t *testing.T) {
		l := tlsListener(t, fs, SSL, append(base, "ssl.enabled.protocols", "TLSv1.3")...)
		c := clientCfg(nil)
		c.MaxVersion = tls.VersionTLS12
		if _, _, err := dial(t, l, c); err == nil {
			t.Error("a TLS 1.2 client reached a TLS 1.3-only listener")
		}
		l = tlsListener(t, fs, SSL, append(base, "ssl.protocol", "TLSv1.2")...)
		if _, st, err := dial(t, l, clientCfg(nil)); err != nil || st.Version != tls.VersionTLS12 {
			t.Errorf("ssl.protocol=TLSv1.2: %v", err)
		}
		l = tlsListener(t, fs, SSL, append(base, "ssl.protocol", "TLSv1.2", "ssl.cipher.suites", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384")...)
		if _, st, err := dial(t, l, clientCfg(nil)); err != nil || st.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 {
			t.Errorf("ssl.cipher.suites: %v", err)
		}
		c = clientCfg(nil)
		c.MinVersion, c.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
		if _, _, err := dial(t, l, c); err == nil {
			t.Error("TLS 1.1 accepted")
		}
	})
	t.Run("plaintext client on a TLS listener", func(t *testing.T) {
		l := tlsListener(t, fs, SSL, base...)
		a, b := tcpPair(t)
		done := make(chan error, 1)
		wrapped, _ := l.Wrap(a)
		go func() { _, err := wrapped.Read(make([]byte, 4)); a.Close(); done <- err }()
		// A Kafka ApiVersions request frame instead of a ClientHello.
		b.Write([]byte{0, 0, 0, 10, 0, 18, 0, 3, 0, 0, 0, 1, 0, 0})
		if err := <-done; err == nil {
			t.Error("a plaintext request passed the TLS handshake")
		}
	})
	t.Run("inline PEM and an encrypted key", func(t *testing.T) {
		der, err := pkcs8.MarshalPrivateKey(server.Key, []byte("s3cret"), nil)
		if err != nil {
			t.Fatal(err)
		}
		enc := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der})
		l := tlsListener(t, fs, SSL, "ssl.keystore.type", "PEM", "ssl.keystore.key", string(enc),
			"ssl.keystore.certificate.chain", string(server.CertPEM), "ssl.key.password", "s3cret")
		if _, _, err := dial(t, l, clientCfg(nil)); err != nil {
			t.Error(err)
		}
		_, err = NewListener(ListenerOptions{Name: "S", Protocol: SSL, ReadFile: fs.read, Config: brokerConfig(t,
			"ssl.keystore.type", "PEM", "ssl.keystore.key", string(enc), "ssl.keystore.certificate.chain", string(server.CertPEM),
			"ssl.key.password", "wrong")})
		if err == nil || !strings.Contains(err.Error(), "does not decrypt") {
			t.Errorf("wrong ssl.key.password: %v", err)
		}
	})
	t.Run("refused configurations", func(t *testing.T) {
		for _, kv := range [][]string{
			{"ssl.keystore.location", "/ks.pem"}, // JKS by default
			{"ssl.keystore.type", "PEM"},         // no key store
			{"ssl.keystore.type", "PEM", "ssl.keystore.location", "/missing.pem"},
			{"ssl.keystore.type", "PEM", "ssl.keystore.location", "/ks.pem", "ssl.keystore.password", "x"},
			{"ssl.keystore.type", "PEM", "ssl.keystore.location", "/ks.pem", "ssl.client.auth", "required"}, // no trust store
			{"ssl.keystore.type", "PEM", "ssl.keystore.location", "/ks.pem", "ssl.enabled.protocols", "TLSv1.1"},
			{"ssl.keystore.type", "PEM", "ssl.keystore.location", "/ks.pem", "ssl.cipher.suites", "TLS_NOPE"},
			{"ssl.keystore.type", "PEM", "ssl.keystore.location", "/ks.pem", "ssl.principal.mapping.rules", "RULE:x"},
		} {
			if _, err := NewListener(ListenerOptions{Name: "S", Protocol: SSL, ReadFile: fs.read, Config: brokerConfig(t, kv...)}); err == nil {
				t.Errorf("%v accepted", kv)
			}
		}
	})
}

// A key store changed on disk and reloaded (AlterConfigs of the same path)
// serves new connections; a certificate with another subject is refused.
func TestTLSReload(t *testing.T) {
	pki := testpki.New(t)
	first := pki.Issue(t, "broker", []string{"localhost"})
	fs := files{"/ks.pem": append(first.KeyPEM, first.CertPEM...)}
	kv := []string{"ssl.keystore.type", "PEM", "listener.name.secure.ssl.keystore.location", "/ks.pem"}
	l := tlsListener(t, fs, SSL, kv...)
	client := &tls.Config{RootCAs: pki.Pool(), ServerName: "localhost"}
	serial := func() *big.Int {
		_, st, err := dial(t, l, client)
		if err != nil {
			t.Fatal(err)
		}
		return st.PeerCertificates[0].SerialNumber
	}
	if serial().Cmp(first.Leaf.SerialNumber) != 0 {
		t.Fatal("not the first certificate")
	}
	second := pki.Issue(t, "broker", []string{"localhost"})
	fs["/ks.pem"] = append(second.KeyPEM, second.CertPEM...)
	if err := l.Reload(brokerConfig(t, kv...), true); err != nil {
		t.Fatal(err)
	}
	if serial().Cmp(second.Leaf.SerialNumber) != 0 {
		t.Error("the reloaded certificate is not served")
	}
	renamed := pki.Issue(t, "other-broker", []string{"localhost"})
	fs["/ks.pem"] = append(renamed.KeyPEM, renamed.CertPEM...)
	if err := l.Reload(brokerConfig(t, kv...), true); err == nil || !strings.Contains(err.Error(), "DistinguishedName does not match") {
		t.Errorf("a new subject: %v", err)
	}
	if err := l.Reload(brokerConfig(t, append(kv, "ssl.allow.dn.changes", "true")...), false); err != nil {
		t.Errorf("with ssl.allow.dn.changes: %v", err)
	}
	if serial().Cmp(second.Leaf.SerialNumber) != 0 {
		t.Error("a refused or validate-only reload changed the certificate")
	}
	fs["/ks.pem"] = []byte("garbage")
	if err := l.Reload(brokerConfig(t, kv...), true); err == nil {
		t.Error("an unreadable key store reloaded")
	}
}

func TestJWKSValidator(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Unix(1_700_000_000, 0)
	set := testpki.JWKS(t, map[string]any{"k1": &key.PublicKey})
	fetches := 0
	cfg := JWKSConfig{URL: "file:///jwks.json", Audience: []string{"kafka"}, Issuer: "https://idp", ClockSkew: 30 * time.Second,
		RetryBackoff: time.Second, Refresh: time.Hour,
		Fetch: func(context.Context, string) ([]byte, error) { fetches++; return set, nil }}
	v, err := NewJWKSValidator(context.Background(), cfg, now)
	if err != nil {
		t.Fatal(err)
	}
	claims := func(mod func(map[string]any)) map[string]any {
		c := map[string]any{"sub": "svc", "aud": "kafka", "iss": "https://idp", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if mod != nil {
			mod(c)
		}
		return c
	}
	if sub, exp, err := v.Validate(testpki.SignJWT(t, key, "k1", claims(nil)), now); err != nil || sub != "svc" || !exp.Equal(now.Add(time.Hour)) {
		t.Fatalf("valid token: %v %v %v", sub, exp, err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for name, tok := range map[string]string{
		"expired":        testpki.SignJWT(t, key, "k1", claims(func(c map[string]any) { c["exp"] = now.Add(-time.Minute).Unix() })),
		"wrong audience": testpki.SignJWT(t, key, "k1", claims(func(c map[string]any) { c["aud"] = "other" })),
		"wrong issuer":   testpki.SignJWT(t, key, "k1", claims(func(c map[string]any) { c["iss"] = "https://evil" })),
		"no iat":         testpki.SignJWT(t, key, "k1", claims(func(c map[string]any) { delete(c, "iat") })),
		"no sub":         testpki.SignJWT(t, key, "k1", claims(func(c map[string]any) { delete(c, "sub") })),
		"unknown key":    testpki.SignJWT(t, other, "k1", claims(nil)),
		"unsigned":       unsecuredToken(`{"sub":"svc"}`),
	} {
		_, _, err := v.Validate(tok, now)
		var te *TokenError
		if !errors.As(err, &te) || te.Status != "invalid_token" {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Within the clock skew, an expired token still passes.
	if _, _, err := v.Validate(testpki.SignJWT(t, key, "k1", claims(func(c map[string]any) { c["exp"] = now.Add(-10 * time.Second).Unix() })), now); err != nil {
		t.Errorf("within skew: %v", err)
	}
	// A rotated key: an unknown kid fetches the set again (not more often
	// than the backoff).
	rotated, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	set = testpki.JWKS(t, map[string]any{"k1": &key.PublicKey, "k2": &rotated.PublicKey})
	before := fetches
	if _, _, err := v.Validate(testpki.SignJWT(t, rotated, "k2", claims(nil)), now.Add(2*time.Second)); err != nil {
		t.Errorf("rotated key: %v", err)
	}
	v.Validate(testpki.SignJWT(t, other, "k3", claims(nil)), now.Add(2500*time.Millisecond))
	if fetches != before+1 {
		t.Errorf("%d fetches for two unknown kids within the backoff, want 1", fetches-before)
	}
}
