package broker_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/testpki"
)

// TestClusterSecurity: ACLs and SCRAM credentials are metadata records,
// written by the active controller whichever node a client asked, and
// applied on every node: a credential set through one node authenticates
// on every other, an ACL created through one node is enforced by all. Each
// node registers all its client listeners, so a client on the SASL
// listener is told every broker's SASL address.
//
// The nodes talk to each other over an SSL CONTROLLER listener with their
// certificates (mTLS), their principal a super user; a certificate the CA
// signed for anyone else, or no TLS, is refused there.
func TestClusterSecurity(t *testing.T) {
	pki := testpki.New(t)
	dir := t.TempDir()
	nodeKS, _, _ := pki.Issue(t, "node", []string{"localhost"}).WriteFiles(t, dir, "node")
	intruder := pki.Issue(t, "intruder", nil)
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pki.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	c := brokertest.StartCluster(t, 3, map[string]string{
		"listeners":                                        "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"listener.security.protocol.map":                   "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SSL",
		"listener.name.controller.ssl.keystore.type":       "PEM",
		"listener.name.controller.ssl.keystore.location":   nodeKS,
		"listener.name.controller.ssl.truststore.type":     "PEM",
		"listener.name.controller.ssl.truststore.location": ca,
		"listener.name.controller.ssl.client.auth":         "required",
		"sasl.enabled.mechanisms":                          "PLAIN,SCRAM-SHA-256",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required
			user_admin="admin-pw";`,
		"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":           "User:admin;User:CN=node,O=Gregor Test",
	}, true)
	ctx := brokertest.Context(t, 60*time.Second)
	saslAddr := func(b *brokertest.Broker) string { return b.ListenerAddr("SASL_PLAINTEXT").String() }
	client := func(b *brokertest.Broker, m sasl.Mechanism) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(saslAddr(b)), kgo.SASL(m), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	admin := func(b *brokertest.Broker) *kadm.Client {
		return kadm.NewClient(client(b, plain.Auth{User: "admin", Pass: "admin-pw"}.AsMechanism()))
	}
	n1, n2, n3 := c.Brokers[0], c.Brokers[1], c.Brokers[2]

	if _, err := admin(n3).CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin(n3).CreateTopic(ctx, 1, 1, nil, "secret"); err != nil {
		t.Fatal(err)
	}
	everywhere(t, c, "secret")
	res, err := admin(n2).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256,
		Iterations: 4096, Password: "alice-pw"}})
	if err != nil || res.Error() != nil {
		t.Fatalf("AlterUserSCRAMs: %v %v", err, res.Error())
	}
	acls, err := admin(n1).CreateACLs(ctx, kadm.NewACLs().Topics("orders").Allow("User:alice").Operations(kadm.OpDescribe))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range acls {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}

	alice := scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()
	for _, b := range c.Brokers {
		id := b.Config().NodeID()
		eventually(t, fmt.Sprintf("alice's ACL enforced on node %d", id), func() error {
			req := kmsg.NewPtrMetadataRequest()
			for _, name := range []string{"orders", "secret"} {
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(name)
				req.Topics = append(req.Topics, rt)
			}
			cl := client(b, alice)
			defer cl.Close()
			kr, err := cl.SeedBrokers()[0].Request(ctx, req)
			if err != nil {
				return err // the credential may not have reached the node yet
			}
			resp := kr.(*kmsg.MetadataResponse)
			codes := map[string]int16{}
			for _, rt := range resp.Topics {
				codes[*rt.Topic] = rt.ErrorCode
			}
			if codes["orders"] != 0 || codes["secret"] != kerr.TopicAuthorizationFailed.Code {
				return fmt.Errorf("codes %v", codes)
			}
			if len(resp.Brokers) != 3 {
				return fmt.Errorf("brokers %+v", resp.Brokers)
			}
			for _, rb := range resp.Brokers {
				if want := saslAddr(c.Brokers[rb.NodeID-1]); fmt.Sprintf("%s:%d", rb.Host, rb.Port) != want {
					return fmt.Errorf("broker %d at %s:%d, want its SASL listener %s", rb.NodeID, rb.Host, rb.Port, want)
				}
			}
			return nil
		})
	}

	// A wrong password fails on every node.
	for _, b := range c.Brokers {
		cl := client(b, scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism())
		_, err := cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("node %d, wrong password: %v", b.Config().NodeID(), err)
		}
	}

	// The CONTROLLER listener: an intruder's certificate, or plain TCP, is
	// closed without an answer.
	apiVersions := []byte{0, 0, 0, 12, 0, 18, 0, 0, 0, 0, 0, 1, 0, 2, 'x', 'y'}
	for name, dial := range map[string]func(addr string) (net.Conn, error){
		"intruder": func(addr string) (net.Conn, error) {
			return tls.Dial("tcp", addr, &tls.Config{RootCAs: pki.Pool(), ServerName: "localhost",
				Certificates: []tls.Certificate{intruder.TLS(t)}})
		},
		"plaintext": func(addr string) (net.Conn, error) { return net.Dial("tcp", addr) },
	} {
		conn, err := dial(n1.ControllerAddr().String())
		if err != nil {
			continue // refused during the handshake
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		conn.Write(apiVersions)
		if n, err := conn.Read(make([]byte, 64)); err == nil {
			t.Errorf("%s: the CONTROLLER listener answered %d bytes", name, n)
		}
		conn.Close()
	}
}
