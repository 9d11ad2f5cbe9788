package transport

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/quorum"
	"github.com/gregor-broker/gregor/internal/quorum/quorumtest"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// tcpCluster is quorum Nodes talking through Transports over loopback TCP,
// on the real clock.
type tcpCluster struct {
	t      *testing.T
	timing quorum.Timing
	addrs  map[int32]string
	fs     map[int32]*vfs.MemFS
	nodes  map[int32]*quorum.Node
	trs    map[int32]*Transport
	sms    map[int32]*quorumtest.LogSM
}

const metaDir = "/data/__cluster_metadata-0"

func newTCPCluster(t *testing.T, n int, timing quorum.Timing) *tcpCluster {
	c := &tcpCluster{t: t, timing: timing, addrs: map[int32]string{}, fs: map[int32]*vfs.MemFS{},
		nodes: map[int32]*quorum.Node{}, trs: map[int32]*Transport{}, sms: map[int32]*quorumtest.LogSM{}}
	var voters []int32
	lns := map[int32]net.Listener{}
	for i := range n {
		id := int32(i)
		voters = append(voters, id)
		lns[id] = listen(t)
		c.addrs[id] = lns[id].Addr().String()
	}
	for _, id := range voters {
		fs := vfs.NewMem()
		fs.MkdirAll(filepath.Dir(metaDir), 0o755)
		fs.SyncDir("/")
		if err := quorum.Bootstrap(fs, metaDir, quorum.BootstrapConfig{ClusterID: "c1", NodeID: id, Voters: voters}); err != nil {
			t.Fatal(err)
		}
		c.fs[id] = fs
	}
	for _, id := range voters {
		c.start(id, lns[id])
	}
	t.Cleanup(func() {
		for id := range c.nodes {
			c.kill(id)
		}
	})
	return c
}

func (c *tcpCluster) start(id int32, ln net.Listener) {
	t := c.t
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", c.addrs[id]); err != nil {
			t.Fatalf("listen again on %s: %v", c.addrs[id], err)
		}
	}
	meta, err := quorum.ReadMeta(c.fs[id], metaDir)
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := OpenPeerDirectories(c.fs[id], filepath.Join(metaDir, "peer-directories"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(Config{ClusterID: meta.ClusterID, NodeID: id, DirectoryID: meta.DirectoryID, Peers: c.addrs, PeerDirectories: dirs})
	if err != nil {
		t.Fatal(err)
	}
	c.sms[id] = quorumtest.NewLogSM()
	node, err := quorum.Open(quorum.Config{FS: c.fs[id], Dir: metaDir, NodeID: id, ClusterID: "c1",
		StateMachine: c.sms[id], Transport: tr, Timing: c.timing})
	if err != nil {
		t.Fatal(err)
	}
	tr.Start(node)
	go tr.Serve(ln, nil)
	c.nodes[id], c.trs[id] = node, tr
}

func (c *tcpCluster) kill(id int32) {
	c.nodes[id].Close()
	c.trs[id].Close()
	delete(c.nodes, id)
	delete(c.trs, id)
}

// leader polls until the running nodes agree on a leader that knows it
// leads, and returns it with when that was first seen.
func (c *tcpCluster) leader(within time.Duration, not int32) (int32, time.Time) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		l, agree := quorum.NoLeader, true
		for _, n := range c.nodes {
			le := n.Leadership()
			if l == quorum.NoLeader {
				l = le.Leader
			}
			agree = agree && le.Leader == l
		}
		if n, ok := c.nodes[l]; agree && ok && l != not && n.Leadership().Local {
			return l, time.Now()
		}
		time.Sleep(time.Millisecond)
	}
	c.t.Fatalf("no agreed leader within %v", within)
	return 0, time.Time{}
}

