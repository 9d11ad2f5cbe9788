package auth

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/testpki"
)

// TestNodeListener: on an SSL node listener a peer dials with ClientTLS
// (its own key store as client certificate) and is admitted by its
// principal; a certificate whose principal the check refuses, or none, gets
// its connection closed before anything it sent is read.
func TestNodeListener(t *testing.T) {
	pki := testpki.New(t)
	node := pki.Issue(t, "node", []string{"localhost"})
	intruder := pki.Issue(t, "intruder", []string{"localhost"})
	fs := files{"/node.pem": append(node.KeyPEM, node.CertPEM...), "/intruder.pem": append(intruder.KeyPEM, intruder.CertPEM...),
		"/ca.pem": pki.CAPEM}
	listener := func(ks string, extra ...string) *Listener {
		return tlsListener(t, fs, SSL, append([]string{"ssl.keystore.type", "PEM", "ssl.keystore.location", ks,
			"ssl.truststore.type", "PEM", "ssl.truststore.location", "/ca.pem", "ssl.client.auth", "required"}, extra...)...)
	}
	server := listener("/node.pem")
	admitted := make(chan Principal, 10)
	admit := func(p Principal, _ netip.Addr) error {
		if p.String() != "User:CN=node,O=Gregor Test" {
			return errors.New("not a node")
		}
		admitted <- p
		return nil
	}
	addr := startEcho(t, server, admit)
	echoAt := func(addr string, cfg *tls.Config) error {
		c, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 4)
		_, err = io.ReadFull(c, buf)
		return err
	}
	echo := func(cfg *tls.Config) error { return echoAt(addr, cfg) }
	cfg, err := server.ClientTLS("localhost")
	if err != nil {
		t.Fatal(err)
	}
	if err := echo(cfg); err != nil {
		t.Fatalf("a node: %v", err)
	}
	if p := <-admitted; p.String() != "User:CN=node,O=Gregor Test" {
		t.Errorf("admitted %v", p)
	}
	other, err := listener("/intruder.pem").ClientTLS("localhost")
	if err != nil {
		t.Fatal(err)
	}
	if err := echo(other); err == nil {
		t.Error("a certificate the check refuses was served")
	}
	if err := echo(&tls.Config{RootCAs: pki.Pool(), ServerName: "localhost"}); err == nil {
		t.Error("a client without a certificate was served")
	}

	// Host names are verified unless ssl.endpoint.identification.algorithm
	// is empty.
	if cfg, _ := server.ClientTLS("elsewhere.example"); echo(cfg) == nil {
		t.Error("a peer certificate without the dialled name was accepted")
	}
	lax := listener("/node.pem", "ssl.endpoint.identification.algorithm", "")
	if cfg, _ := lax.ClientTLS("elsewhere.example"); echo(cfg) != nil {
		t.Error("without host name verification the peer was refused")
	}
	// ... but the chain still is: a peer whose certificate another CA
	// signed is refused.
	fs["/foreign.pem"] = func() []byte {
		c := testpki.New(t).Issue(t, "node", []string{"localhost"})
		return append(c.KeyPEM, c.CertPEM...)
	}()
	foreign := startEcho(t, listener("/foreign.pem"), admit)
	if cfg, _ := lax.ClientTLS("localhost"); echoAt(foreign, cfg) == nil {
		t.Error("a peer certificate from another CA was accepted")
	}

	if _, err := tlsListener(t, fs, SASLPlaintext, "sasl.enabled.mechanisms", "PLAIN",
		"listener.name.secure.plain.sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";`).
		NodeListener(nil, nil); !errors.Is(err, ErrSASLBetweenNodes) {
		t.Errorf("SASL node listener: %v", err)
	}
	if _, err := NewListener(ListenerOptions{Name: "SECURE", Protocol: SSL, ReadFile: fs.read, Config: brokerConfig(t,
		"ssl.keystore.type", "PEM", "ssl.keystore.location", "/node.pem", "ssl.endpoint.identification.algorithm", "ldap")}); err == nil {
		t.Error("an unknown endpoint identification algorithm was accepted")
	}
}

// startEcho serves an echo on l's node listener at a loopback address.
func startEcho(t *testing.T, l *Listener, admit func(Principal, netip.Addr) error) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nl, err := l.NodeListener(ln, admit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nl.Close() })
	go func() {
		for {
			c, err := nl.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}
