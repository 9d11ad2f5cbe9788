package broker_test

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/testpki"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// brokerJAAS is the SASL_SSL listener's PLAIN login module: the users it
// admits (user_NAME) and, as username/password, the credentials this
// broker itself authenticates with when it dials its peers there.
func brokerJAAS(password string) string {
	return fmt.Sprintf(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="broker" password=%q user_broker="broker-pw" user_admin="admin-pw";`, password)
}

// secureCluster starts three nodes whose only client listener is SASL_SSL
// (PLAIN) and whose CONTROLLER listener is SSL with mTLS, with an
// authorizer whose super users are the brokers' principals (User:broker
// on SASL_SSL, their certificate's subject on CONTROLLER) and an admin.
// The brokers dial each other on SASL_SSL because
// security.inter.broker.protocol names it (Kafka's rule when
// inter.broker.listener.name is unset). It returns the cluster and the
// client options of the admin user.
//
// With mtls the only client listener is SSL with required client
// certificates instead (security.inter.broker.protocol=SSL), the brokers'
// principal there their certificate's subject, the admin's its own.
func secureCluster(t *testing.T, mtls bool, perNode map[int32]map[string]string) (*brokertest.Cluster, []kgo.Opt) {
	pki := testpki.New(t)
	dir := t.TempDir()
	nodeKS, _, _ := pki.Issue(t, "node", []string{"localhost"}).WriteFiles(t, dir, "node")
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pki.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	props := map[string]string{
		"listeners":                                     "SASL_SSL://127.0.0.1:0",
		"listener.security.protocol.map":                "SASL_SSL:SASL_SSL,CONTROLLER:SSL",
		"security.inter.broker.protocol":                "SASL_SSL",
		"sasl.enabled.mechanisms":                       "PLAIN",
		"sasl.mechanism.inter.broker.protocol":          "PLAIN",
		"listener.name.sasl_ssl.plain.sasl.jaas.config": brokerJAAS("broker-pw"),
		"authorizer.class.name":                         "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                                   "User:admin;User:broker;User:CN=node,O=Gregor Test",
	}
	for _, l := range []string{"sasl_ssl", "controller"} {
		props["listener.name."+l+".ssl.keystore.type"] = "PEM"
		props["listener.name."+l+".ssl.keystore.location"] = nodeKS
		props["listener.name."+l+".ssl.truststore.type"] = "PEM"
		props["listener.name."+l+".ssl.truststore.location"] = ca
	}
	props["listener.name.controller.ssl.client.auth"] = "required"
	for k, v := range replProps {
		props[k] = v
	}
	if mtls {
		// Only SSL with client certificates: the brokers' principal on the
		// inter-broker listener is their certificate's subject; no SASL.
		for _, k := range []string{"sasl.enabled.mechanisms", "sasl.mechanism.inter.broker.protocol", "listener.name.sasl_ssl.plain.sasl.jaas.config"} {
			delete(props, k)
		}
		props["listeners"], props["security.inter.broker.protocol"] = "SSL://127.0.0.1:0", "SSL"
		props["listener.security.protocol.map"] = "SSL:SSL,CONTROLLER:SSL"
		props["super.users"] = "User:CN=admin,O=Gregor Test;User:CN=node,O=Gregor Test"
		for k, v := range props {
			if rest, ok := strings.CutPrefix(k, "listener.name.sasl_ssl."); ok {
				delete(props, k)
				props["listener.name.ssl."+rest] = v
			}
		}
		props["listener.name.ssl.ssl.client.auth"] = "required"
	}
	c := brokertest.StartClusterNodes(t, 3, props, perNode, false)
	if mtls {
		return c, []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: pki.Pool(), MinVersion: tls.VersionTLS12,
			Certificates: []tls.Certificate{pki.Issue(t, "admin", nil).TLS(t)}})}
	}
	return c, []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: pki.Pool(), MinVersion: tls.VersionTLS12}),
		kgo.SASL(plain.Auth{User: "admin", Pass: "admin-pw"}.AsMechanism())}
}

// TestInterBrokerSASLSSL: on a cluster whose every client listener is
// SASL_SSL, with an authorizer, followers replicate over SASL_SSL as the
// broker principal (a super user): an RF 3 topic with min.insync.replicas=2
// created through a node that is not the active controller (a forwarded
// CreateTopics) takes acks=all writes, its followers catch up and stay in
// the ISR, a transaction over partitions led by different nodes commits
// (markers and verification between brokers), and once its leader stops
// every acknowledged record is read back from the new leader.
func TestInterBrokerSASLSSL(t *testing.T) {
	c, opts := secureCluster(t, false, nil)
	interBrokerRoundTrip(t, c, opts)
}

// TestInterBrokerMTLS is TestInterBrokerSASLSSL on SSL listeners with
// client certificates: the followers present their key store and are
// authorized as User:CN=node,O=Gregor Test.
func TestInterBrokerMTLS(t *testing.T) {
	c, opts := secureCluster(t, true, nil)
	interBrokerRoundTrip(t, c, opts)
}

func interBrokerRoundTrip(t *testing.T, c *brokertest.Cluster, opts []kgo.Opt) {
	ctx := brokertest.Context(t, 90*time.Second)
	meta, err := c.Admin(opts...).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := c.Brokers[meta.Controller%3] // a node that is not the active controller
	adm := kadm.NewClient(clientOf(t, other, opts...))
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, "secure"); err != nil {
		t.Fatalf("CreateTopics through node %d (the controller is %d): %v", other.Config().NodeID(), meta.Controller, err)
	}
	everywhere(t, c, "secure")
	leader := leaderOf(c, "secure", 0)
	// The followers' fetches are answered: they reached the leader over
	// SASL_SSL and were authorized (CLUSTER_ACTION) as the broker principal.
	for _, b := range c.Running() {
		if id := b.Config().NodeID(); id != leader {
			eventually(t, fmt.Sprintf("node %d fetches from the leader", id), func() error {
				part, ok := b.Replicas().Get(topicpart.TopicPartition{Topic: "secure", Partition: 0})
				if !ok {
					return fmt.Errorf("no replica")
				}
				if st, ok := b.Replicas().FollowerState(part); !ok || st.LastFetch.IsZero() {
					return fmt.Errorf("follower state %+v", st)
				}
				return nil
			})
		}
	}
	cl := c.Client(append([]kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(10), kgo.RecordDeliveryTimeout(20 * time.Second)}, opts...)...)
	const n = 50
	for i := range n {
		brokertest.Produce(t, cl, &kgo.Record{Topic: "secure", Value: []byte(strconv.Itoa(i))})
	}
	eventually(t, "every replica holds the records and is in the ISR", func() error {
		for _, b := range c.Running() {
			if leo := logEnd(b, "secure", 0); leo != n {
				return fmt.Errorf("node %d log end %d", b.Config().NodeID(), leo)
			}
		}
		if got := isrOf(c.Brokers[leader-1], "secure", 0); len(got) != 3 {
			return fmt.Errorf("ISR %v", got)
		}
		return nil
	})

	transactionAcrossBrokers(t, c, opts)

	c.Stop(leader)
	eventually(t, "a new leader", func() error {
		if l := leaderOf(c, "secure", 0); l == leader || l < 0 {
			return fmt.Errorf("leader %d", l)
		}
		return nil
	})
	consumer := c.Client(append([]kgo.Opt{kgo.ConsumeTopics("secure"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	var got []string
	for len(got) < n && ctx.Err() == nil {
		fs := consumer.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i := range n {
		if i >= len(got) || got[i] != strconv.Itoa(i) {
			t.Fatalf("read back %d records from the new leader %d: %v", len(got), leaderOf(c, "secure", 0), got)
		}
	}
}

// TestInterBrokerWrongCredentials: a broker whose own inter-broker password
// is wrong cannot replicate: the leader refuses its SASL authentication, so
// it stays out of the ISR (acks=all still succeeds with the other two), and
// its fetch state tells why.
func TestInterBrokerWrongCredentials(t *testing.T) {
	c, opts := secureCluster(t, false, map[int32]map[string]string{
		3: {"listener.name.sasl_ssl.plain.sasl.jaas.config": brokerJAAS("wrong")},
	})
	ctx := brokertest.Context(t, 60*time.Second)
	cl := c.Client(append([]kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(10), kgo.RecordDeliveryTimeout(20 * time.Second)}, opts...)...)
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "locked", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Replicas = []int32{1, 2, 3} // led by node 1, node 3 a follower
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	kr, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(kr.Topics[0].ErrorCode); err != nil {
		t.Fatal(err)
	}
	everywhere(t, c, "locked")
	for i := range 10 {
		brokertest.Produce(t, cl, &kgo.Record{Topic: "locked", Value: []byte(strconv.Itoa(i))})
	}
	n1, n3 := c.Brokers[0], c.Brokers[2]
	eventually(t, "node 2 in sync, node 3 out of the ISR", func() error {
		if got := isrOf(n1, "locked", 0); !slices.Equal(got, []int32{1, 2}) || logEnd(c.Brokers[1], "locked", 0) != 10 {
			return fmt.Errorf("ISR %v, node 2 log end %d", got, logEnd(c.Brokers[1], "locked", 0))
		}
		return nil
	})
	part, ok := n3.Replicas().Get(topicpart.TopicPartition{Topic: "locked", Partition: 0})
	if !ok {
		t.Fatal("node 3 does not host the partition")
	}
	eventually(t, "node 3's fetch state names the refused authentication", func() error {
		st, ok := n3.Replicas().FollowerState(part)
		if !ok || !strings.Contains(st.LastError, "SASL_AUTHENTICATION_FAILED") {
			return fmt.Errorf("follower state %+v", st)
		}
		return nil
	})
	if leo := logEnd(n3, "locked", 0); leo != 0 {
		t.Errorf("node 3 replicated %d records with a wrong password", leo)
	}
}

// clientOf is a client of one node only.
func clientOf(t *testing.T, b *brokertest.Broker, opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr().String())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// transactionAcrossBrokers commits a transaction over three partitions led
// by the three nodes: at least two are led by a node that is not the
// transaction's coordinator, so their AddPartitionsToTxn verification and
// WriteTxnMarkers go between brokers, over SASL_SSL as the broker
// principal. A read_committed consumer reads every record.
func transactionAcrossBrokers(t *testing.T, c *brokertest.Cluster, opts []kgo.Opt) {
	t.Helper()
	ctx := brokertest.Context(t, 60*time.Second)
	if _, err := c.Admin(opts...).CreateTopic(ctx, 3, 3, nil, "txn"); err != nil {
		t.Fatal(err)
	}
	everywhere(t, c, "txn")
	leaders := map[int32]bool{}
	for p := range int32(3) {
		leaders[leaderOf(c, "txn", p)] = true
	}
	if len(leaders) != 3 {
		t.Logf("the partitions' leaders are %v: fewer markers cross brokers", leaders)
	}
	cl := c.Client(append([]kgo.Opt{kgo.TransactionalID("secure-tx"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(20 * time.Second)}, opts...)...)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		for i := range 3 {
			r := &kgo.Record{Topic: "txn", Partition: p, Value: []byte(fmt.Sprintf("%d-%d", p, i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("transactional produce to partition %d: %v", p, err)
			}
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	consumer := c.Client(append([]kgo.Opt{kgo.ConsumeTopics("txn"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted())}, opts...)...)
	var got []string
	for len(got) < 9 && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if slices.Sort(got); len(got) != 9 || got[0] != "0-0" || got[8] != "2-2" {
		t.Fatalf("read_committed read %v", got)
	}
}
