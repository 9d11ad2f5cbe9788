package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// testCluster is n metadata quorum members on loopback, each with its own
// CONTROLLER listener and metadata log dir on the real filesystem.
type testCluster struct {
	t      *testing.T
	dir    string
	voters map[int32]string
	lns    map[int32]net.Listener
	nodes  map[int32]*Node
	id     string
}

func newTestCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	c := &testCluster{t: t, dir: t.TempDir(), voters: map[int32]string{}, lns: map[int32]net.Listener{}, nodes: map[int32]*Node{}}
	for i := int32(1); i <= int32(n); i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c.lns[i], c.voters[i] = ln, ln.Addr().String()
	}
	c.id = DeriveClusterID(c.voters)
	for id := range c.voters {
		dir := c.nodeDir(id)
		if err := vfs.Default.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := Format(vfs.Default, id, sortedVoters(c.voters))(dir, c.id); err != nil {
			t.Fatal(err)
		}
	}
	for id := range c.voters {
		c.open(id)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.Close()
		}
	})
	return c
}

func sortedVoters(v map[int32]string) []int32 {
	l := &Layout{Voters: v}
	return l.VoterIDs()
}

func (c *testCluster) nodeDir(id int32) string { return filepath.Join(c.dir, fmt.Sprint(id)) }

func (c *testCluster) open(id int32) {
	c.t.Helper()
	b, err := config.NewBroker(map[string]string{"node.id": fmt.Sprint(id), "process.roles": "broker,controller",
		"controller.listener.names": "CONTROLLER", "controller.quorum.election.timeout.ms": "300"})
	if err != nil {
		c.t.Fatal(err)
	}
	ln := c.lns[id]
	if ln == nil {
		if ln, err = net.Listen("tcp", c.voters[id]); err != nil {
			c.t.Fatal(err)
		}
	}
	c.lns[id] = nil // the node's transport owns it now
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	n, err := OpenNode(NodeConfig{FS: vfs.Default, MetadataLogDir: c.nodeDir(id), ClusterID: c.id, Broker: b, Logger: logger,
		Layout: &Layout{NodeID: id, Voters: c.voters, ExplicitVoters: true}})
	if err != nil {
		c.t.Fatal(err)
	}
	n.Serve(ln, nil)
	c.nodes[id] = n
}

func (c *testCluster) stop(id int32) {
	c.t.Helper()
	if err := c.nodes[id].Close(); err != nil {
		c.t.Fatal(err)
	}
	delete(c.nodes, id)
}

// active waits for an active controller and returns its node id.
func (c *testCluster) active() int32 {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for id, n := range c.nodes {
			if ok, _ := n.Shell().Active(); ok {
				return id
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("no active controller within 20s")
	return -1
}

// call runs a request on the active controller, again while the answer is
// NOT_CONTROLLER (a leader that has not activated yet, or lost it).
func call[T any](c *testCluster, f func(ctx context.Context, s *controller.Shell) (T, uint64, error)) (T, uint64) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		v, index, err := f(ctx, c.nodes[c.active()].Shell())
		if err == nil {
			return v, index
		}
		if !errors.Is(err, kerr.NotController) || ctx.Err() != nil {
			c.t.Fatal(err)
		}
	}
}

// registerBrokers registers and unfences a broker per node, so topics can
// be placed.
func (c *testCluster) registerBrokers() {
	c.t.Helper()
	for id := range c.voters {
		reg, _ := call(c, func(ctx context.Context, s *controller.Shell) (*controller.BrokerRegistrationResponse, uint64, error) {
			return s.RegisterBroker(ctx, &controller.BrokerRegistrationRequest{BrokerID: id, ClusterID: c.id,
				IncarnationID: [16]byte{byte(id)}, LogDirs: [][16]byte{{1, byte(id)}}, PreviousBrokerEpoch: -1,
				Listeners: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "h", Port: 1}}})
		})
		call(c, func(ctx context.Context, s *controller.Shell) (*controller.BrokerHeartbeatResponse, uint64, error) {
			return s.BrokerHeartbeat(ctx, &controller.BrokerHeartbeatRequest{BrokerID: id, BrokerEpoch: reg.BrokerEpoch,
				CurrentMetadataOffset: reg.BrokerEpoch})
		})
	}
}

