// Package quorumtest runs a whole metadata quorum in one goroutine, in
// virtual time, deterministically from a seed: quorum.Peers on MemFS disks,
// an in-memory network with latency, loss and partitions, crashes (durable
// state only, or torn) and restarts. Raft's election jitter comes from
// crypto/rand, which cryptotest.SetGlobalRandom pins to the seed, so a seed
// replays exactly (the test must not be parallel).
//
// After every event the Sim checks raft's safety properties: at most one
// leader per term; every node applies a prefix of one common sequence (same
// index, same term and data); each node's applied index only grows within a
// process lifetime; a restored snapshot agrees with that sequence. Callers add
// their own checks with AddCheck (a controller simulation checks its image
// the same way). On failure it prints the seed and the last events.
package quorumtest

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"testing"
	"testing/cryptotest"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/gregor-broker/gregor/internal/quorum"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Options shape a simulated cluster.
type Options struct {
	Nodes  int // voters, node ids 0..Nodes-1
	Seed   uint64
	Timing quorum.Timing // default quorum.DefaultTiming()
	// Latency of one message is uniform in [MinLatency, MaxLatency]
	// (defaults 1 ms and 10 ms); each directed link is FIFO, like TCP.
	MinLatency, MaxLatency time.Duration
	// Storage knobs, small by default so snapshots, compaction, snapshot
	// transfer and WAL rolls all happen in short runs.
	SnapshotEntries     uint64 // default 25
	SnapshotKeepEntries uint64 // default 5
	WALSegmentBytes     int64  // default 4 KiB
	// BootstrapData is the state machine's initial state in every
	// voter's bootstrap snapshot (quorum.BootstrapConfig.Data).
	BootstrapData []byte
	// NewStateMachine builds a node's state machine at every (re)start;
	// default NewLogSM.
	NewStateMachine func(node int32) quorum.StateMachine
	// Replay is how to run the failing seed again, with %d for the seed,
	// when it is not quorum's own -sim.seed.
	Replay string
	// Fail, if set, is called instead of t.Fatalf with the failure report;
	// it must not return (panic or runtime.Goexit). Mutation tests use it
	// to expect a failure.
	Fail func(report string)
}

// Node is one simulated member.
type Node struct {
	ID int32
	// What the node promised others it had made durable: the highest term
	// it sent a message in, and the vote it granted in that term.
	promisedTerm uint64
	promisedVote int32
	FS           *vfs.MemFS
	Peer         *quorum.Peer // nil while crashed
	SM           quorum.StateMachine
	incarnation  int
	applied      quorum.EntryID // within this incarnation
}

// Up reports whether the node is running.
func (n *Node) Up() bool { return n.Peer != nil }

// Sim is a deterministic cluster.
type Sim struct {
	t      *testing.T
	opts   Options
	rng    *rand.Rand
	now    time.Duration
	seq    uint64
	events eventHeap
	nodes  []*Node

	cut      map[[2]int32]bool // directed links that lose everything
	dropRate float64
	linkLast map[[2]int32]time.Duration

	hist       map[uint64]histEntry // index → what committed there
	termLeader map[uint64]int32
	checks     []func() error
	trace      []string
	onApplied  []func(node int32, id quorum.EntryID)
	// Counters, so tests can show that the faults they ask for happen.
	Delivered, Installed, Crashes, Elections int
	failed                                   bool
	digest                                   uint64
}

type histEntry struct {
	term    uint64
	data    []byte
	visible bool // a normal entry with data, passed to StateMachine.Apply
}

const traceLen = 300

// New bootstraps opts.Nodes voters on fresh MemFS disks and starts them.
func New(t *testing.T, opts Options) *Sim {
	if opts.Nodes <= 0 {
		opts.Nodes = 3
	}
	if opts.Timing == (quorum.Timing{}) {
		opts.Timing = quorum.DefaultTiming()
	}
	if opts.MinLatency <= 0 {
		opts.MinLatency = time.Millisecond
	}
	if opts.MaxLatency < opts.MinLatency {
		opts.MaxLatency = 10 * opts.MinLatency
	}
	if opts.SnapshotEntries == 0 {
		opts.SnapshotEntries = 25
	}
	if opts.SnapshotKeepEntries == 0 {
		opts.SnapshotKeepEntries = 5
	}
	if opts.WALSegmentBytes == 0 {
		opts.WALSegmentBytes = 4 << 10
	}
	if opts.NewStateMachine == nil {
		opts.NewStateMachine = func(int32) quorum.StateMachine { return NewLogSM() }
	}
	cryptotest.SetGlobalRandom(t, opts.Seed)
	s := &Sim{
		t: t, opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, 0x9e3779b97f4a7c15)),
		cut: map[[2]int32]bool{}, linkLast: map[[2]int32]time.Duration{},
		hist: map[uint64]histEntry{}, termLeader: map[uint64]int32{},
	}
	var voters []int32
	for i := range opts.Nodes {
		voters = append(voters, int32(i))
	}
	for _, id := range voters {
		fs := vfs.NewMem()
		if err := fs.MkdirAll("/data", 0o755); err != nil {
			t.Fatal(err)
		}
		fs.SyncDir("/")
		err := quorum.Bootstrap(fs, "/data/meta", quorum.BootstrapConfig{
			ClusterID: "sim", NodeID: id, Voters: voters, Rand: s.randReader(), Data: opts.BootstrapData,
		})
		if err != nil {
			t.Fatalf("bootstrap node %d: %v", id, err)
		}
		s.nodes = append(s.nodes, &Node{ID: id, FS: fs})
	}
	for _, n := range s.nodes {
		s.start(n)
	}
	return s
}

