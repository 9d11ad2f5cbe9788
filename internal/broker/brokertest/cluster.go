package brokertest

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/broker"
)

// Cluster is n in-process nodes on loopback forming one cluster: each a
// broker and a voter, with its own data dir, client, CONTROLLER and admin
// listeners.
type Cluster struct {
	t         testing.TB
	dir       string
	voters    string
	ctrlAddrs []string
	overrides map[string]string
	perNode   map[int32]map[string]string
	overTCP   bool
	// Brokers[i] is node i+1 (nil while stopped).
	Brokers []*Broker
}

// ClusterProps are the test settings of every node of a Cluster: fast
// elections, heartbeats and session expiry.
var ClusterProps = map[string]string{
	"controller.quorum.election.timeout.ms": "300",
	"broker.heartbeat.interval.ms":          "100",
	"broker.session.timeout.ms":             "1500",
}

// StartCluster starts n nodes at once and waits until every one serves.
// overrides apply to every node (a "listeners" override lists the client
// listeners, on free ports: the CONTROLLER listener is added); overTCP makes each broker reach even its
// own node's controller over the CONTROLLER listener.
func StartCluster(t testing.TB, n int, overrides map[string]string, overTCP bool) *Cluster {
	t.Helper()
	return StartClusterNodes(t, n, overrides, nil, overTCP)
}

// StartClusterNodes is StartCluster with perNode[id] applied over
// overrides on node id (one node configured differently from the rest).
func StartClusterNodes(t testing.TB, n int, overrides map[string]string, perNode map[int32]map[string]string, overTCP bool) *Cluster {
	t.Helper()
	c := &Cluster{t: t, dir: t.TempDir(), overrides: overrides, perNode: perNode, overTCP: overTCP, Brokers: make([]*Broker, n)}
	var voters []string
	for i := range n {
		addr := freeAddr(t)
		c.ctrlAddrs = append(c.ctrlAddrs, addr)
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, addr))
	}
	c.voters = strings.Join(voters, ",")
	for i := range n {
		c.Brokers[i] = c.launch(i)
	}
	for _, b := range c.Brokers {
		b.WaitReady()
	}
	return c
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(t testing.TB) string {
	handedOut.Lock()
	defer handedOut.Unlock()
	// The OS may hand out a probed port again once the probe closed: never
	// give one address to two listeners of this process.
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if !handedOut.addrs[addr] {
			handedOut.addrs[addr] = true
			return addr
		}
	}
	t.Fatal("no free loopback port that was not handed out before")
	return ""
}

// handedOut are the addresses freeAddr gave out.
var handedOut = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}

// Dir is node id's data dir.
func (c *Cluster) Dir(id int32) string { return filepath.Join(c.dir, fmt.Sprint(id)) }

func (c *Cluster) launch(i int) *Broker {
	c.t.Helper()
	id := int32(i + 1)
	props := Props(c.Dir(id))
	for k, v := range ClusterProps {
		props[k] = v
	}
	for k, v := range c.overrides {
		props[k] = v
	}
	for k, v := range c.perNode[id] {
		props[k] = v
	}
	props["node.id"] = fmt.Sprint(id)
	props["controller.quorum.voters"] = c.voters
	// The client listeners are PLAINTEXT (Props) unless overrides name
	// others; the CONTROLLER listener is added.
	clients := props["listeners"]
	props["listeners"] = clients + ",CONTROLLER://" + c.ctrlAddrs[i]
	return launch(c.t, broker.Options{Static: props, ControllerOverTCP: c.overTCP}, c.Dir(id))
}

// Stop shuts node id down (a controlled shutdown) and waits for it.
func (c *Cluster) Stop(id int32) {
	c.t.Helper()
	c.Brokers[id-1].Stop()
	c.Brokers[id-1] = nil
}

// Restart starts node id again on its data and waits until it serves.
func (c *Cluster) Restart(id int32) *Broker {
	c.t.Helper()
	b := c.launch(int(id - 1))
	b.WaitReady()
	c.Brokers[id-1] = b
	return b
}

// Running are the nodes that run.
func (c *Cluster) Running() []*Broker {
	var out []*Broker
	for _, b := range c.Brokers {
		if b != nil {
			out = append(out, b)
		}
	}
	return out
}

// Client is a kgo client seeded with every running node.
func (c *Cluster) Client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	var seeds []string
	for _, b := range c.Running() {
		seeds = append(seeds, b.addr())
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// Admin is a kadm client over Client.
func (c *Cluster) Admin(opts ...kgo.Opt) *kadm.Client { return kadm.NewClient(c.Client(opts...)) }