func (c *testCluster) createTopic(name string) uint64 {
	c.t.Helper()
	resp, index := call(c, func(ctx context.Context, s *controller.Shell) (*controller.CreateTopicsResponse, uint64, error) {
		return s.CreateTopics(ctx, &controller.CreateTopicsRequest{
			Topics: []controller.CreatableTopic{{Name: name, NumPartitions: 2, ReplicationFactor: -1}}})
	})
	if err := resp.Topics[0].Err; err != nil {
		c.t.Fatalf("create %s: %v", name, err)
	}
	return index
}

// recorder is a Listener that keeps what it was published.
type recorder struct {
	mu    sync.Mutex
	calls []string
	last  *metadata.Image
}

func (r *recorder) Publish(prev, next *metadata.Image, d *metadata.Delta) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last != nil && r.last != prev {
		r.calls = append(r.calls, "OUT OF ORDER")
	}
	kind := "delta"
	if d == nil {
		kind = "whole"
	}
	r.calls = append(r.calls, fmt.Sprintf("%s %d topics=%s", kind, next.Index, strings.Join(next.TopicNames(), ",")))
	r.last = next
}

func TestNodesFormOneMetadataLog(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.active()
	c.registerBrokers()
	index := c.createTopic("orders")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for id, n := range c.nodes {
		if err := n.Raft().WaitApplied(ctx, index); err != nil {
			t.Fatal(err)
		}
		if n.Image().Topic("orders") == nil || n.Image().ClusterID != c.id {
			t.Fatalf("node %d's image lacks the topic: %v", id, n.Image().TopicNames())
		}
	}

	// A follower publishes nothing until asked, then its whole image
	// once, then every entry after it, in order.
	var follower int32
	for id := range c.nodes {
		if id != leader {
			follower = id
		}
	}
	rec := &recorder{}
	fn := c.nodes[follower]
	if fn.Published() != nil {
		t.Fatal("published before StartPublishing")
	}
	fn.StartPublishing(rec)
	if err := fn.WaitPublished(ctx, 0); err != nil {
		t.Fatal(err)
	}
	index = c.createTopic("payments")
	if err := fn.WaitPublished(ctx, index); err != nil {
		t.Fatal(err)
	}
	if fn.Published().Topic("payments") == nil {
		t.Fatal("WaitPublished returned before the topic was published")
	}
	rec.mu.Lock()
	calls := append([]string(nil), rec.calls...)
	rec.mu.Unlock()
	if len(calls) < 2 || !strings.HasPrefix(calls[0], "whole ") || !strings.Contains(calls[0], "orders") ||
		!strings.Contains(calls[len(calls)-1], "orders,payments") {
		t.Fatalf("publishes: %q", calls)
	}
	for _, call := range calls[1:] {
		if !strings.HasPrefix(call, "delta ") {
			t.Fatalf("after the first publish: %q", calls)
		}
	}

	// The active controller stops: another takes over and writes; the
	// stopped node comes back and catches up.
	c.stop(leader)
	next := c.active()
	if next == leader {
		t.Fatalf("node %d still active after it stopped", leader)
	}
	index = c.createTopic("refunds")
	c.open(leader)
	if _, err := c.nodes[leader].CaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.nodes[leader].Image().TopicNames(); strings.Join(got, ",") != "orders,payments,refunds" {
		t.Fatalf("restarted node's topics: %v (index %d)", got, index)
	}
}

func TestOpenNodeRefusesOtherVoters(t *testing.T) {
	c := newTestCluster(t, 1)
	c.stop(1)
	b, _ := config.NewBroker(map[string]string{"node.id": "1", "process.roles": "broker,controller", "controller.listener.names": "CONTROLLER"})
	_, err := OpenNode(NodeConfig{FS: vfs.Default, MetadataLogDir: c.nodeDir(1), ClusterID: c.id, Broker: b,
		Layout: &Layout{NodeID: 1, Voters: map[int32]string{1: "127.0.0.1:1", 2: "127.0.0.1:2"}}})
	if err == nil || !strings.Contains(err.Error(), "formatted with the voters [1]") {
		t.Fatalf("other voters: %v", err)
	}
	_, err = OpenNode(NodeConfig{FS: vfs.Default, MetadataLogDir: c.nodeDir(1), ClusterID: "another", Broker: b,
		Layout: &Layout{NodeID: 1, Voters: map[int32]string{1: "127.0.0.1:1"}}})
	if err == nil || !strings.Contains(err.Error(), "belongs to cluster") {
		t.Fatalf("another cluster: %v", err)
	}
}