const fnvPrime = 1099511628211

func fnv1a(h uint64, vs ...uint64) uint64 {
	for _, v := range vs {
		h = (h ^ v) * fnvPrime
	}
	return h
}

// Digest is a hash of every event processed so far (time, kind, nodes and
// message bytes): two runs of one seed must agree on it.
func (s *Sim) Digest() uint64 { return s.digest }

// Seed is the seed this Sim replays from.
func (s *Sim) Seed() uint64 { return s.opts.Seed }

// Now is the virtual time since the start.
func (s *Sim) Now() time.Duration { return s.now }

// Rand is the Sim's seeded PRNG, for workloads.
func (s *Sim) Rand() *rand.Rand { return s.rng }

// Nodes lists the members.
func (s *Sim) Nodes() []*Node { return s.nodes }

// Node returns member id.
func (s *Sim) Node(id int32) *Node { return s.nodes[id] }

// AddCheck adds an invariant run after every event.
func (s *Sim) AddCheck(f func() error) { s.checks = append(s.checks, f) }

// OnApplied registers f to hear every entry any node applies.
func (s *Sim) OnApplied(f func(node int32, id quorum.EntryID)) { s.onApplied = append(s.onApplied, f) }

func (s *Sim) randReader() *prngReader { return &prngReader{s.rng} }

type prngReader struct{ r *rand.Rand }

func (p *prngReader) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(p.r.Uint32())
	}
	return len(b), nil
}

func (s *Sim) describeNodes() string {
	var b strings.Builder
	for _, n := range s.nodes {
		if !n.Up() {
			fmt.Fprintf(&b, "  node %d: down\n", n.ID)
			continue
		}
		st := n.Peer.Status()
		fmt.Fprintf(&b, "  node %d: %s term %d leader %d commit %d applied %d last %d snapshot %d replicas %+v\n",
			n.ID, st.Role, st.Term, st.Leader, st.Commit, st.Applied, st.LastIndex, st.SnapshotIndex, st.Replicas)
	}
	return b.String()
}

// Tracef records an event in the trace printed on failure.
func (s *Sim) Tracef(format string, args ...any) {
	line := fmt.Sprintf("%9.3fs ", s.now.Seconds()) + fmt.Sprintf(format, args...)
	if len(s.trace) == traceLen {
		s.trace = s.trace[1:]
	}
	s.trace = append(s.trace, line)
}

// Fatalf fails the test with the seed, how to replay it, and the trace.
func (s *Sim) Fatalf(format string, args ...any) {
	s.t.Helper()
	replay := fmt.Sprintf("go test ./internal/quorum/ -run '%s' -sim.seed=%d", s.t.Name(), s.opts.Seed)
	if s.opts.Replay != "" {
		replay = fmt.Sprintf(s.opts.Replay, s.opts.Seed)
	}
	report := fmt.Sprintf("seed %d at %v: %s\nreplay: %s\nlast events:\n%s\nnodes now:\n%s",
		s.opts.Seed, s.now, fmt.Sprintf(format, args...), replay, strings.Join(s.trace, "\n"), s.describeNodes())
	if s.opts.Fail != nil {
		s.failed = true
		s.opts.Fail(report)
	}
	s.t.Fatal(report)
}

func (s *Sim) config(n *Node) quorum.Config {
	return quorum.Config{
		FS: n.FS, Dir: "/data/meta", NodeID: n.ID, ClusterID: "sim",
		StateMachine: n.SM, Transport: &simTransport{s: s, from: n.ID, inc: n.incarnation},
		Timing:              s.opts.Timing,
		SnapshotEntries:     s.opts.SnapshotEntries,
		SnapshotKeepEntries: s.opts.SnapshotKeepEntries,
		WALSegmentBytes:     s.opts.WALSegmentBytes,
	}
}

