package cluster_test

import (
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/cluster"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/quorum"
	"github.com/gregor-broker/gregor/internal/quorum/quorumtest"
)

// TestSimControllersOnRaft runs three voters as a Node composes them — a
// quorum.Peer (etcd raft's RawNode, Gregor's WAL and snapshots on a MemFS)
// whose committed entries are applied to the metadata image and handed to
// a controller.Core, the raft leader's core proposing its entries — in
// quorumtest's deterministic world: fake clock, message loss and delay,
// partitions, one-way cuts, crashes with torn writes, restarts. A broker on
// each node registers and heartbeats through whichever node it picks, and
// topics are created. After every step it checks the design's invariants
// (§4.3, §6.2): an active controller leads raft in its term (as its node
// last heard), and there is at most one per term, ever; every
// node's image at an index is the same (its entries the same as every
// other node's, as the Sim checks, and its images too, restored snapshots
// included); each broker's epoch is the index of its registration and
// grows; no record is skipped by its guard. After the chaos it heals the
// network and requires one active controller with every broker registered
// and unfenced. 1,000 seeds (40 under -race), 3,000 with GREGOR_LONG=1;
// GREGOR_SIM_SEED=n replays one.
func TestSimControllersOnRaft(t *testing.T) {
	seeds := 1000
	if raceEnabled {
		seeds = 40 // the race detector makes each seed ~15x slower
	}
	if os.Getenv("GREGOR_LONG") != "" {
		seeds = 3000
	}
	first := uint64(1)
	if v := os.Getenv("GREGOR_SIM_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		first, seeds = n, 1
	}
	var total simTotals
	for seed := first; seed < first+uint64(seeds); seed++ {
		w := runControllerSim(t, seed)
		if t.Failed() {
			t.Fatalf("seed %d failed (replay with GREGOR_SIM_SEED=%d)", seed, seed)
		}
		total.add(w.totals)
	}
	t.Logf("%d seeds: %+v", seeds, total)
	if seeds > 1 && (total.Activations < seeds || total.Registrations < 3*seeds || total.Topics == 0 || total.Fences == 0 ||
		total.Crashes == 0 || total.Snapshots == 0) {
		t.Fatalf("the simulation did not exercise the controllers: %+v", total)
	}
}

// TestSimControllersOnRaftDeterministic runs seeds twice: the same seed
// must give the same events, messages and images, so a failing seed
// replays.
func TestSimControllersOnRaftDeterministic(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		a, b := runControllerSim(t, seed), runControllerSim(t, seed)
		if a.sim.Digest() != b.sim.Digest() || a.totals != b.totals || len(a.imageAt) != len(b.imageAt) {
			t.Fatalf("seed %d: two runs differ: digest %x/%x, %+v/%+v", seed, a.sim.Digest(), b.sim.Digest(), a.totals, b.totals)
		}
		for i, h := range a.imageAt {
			if b.imageAt[i] != h {
				t.Fatalf("seed %d: the image at index %d differs between two runs", seed, i)
			}
		}
	}
}

type simTotals struct {
	Activations, Registrations, Fences, Topics, Crashes, Snapshots int
}

func (s *simTotals) add(o simTotals) {
	s.Activations += o.Activations
	s.Registrations += o.Registrations
	s.Fences += o.Fences
	s.Topics += o.Topics
	s.Crashes += o.Crashes
	s.Snapshots += o.Snapshots
}

// simNode is one incarnation of a node: its image, controller core and
// broker, from the state machine's creation at a (re)start.
type simNode struct {
	id     int32
	inc    int
	im     *metadata.Image
	core   *controller.Core
	leader quorum.Leadership // what the core was last told
	// The node's broker: its epoch (-1 until registered), the request in
	// flight, when it last sent one (a request unanswered for a second
	// is given up, as a client's timeout would: the core it went to may
	// have crashed).
	epoch   int64
	pending uint64
	lastHB  time.Duration
}

// ctrlWorld is one seed's run.
type ctrlWorld struct {
	t      *testing.T
	seed   uint64
	sim    *quorumtest.Sim
	ids    []int32
	nodes  map[int32]*simNode
	broker *config.Broker
	base   time.Time
	nextID uint64
	topics int
	// Checks over the whole run.
	activeInTerm map[uint64]int32
	imageAt      map[uint64][32]byte
	brokerEpoch  map[int32]int64
	totals       simTotals
}

