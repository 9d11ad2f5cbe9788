package quorum_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/quorum"
	"github.com/gregor-broker/gregor/internal/quorum/quorumtest"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Node tests run real Nodes (one goroutine each) over quorumtest.LocalNet
// inside a testing/synctest bubble: time is virtual and advances when every
// goroutine is blocked, so elections take their real 1–2 s instantly.

const metaDir = "/data/__cluster_metadata-0"

type cluster struct {
	t      *testing.T
	net    *quorumtest.LocalNet
	voters []int32
	fs     map[int32]*vfs.MemFS
	nodes  map[int32]*quorum.Node
	sms    map[int32]*quorumtest.LogSM
	tune   func(*quorum.Config)
}

func newCluster(t *testing.T, voters []int32, tune func(*quorum.Config)) *cluster {
	t.Helper()
	c := &cluster{t: t, net: quorumtest.NewLocalNet(), voters: voters, tune: tune,
		fs: map[int32]*vfs.MemFS{}, nodes: map[int32]*quorum.Node{}, sms: map[int32]*quorumtest.LogSM{}}
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
		c.start(id)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.Close()
		}
	})
	return c
}

func (c *cluster) config(id int32) quorum.Config {
	cfg := quorum.Config{FS: c.fs[id], Dir: metaDir, NodeID: id, ClusterID: "c1",
		StateMachine: c.sms[id], Transport: c.net.Transport(id), Clock: clock.Real{}}
	if c.tune != nil {
		c.tune(&cfg)
	}
	return cfg
}

func (c *cluster) start(id int32) *quorum.Node {
	c.t.Helper()
	c.sms[id] = quorumtest.NewLogSM()
	n, err := quorum.Open(c.config(id))
	if err != nil {
		c.t.Fatalf("open node %d: %v", id, err)
	}
	c.nodes[id] = n
	c.net.Attach(id, n)
	return n
}

// crash stops node id and keeps only what it had made durable.
func (c *cluster) crash(id int32) {
	c.net.Detach(id)
	c.nodes[id].Close()
	delete(c.nodes, id)
	c.fs[id] = c.fs[id].CrashClone()
}

// leader waits (in virtual time) until the running nodes agree on a leader
// that believes it leads, and returns it.
func (c *cluster) leader(within time.Duration) int32 {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		l, agree := quorum.NoLeader, true
		for _, n := range c.nodes {
			le := n.Leadership()
			if l == quorum.NoLeader {
				l = le.Leader
			}
			agree = agree && le.Leader == l && l != quorum.NoLeader
		}
		if agree {
			if n, ok := c.nodes[l]; ok && n.Leadership().Local {
				return l
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatalf("no agreed leader within %v", within)
	return quorum.NoLeader
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSingleNodeLeadsAtOnceAndRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, []int32{0}, nil)
		n := c.nodes[0]
		if l := n.Leadership(); !l.Local || l.Leader != 0 {
			t.Fatalf("a single voter should lead as soon as it opens; leadership %+v", l)
		}
		ctx := ctxT(t)
		var last quorum.EntryID
		for _, d := range []string{"a", "b", "c"} {
			id, err := n.ProposeAndWait(ctx, []byte(d))
			if err != nil {
				t.Fatal(err)
			}
			if id.Index <= last.Index {
				t.Fatalf("entry %v after %v", id, last)
			}
			last = id
		}
		if got := c.sms[0].Data(); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Fatalf("applied %v", got)
		}
		if i, err := n.CaughtUp(ctx); err != nil || i < last.Index {
			t.Fatalf("CaughtUp = %d, %v; want ≥ %d", i, err, last.Index)
		}
		st, _ := n.Status(ctx)
		if st.Role != "leader" || !slices.Equal(st.Voters, []int32{0}) || len(st.Replicas) != 1 || st.Replicas[0].Match < last.Index {
			t.Fatalf("status %+v", st)
		}
		// Restart: the state machine is rebuilt from the snapshot and the
		// WAL, and the node leads again at once.
		c.crash(0)
		n = c.start(0)
		if err := n.WaitApplied(ctx, last.Index); err != nil {
			t.Fatal(err)
		}
		if got := c.sms[0].Data(); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Fatalf("after restart applied %v", got)
		}
		if _, err := n.ProposeAndWait(ctx, []byte("d")); err != nil {
			t.Fatal(err)
		}
	})
}

