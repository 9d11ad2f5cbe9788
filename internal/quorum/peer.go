package quorum

import (
	"bytes"
	"fmt"
	"log/slog"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/gregor-broker/gregor/internal/quorum/wal"
)

// StateMachine is what the quorum replicates: the layer above implements it.
// Every method is called on the raft goroutine, in log order.
type StateMachine interface {
	// Apply applies a committed normal entry. Entries come in index order,
	// each exactly once per process lifetime after the last Restore;
	// after a restart they are replayed from the snapshot on (the state
	// machine's effects on anything outside itself must tolerate that).
	// Empty entries (a new leader's first entry) and membership changes
	// are not passed on. An error stops the node.
	Apply(e Entry) error
	// Snapshot returns the state as of the last entry applied.
	Snapshot() ([]byte, error)
	// Restore replaces the whole state with a snapshot's data, taken at
	// id. It is called once when the node opens, and again whenever the
	// leader sends a snapshot. An error stops the node.
	Restore(id EntryID, data []byte) error
}

// Transport carries raft messages to other nodes.
type Transport interface {
	// Send is called on the raft goroutine once everything the messages
	// depend on is durable. It must not block, must not change the
	// messages, and must marshal them before it returns (they share
	// entries with raft's log). Loss is fine; the Transport reports it
	// with Node.ReportUnreachable, and the end of every MsgSnap with
	// Node.ReportSnapshot.
	Send(msgs []*pb.Message)
}

// Observer hears what a Peer did, on the Peer's goroutine, after the Ready
// that did it was persisted and sent. Node implements it; a simulation may
// supply its own.
type Observer interface {
	// Applied reports every applied entry, empty and membership entries
	// included.
	Applied(id EntryID)
	// Restored reports a snapshot installed from the leader.
	Restored(id EntryID)
	// ReadIndex answers Peer.ReadIndex(rctx): the leader's commit index
	// when it confirmed its leadership.
	ReadIndex(rctx []byte, index uint64)
	// LeaderChanged reports a new term, leader or local role.
	LeaderChanged(l Leadership)
}

// Leadership is a node's view of who leads in which term.
type Leadership struct {
	Term   uint64
	Leader int32 // node id, NoLeader if unknown
	Local  bool  // this node is the leader
}

// Peer is the synchronous heart of a metadata quorum member: one
// raft.RawNode with its storage and state machine, and no goroutines,
// clocks or channels. Inputs (Tick, Step, Propose, ...) only feed raft;
// Process handles every Ready they produced: persist, send, apply,
// snapshot, Advance. A Node runs one Peer on its goroutine; a simulation
// drives many Peers from one goroutine, deterministically.
//
// A Peer is not safe for concurrent use. After an error from Process or
// Propose it is broken (Err) and does nothing more.
type Peer struct {
	cfg  Config
	id   uint64
	log  *slog.Logger
	rn   *raft.RawNode
	st   *storage
	sm   StateMachine
	tr   Transport
	obs  Observer
	meta Meta
	cs   *pb.ConfState
	err  error
	lead Leadership

	applied     EntryID
	snapshotted uint64 // index of the newest snapshot
}