func (s *Sim) start(n *Node) {
	defer s.recoverPanic()
	n.incarnation++
	n.SM = &CheckedSM{s: s, node: n, inner: s.opts.NewStateMachine(n.ID)}
	n.applied = quorum.EntryID{}
	p, err := quorum.NewPeer(s.config(n), &simObserver{s: s, n: n})
	if err != nil {
		s.Fatalf("start node %d: %v", n.ID, err)
	}
	n.Peer = p
	s.checkPromises(n)
	s.Tracef("node %d started (incarnation %d): %+v", n.ID, n.incarnation, p.Status().Leadership)
	// Nodes tick at their own phase.
	s.schedule(time.Duration(s.rng.Int64N(int64(s.opts.Timing.Tick))), event{kind: evTick, to: n.ID, inc: n.incarnation})
	s.check()
}

// Crash stops node id as a power loss would: only what was fsynced
// survives, and with torn a random prefix of the unsynced tail of each file.
func (s *Sim) Crash(id int32, torn bool) {
	n := s.nodes[id]
	if !n.Up() {
		return
	}
	if torn {
		n.FS = n.FS.CrashCloneTorn(rand.New(rand.NewPCG(s.rng.Uint64(), 1)))
	} else {
		n.FS = n.FS.CrashClone()
	}
	n.Peer.Close()
	n.Peer = nil
	s.Crashes++
	n.SM = nil
	s.Tracef("node %d crashed (torn=%v)", id, torn)
}

// Restart starts a crashed node from its disk.
func (s *Sim) Restart(id int32) {
	if n := s.nodes[id]; !n.Up() {
		s.start(n)
	}
}

// Partition cuts every link between the groups (nodes in no group keep
// their links). Partition() with no groups heals.
func (s *Sim) Partition(groups ...[]int32) {
	s.cut = map[[2]int32]bool{}
	group := map[int32]int{}
	for g, ids := range groups {
		for _, id := range ids {
			group[id] = g + 1
		}
	}
	for a := range s.nodes {
		for b := range s.nodes {
			ga, gb := group[int32(a)], group[int32(b)]
			if ga != 0 && gb != 0 && ga != gb {
				s.cut[[2]int32{int32(a), int32(b)}] = true
			}
		}
	}
	s.Tracef("partition %v", groups)
}

// CutLink loses everything sent from a to b (one way).
func (s *Sim) CutLink(a, b int32) {
	s.cut[[2]int32{a, b}] = true
	s.Tracef("cut %d->%d", a, b)
}

// Heal restores every link.
func (s *Sim) Heal() { s.Partition() }

// SetDropRate makes each message lost with probability p.
func (s *Sim) SetDropRate(p float64) {
	s.dropRate = p
	s.Tracef("drop rate %.2f", p)
}

// Propose proposes data on node id (which must be up).
func (s *Sim) Propose(id int32, data []byte) (quorum.EntryID, error) {
	n := s.nodes[id]
	if !n.Up() {
		return quorum.EntryID{}, quorum.ErrStopped
	}
	defer s.recoverPanic()
	ids, err := n.Peer.Propose([][]byte{data})
	s.afterEvent(n)
	if err != nil {
		return quorum.EntryID{}, err
	}
	s.Tracef("node %d proposed %q at %v", id, data, ids[0])
	return ids[0], nil
}

// Leaders returns the running nodes that believe they lead.
func (s *Sim) Leaders() []int32 {
	var out []int32
	for _, n := range s.nodes {
		if n.Up() && n.Peer.Status().Local {
			out = append(out, n.ID)
		}
	}
	return out
}

// Leader returns the leader of the highest term among running nodes that
// believe they lead, or NoLeader.
func (s *Sim) Leader() int32 {
	best, term := quorum.NoLeader, uint64(0)
	for _, id := range s.Leaders() {
		if t := s.nodes[id].Peer.Status().Term; t > term {
			best, term = id, t
		}
	}
	return best
}

// Applied returns node id's applied index (0 if down).
func (s *Sim) Applied(id int32) uint64 { return s.nodes[id].applied.Index }

// RunFor processes events for d of virtual time.
func (s *Sim) RunFor(d time.Duration) {
	end := s.now + d
	for s.events.Len() > 0 && s.events[0].at <= end {
		s.step()
	}
	s.now = end
}

// RunUntil processes events until cond holds (checked after each event) or
// limit passes; it reports whether cond held.
func (s *Sim) RunUntil(cond func() bool, limit time.Duration) bool {
	end := s.now + limit
	for !cond() {
		if s.events.Len() == 0 || s.events[0].at > end {
			s.now = end
			return cond()
		}
		s.step()
	}
	return true
}

