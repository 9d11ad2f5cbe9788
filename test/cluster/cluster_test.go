// Package cluster runs real `gregor serve` processes as a three-node cluster
// on loopback and kills, stops and restarts them (design §6.3): every node
// started as the three-command example starts it, no format step.
// The tests kill only the processes they started, by pid, and are bounded
// in time; longer runs are behind GREGOR_LONG=1.
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/admin"
)

// produceN writes n records with acks=all and returns how many were
// acknowledged, failing on any error.
func produceN(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records to %s: %v", n, topic, err)
	}
}

// consumeN reads topic from the start until it has n records.
func consumeN(t *testing.T, c *cluster, topic string, n int) map[string]bool {
	t.Helper()
	cl := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d distinct records of %d from %s: %v", len(seen), n, topic, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	return seen
}

// createTopic creates a topic through the cluster, retrying what clients
// retry (no controller yet, a request that timed out in a failover) until
// deadline; it returns how long it took.
func createTopic(t *testing.T, c *cluster, name string, deadline time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	adm := kadm.NewClient(c.client())
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := adm.CreateTopic(ctx, 3, -1, nil, name)
		cancel()
		if err == nil && (resp.Err == nil || errors.Is(resp.Err, kerr.TopicAlreadyExists)) {
			return time.Since(start)
		}
		if time.Since(start) > deadline {
			t.Fatalf("create %s: still %v / %v after %v", name, err, resp.Err, deadline)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// offline waits until node via reports every partition of topic led by
// node gone as offline (leader -1), and the others led.
func waitOffline(t *testing.T, c *cluster, via int32, topic string, gone int32) {
	t.Helper()
	adm := kadm.NewClient(c.nodeClient(via))
	var last string
	if !poll(20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m, err := adm.Metadata(ctx, topic)
		if err != nil {
			last = err.Error()
			return false
		}
		for _, p := range m.Topics[topic].Partitions {
			if (p.Replicas[0] == gone) != (p.Leader == -1) {
				last = fmt.Sprintf("partition %d leader %d replicas %v", p.Partition, p.Leader, p.Replicas)
				return false
			}
		}
		return !slices.Contains(m.Brokers.NodeIDs(), gone)
	}) {
		t.Fatalf("node %d's partitions of %s not offline in node %d's metadata: %s", gone, topic, via, last)
	}
}

// The acceptance: three nodes started alike form one cluster; the
// active controller SIGKILLed, a new one answers CreateTopics while the
// others keep serving; killed nodes come back with their data, the
// controller and another node alike, the latter before its old session
// expired (its new incarnation waits for it); every acknowledged record is
// read back.
func TestKillAndRestart(t *testing.T) {
	c := newCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createTopic(t, c, "orders", 20*time.Second)
	prod := c.client(kgo.RecordRetries(20))
	produceN(t, prod, "orders", 300)

	ctrl := c.controller(ctx, 1)
	if ctrl < 1 || ctrl > 3 {
		t.Fatalf("controller %d", ctrl)
	}
	other := int32(1 + ctrl%3)
	c.sigkill(ctrl)
	took := createTopic(t, c, "during-failover", 30*time.Second)
	t.Logf("a topic was created %v after SIGKILL of the active controller (node %d)", took.Round(time.Millisecond), ctrl)
	if now := c.controller(ctx, other); now == ctrl || now < 1 {
		t.Fatalf("controller %d after node %d was killed", now, ctrl)
	}
	waitOffline(t, c, other, "orders", ctrl)

	c.start(ctrl)
	c.waitReady(ctrl, 60*time.Second)
	// Placed while the killed node's session was still valid, the new
	// topic may have a partition on it (as Kafka would): produce once it
	// is back.
	produceN(t, c.client(kgo.RecordRetries(20)), "during-failover", 30)
	// Another node killed and started at once: its registration waits
	// for its old session to expire, then it leads its partitions again.
	c.sigkill(other)
	c.start(other)
	c.waitReady(other, 60*time.Second)
	seen := consumeN(t, c, "orders", 300)
	for i := range 300 {
		if !seen[fmt.Sprintf("v%d", i)] {
			t.Fatalf("acknowledged record v%d is missing", i)
		}
	}
	consumeN(t, c, "during-failover", 30)
	for _, nd := range c.nodes {
		if log := nd.log(t); strings.Contains(log, "unclean leader election") {
			t.Errorf("node %d logged an unclean election; with gregor.ack.fsync a killed broker comes back clean", nd.id)
		}
	}
}

// SIGTERM: the node moves its leaderships away, stops, and exits 0; its
// partitions are offline meanwhile and it leads them again when it is back,
// started this time from a server.properties with Kafka's config names
// (which must mean what the flags meant: the same node of the same cluster).
func TestControlledShutdown(t *testing.T) {
	c := newCluster(t, 3)
	createTopic(t, c, "t", 20*time.Second)
	produceN(t, c.client(), "t", 30)
	start := time.Now()
	if err := c.sigterm(2); err != nil {
		t.Fatalf("SIGTERM: %v (want exit status 0)", err)
	}
	t.Logf("node 2 stopped %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	if log := c.node(2).log(t); !strings.Contains(log, "controlled shutdown done") {
		t.Errorf("node 2 did not complete a controlled shutdown:\n%s", log[max(0, len(log)-3000):])
	}
	waitOffline(t, c, 1, "t", 2)
	checkGregorCluster(t, c, 1, 2)
	c.node(2).properties = true
	c.start(2)
	c.waitReady(2, 60*time.Second)
	consumeN(t, c, "t", 30)
}

// A node whose data dir (metadata log included) was wiped comes back as a
// fresh format of the same cluster: the other voters refuse its raft
// connections (its directory id changed, so it may have forgotten votes it
// cast), so it never catches up and never serves, while the others serve
// on. Nothing it holds (nothing) is ever offered to clients.
func TestWipedNodeIsRefused(t *testing.T) {
	c := newCluster(t, 3)
	createTopic(t, c, "t", 20*time.Second)
	if err := c.sigterm(3); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(c.node(3).dir); err != nil {
		t.Fatal(err)
	}
	c.node(3).unready = true
	c.start(3)
	refused := func() bool {
		for _, id := range []int32{1, 2} {
			if strings.Contains(c.node(id).log(t), "came back with metadata directory") {
				return true
			}
		}
		return false
	}
	if !poll(20*time.Second, refused) {
		t.Fatal("no voter refused the wiped node's raft connections")
	}
	if log := c.node(3).log(t); !strings.Contains(log, "wiped and re-formatted") || strings.Contains(log, "panic") {
		t.Fatalf("the wiped node does not say why it is refused, or stopped:\n%s", log[max(0, len(log)-3000):])
	}
	// It stays unready while the others serve.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if c.node(3).ready() {
			t.Fatal("the wiped node became ready")
		}
		time.Sleep(100 * time.Millisecond)
	}
	createTopic(t, c, "after-wipe", 20*time.Second)
	produceN(t, c.client(), "after-wipe", 10)
	adm := kadm.NewClient(c.nodeClient(1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(m.Brokers.NodeIDs(), 3) {
		t.Fatalf("the wiped node is listed as a live broker: %v", m.Brokers.NodeIDs())
	}
}

// Nodes formatted with `gregor storage format -t ID --node-id N --voters …`
// (kafka-storage format) form a cluster of that id; without -t every node
// derives the same id from the voters, so formatting some nodes and letting
// the others format themselves at start gives one cluster too.
func TestStorageFormat(t *testing.T) {
	for _, tc := range []struct {
		name      string
		clusterID string // "" : derived
		formatted []int32
	}{
		{"explicit cluster id", "Xa3fj0uVQQWLG8j1Ee2yLQ", []int32{1, 2, 3}},
		{"derived id and one node formatted by hand", "", []int32{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClusterWith(t, 3, func(c *cluster) {
				for _, id := range tc.formatted {
					args := []string{"storage", "format", "--node-id", fmt.Sprint(id), "--data-dir", c.node(id).dir,
						"--voters", c.voters}
					if tc.clusterID != "" {
						args = append(args, "--cluster-id", tc.clusterID)
					}
					if out, err := c.gregor(args...); err != nil || !strings.Contains(out, "Formatting") {
						t.Fatalf("format node %d: %v\n%s", id, err, out)
					}
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ids := map[string]bool{}
			for _, nd := range c.nodes {
				m, err := kadm.NewClient(c.nodeClient(nd.id)).BrokerMetadata(ctx)
				if err != nil {
					t.Fatal(err)
				}
				ids[m.Cluster] = true
				if len(m.Brokers) != 3 {
					t.Fatalf("node %d lists brokers %v", nd.id, m.Brokers.NodeIDs())
				}
			}
			if len(ids) != 1 || (tc.clusterID != "" && !ids[tc.clusterID]) {
				t.Fatalf("cluster ids %v, want one (%s)", ids, tc.clusterID)
			}
		})
	}
}

// checkGregorCluster runs `gregor cluster` against node via's admin
// listener while node down is stopped: three brokers, down fenced, the
// others unfenced with their epochs, one of them the controller; three
// voters with their raft index.
func checkGregorCluster(t *testing.T, c *cluster, via, down int32) {
	t.Helper()
	var v admin.ClusterView
	var out string
	// Until the new controller's activation reaches node via, the quorum
	// and the image may name different controllers.
	if !poll(20*time.Second, func() bool {
		var err error
		out, err = c.gregor("cluster", "--admin", c.node(via).admin, "-o", "json")
		if err != nil {
			t.Fatalf("gregor cluster -o json: %v\n%s", err, out)
		}
		v = admin.ClusterView{}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("gregor cluster -o json: %v\n%s", err, out)
		}
		return v.Quorum != nil && v.Quorum.LeaderID == v.ControllerID && v.ControllerID != down
	}) || len(v.Brokers) != 3 || len(v.Quorum.Voters) != 3 {
		t.Fatalf("gregor cluster -o json: %s", out)
	}
	for _, b := range v.Brokers {
		if want := admin.BrokerUnfenced; b.NodeID != down && (b.State != want || b.Epoch <= 0) ||
			b.NodeID == down && b.State != admin.BrokerFenced {
			t.Fatalf("broker %+v", b)
		}
	}
	out, err := c.gregor("cluster", "--admin", c.node(via).admin)
	if err != nil {
		t.Fatalf("gregor cluster: %v\n%s", err, out)
	}
	for _, w := range []string{fmt.Sprintf("controller node %d", v.ControllerID), "unfenced", "fenced", "controller\n",
		fmt.Sprintf("Metadata quorum: leader node %d", v.ControllerID), "RAFT INDEX", "LAG"} {
		if !strings.Contains(out, w) {
			t.Errorf("gregor cluster lacks %q:\n%s", w, out)
		}
	}
	t.Logf("gregor cluster with node %d stopped:\n%s", down, out)
}