// NewPeer opens cfg.Dir (see Bootstrap), restores the state machine from
// its snapshot and starts raft from the WAL. A single-voter quorum whose only
// voter is this node campaigns at once, so it leads without waiting for an
// election timeout. obs may be nil.
func NewPeer(cfg Config, obs Observer) (*Peer, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	st, snap, err := openStorage(cfg.FS, cfg.Dir, cfg.NodeID, wal.Options{SegmentBytes: cfg.WALSegmentBytes})
	if err != nil {
		return nil, err
	}
	if cfg.ClusterID != "" && st.meta.ClusterID != cfg.ClusterID {
		st.close()
		return nil, fmt.Errorf("%w: %s belongs to cluster %s, not %s", ErrCorrupt, cfg.Dir, st.meta.ClusterID, cfg.ClusterID)
	}
	md := snap.GetMetadata()
	p := &Peer{
		cfg: cfg, id: RaftID(cfg.NodeID), st: st, sm: cfg.StateMachine, tr: cfg.Transport, obs: obs,
		meta: st.meta, cs: proto.Clone(md.GetConfState()).(*pb.ConfState),
		log:         cfg.Logger.With("node", cfg.NodeID),
		applied:     EntryID{Index: md.GetIndex(), Term: md.GetTerm()},
		snapshotted: md.GetIndex(),
	}
	if p.obs == nil {
		p.obs = nopObserver{}
	}
	if err := p.sm.Restore(p.applied, snap.GetData()); err != nil {
		st.close()
		return nil, fmt.Errorf("quorum: restore state machine from snapshot %v: %w", p.applied, err)
	}
	p.rn, err = raft.NewRawNode(&raft.Config{
		ID:                        p.id,
		ElectionTick:              cfg.Timing.ElectionTicks,
		HeartbeatTick:             cfg.Timing.HeartbeatTicks,
		Storage:                   st.ms,
		Applied:                   md.GetIndex(),
		MaxSizePerMsg:             cfg.MaxSizePerMsg,
		MaxInflightMsgs:           cfg.MaxInflightMsgs,
		MaxUncommittedEntriesSize: cfg.MaxUncommittedEntriesSize,
		CheckQuorum:               true,
		PreVote:                   true,
		StepDownOnRemoval:         true,
		DisableProposalForwarding: true,
		Logger:                    raftLogger{cfg.Logger},
	})
	if err != nil {
		st.close()
		return nil, err
	}
	p.lead = Leadership{Leader: NoLeader}
	if vs := p.cs.GetVoters(); len(vs) == 1 && vs[0] == p.id {
		_ = p.rn.Campaign()
	}
	p.log.Info("raft node started", "raft_id", p.id, "cluster", p.meta.ClusterID, "voters", voters(p.cs),
		"snapshot", p.applied, "last_index", p.lastIndex(), "term", st.hs.GetTerm(), "commit", st.hs.GetCommit())
	if err := p.Process(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Meta is the identity of the directory this Peer runs from.
func (p *Peer) Meta() Meta { return p.meta }

// Err is the error that broke the Peer, if any.
func (p *Peer) Err() error { return p.err }

// Tick advances raft's logical clock by one tick.
func (p *Peer) Tick() { p.rn.Tick() }

// Step feeds a message from another node. Messages raft does not accept
// (from unknown peers, local types) are dropped.
func (p *Peer) Step(m *pb.Message) {
	if err := p.rn.Step(m); err != nil {
		p.log.Debug("raft message dropped", "type", m.GetType(), "from", NodeID(m.GetFrom()), "err", err)
	}
}

// ReportUnreachable tells raft the last send to raft id to failed.
func (p *Peer) ReportUnreachable(to uint64) { p.rn.ReportUnreachable(to) }

// ReportSnapshot tells raft how sending a snapshot to raft id to ended.
func (p *Peer) ReportSnapshot(to uint64, ok bool) {
	st := raft.SnapshotFinish
	if !ok {
		st = raft.SnapshotFailure
	}
	p.rn.ReportSnapshot(to, st)
}

// ReadIndex asks the leader for its commit index (forwarded to it by a
// follower); the answer comes to Observer.ReadIndex with rctx. Raft drops
// the request when no leader is known: the caller retries.
func (p *Peer) ReadIndex(rctx []byte) { p.rn.ReadIndex(rctx) }

// Campaign starts an election now.
func (p *Peer) Campaign() error { return p.rn.Campaign() }

// Propose appends data, one entry each, to the leader's log and makes them
// durable here. It returns the EntryID of each accepted entry, in order; an
// error for the first one refused (and the rest). Only the leader accepts
// proposals (*NotLeaderError otherwise); an accepted entry may still be lost
// if leadership changes before it commits.
func (p *Peer) Propose(data [][]byte) ([]EntryID, error) {
	if err := p.Process(); err != nil {
		return nil, err
	}
	if bs := p.rn.BasicStatus(); bs.RaftState != raft.StateLeader {
		return nil, &NotLeaderError{Leader: NodeID(bs.Lead), Term: bs.GetTerm()}
	}
	n, perr := 0, error(nil)
	for _, d := range data {
		if len(d) == 0 {
			perr = ErrEmptyProposal
			break
		}
		if len(d) > p.cfg.MaxEntryBytes {
			perr = fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(d), p.cfg.MaxEntryBytes)
			break
		}
		if err := p.rn.Propose(d); err != nil {
			perr = fmt.Errorf("%w: %v", ErrProposalDropped, err)
			break
		}
		n++
	}
	if n == 0 {
		return nil, perr
	}
	// Nothing ran between the proposals and this Ready, so its last n
	// entries are the ones just appended, in order.
	rd := p.rn.Ready()
	ents := rd.Entries
	if len(ents) < n {
		panic(fmt.Sprintf("quorum: %d proposals accepted but the Ready holds %d entries", n, len(ents)))
	}
	ids := make([]EntryID, n)
	for i, e := range ents[len(ents)-n:] {
		if !bytes.Equal(e.GetData(), data[i]) {
			panic(fmt.Sprintf("quorum: proposal %d is not entry %d", i, e.GetIndex()))
		}
		ids[i] = EntryID{Index: e.GetIndex(), Term: e.GetTerm()}
	}
	if err := p.handle(&rd); err != nil {
		return nil, p.fail(err)
	}
	if err := p.Process(); err != nil {
		return nil, err
	}
	return ids, perr
}

// ProposeConfChange proposes a membership change (leader only).
func (p *Peer) ProposeConfChange(cc pb.ConfChangeI) error {
	if bs := p.rn.BasicStatus(); bs.RaftState != raft.StateLeader {
		return &NotLeaderError{Leader: NodeID(bs.Lead), Term: bs.GetTerm()}
	}
	if err := p.rn.ProposeConfChange(cc); err != nil {
		return fmt.Errorf("%w: %v", ErrProposalDropped, err)
	}
	return p.Process()
}

// Process handles every pending Ready.
func (p *Peer) Process() error {
	if p.err != nil {
		return p.err
	}
	for p.rn.HasReady() {
		rd := p.rn.Ready()
		if err := p.handle(&rd); err != nil {
			return p.fail(err)
		}
	}
	return nil
}

func (p *Peer) fail(err error) error {
	if p.err == nil {
		p.err = fmt.Errorf("quorum: node %d: %w", p.cfg.NodeID, err)
		p.log.Error("raft node stopped", "err", err)
	}
	return p.err
}

// Close releases the WAL. It does not sync: everything raft needed durable
// was synced when it was written.
func (p *Peer) Close() error {
	if p.err == nil {
		p.err = ErrStopped
	}
	return p.st.close()
}

func (p *Peer) lastIndex() uint64 {
	i, _ := p.st.ms.LastIndex()
	return i
}

type nopObserver struct{}

func (nopObserver) Applied(EntryID)          {}
func (nopObserver) Restored(EntryID)         {}
func (nopObserver) ReadIndex([]byte, uint64) {}
func (nopObserver) LeaderChanged(Leadership) {}