func runControllerSim(t *testing.T, seed uint64) *ctrlWorld {
	b, err := config.NewBroker(map[string]string{"node.id": "0", "process.roles": "broker,controller",
		"controller.listener.names": "CONTROLLER", "broker.session.timeout.ms": "2000", "num.partitions": "2"})
	if err != nil {
		t.Fatal(err)
	}
	w := &ctrlWorld{t: t, seed: seed, nodes: map[int32]*simNode{}, broker: b, base: time.Unix(1_000_000, 0),
		activeInTerm: map[uint64]int32{}, imageAt: map[uint64][32]byte{}, brokerEpoch: map[int32]int64{}}
	incs := map[int32]int{}
	// Snapshots every 10 entries, so lagging and restarted nodes are sent
	// them and restore their image from one.
	w.sim = quorumtest.New(t, quorumtest.Options{Nodes: 3, Seed: seed, SnapshotEntries: 10, SnapshotKeepEntries: 2,
		Replay:        "GREGOR_SIM_SEED=%d go test ./internal/cluster -run TestSimControllersOnRaft",
		BootstrapData: metadata.EncodeSnapshot(cluster.BootstrapImage("sim")),
		NewStateMachine: func(id int32) quorum.StateMachine {
			incs[id]++
			n := &simNode{id: id, inc: incs[id], epoch: -1}
			w.nodes[id] = n
			return &ctrlSM{w: w, n: n}
		}})
	w.ids = []int32{0, 1, 2}
	w.chaos(15 * time.Second)
	w.sim.Heal()
	w.sim.SetDropRate(0)
	for _, id := range w.ids {
		w.sim.Restart(id)
	}
	end := w.sim.Now() + 30*time.Second
	for w.sim.Now() < end && !w.settled() {
		w.round(50 * time.Millisecond)
	}
	if !w.settled() {
		w.sim.Fatalf("30 s after healing: no single active controller with every broker registered and unfenced:\n%s",
			w.describe())
	}
	w.totals.Crashes = w.sim.Crashes
	w.totals.Snapshots = w.sim.Installed
	return w
}

func (w *ctrlWorld) now() time.Time { return w.base.Add(w.sim.Now()) }

// chaos runs d of virtual time with seeded faults, as quorum's own
// simulation does, and the brokers' and clients' traffic.
func (w *ctrlWorld) chaos(d time.Duration) {
	rng := w.sim.Rand()
	pick := func() int32 { return w.ids[rng.IntN(len(w.ids))] }
	for w.sim.Now() < d {
		switch p := rng.IntN(1000); {
		case p < 15:
			w.sim.Crash(pick(), rng.IntN(2) == 0)
		case p < 60:
			w.sim.Restart(pick())
		case p < 75:
			a := pick()
			var rest []int32
			for _, id := range w.ids {
				if id != a {
					rest = append(rest, id)
				}
			}
			w.sim.Partition([]int32{a}, rest)
		case p < 82:
			w.sim.CutLink(pick(), pick())
		case p < 110:
			w.sim.Heal()
		case p < 117:
			w.sim.SetDropRate(rng.Float64() * 0.2)
		case p < 160:
			w.createTopic(pick())
		}
		w.round(time.Duration(20+rng.IntN(130)) * time.Millisecond)
	}
}

// round runs d of virtual time, then lets every running node's core and
// broker act on what happened.
func (w *ctrlWorld) round(d time.Duration) {
	w.sim.RunFor(d)
	for _, id := range w.ids {
		n := w.live(id)
		if n == nil {
			continue
		}
		if l := w.sim.Node(id).Peer.Status().Leadership; l != n.leader {
			n.leader = l
			n.core.LeadershipChanged(w.now(), l.Local, l.Term)
		}
		n.core.Tick(w.now())
		w.brokerStep(n)
	}
	w.drain()
	w.checkActive()
}

// live is node id's current incarnation, nil while it is down.
func (w *ctrlWorld) live(id int32) *simNode {
	if !w.sim.Node(id).Up() {
		return nil
	}
	return w.nodes[id]
}

