package quorum

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/gregor-broker/gregor/internal/clock"
)

// Node runs one Peer on its own goroutine (the raft loop) and offers it to
// the rest of the process: proposals, waiting for entries to commit or for
// the local state to catch up, leadership, status, and the inbound side of
// the Transport. All its methods are safe for concurrent use.
type Node struct {
	cfg  Config
	peer *Peer

	inbox    chan *pb.Message
	reqs     chan func()
	tickC    chan struct{}
	reportMu sync.Mutex
	reports  []report
	reportC  chan struct{}
	stopC    chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	timerMu  sync.Mutex
	timer    clock.Timer
	stopped  bool // timerMu

	leadMu  sync.Mutex
	lead    Leadership
	leadC   chan struct{} // closed at the next leadership change
	applied atomic.Uint64
	dropped atomic.Uint64
	err     error // set before done is closed

	// Owned by the raft loop.
	props   []*propReq
	waiters []*waiter
	reads   map[uint64]*readReq
	readSeq uint64
	ticks   int
	last    EntryID // last entry applied or restored
	// When each member was last heard from and last caught up (leader's
	// view, for Status).
	heard, caughtUp map[uint64]time.Time
}

type report struct {
	to       uint64
	snapshot bool
	ok       bool
}

type propReq struct {
	ctx  context.Context
	data []byte
	done chan propResult
}

type propResult struct {
	id  EntryID
	err error
}

type readReq struct {
	ctx  context.Context
	done chan uint64
}

// Open opens the Peer in cfg.Dir and starts the raft loop.
func Open(cfg Config) (*Node, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	n := &Node{
		cfg:     cfg,
		inbox:   make(chan *pb.Message, cfg.InboxSize),
		reqs:    make(chan func()),
		tickC:   make(chan struct{}, 4*cfg.Timing.ElectionTicks),
		reportC: make(chan struct{}, 1),
		stopC:   make(chan struct{}),
		done:    make(chan struct{}),
		leadC:   make(chan struct{}),
		lead:    Leadership{Leader: NoLeader},
		reads:   map[uint64]*readReq{},
		heard:   map[uint64]time.Time{},

		caughtUp: map[uint64]time.Time{},
	}
	p, err := NewPeer(cfg, nodeObserver{n})
	if err != nil {
		return nil, err
	}
	n.peer = p
	st := p.Status()
	n.applied.Store(st.Applied)
	n.last = p.applied
	n.armTick()
	go n.run()
	return n, nil
}

func (n *Node) armTick() {
	n.timerMu.Lock()
	defer n.timerMu.Unlock()
	if n.stopped {
		return
	}
	n.timer = n.cfg.Clock.AfterFunc(n.cfg.Timing.Tick, func() {
		select {
		case n.tickC <- struct{}{}:
		default: // the loop is behind; raft's clock runs slow rather than piling up
		}
		n.armTick()
	})
}

func (n *Node) run() {
	defer close(n.done)
	for {
		select {
		case <-n.stopC:
			n.stop(ErrStopped)
			return
		case <-n.tickC:
			n.peer.Tick()
			n.onTick()
		case m := <-n.inbox:
			n.step(m)
			n.drainInbox()
		case <-n.reportC:
			n.drainReports()
		case f := <-n.reqs:
			f()
			n.drainReqs()
		}
		n.flushProposals()
		if err := n.peer.Process(); err != nil {
			n.stop(err)
			return
		}
	}
}

func (n *Node) step(m *pb.Message) {
	n.heard[m.GetFrom()] = n.cfg.Clock.Now()
	n.peer.Step(m)
}

// drainInbox steps what else has arrived, so one Ready (one fsync) covers
// a burst of messages.
func (n *Node) drainInbox() {
	for range 256 {
		select {
		case m := <-n.inbox:
			n.step(m)
		default:
			return
		}
	}
}

func (n *Node) drainReqs() {
	for range 256 {
		select {
		case f := <-n.reqs:
			f()
		default:
			return
		}
	}
}

func (n *Node) drainReports() {
	n.reportMu.Lock()
	rs := n.reports
	n.reports = nil
	n.reportMu.Unlock()
	for _, r := range rs {
		if r.snapshot {
			n.peer.ReportSnapshot(r.to, r.ok)
		} else {
			n.peer.ReportUnreachable(r.to)
		}
	}
}

// onTick retries unanswered ReadIndex requests once per election timeout
// (raft drops them while no leader is known) and forgets abandoned waits.
func (n *Node) onTick() {
	n.ticks++
	now := n.cfg.Clock.Now()
	n.peer.visitCaughtUp(func(id uint64) { n.caughtUp[id] = now })
	if n.ticks%n.cfg.Timing.ElectionTicks == 0 {
		n.retryReads()
	}
	n.waiters = dropDone(n.waiters)
}