func TestThreeNodesElectAndReplicate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		c := newCluster(t, []int32{0, 1, 2}, nil)
		l := c.leader(10 * time.Second)
		t.Logf("first leader %d after %v (virtual)", l, time.Since(start))
		ctx := ctxT(t)
		f := (l + 1) % 3
		_, err := c.nodes[f].Propose(ctx, []byte("x"))
		var nl *quorum.NotLeaderError
		if !errors.As(err, &nl) || nl.Leader != l || !errors.Is(err, quorum.ErrNotLeader) {
			t.Fatalf("propose on follower %d: %v, want NotLeaderError naming %d", f, err, l)
		}
		var ids []quorum.EntryID
		for i := range 20 {
			id, err := c.nodes[l].ProposeAndWait(ctx, fmt.Appendf(nil, "e%d", i))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		for id, n := range c.nodes {
			if err := n.WaitApplied(ctx, ids[len(ids)-1].Index); err != nil {
				t.Fatal(err)
			}
			if got := c.sms[id].Data(); len(got) != 20 || got[19] != "e19" {
				t.Fatalf("node %d applied %v", id, got)
			}
		}
		if i, err := c.nodes[f].CaughtUp(ctx); err != nil || i < ids[19].Index {
			t.Fatalf("follower CaughtUp = %d, %v", i, err)
		}
		time.Sleep(200 * time.Millisecond) // a couple of ticks, so catch-up times are sampled
		st, _ := c.nodes[l].Status(ctx)
		if len(st.Replicas) != 3 {
			t.Fatalf("leader status %+v", st)
		}
		for _, r := range st.Replicas {
			if r.Match < ids[19].Index || r.State != "StateReplicate" {
				t.Fatalf("replica %+v behind %v", r, ids[19])
			}
			if time.Since(r.LastContact) > time.Second || time.Since(r.LastCaughtUp) > time.Second {
				t.Fatalf("replica %+v: last contact or catch-up too old", r)
			}
		}
	})
}

func TestProposalOfDeposedLeaderIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, []int32{0, 1, 2}, nil)
		ctx := ctxT(t)
		old := c.leader(10 * time.Second)
		others := slices.DeleteFunc([]int32{0, 1, 2}, func(x int32) bool { return x == old })
		c.net.Isolate(old, others...)
		doomed, err := c.nodes[old].Propose(ctx, []byte("doomed"))
		if err != nil {
			t.Fatalf("isolated leader should still append: %v", err)
		}
		// The others elect a new leader and commit past the doomed index.
		var nl int32 = quorum.NoLeader
		for nl == quorum.NoLeader || nl == old {
			time.Sleep(100 * time.Millisecond)
			for _, o := range others {
				if c.nodes[o].Leadership().Local {
					nl = o
				}
			}
		}
		for i := range 3 {
			if _, err := c.nodes[nl].ProposeAndWait(ctx, fmt.Appendf(nil, "new%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		c.net.Heal()
		if err := c.nodes[old].WaitCommitted(ctx, doomed); !errors.Is(err, quorum.ErrProposalLost) {
			t.Fatalf("WaitCommitted(%v) = %v, want ErrProposalLost", doomed, err)
		}
		if slices.Contains(c.sms[old].Data(), "doomed") {
			t.Fatal("the deposed leader applied its uncommitted entry")
		}
	})
}

func TestLaggingFollowerGetsSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tune := func(cfg *quorum.Config) {
			cfg.SnapshotEntries, cfg.SnapshotKeepEntries, cfg.WALSegmentBytes = 10, 2, 1024
		}
		c := newCluster(t, []int32{0, 1, 2}, tune)
		ctx := ctxT(t)
		l := c.leader(10 * time.Second)
		lag := (l + 1) % 3
		c.crash(lag)
		var last quorum.EntryID
		for i := range 60 {
			id, err := c.nodes[l].ProposeAndWait(ctx, fmt.Appendf(nil, "e%d", i))
			if err != nil {
				t.Fatal(err)
			}
			last = id
		}
		n := c.start(lag)
		if err := n.WaitApplied(ctx, last.Index); err != nil {
			t.Fatal(err)
		}
		st, _ := n.Status(ctx)
		if st.SnapshotIndex <= 10 {
			t.Fatalf("lagging follower status %+v: expected an installed snapshot", st)
		}
		want := c.sms[l].Data()
		if got := c.sms[lag].Data(); !slices.Equal(got, want) {
			t.Fatalf("follower state %v\nleader state %v", got, want)
		}
		// Old WAL segments and snapshots were released on every node.
		for id, fs := range c.fs {
			segs, _ := fs.List(filepath.Join(metaDir, "wal"))
			snaps, _ := fs.List(filepath.Join(metaDir, "snap"))
			if len(segs) > 3 || len(snaps) > 2 {
				t.Fatalf("node %d keeps %d WAL segments %v and snapshots %v", id, len(segs), segs, snaps)
			}
		}
	})
}

type failingSM struct{ quorumtest.LogSM }

func (f *failingSM) Apply(e quorum.Entry) error {
	if string(e.Data) == "boom" {
		return errors.New("state machine refuses boom")
	}
	return f.LogSM.Apply(e)
}

func TestApplyErrorStopsNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, []int32{0}, func(cfg *quorum.Config) { cfg.StateMachine = &failingSM{} })
		ctx := ctxT(t)
		n := c.nodes[0]
		// A single voter commits and applies within the proposal itself.
		if _, err := n.ProposeAndWait(ctx, []byte("boom")); !errors.Is(err, quorum.ErrStopped) {
			t.Fatalf("ProposeAndWait = %v, want ErrStopped", err)
		}
		<-n.Done()
		if err := n.Err(); err == nil || !errors.Is(err, quorum.ErrStopped) {
			t.Fatalf("Err = %v", err)
		}
		if _, err := n.Propose(ctx, []byte("x")); !errors.Is(err, quorum.ErrStopped) {
			t.Fatalf("Propose after failure = %v", err)
		}
	})
}

