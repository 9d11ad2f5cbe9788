package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/record"
)

// netnsNet is a real network for three nodes: each in its own network
// namespace, every pair joined by a veth pair (the links a partition takes
// down) and each joined to the test's namespace by one more veth pair, so
// the test's clients reach every node whatever the partition. Node i has
// 10.X.0.i on all its links; the test's side is 10.X.1.254.
type netnsNet struct {
	t      *testing.T
	prefix string // of namespace and link names
	subnet string // "10.X"
}

// netnsRuns counts the networks this process built.
var netnsRuns atomic.Int32

// ipCmd runs ip with args and fails the test on an error.
func (n *netnsNet) ip(args ...string) {
	n.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		n.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func (n *netnsNet) ns(i int32) string   { return fmt.Sprintf("%sn%d", n.prefix, i) }
func (n *netnsNet) addr(i int32) string { return fmt.Sprintf("%s.0.%d", n.subnet, i) }

// mesh is the name of node i's end of its link to node j.
func (n *netnsNet) mesh(i, j int32) string { return fmt.Sprintf("%sm%d%d", n.prefix, i, j) }

// newNetnsNet builds the namespaces and links, or skips the test when this
// process cannot (not root, no ip, or namespaces refused). Cleanup deletes
// the namespaces (and with them every link), registered before the nodes
// start so it runs after they are killed.
func newNetnsNet(t *testing.T) *netnsNet {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network partition test: needs root for ip netns (runs as uid", os.Geteuid(), ")")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("network partition test: the ip command (iproute2) is not installed")
	}
	// Names and addresses differ per run: the kernel tears a deleted
	// namespace's links down asynchronously.
	run := int(netnsRuns.Add(1))
	pid := os.Getpid()
	n := &netnsNet{t: t, prefix: fmt.Sprintf("gp%d%c", pid%100000, 'a'+run%26), subnet: fmt.Sprintf("10.%d", 100+(pid+run)%100)}
	if out, err := exec.Command("ip", "netns", "add", n.ns(1)).CombinedOutput(); err != nil {
		t.Skipf("network partition test: ip netns add refused: %v: %s", err, out)
	}
	t.Cleanup(func() {
		for i := int32(1); i <= 3; i++ {
			_ = exec.Command("ip", "link", "del", fmt.Sprintf("%sr%d", n.prefix, i)).Run()
			_ = exec.Command("ip", "netns", "del", n.ns(i)).Run()
		}
	})
	n.ip("netns", "add", n.ns(2))
	n.ip("netns", "add", n.ns(3))
	root := n.subnet + ".1.254"
	for i := int32(1); i <= 3; i++ {
		ns, r, p := n.ns(i), fmt.Sprintf("%sr%d", n.prefix, i), fmt.Sprintf("%sp%d", n.prefix, i)
		n.ip("-n", ns, "link", "set", "lo", "up")
		n.ip("link", "add", r, "type", "veth", "peer", "name", p)
		n.ip("link", "set", p, "netns", ns)
		n.ip("addr", "add", root+"/32", "dev", r)
		n.ip("link", "set", r, "up")
		n.ip("route", "add", n.addr(i)+"/32", "dev", r)
		n.ip("-n", ns, "addr", "add", n.addr(i)+"/32", "dev", p)
		n.ip("-n", ns, "link", "set", p, "up")
		n.ip("-n", ns, "route", "add", root+"/32", "dev", p)
	}
	for i := int32(1); i <= 3; i++ {
		for j := i + 1; j <= 3; j++ {
			n.ip("link", "add", n.mesh(i, j), "type", "veth", "peer", "name", n.mesh(j, i))
			n.ip("link", "set", n.mesh(i, j), "netns", n.ns(i))
			n.ip("link", "set", n.mesh(j, i), "netns", n.ns(j))
			n.ip("-n", n.ns(i), "addr", "add", n.addr(i)+"/32", "dev", n.mesh(i, j))
			n.ip("-n", n.ns(j), "addr", "add", n.addr(j)+"/32", "dev", n.mesh(j, i))
			n.setLink(i, j, true)
		}
	}
	return n
}

// setLink brings the link between nodes i and j up (with its routes: a
// link taken down loses them) or down.
func (n *netnsNet) setLink(i, j int32, up bool) {
	n.t.Helper()
	if !up {
		n.ip("-n", n.ns(i), "link", "set", "dev", n.mesh(i, j), "down")
		return
	}
	for _, e := range [][2]int32{{i, j}, {j, i}} {
		a, b := e[0], e[1]
		n.ip("-n", n.ns(a), "link", "set", "dev", n.mesh(a, b), "up")
		n.ip("-n", n.ns(a), "route", "replace", n.addr(b)+"/32", "dev", n.mesh(a, b))
	}
}