// brokerStep registers the node's broker, or heartbeats for it every
// 200 ms, through a random running node (NOT_CONTROLLER from a node that
// is not the active controller, which the broker retries).
func (w *ctrlWorld) brokerStep(n *simNode) {
	if since := w.sim.Now() - n.lastHB; since < 200*time.Millisecond || n.pending != 0 && since < time.Second {
		return
	}
	n.lastHB = w.sim.Now()
	var req controller.Request
	if n.epoch < 0 {
		req = &controller.BrokerRegistrationRequest{BrokerID: n.id, ClusterID: "sim",
			IncarnationID:       [16]byte{0: 0x1C, 1: byte(n.id), 2: byte(n.inc)},
			Listeners:           []metadata.Endpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9000 + n.id}},
			LogDirs:             [][16]byte{{0: 0xD1, 1: byte(n.id)}},
			PreviousBrokerEpoch: -1}
	} else {
		req = &controller.BrokerHeartbeatRequest{BrokerID: n.id, BrokerEpoch: n.epoch,
			CurrentMetadataOffset: int64(n.im.Index)}
	}
	n.pending = w.submit(req)
}

func (w *ctrlWorld) submit(req controller.Request) uint64 {
	var up []*simNode
	for _, id := range w.ids {
		if n := w.live(id); n != nil {
			up = append(up, n)
		}
	}
	if len(up) == 0 {
		return 0
	}
	w.nextID++
	up[w.sim.Rand().IntN(len(up))].core.Submit(w.now(), w.nextID, req)
	return w.nextID
}

// createTopic sends CreateTopics to the active controller if one runs (as
// a broker forwards it), else to via.
func (w *ctrlWorld) createTopic(via int32) {
	for _, id := range w.ids {
		if n := w.live(id); n != nil {
			if ok, _ := n.core.Active(); ok {
				via = id
			}
		}
	}
	if n := w.live(via); n != nil {
		w.topics++
		w.nextID++
		n.core.Submit(w.now(), w.nextID, &controller.CreateTopicsRequest{Topics: []controller.CreatableTopic{
			{Name: fmt.Sprintf("t%d", w.topics), NumPartitions: -1, ReplicationFactor: -1}}})
	}
}

// drain hands every core's proposals to raft and its replies to the
// brokers until no core has anything more to say.
func (w *ctrlWorld) drain() {
	for round := 0; ; round++ {
		if round > 1000 {
			w.sim.Fatalf("the controllers do not settle")
		}
		busy := false
		for _, id := range w.ids {
			n := w.live(id)
			if n == nil {
				continue
			}
			out := n.core.Ready()
			for _, r := range out.Replies {
				w.reply(r)
			}
			if out.Propose == nil {
				continue
			}
			busy = true
			if _, err := w.sim.Propose(id, metadata.EncodeEntry(nil, out.Propose)); err != nil {
				n.core.ProposalFailed(w.now(), out.Propose.Seq, err)
			}
		}
		if !busy {
			return
		}
	}
}

// reply gives a broker its answer: an epoch, or a heartbeat's verdict.
func (w *ctrlWorld) reply(r controller.Reply) {
	for _, id := range w.ids {
		n := w.live(id)
		if n == nil || n.pending != r.ID {
			continue
		}
		n.pending = 0
		switch v := r.Value.(type) {
		case *controller.BrokerRegistrationResponse:
			n.epoch = v.BrokerEpoch
		case nil:
			// Refused (NOT_CONTROLLER, a stale epoch, a session still
			// held by the previous incarnation): a heartbeat with an
			// epoch the controller no longer knows registers again.
			if n.epoch >= 0 && r.Err != nil && w.stale(n) {
				n.epoch = -1
			}
		}
	}
}

// stale reports whether n's broker epoch is no longer its registration in
// the node's own image.
func (w *ctrlWorld) stale(n *simNode) bool {
	b, ok := n.im.Brokers[n.id]
	return ok && b.Epoch != n.epoch && int64(n.im.Index) >= n.epoch
}

// checkActive: an active controller is the raft leader of its term, as far
// as it was told; at most one per term, over the whole run.
func (w *ctrlWorld) checkActive() {
	for _, id := range w.ids {
		n := w.live(id)
		if n == nil {
			continue
		}
		if ok, term := n.core.Active(); ok {
			if !n.leader.Local || n.leader.Term != term {
				w.sim.Fatalf("node %d is the active controller of term %d, but raft told it %+v", id, term, n.leader)
			}
			if prev, seen := w.activeInTerm[term]; seen && prev != id {
				w.sim.Fatalf("nodes %d and %d both active controllers in term %d", prev, id, term)
			} else if !seen {
				w.activeInTerm[term] = id
				w.totals.Activations++
			}
		}
	}
}