func TestOpenRefusesMissingOrForeignState(t *testing.T) {
	boot := func(t *testing.T) *vfs.MemFS {
		fs := vfs.NewMem()
		if err := quorum.Bootstrap(fs, metaDir, quorum.BootstrapConfig{ClusterID: "c1", NodeID: 1, Voters: []int32{1, 2, 3}}); err != nil {
			t.Fatal(err)
		}
		return fs
	}
	open := func(fs vfs.FS, node int32, cluster string) error {
		p, err := quorum.NewPeer(quorum.Config{FS: fs, Dir: metaDir, NodeID: node, ClusterID: cluster,
			StateMachine: quorumtest.NewLogSM(), Transport: quorumtest.NewLocalNet().Transport(node)}, nil)
		if err == nil {
			p.Close()
		}
		return err
	}
	if err := open(vfs.NewMem(), 1, ""); !errors.Is(err, quorum.ErrNotFormatted) {
		t.Errorf("empty dir: %v, want ErrNotFormatted", err)
	}
	if err := open(boot(t), 1, "c1"); err != nil {
		t.Errorf("formatted dir: %v", err)
	}
	fs := boot(t)
	fs.RemoveAll(filepath.Join(metaDir, "wal"))
	if err := open(fs, 1, ""); !errors.Is(err, quorum.ErrVoteAmnesia) {
		t.Errorf("WAL missing: %v, want ErrVoteAmnesia", err)
	} else {
		t.Logf("WAL missing: %v", err)
	}
	fs = boot(t)
	fs.Remove(filepath.Join(metaDir, "raft-meta"))
	if err := open(fs, 1, ""); !errors.Is(err, quorum.ErrVoteAmnesia) {
		t.Errorf("raft-meta missing: %v, want ErrVoteAmnesia", err)
	}
	fs = boot(t)
	fs.RemoveAll(filepath.Join(metaDir, "snap"))
	if err := open(fs, 1, ""); !errors.Is(err, quorum.ErrCorrupt) {
		t.Errorf("snapshot missing: %v, want ErrCorrupt", err)
	}
	if err := open(boot(t), 2, ""); !errors.Is(err, quorum.ErrCorrupt) {
		t.Errorf("another node's dir: %v, want ErrCorrupt", err)
	}
	if err := open(boot(t), 1, "other"); !errors.Is(err, quorum.ErrCorrupt) {
		t.Errorf("another cluster's dir: %v, want ErrCorrupt", err)
	}
	fs = boot(t)
	if err := quorum.Bootstrap(fs, metaDir, quorum.BootstrapConfig{ClusterID: "c1", NodeID: 1, Voters: []int32{1}}); !errors.Is(err, quorum.ErrAlreadyFormatted) {
		t.Errorf("second format: %v, want ErrAlreadyFormatted", err)
	}
	if err := quorum.Bootstrap(vfs.NewMem(), metaDir, quorum.BootstrapConfig{ClusterID: "c1", NodeID: 4, Voters: []int32{1}}); err == nil {
		t.Error("bootstrap of a node that is not a voter succeeded")
	}
}

func TestRemoveVotersIncludingTheLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, []int32{0, 1, 2}, func(cfg *quorum.Config) { cfg.SnapshotEntries, cfg.SnapshotKeepEntries = 4, 1 })
		ctx := ctxT(t)
		l := c.leader(10 * time.Second)
		f := (l + 1) % 3
		remove := func(on, victim int32) {
			t.Helper()
			cc := &pb.ConfChange{Type: pb.ConfChangeRemoveNode.Enum(), NodeId: new(quorum.RaftID(victim))}
			if err := c.nodes[on].ProposeConfChange(ctx, cc); err != nil {
				t.Fatal(err)
			}
		}
		voters := func(id int32) []int32 {
			st, err := c.nodes[id].Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return st.Voters
		}
		remove(l, f)
		for slices.Contains(voters(l), f) {
			time.Sleep(10 * time.Millisecond)
		}
		c.crash(f)
		for i := range 6 {
			if _, err := c.nodes[l].ProposeAndWait(ctx, fmt.Appendf(nil, "two-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		// The leader removes itself: it steps down, and the last voter
		// elects itself.
		last := 3 - l - f
		remove(l, l)
		for !c.nodes[last].Leadership().Local {
			time.Sleep(10 * time.Millisecond)
		}
		if c.nodes[l].Leadership().Local {
			t.Fatal("a removed leader still leads")
		}
		if _, err := c.nodes[last].ProposeAndWait(ctx, []byte("alone")); err != nil {
			t.Fatal(err)
		}
		// After a restart the membership comes back from the snapshot and WAL.
		c.crash(last)
		c.start(last)
		if got := voters(last); !slices.Equal(got, []int32{last}) {
			t.Fatalf("voters after restart %v, want [%d]", got, last)
		}
	})
}

func TestTimingFromKafka(t *testing.T) {
	if got := quorum.TimingFromKafka(1000); got != quorum.DefaultTiming() {
		t.Fatalf("Kafka's default election timeout gives %+v, want the default %+v", got, quorum.DefaultTiming())
	}
	if got := quorum.TimingFromKafka(300); got.Tick != 30*time.Millisecond || got.ElectionTicks != 10 {
		t.Fatalf("300 ms gives %+v", got)
	}
}
