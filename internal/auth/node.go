package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
)

// Node-to-node security. The nodes of a cluster talk to each other on the
// CONTROLLER listener (the metadata quorum's raft connections,
// registration, heartbeats, forwarded admin requests). That listener may be
// PLAINTEXT or SSL: on SSL each node dials its peers with its own key store
// as client certificate (ClientTLS, Kafka's controller client using the
// listener's ssl.* settings) and the listener admits a connection only once
// its principal passes the broker's check (NodeListener: Kafka requires
// CLUSTER_ACTION on the cluster of the controller's callers). SASL on the
// CONTROLLER listener is not built. Brokers reach each other on the
// inter-broker listener, a client listener, with ClientTLS and
// ClientMechanism (client.go).

// ErrSASLBetweenNodes refuses a node listener with SASL.
var ErrSASLBetweenNodes = errors.New("SASL between nodes is not supported")

// ClientTLS is the TLS configuration to dial a peer's listener with:
// the listener's current key store as client certificate, its trust store
// to verify the peer (the system roots without one), its versions and
// suites, and, unless ssl.endpoint.identification.algorithm is empty, the
// peer's certificate must name serverName. Call it for each connection: a
// reloaded key store applies to the next one.
func (l *Listener) ClientTLS(serverName string) (*tls.Config, error) {
	cur := l.current.Load()
	if cur == nil {
		return nil, fmt.Errorf("listener %s (%s) has no TLS", l.name, l.protocol)
	}
	cfg := &tls.Config{Certificates: cur.Certificates, RootCAs: cur.ClientCAs, MinVersion: cur.MinVersion,
		MaxVersion: cur.MaxVersion, CipherSuites: cur.CipherSuites, ServerName: serverName}
	if !l.verifyHost.Load() {
		// Chain verification without the host name (Kafka with an empty
		// ssl.endpoint.identification.algorithm).
		roots := cur.ClientCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the peer sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	}
	return cfg, nil
}

// verifiesHost reads ssl.endpoint.identification.algorithm: "https" (the
// default) verifies host names, "" does not.
func verifiesHost(s settings) (bool, error) {
	v, ok := s.get("ssl.endpoint.identification.algorithm")
	switch {
	case !ok || strings.EqualFold(v, "https"):
		return true, nil
	case v == "":
		return false, nil
	}
	return false, fmt.Errorf("ssl.endpoint.identification.algorithm=%s: only https (or empty) is supported", v)
}

// NodeListener serves a listener only the cluster's nodes use: each
// accepted connection is wrapped as Wrap does, and before its first byte
// is read its principal (from its client certificate on SSL, ANONYMOUS on
// PLAINTEXT) must pass admit, else the connection is closed. It does no
// I/O in Accept.
func (l *Listener) NodeListener(ln net.Listener, admit func(p Principal, host netip.Addr) error) (net.Listener, error) {
	if l.sasl {
		return nil, fmt.Errorf("listener %s (%s): %w", l.name, l.protocol, ErrSASLBetweenNodes)
	}
	return &nodeListener{Listener: ln, l: l, admit: admit}, nil
}

type nodeListener struct {
	net.Listener
	l     *Listener
	admit func(Principal, netip.Addr) error
}

func (n *nodeListener) Accept() (net.Conn, error) {
	c, err := n.Listener.Accept()
	if err != nil {
		return nil, err
	}
	wrapped, s := n.l.Wrap(c)
	return &nodeConn{Conn: wrapped, s: s, admit: n.admit}, nil
}

// nodeConn admits its peer on the first read: the TLS handshake (under
// whatever read deadline the reader set), the principal, the check.
type nodeConn struct {
	net.Conn
	s     *Session
	admit func(Principal, netip.Addr) error
	once  sync.Once
	err   error
}

func (c *nodeConn) Read(p []byte) (int, error) {
	c.once.Do(func() { c.err = c.authenticate() })
	if c.err != nil {
		c.Conn.Close()
		return 0, c.err
	}
	return c.Conn.Read(p)
}

func (c *nodeConn) authenticate() error {
	if c.s.tls != nil {
		if err := c.s.tls.Handshake(); err != nil {
			c.s.l.audit.tlsFailed(c.s.l.name, c.s.host.String(), err)
			return err
		}
	}
	if err := c.s.establish(); err != nil {
		return err
	}
	return c.admit(c.s.principal, c.s.host)
}
