package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/quorum"
	"github.com/gregor-broker/gregor/internal/quorum/transport"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// NodeConfig configures a Node.
type NodeConfig struct {
	FS vfs.FS
	// MetadataLogDir is the log dir holding the metadata log
	// (MetadataDirName), formatted by Format or Upgrade.
	MetadataLogDir string
	Layout         *Layout
	// ClusterID is the log dirs' (meta.properties); the metadata log must
	// belong to it.
	ClusterID string
	// Broker is the static configuration: the controller's decisions and
	// raft's timing (controller.quorum.election.timeout.ms) read it.
	Broker *config.Broker
	Clock  clock.Clock
	Logger *slog.Logger
	// LocalIncarnation goes to the controller (see controller.Config).
	LocalIncarnation [16]byte
	// OnElection hears of every unclean or last-known-leader election the
	// controller made (metrics).
	OnElection func(controller.Election)
	// Dial opens the raft transport's connections; default a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// SnapshotEntries overrides quorum.Config.SnapshotEntries (tests).
	SnapshotEntries uint64
}

// Node is one member of the metadata quorum with what rides on it: the raft
// node and its TCP transport, the active controller (a controller.Shell,
// active while this node leads), the metadata image every committed entry
// updates, and the publisher that hands images to the broker.
type Node struct {
	cfg   NodeConfig
	log   *slog.Logger
	raft  *quorum.Node
	tr    *transport.Transport
	shell *controller.Shell
	sm    *stateMachine
	pub   *publisher

	cancel context.CancelFunc
	wg     sync.WaitGroup
	close  sync.Once
}

// proposer lets the controller append to the raft log without waiting for
// the entry to commit.
type proposer struct{ n *quorum.Node }

func (p proposer) Propose(ctx context.Context, data []byte) error {
	_, err := p.n.Propose(ctx, data)
	return err
}

// lateProposer is the shell's Proposer until the raft node exists; the
// shell proposes only once raft says this node leads.
type lateProposer struct {
	mu sync.Mutex
	p  controller.Proposer
}

func (l *lateProposer) Propose(ctx context.Context, data []byte) error {
	l.mu.Lock()
	p := l.p
	l.mu.Unlock()
	if p == nil {
		return quorum.ErrNotLeader
	}
	return p.Propose(ctx, data)
}

// OpenNode opens the metadata log in cfg.MetadataLogDir: the image is
// rebuilt from the snapshot and the log (nothing is published yet), the
// controller follows raft's leadership from then on, and raft messages go
// to the other voters. Serve must be given the CONTROLLER listener.
func OpenNode(cfg NodeConfig) (*Node, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	l := cfg.Layout
	dir := MetadataDir(cfg.MetadataLogDir)
	meta, err := quorum.ReadMeta(cfg.FS, dir)
	if err != nil {
		return nil, fmt.Errorf("metadata log %s: %w", dir, err)
	}
	if meta.ClusterID != cfg.ClusterID {
		return nil, fmt.Errorf("metadata log %s belongs to cluster %s, but the log dirs' meta.properties name cluster %s",
			dir, meta.ClusterID, cfg.ClusterID)
	}
	dirs, err := transport.OpenPeerDirectories(cfg.FS, filepath.Join(dir, "peer-directories"))
	if err != nil {
		return nil, err
	}
	tr, err := transport.New(transport.Config{ClusterID: meta.ClusterID, NodeID: l.NodeID, DirectoryID: meta.DirectoryID,
		Peers: l.Voters, PeerDirectories: dirs, Dial: cfg.Dial, Clock: cfg.Clock, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	late := &lateProposer{}
	shell := controller.NewShell(controller.ShellConfig{
		Core: controller.Config{NodeID: l.NodeID, Broker: cfg.Broker,
			LocalIncarnation: cfg.LocalIncarnation, Logger: cfg.Logger.With("component", "controller")},
		Clock: cfg.Clock, Proposer: late, OnElection: cfg.OnElection,
	}, metadata.Empty())
	pub := newPublisher()
	sm := newStateMachine(shell, pub)
	rn, err := quorum.Open(quorum.Config{FS: cfg.FS, Dir: dir, NodeID: l.NodeID, ClusterID: cfg.ClusterID,
		StateMachine: sm, Transport: tr, PeerDirectories: dirs, Logger: cfg.Logger.With("component", "quorum"), Clock: cfg.Clock,
		Timing: quorum.TimingFromKafka(int(cfg.Broker.Int("controller.quorum.election.timeout.ms"))), SnapshotEntries: cfg.SnapshotEntries})
	if err != nil {
		tr.Close()
		return nil, err
	}
	late.mu.Lock()
	late.p = proposer{rn}
	late.mu.Unlock()
	n := &Node{cfg: cfg, log: cfg.Logger, raft: rn, tr: tr, shell: shell, sm: sm, pub: pub}
	if err := n.checkVoters(); err != nil {
		rn.Close()
		tr.Close()
		return nil, err
	}
	tr.Start(rn)
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.wg.Add(2)
	go func() {
		defer n.wg.Done()
		shell.Run(ctx)
	}()
	go func() {
		defer n.wg.Done()
		n.followLeadership(ctx)
	}()
	n.log.Info("metadata log opened", "dir", dir, "cluster_id", meta.ClusterID, "voters", l.VoterIDs(),
		"index", sm.image().Index, "topics", sm.image().NumTopics())
	return n, nil
}

// checkVoters refuses a voter list other than the one the metadata log was
// formatted with: raft's membership lives in the log, and changing it takes
// membership changes, which Gregor does not make yet.
func (n *Node) checkVoters() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := n.raft.Status(ctx)
	if err != nil {
		return err
	}
	if want := n.cfg.Layout.VoterIDs(); !slices.Equal(st.Voters, want) {
		return fmt.Errorf("controller.quorum.voters names the voters %v, but this node's metadata log was formatted "+
			"with the voters %v: the voter set cannot be changed yet (start every node with the voters it was formatted with)",
			want, st.Voters)
	}
	return nil
}

// followLeadership tells the controller every change of raft leadership.
func (n *Node) followLeadership(ctx context.Context) {
	for {
		ch := n.raft.LeaderChanged()
		l := n.raft.Leadership()
		n.shell.LeadershipChanged(l.Local, l.Term)
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-n.raft.Done():
			n.shell.LeadershipChanged(false, l.Term)
			return
		}
	}
}

