package brokertest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
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

// freeAddr is FreeAddr.
func freeAddr(t testing.TB) string { return FreeAddr(t) }

// FreeAddr is a loopback address with a port nothing listens on now, for a
// listener the test starts next. The port is below the kernel's ephemeral
// range (net.ipv4.ip_local_port_range): a port the kernel hands out for
// ":0" may be taken meanwhile as the local port of any process's outgoing
// connection ("bind: address already in use", seen in CI with three
// packages of cluster tests running at once); one below the range is
// never given to a connect. Within this process no address is given
// twice.
func FreeAddr(t testing.TB) string {
	handedOut.Lock()
	defer handedOut.Unlock()
	lo := ephemeralLow()
	for range 500 {
		port := lo/2 + rand.IntN(lo-lo/2)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if handedOut.addrs[addr] {
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue // in use
		}
		ln.Close()
		handedOut.addrs[addr] = true
		return addr
	}
	t.Fatal("no free loopback port below the ephemeral range")
	return ""
}

// ephemeralLow is the lowest port the kernel gives outgoing connections
// (32768 unless the machine says otherwise).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo > 2048 {
				return lo
			}
		}
	}
	return 32768
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
