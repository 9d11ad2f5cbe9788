package transport

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/quorum"
)

// Handler is the raft side of a node (quorum.Node is one).
type Handler interface {
	Deliver(m *pb.Message)
	ReportUnreachable(to uint64)
	ReportSnapshot(to uint64, status raft.SnapshotStatus)
}

// Config configures a Transport.
type Config struct {
	ClusterID   string
	NodeID      int32
	DirectoryID string // this node's, from quorum.Meta
	// Peers is the address book: node id → its CONTROLLER listener
	// address. Messages to others are dropped, and connections from
	// others refused. This node's own entry is ignored.
	Peers map[int32]string
	// PeerDirectories, if set, refuses peers whose directory id changed.
	PeerDirectories *PeerDirectories
	// Dial opens connections; default a net.Dialer (set LocalAddr on one
	// to dial from a given address).
	Dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	Clock  clock.Clock // backoff and deadlines; default clock.Real
	Logger *slog.Logger

	QueueSize        int           // per peer, message lane; default 1024
	MaxFrameBytes    int           // message lane; default 16 MiB
	MaxSnapshotBytes int           // snapshot lane; default 1 GiB
	DialTimeout      time.Duration // default 2 s
	WriteTimeout     time.Duration // default 5 s (snapshots: 60 s)
}

// Transport is the TCP transport of one quorum member. It implements
// quorum.Transport.
type Transport struct {
	cfg     Config
	self    uint64
	log     *slog.Logger
	handler Handler
	lanes   map[int32][2]*lane

	mu        sync.Mutex
	listeners []net.Listener
	conns     map[net.Conn]bool
	closed    bool
	stop      chan struct{}
	wg        sync.WaitGroup
}

// New checks cfg and builds a Transport; Start begins sending.
func New(cfg Config) (*Transport, error) {
	if cfg.ClusterID == "" || cfg.NodeID < 0 {
		return nil, fmt.Errorf("transport: cluster id and node id are required")
	}
	if cfg.Dial == nil {
		d := &net.Dialer{}
		cfg.Dial = d.DialContext
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	setDefault(&cfg.QueueSize, 1024)
	setDefault(&cfg.MaxFrameBytes, 16<<20)
	setDefault(&cfg.MaxSnapshotBytes, 1<<30)
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 2 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 5 * time.Second
	}
	t := &Transport{cfg: cfg, self: quorum.RaftID(cfg.NodeID), log: cfg.Logger.With("component", "raft-transport"),
		lanes: map[int32][2]*lane{}, conns: map[net.Conn]bool{}, stop: make(chan struct{})}
	for id, addr := range cfg.Peers {
		if id == cfg.NodeID {
			continue
		}
		t.lanes[id] = [2]*lane{newLane(t, id, addr, laneMsg), newLane(t, id, addr, laneSnap)}
	}
	return t, nil
}

func setDefault(v *int, d int) {
	if *v <= 0 {
		*v = d
	}
}

// Start starts the senders; inbound messages and send reports go to h.
// It must be called before Serve or HandleConn.
func (t *Transport) Start(h Handler) {
	t.handler = h
	for _, ls := range t.lanes {
		for _, l := range ls {
			t.wg.Add(1)
			go l.run()
		}
	}
}

// Send queues msgs (quorum.Transport). It never blocks.
func (t *Transport) Send(msgs []*pb.Message) {
	for _, m := range msgs {
		to := quorum.NodeID(m.GetTo())
		ls, ok := t.lanes[to]
		if !ok {
			t.log.Warn("raft message to a node outside the address book dropped", "to", to, "type", m.GetType())
			continue
		}
		snap := m.GetType() == pb.MsgSnap
		b, err := proto.Marshal(m)
		if err != nil {
			// Cannot happen for messages raft built; report as a loss.
			t.log.Error("marshal raft message", "err", err)
			t.failed(m.GetTo(), snap)
			continue
		}
		l := ls[laneMsg]
		if snap {
			l = ls[laneSnap]
		}
		if !l.enqueue(b) {
			t.failed(m.GetTo(), snap)
		}
	}
}

// failed reports a message that will not be delivered.
func (t *Transport) failed(to uint64, snap bool) {
	if t.handler == nil {
		return // not started: nobody to tell
	}
	t.handler.ReportUnreachable(to)
	if snap {
		t.handler.ReportSnapshot(to, raft.SnapshotFailure)
	}
}

// PeerStatus is what the transport knows about one peer.
type PeerStatus struct {
	NodeID    int32
	Addr      string
	Connected bool   // the message lane has a live connection
	LastError string // of the message lane's last failed dial or write
	Dropped   uint64 // messages dropped (queue full or connection lost)
}

// Peers reports every peer's connection state, by node id.
func (t *Transport) Peers() []PeerStatus {
	var out []PeerStatus
	for id, ls := range t.lanes {
		out = append(out, ls[laneMsg].status(id))
	}
	slices.SortFunc(out, func(a, b PeerStatus) int { return cmp.Compare(a.NodeID, b.NodeID) })
	return out
}

// Close stops the senders and the listeners and closes every connection.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	close(t.stop)
	for _, ln := range t.listeners {
		ln.Close()
	}
	for c := range t.conns {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	return nil
}

// track registers an inbound connection so Close can end it; false if the
// transport is closed.
func (t *Transport) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.conns[c] = true
	return true
}

func (t *Transport) untrack(c net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.conns, c)
}

func (t *Transport) deadline(d time.Duration) time.Time { return t.cfg.Clock.Now().Add(d) }