// recoverPanic turns a panic under a Peer (raft's own assertions: a log
// that lost committed entries, say) into a test failure with the seed.
func (s *Sim) recoverPanic() {
	if r := recover(); r != nil {
		if s.failed {
			panic(r) // Options.Fail's own way out
		}
		s.Fatalf("panic: %v\n%s", r, debug.Stack())
	}
}

func (s *Sim) step() {
	defer s.recoverPanic()
	e := heap.Pop(&s.events).(*event)
	s.now = e.at
	s.digest = fnv1a(s.digest, uint64(e.at), uint64(e.kind), uint64(e.to), uint64(e.from), uint64(len(e.msg)))
	for _, b := range e.msg {
		s.digest = (s.digest ^ uint64(b)) * fnvPrime
	}
	n := s.nodes[e.to]
	if !n.Up() || e.inc != n.incarnation {
		// The node it was for crashed since. A message in flight to it
		// is lost with the connection, which its sender notices.
		if e.kind == evDeliver {
			s.reportUnreachable(e.to, e.from, e.snap)
		}
		return
	}
	switch e.kind {
	case evTick:
		n.Peer.Tick()
		s.schedule(s.opts.Timing.Tick, event{kind: evTick, to: e.to, inc: e.inc})
	case evDeliver:
		if s.cut[[2]int32{e.from, e.to}] {
			s.reportUnreachable(e.to, e.from, e.snap)
			return
		}
		m := &pb.Message{}
		if err := proto.Unmarshal(e.msg, m); err != nil {
			s.Fatalf("decode message: %v", err)
		}
		s.Delivered++
		n.Peer.Step(m)
		if e.snap {
			s.schedule(s.latency(), event{kind: evSnapStatus, to: e.from, inc: e.fromInc, from: e.to, ok: true})
		}
	case evUnreachable:
		n.Peer.ReportUnreachable(quorum.RaftID(e.from))
	case evSnapStatus:
		n.Peer.ReportSnapshot(quorum.RaftID(e.from), e.ok)
	}
	s.afterEvent(n)
}

func (s *Sim) afterEvent(n *Node) {
	if n.Up() {
		if err := n.Peer.Process(); err != nil {
			s.Fatalf("node %d: %v", n.ID, err)
		}
	}
	s.check()
}

func (s *Sim) latency() time.Duration {
	span := int64(s.opts.MaxLatency - s.opts.MinLatency)
	if span <= 0 {
		return s.opts.MinLatency
	}
	return s.opts.MinLatency + time.Duration(s.rng.Int64N(span+1))
}

// send models a TCP connection per directed link: FIFO with latency; a cut
// link or a dead peer fails the send (the sender hears it as unreachable).
func (s *Sim) send(from int32, inc int, m *pb.Message) {
	s.notePromise(s.nodes[from], m)
	to := quorum.NodeID(m.GetTo())
	snap := m.GetType() == pb.MsgSnap
	if int(to) < 0 || int(to) >= len(s.nodes) {
		return
	}
	if s.cut[[2]int32{from, to}] || !s.nodes[to].Up() {
		s.reportUnreachable(to, from, snap)
		return
	}
	if s.dropRate > 0 && s.rng.Float64() < s.dropRate {
		if snap {
			s.schedule(s.latency(), event{kind: evSnapStatus, to: from, inc: inc, from: to, ok: false})
		}
		return
	}
	b, err := proto.Marshal(m)
	if err != nil {
		s.Fatalf("marshal: %v", err)
	}
	link := [2]int32{from, to}
	at := max(s.now+s.latency(), s.linkLast[link]+1)
	s.linkLast[link] = at
	s.scheduleAt(at, event{kind: evDeliver, to: to, inc: s.nodes[to].incarnation, from: from, fromInc: inc, msg: b, snap: snap})
}

// reportUnreachable tells sender that a send to peer failed.
func (s *Sim) reportUnreachable(peer, sender int32, snap bool) {
	n := s.nodes[sender]
	if !n.Up() {
		return
	}
	s.schedule(s.latency(), event{kind: evUnreachable, to: sender, inc: n.incarnation, from: peer})
	if snap {
		s.schedule(s.latency(), event{kind: evSnapStatus, to: sender, inc: n.incarnation, from: peer, ok: false})
	}
}

type simTransport struct {
	s    *Sim
	from int32
	inc  int
}

func (t *simTransport) Send(msgs []*pb.Message) {
	for _, m := range msgs {
		t.s.send(t.from, t.inc, m)
	}
}