// isolate takes down (or brings back) every link between node id and the
// other nodes; the test's own links to every node stay up.
func (n *netnsNet) isolate(id int32, cut bool) {
	n.t.Helper()
	for j := int32(1); j <= 3; j++ {
		if j != id {
			n.setLink(id, j, !cut)
		}
	}
}

// probeResult is one produce the probe sent to the partitioned leader.
type probeResult struct {
	sent   time.Time
	took   time.Duration // until the answer
	value  string
	err    error
	offset int64
}

// leaderProbe sends acks=all produce requests of one record to a partition
// straight to one node until stopped: whatever the cluster decided, it
// asks that broker only (a kgo producer would follow the new leader).
type leaderProbe struct {
	mu   sync.Mutex
	out  []probeResult
	stop chan struct{}
	done chan struct{}
}

func probeLeader(c *cluster, id int32, topic string, topicID [16]byte, partition int32) *leaderProbe {
	addr := c.node(id).client
	p := &leaderProbe{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		// One produce every 100 ms, each on a connection of its own: a
		// broker answers a connection's requests one at a time (as Kafka
		// does), so on one connection a produce waiting for its timeout
		// would hold back the next.
		var wg sync.WaitGroup
		defer wg.Wait()
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			wg.Add(1)
			go func(v string) {
				defer wg.Done()
				r := probeResult{sent: time.Now(), value: v, offset: -1}
				cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
				if err != nil {
					panic(err)
				}
				r.err = produceOne(cl.Broker(int(id)), topic, topicID, partition, v, &r.offset)
				cl.Close()
				r.took = time.Since(r.sent)
				p.mu.Lock()
				p.out = append(p.out, r)
				p.mu.Unlock()
			}(fmt.Sprintf("probe%05d", i))
		}
	}()
	return p
}

// produceOne produces one record to topic-partition with acks=all through b (by
// name and id: kgo sends the newest version both sides know, v13+ by id).
func produceOne(b *kgo.Broker, topic string, topicID [16]byte, partition int32, v string, offset *int64) error {
	batch, err := record.Build(&record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Records: []record.BuildRecord{{Timestamp: time.Now().UnixMilli(), Value: []byte(v)}}})
	if err != nil {
		return err
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 2000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, b)
	if err != nil {
		return err
	}
	sp := resp.Topics[0].Partitions[0]
	*offset = sp.BaseOffset
	return kerr.ErrorForCode(sp.ErrorCode)
}

// acked counts the acknowledged probes so far.
func (p *leaderProbe) acked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.out {
		if r.err == nil {
			n++
		}
	}
	return n
}

// results stops the probe and returns every produce it sent.
func (p *leaderProbe) results() []probeResult {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out
}

// The leader of a partition cut off from its followers and from the
// controller by real links taken down (nodes in their own network
// namespaces) under acks=all load with RF 3 and min ISR 2: the majority
// side elects another leader and goes on; a probe producing straight to the
// old leader gets no acknowledgement for anything sent after the new leader
// took over; after the links come back, every acknowledged record (load and
// probe) is read back once at its offset, the ISR is whole again and the
// replicas' logs are byte-identical.
func TestReplicationNetworkPartition(t *testing.T) { runNetworkPartition(t, "") }

// TestLongReplicationNetworkPartition (GREGOR_LONG=1) is the same three
// times with the cut-off leader the active controller and three times with
// it another node.
func TestLongReplicationNetworkPartition(t *testing.T) {
	if os.Getenv("GREGOR_LONG") == "" {
		t.Skip("set GREGOR_LONG=1 to run")
	}
	for i := range 3 {
		for _, which := range []string{"controller", "not-controller"} {
			t.Run(fmt.Sprintf("%s-%d", which, i), func(t *testing.T) { runNetworkPartition(t, which) })
		}
	}
}