// Serve serves the CONTROLLER listener ln until Close: raft connections
// here, every other connection (Kafka-framed controller RPCs) to fallback.
func (n *Node) Serve(ln net.Listener, fallback func(net.Conn)) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.tr.Serve(ln, fallback); err != nil && !errors.Is(err, net.ErrClosed) {
			n.log.Error("controller listener stopped", "err", err)
		}
	}()
}

// Shell is the controller of this node.
func (n *Node) Shell() *controller.Shell { return n.shell }

// Raft is the raft node.
func (n *Node) Raft() *quorum.Node { return n.raft }

// Transport is the raft transport (its peers' connection state).
func (n *Node) Transport() *transport.Transport { return n.tr }

// Image is the metadata after the last entry applied, published or not.
func (n *Node) Image() *metadata.Image { return n.sm.image() }

// Published is the last image the broker was given, nil before the first.
func (n *Node) Published() *metadata.Image { return n.pub.image() }

// Leader is the raft leader this node knows of, quorum.NoLeader if none:
// the active controller, or the node about to become it.
func (n *Node) Leader() int32 { return n.raft.Leadership().Leader }

// ControllerAddr is voter id's CONTROLLER listener.
func (n *Node) ControllerAddr(id int32) (string, bool) {
	a, ok := n.cfg.Layout.Voters[id]
	return a, ok
}

// Applied is the raft index the image is up to: what a broker reports as
// its metadata offset.
func (n *Node) Applied() uint64 { return n.raft.Applied() }

// CaughtUp waits until this node has applied everything committed before
// the call (design §5.8.7: ReadIndex, then WaitApplied, never the commit
// index a lagging follower hears in heartbeats).
func (n *Node) CaughtUp(ctx context.Context) (uint64, error) { return n.raft.CaughtUp(ctx) }

// ReadIndex is the metadata log's commit index as the raft leader confirms
// it now (raft's ReadIndex): what this node must apply to be caught up.
func (n *Node) ReadIndex(ctx context.Context) (uint64, error) { return n.raft.ReadIndex(ctx) }

// StartPublishing publishes the whole current image to l once, then every
// image applied after it, in order. Call it once the node has caught up.
func (n *Node) StartPublishing(l Listener) { n.pub.start(l, n.sm.image) }

// StopPublishing stops the publisher once the image being published is
// done: a broker shutting down stops following the metadata before it
// closes its logs.
func (n *Node) StopPublishing() { n.pub.close() }

// WaitPublished waits until the broker has been given an image holding
// everything up to raft index index; index 0 means everything committed
// before the call (ReadIndex). It is how a broker that forwarded a write to
// the controller answers only once its own state shows the change.
func (n *Node) WaitPublished(ctx context.Context, index uint64) error {
	if index == 0 {
		i, err := n.raft.ReadIndex(ctx)
		if err != nil {
			return err
		}
		index = i
	}
	if err := n.raft.WaitApplied(ctx, index); err != nil {
		return err
	}
	// Raft's applied index counts entries the state machine never sees (a
	// new leader's empty entry), so index itself may never be an image's.
	// The image applied now holds everything up to index, and it is queued
	// for publishing.
	return n.pub.wait(ctx, n.sm.image().Index)
}

// Close stops the controller, the publisher, raft and the transport.
func (n *Node) Close() error {
	var err error
	n.close.Do(func() {
		n.pub.close()
		if n.cancel != nil {
			n.cancel()
		}
		err = n.raft.Close()
		n.tr.Close()
		n.wg.Wait()
	})
	return err
}