func (n *Node) flushProposals() {
	if len(n.props) == 0 {
		return
	}
	var live []*propReq
	var data [][]byte
	for _, p := range n.props {
		if p.ctx.Err() == nil {
			live = append(live, p)
			data = append(data, p.data)
		}
	}
	n.props = nil
	if len(live) == 0 {
		return
	}
	ids, err := n.peer.Propose(data)
	if perr := n.peer.Err(); perr != nil {
		err = fmt.Errorf("%w: %w", ErrStopped, perr)
	}
	for i, p := range live {
		if i < len(ids) {
			p.done <- propResult{id: ids[i]}
		} else {
			p.done <- propResult{err: err}
		}
	}
}

// stop ends the loop: everything waiting fails with err.
func (n *Node) stop(err error) {
	n.timerMu.Lock()
	n.stopped = true
	if n.timer != nil {
		n.timer.Stop()
	}
	n.timerMu.Unlock()
	if err != ErrStopped {
		err = fmt.Errorf("%w: %w", ErrStopped, err)
	}
	n.err = err
	for _, p := range n.props {
		p.done <- propResult{err: err}
	}
	for _, w := range n.waiters {
		w.finish(err)
	}
	n.props, n.waiters = nil, nil
}

// stopErr is why the loop ended; valid once done is closed.
func (n *Node) stopErr() error {
	<-n.done
	return n.err
}

// submit runs f on the raft loop.
func (n *Node) submit(ctx context.Context, f func()) error {
	select {
	case n.reqs <- f:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return n.stopErr()
	}
}

// Propose appends data to the log if this node is the leader, and returns
// the EntryID it got once it is durable here (not yet committed: see
// WaitCommitted). A follower answers *NotLeaderError at once (proposal
// forwarding is off: only the controller on the leader proposes). If ctx
// ends first the entry may still be appended and commit.
func (n *Node) Propose(ctx context.Context, data []byte) (EntryID, error) {
	if len(data) == 0 {
		return EntryID{}, ErrEmptyProposal
	}
	if len(data) > n.cfg.MaxEntryBytes {
		return EntryID{}, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(data), n.cfg.MaxEntryBytes)
	}
	req := &propReq{ctx: ctx, data: data, done: make(chan propResult, 1)}
	if err := n.submit(ctx, func() { n.props = append(n.props, req) }); err != nil {
		return EntryID{}, err
	}
	select {
	case r := <-req.done:
		return r.id, r.err
	case <-ctx.Done():
		return EntryID{}, ctx.Err()
	case <-n.done:
		return EntryID{}, n.stopErr()
	}
}

// ProposeAndWait is Propose then WaitCommitted.
func (n *Node) ProposeAndWait(ctx context.Context, data []byte) (EntryID, error) {
	id, err := n.Propose(ctx, data)
	if err != nil {
		return id, err
	}
	return id, n.WaitCommitted(ctx, id)
}

// ProposeConfChange proposes a membership change (leader only). Its effect
// shows in Status once applied.
func (n *Node) ProposeConfChange(ctx context.Context, cc pb.ConfChangeI) error {
	errC := make(chan error, 1)
	if err := n.submit(ctx, func() { errC <- n.peer.ProposeConfChange(cc) }); err != nil {
		return err
	}
	return n.await(ctx, errC)
}

// WaitCommitted waits until this node has applied the entry id (nil), or
// knows it never will: ErrProposalLost when another entry committed at its
// index or a later term committed below it, ErrProposalUnknown when a
// snapshot from a later term covered it.
func (n *Node) WaitCommitted(ctx context.Context, id EntryID) error {
	return n.wait(ctx, &waiter{ctx: ctx, id: id, committed: true})
}

// WaitApplied waits until the state machine has applied index (an entry or
// a snapshot at or past it).
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	if n.applied.Load() >= index {
		return nil
	}
	return n.wait(ctx, &waiter{ctx: ctx, id: EntryID{Index: index}})
}

func (n *Node) wait(ctx context.Context, w *waiter) error {
	w.done = make(chan error, 1)
	if err := n.submit(ctx, func() {
		if !n.resolveNow(w) {
			n.waiters = append(n.waiters, w)
		}
	}); err != nil {
		return err
	}
	return n.await(ctx, w.done)
}

func (n *Node) await(ctx context.Context, c chan error) error {
	select {
	case err := <-c:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return n.stopErr()
	}
}

