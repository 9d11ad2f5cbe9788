package quorumtest

import (
	"sync"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/gregor-broker/gregor/internal/quorum"
)

// Receiver is the inbound side of a quorum member (quorum.Node has it).
type Receiver interface {
	Deliver(m *pb.Message)
	ReportUnreachable(to uint64)
	ReportSnapshot(to uint64, status raft.SnapshotStatus)
}

// LocalNet connects quorum.Nodes in one process: Send marshals each message
// and hands the decoded copy to the receiver at once, as a lossless
// instantaneous network would, except over cut links and to detached
// nodes, where the sender hears that the peer is unreachable. It is for
// tests of goroutine-driven Nodes (run them in a testing/synctest bubble
// for virtual time); the deterministic Sim has its own network.
type LocalNet struct {
	mu    sync.Mutex
	nodes map[int32]Receiver
	cut   map[[2]int32]bool
}

// NewLocalNet returns an empty network.
func NewLocalNet() *LocalNet {
	return &LocalNet{nodes: map[int32]Receiver{}, cut: map[[2]int32]bool{}}
}

// Attach makes node id reachable through r (replacing a previous one).
func (l *LocalNet) Attach(id int32, r Receiver) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nodes[id] = r
}

// Detach makes node id unreachable, as if it were down.
func (l *LocalNet) Detach(id int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.nodes, id)
}

// Isolate cuts node id off from every other node, both ways.
func (l *LocalNet) Isolate(id int32, others ...int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range others {
		l.cut[[2]int32{id, o}] = true
		l.cut[[2]int32{o, id}] = true
	}
}

// Heal restores every link.
func (l *LocalNet) Heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.cut)
}

// Transport returns the Transport for node from.
func (l *LocalNet) Transport(from int32) quorum.Transport { return localTransport{l, from} }

type localTransport struct {
	l    *LocalNet
	from int32
}

func (t localTransport) Send(msgs []*pb.Message) {
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	sender := t.l.nodes[t.from]
	for _, m := range msgs {
		to := quorum.NodeID(m.GetTo())
		r, ok := t.l.nodes[to]
		snap := m.GetType() == pb.MsgSnap
		if !ok || t.l.cut[[2]int32{t.from, to}] {
			if sender != nil {
				sender.ReportUnreachable(m.GetTo())
				if snap {
					sender.ReportSnapshot(m.GetTo(), raft.SnapshotFailure)
				}
			}
			continue
		}
		b, err := proto.Marshal(m)
		if err != nil {
			panic(err)
		}
		c := &pb.Message{}
		if err := proto.Unmarshal(b, c); err != nil {
			panic(err)
		}
		r.Deliver(c)
		if snap && sender != nil {
			sender.ReportSnapshot(m.GetTo(), raft.SnapshotFinish)
		}
	}
}