func TestTCPClusterElectsReplicatesAndFailsOver(t *testing.T) {
	timing := quorum.Timing{Tick: 20 * time.Millisecond, ElectionTicks: 10, HeartbeatTicks: 1}
	c := newTCPCluster(t, 3, timing)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, _ := c.leader(10*time.Second, quorum.NoLeader)
	var last quorum.EntryID
	for i := range 10 {
		id, err := c.nodes[l].ProposeAndWait(ctx, fmt.Appendf(nil, "e%d", i))
		if err != nil {
			t.Fatal(err)
		}
		last = id
	}
	for id, n := range c.nodes {
		if err := n.WaitApplied(ctx, last.Index); err != nil {
			t.Fatal(err)
		}
		if got := c.sms[id].Data(); len(got) != 10 {
			t.Fatalf("node %d applied %v", id, got)
		}
	}
	killed := time.Now()
	c.kill(l)
	nl, at := c.leader(10*time.Second, l)
	t.Logf("leader %d killed; node %d leads after %v (ticks of %v, election timeout %v)",
		l, nl, at.Sub(killed), timing.Tick, time.Duration(timing.ElectionTicks)*timing.Tick)
	// The survivors cannot reach the dead node: their transports say so.
	eventually(t, "the dead leader reported unreachable", func() bool {
		for _, p := range c.trs[nl].Peers() {
			if p.NodeID == l && !p.Connected && p.LastError != "" {
				return true
			}
		}
		return false
	})
	if last, err := c.nodes[nl].ProposeAndWait(ctx, []byte("after failover")); err != nil {
		t.Fatal(err)
	} else {
		// The old leader comes back on its address and catches up.
		c.start(l, nil)
		if err := c.nodes[l].WaitApplied(ctx, last.Index); err != nil {
			t.Fatal(err)
		}
		if got := c.sms[l].Data(); !slices.Equal(got, c.sms[nl].Data()) {
			t.Fatalf("restarted node holds %v, leader %v", got, c.sms[nl].Data())
		}
	}
}

// TestTCPFailoverDefaultTiming measures leader failover on loopback with
// the default timing (100 ms ticks, 10-tick election timeout): kill the
// leader, time until the two others agree on a new one and until it
// commits. GREGOR_LONG=1 runs 20 kills; otherwise 2. Measured on a shared
// 2-core box (20 kills): new leader after min 0.98 s, median 1.56 s, max
// 2.73 s; the first commit follows within a millisecond.
func TestTCPFailoverDefaultTiming(t *testing.T) {
	kills := 2
	if os.Getenv("GREGOR_LONG") != "" {
		kills = 20
	}
	c := newTCPCluster(t, 3, quorum.DefaultTiming())
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(kills)*20*time.Second)
	defer cancel()
	var elect, commit []time.Duration
	l, _ := c.leader(10*time.Second, quorum.NoLeader)
	for range kills {
		if _, err := c.nodes[l].ProposeAndWait(ctx, []byte("before")); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		c.kill(l)
		nl, at := c.leader(10*time.Second, l)
		if _, err := c.nodes[nl].ProposeAndWait(ctx, []byte("after")); err != nil {
			t.Fatal(err)
		}
		elect = append(elect, at.Sub(killed))
		commit = append(commit, time.Since(killed))
		c.start(l, nil)
		if _, err := c.nodes[l].CaughtUp(ctx); err != nil {
			t.Fatal(err)
		}
		l = nl
	}
	slices.Sort(elect)
	slices.Sort(commit)
	t.Logf("%d kills: new leader after min %v median %v max %v; first commit after min %v median %v max %v",
		kills, elect[0], elect[len(elect)/2], elect[len(elect)-1], commit[0], commit[len(commit)/2], commit[len(commit)-1])
	// The 3 s p99 budget is checked over thousands of seeds in the
	// simulator (TestSimFailoverTime). Two real kills are too few for a
	// median: one split vote (an election timeout of up to 2 s more) or a
	// loaded CI box under -race makes it the max, so only the 20-kill run
	// checks the typical case.
	if m := commit[len(commit)/2]; kills >= 20 && m > 3*time.Second {
		t.Errorf("median failover %v, over 3 s", m)
	}
}