// runNetworkPartition cuts off the leader of a partition: with which
// "controller" one the active controller leads, "not-controller" one
// another node leads, "" partition 0.
func runNetworkPartition(t *testing.T, which string) {
	n := newNetnsNet(t)
	start := time.Now()
	c := newClusterWith(t, 3, func(c *cluster) {
		var voters []string
		for _, nd := range c.nodes {
			a := n.addr(nd.id)
			nd.client, nd.ctrl, nd.admin, nd.netns = a+":9092", a+":9093", a+":9644", n.ns(nd.id)
			voters = append(voters, fmt.Sprintf("%d@%s", nd.id, nd.ctrl))
		}
		c.voters = strings.Join(voters, ",")
	})
	const topic = "netpart"
	topicID := createRF3(t, c, topic)
	stop := make(chan struct{})
	lp := startLoad(t, c, topic, stop)
	waitAcks(t, lp, 300)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	controller := c.controller(ctx, 1)
	cancel()
	p := int32(-1)
	var leader int32
	for q := int32(0); q < 3 && p < 0; q++ {
		leader, _ = leaderOf(t, c, topic, q)
		if which == "" || (which == "controller") == (leader == controller) {
			p = q
		}
	}
	if p < 0 {
		t.Fatalf("no partition of %s whose leader is the %s (node %d)", topic, which, controller)
	}
	other := 1 + leader%3
	// The probe's produces are acknowledged while nothing is cut: its
	// silence later is the partition's doing.
	probe := probeLeader(c, leader, topic, topicID, p)
	if !poll(30*time.Second, func() bool { return probe.acked() >= 3 }) {
		pr := probe.results()
		t.Fatalf("node %d acknowledged %d of the probe's produces before any cut (%d sent; the first: %v)", leader, probe.acked(), len(pr), pr[0].err)
	}
	cut := time.Now()
	n.isolate(leader, true)
	var tookOver time.Time
	if !poll(30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		m, err := kadm.NewClient(c.nodeClient(other)).Metadata(ctx, topic)
		if err != nil {
			return false
		}
		l := m.Topics[topic].Partitions[p].Leader
		tookOver = time.Now()
		return l >= 0 && l != leader
	}) {
		t.Fatalf("no other leader of %s-%d within 30s of cutting node %d off", topic, p, leader)
	}
	waitAcks(t, lp, 300) // the majority side goes on
	// Let the probe try the old leader for a while after the take-over.
	time.Sleep(2 * time.Second)
	pr := probe.results()
	n.isolate(leader, false)
	healed := time.Now()

	late, lateErrs := checkNoLateAcks(t, pr, tookOver)
	isrBack := waitISRFrom(t, c, other, topic, 3)
	waitFullISR(t, c, topic, 3)
	waitAcks(t, lp, 300)
	close(stop)
	select {
	case <-lp.done:
	case <-time.After(90 * time.Second):
		t.Fatal("the producer did not finish within 90s")
	}
	lp.mu.Lock()
	acked, failed := lp.acked, lp.failed
	lp.mu.Unlock()
	probeAcked := 0
	for _, r := range pr {
		if r.err == nil {
			acked[r.value] = ackedAt{p, r.offset}
			probeAcked++
		}
	}
	checkReadBack(t, c, topic, acked)
	checkReplicasEqual(t, c, topic, 3)
	t.Logf("node %d (leader of %s-%d; controller before the cut: node %d) cut off for %v; new leader seen %v after the cut; "+
		"load: %d acknowledged, %d failed; probe to the old leader: %d sent, %d acknowledged (all before the take-over), "+
		"%d sent after it, answered %v; the ISR whole again %v after healing; test %v",
		leader, topic, p, controller, healed.Sub(cut).Round(time.Millisecond), tookOver.Sub(cut).Round(time.Millisecond),
		len(acked)-probeAcked, failed, len(pr), probeAcked, late, lateErrs,
		isrBack.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// waitISRFrom waits until node via's metadata (not the healed old
// leader's, which may still show its own stale view) has every
// partition's ISR whole, asking over a fresh connection each time (one
// opened before the heal may hang), and returns how long that took.
func waitISRFrom(t *testing.T, c *cluster, via int32, topic string, parts int32) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	if !poll(60*time.Second, func() bool {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.node(via).client))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		m, err := kadm.NewClient(cl).Metadata(ctx, topic)
		if err != nil {
			last = err.Error()
			return false
		}
		for p := range parts {
			if pd := m.Topics[topic].Partitions[p]; len(pd.ISR) != 3 {
				last = fmt.Sprintf("partition %d ISR %v", p, pd.ISR)
				return false
			}
		}
		return true
	}) {
		t.Fatalf("node %d does not see the ISR whole again: %s", via, last)
	}
	return time.Since(start)
}

// createRF3 creates topic with 3 partitions of 3 replicas and
// min.insync.replicas=2 and returns its id.
func createRF3(t *testing.T, c *cluster, topic string) [16]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(c.client()).CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v / %v", topic, err, resp.Err)
	}
	return resp.ID
}

// checkNoLateAcks fails the test for every probe sent after tookOver that
// the old leader acknowledged, and returns how many were sent then and
// what they were answered.
func checkNoLateAcks(t *testing.T, pr []probeResult, tookOver time.Time) (int, map[string]int) {
	t.Helper()
	late, errs := 0, map[string]int{}
	for _, r := range pr {
		if !r.sent.After(tookOver) {
			continue
		}
		late++
		if r.err != nil {
			errs[errKind(r.err)]++
			continue
		}
		t.Errorf("the cut-off old leader acknowledged %s at offset %d, sent %v after the new leader took over (answered in %v)",
			r.value, r.offset, r.sent.Sub(tookOver), r.took)
	}
	if late == 0 {
		t.Fatal("the probe sent nothing to the old leader after the take-over: the check above tested nothing")
	}
	return late, errs
}

// errKind is an error's Kafka name, or its text for other errors.
func errKind(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within 5s"
	}
	return err.Error()
}