// settled: one active controller, every broker registered and unfenced.
func (w *ctrlWorld) settled() bool {
	var active *simNode
	for _, id := range w.ids {
		n := w.live(id)
		if n == nil {
			return false
		}
		if ok, _ := n.core.Active(); ok {
			if active != nil {
				return false
			}
			active = n
		}
	}
	if active == nil {
		return false
	}
	for _, id := range w.ids {
		b, ok := active.im.Brokers[id]
		if !ok || b.Fenced || b.Epoch != w.nodes[id].epoch {
			return false
		}
	}
	return true
}

func (w *ctrlWorld) describe() string {
	s := ""
	for _, id := range w.ids {
		n := w.nodes[id]
		active, term := n.core.Active()
		s += fmt.Sprintf("node %d up=%v inc=%d applied=%d leader=%+v active=%v term=%d broker epoch=%d pending=%d\n",
			id, w.sim.Node(id).Up(), n.inc, n.im.Index, n.leader, active, term, n.epoch, n.pending)
		for bid, b := range n.im.Brokers {
			s += fmt.Sprintf("    broker %d epoch %d fenced %v\n", bid, b.Epoch, b.Fenced)
		}
	}
	return s
}

// observe checks an image a node reached at index: the same as every other
// node's there; registrations' epochs; no skipped record.
func (w *ctrlWorld) observe(node int32, im *metadata.Image, e *metadata.Entry) {
	sum := sha256.Sum256(metadata.EncodeSnapshot(im))
	if prev, ok := w.imageAt[im.Index]; ok && prev != sum {
		w.sim.Fatalf("node %d's image at index %d differs from another node's", node, im.Index)
	} else if ok {
		return
	}
	w.imageAt[im.Index] = sum
	if im.Skipped != 0 {
		w.sim.Fatalf("index %d: %d records skipped by their guards", im.Index, im.Skipped)
	}
	if e == nil {
		return
	}
	for _, r := range e.Records {
		switch r := r.(type) {
		case metadata.RegisterBroker:
			got := im.Brokers[r.ID].Epoch
			if got != int64(im.Index) || got <= w.brokerEpoch[r.ID] {
				w.sim.Fatalf("broker %d registered at index %d with epoch %d (its previous %d)", r.ID, im.Index, got,
					w.brokerEpoch[r.ID])
			}
			w.brokerEpoch[r.ID] = got
			w.totals.Registrations++
		case metadata.BrokerRegistrationChange:
			if r.Fenced == metadata.Fence {
				w.totals.Fences++
			}
		case metadata.Topic:
			w.totals.Topics++
		}
	}
}

// ctrlSM is a node's state machine, as the Node's: each committed entry
// applied to the image and handed to the controller core.
type ctrlSM struct {
	w *ctrlWorld
	n *simNode
}

func (sm *ctrlSM) Apply(e quorum.Entry) error {
	entry, err := metadata.DecodeEntry(e.Data)
	if err != nil {
		return err
	}
	next, _ := metadata.Apply(sm.n.im, e.Index, e.Term, entry)
	sm.n.im = next
	sm.w.observe(sm.n.id, next, entry)
	sm.n.core.Applied(sm.w.now(), next, entry)
	return nil
}

func (sm *ctrlSM) Snapshot() ([]byte, error) { return metadata.EncodeSnapshot(sm.n.im), nil }

func (sm *ctrlSM) Restore(id quorum.EntryID, data []byte) error {
	im, err := metadata.DecodeSnapshot(data)
	if err != nil {
		return err
	}
	im.Index, im.Term = id.Index, id.Term
	sm.n.im = im
	if id.Index > quorum.BootstrapIndex {
		sm.w.observe(sm.n.id, im, nil)
	}
	if sm.n.core == nil {
		n, w := sm.n, sm.w
		var topicSeq uint32
		sm.n.core = controller.New(controller.Config{NodeID: n.id, Broker: w.broker,
			Rand: rand.New(rand.NewPCG(w.seed, uint64(n.id)<<32|uint64(n.inc))),
			NewTopicID: func() metadata.TopicID {
				topicSeq++
				return metadata.TopicID{0: byte(n.id), 1: byte(n.inc), 12: byte(topicSeq >> 24), 13: byte(topicSeq >> 16),
					14: byte(topicSeq >> 8), 15: byte(topicSeq)}
			},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, im)
		return nil
	}
	sm.n.core.Applied(sm.w.now(), im, nil)
	return nil
}