// ReadIndex returns the leader's commit index, confirmed by a quorum after
// the call began (raft's ReadIndex, forwarded by followers to the leader).
// Once Applied reaches it, this node has seen every entry committed before
// the call. Unlike the commit index a leader's heartbeat carries (capped at
// what the follower already has), it tells a lagging node how far behind it
// is. It waits while no leader is known.
func (n *Node) ReadIndex(ctx context.Context) (uint64, error) {
	req := &readReq{ctx: ctx, done: make(chan uint64, 1)}
	if err := n.submit(ctx, func() {
		n.readSeq++
		n.reads[n.readSeq] = req
		n.peer.ReadIndex(readCtx(n.readSeq))
	}); err != nil {
		return 0, err
	}
	select {
	case i := <-req.done:
		return i, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-n.done:
		return 0, n.stopErr()
	}
}

// CaughtUp waits until this node has applied everything committed before
// the call (ReadIndex, then WaitApplied) and returns that index: the test a
// broker runs before it publishes its first metadata image (design §5.8.7).
func (n *Node) CaughtUp(ctx context.Context) (uint64, error) {
	i, err := n.ReadIndex(ctx)
	if err != nil {
		return 0, err
	}
	return i, n.WaitApplied(ctx, i)
}

func readCtx(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }

func (n *Node) retryReads() {
	for id, r := range n.reads {
		if r.ctx.Err() != nil {
			delete(n.reads, id)
			continue
		}
		n.peer.ReadIndex(readCtx(id))
	}
}

// Status is the node's current view of the quorum.
func (n *Node) Status(ctx context.Context) (Status, error) {
	c := make(chan Status, 1)
	if err := n.submit(ctx, func() { c <- n.status() }); err != nil {
		return Status{}, err
	}
	select {
	case s := <-c:
		return s, nil
	case <-ctx.Done():
		return Status{}, ctx.Err()
	case <-n.done:
		return Status{}, n.stopErr()
	}
}

func (n *Node) status() Status {
	s := n.peer.Status()
	now := n.cfg.Clock.Now()
	for i := range s.Replicas {
		r := &s.Replicas[i]
		id := RaftID(r.NodeID)
		if r.NodeID == n.cfg.NodeID {
			r.LastContact, r.LastCaughtUp = now, now
			r.DirectoryID = n.peer.Meta().DirectoryID
			continue
		}
		r.LastContact, r.LastCaughtUp = n.heard[id], n.caughtUp[id]
		if n.cfg.PeerDirectories != nil {
			r.DirectoryID = n.cfg.PeerDirectories.Known(r.NodeID)
		}
	}
	return s
}

// Leadership is the latest term and leader this node knows of.
func (n *Node) Leadership() Leadership {
	n.leadMu.Lock()
	defer n.leadMu.Unlock()
	return n.lead
}

// LeaderChanged returns a channel closed at the next change of
// Leadership. Take the channel, then read Leadership, then wait, so no
// change is missed.
func (n *Node) LeaderChanged() <-chan struct{} {
	n.leadMu.Lock()
	defer n.leadMu.Unlock()
	return n.leadC
}

// Applied is the index the state machine has applied up to.
func (n *Node) Applied() uint64 { return n.applied.Load() }

// Meta is the identity of the node's directory.
func (n *Node) Meta() Meta { return n.peer.Meta() }

// Done is closed when the raft loop has ended (Close, or a failure: Err).
func (n *Node) Done() <-chan struct{} { return n.done }

// Err is why the raft loop ended, or nil while it runs.
func (n *Node) Err() error {
	select {
	case <-n.done:
		return n.err
	default:
		return nil
	}
}

// DroppedMessages counts inbound messages dropped because the inbox was
// full (raft recovers from loss; a steady count means the loop is too slow).
func (n *Node) DroppedMessages() uint64 { return n.dropped.Load() }

// Deliver hands the raft loop a message from another node. It never
// blocks: when the inbox is full the message is dropped.
func (n *Node) Deliver(m *pb.Message) {
	select {
	case n.inbox <- m:
	default:
		n.dropped.Add(1)
	}
}

// ReportUnreachable tells raft a send to raft id to failed.
func (n *Node) ReportUnreachable(to uint64) { n.queueReport(report{to: to}) }

// ReportSnapshot tells raft how sending a snapshot to raft id to ended.
// The Transport must call it once for every MsgSnap it was given.
func (n *Node) ReportSnapshot(to uint64, status raft.SnapshotStatus) {
	n.queueReport(report{to: to, snapshot: true, ok: status == raft.SnapshotFinish})
}

func (n *Node) queueReport(r report) {
	n.reportMu.Lock()
	n.reports = append(n.reports, r)
	n.reportMu.Unlock()
	select {
	case n.reportC <- struct{}{}:
	default:
	}
}

// Close stops the raft loop and releases the WAL. Waiters get ErrStopped.
func (n *Node) Close() error {
	n.stopOnce.Do(func() { close(n.stopC) })
	<-n.done
	return n.peer.Close()
}
