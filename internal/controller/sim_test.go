package controller

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/metadata"
)

// TestRandomized drives three controller cores over the fake log with random
// leader changes (uncommitted entries kept or lost), stalls, late commits,
// restarts, brokers that register, heartbeat, crash and shut down, and
// random admin and AlterPartition traffic, checking the metadata invariants
// of the design note (§4.3 I13–I15, and the controller's own) after every
// step: 500 seeds of 400 steps (a few seconds), and 3,000 of
// 600 with GREGOR_LONG=1; GREGOR_SEED=n replays one.
func TestRandomized(t *testing.T) {
	seeds, steps := 500, 400
	if os.Getenv("GREGOR_LONG") != "" {
		seeds, steps = 3000, 600
	}
	first := uint64(1)
	if s := os.Getenv("GREGOR_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		first, seeds = n, 1
	}
	var total simStats
	for seed := first; seed < first+uint64(seeds); seed++ {
		st := runSim(t, seed, steps)
		total.add(st)
		if t.Failed() {
			t.Fatalf("seed %d failed (replay with GREGOR_SEED=%d)", seed, seed)
		}
	}
	t.Logf("%d seeds: %+v", seeds, total)
	if total.entries == 0 || total.fences == 0 || total.alterOK == 0 || total.elections == 0 || total.timeouts == 0 {
		t.Fatalf("the simulation did not exercise the controller: %+v", total)
	}
}

// TestRandomizedDeterministic runs seeds twice: the same inputs must give
// the same log, byte for byte (no map order or clock leaks into records).
func TestRandomizedDeterministic(t *testing.T) {
	for seed := uint64(100); seed < 105; seed++ {
		a, b := simLog(t, seed), simLog(t, seed)
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d: two runs wrote different logs", seed)
		}
	}
}

func simLog(t *testing.T, seed uint64) []byte {
	var log []byte
	s := newSim(t, seed)
	inner := s.c.onEntry
	s.c.onEntry = func(index uint64, e *metadata.Entry, prev, next *metadata.Image, p pendingEntry) {
		inner(index, e, prev, next, p)
		log = metadata.EncodeEntry(log, e)
	}
	s.run(150)
	return log
}

type simStats struct {
	entries, fences, alterOK, alterRefused, elections, timeouts, leaderChanges, restarts, registrations int
}

func (s *simStats) add(o simStats) {
	s.entries += o.entries
	s.fences += o.fences
	s.alterOK += o.alterOK
	s.alterRefused += o.alterRefused
	s.elections += o.elections
	s.timeouts += o.timeouts
	s.leaderChanges += o.leaderChanges
	s.restarts += o.restarts
	s.registrations += o.registrations
}

type sim struct {
	t    testing.TB
	seed uint64
	rnd  *rand.Rand
	c    *cluster
	elr  bool
	st   simStats

	brokers []int32
	alive   map[int32]bool
	incs    map[int32]int
	// clean holds the epoch a broker wrote to its clean-shutdown file.
	clean map[int32]int64

	replies map[uint64]int
	// node each request went to, to know which must be answered.
	sentTo map[uint64]int32

	// invariant history
	leaders     map[partitionEpochKey]int32
	states      map[partitionEpochKey]string
	epochs      map[int32][]int64
	activations map[uint64]int32
}

type partitionEpochKey struct {
	topic     metadata.TopicID
	partition int32
	epoch     int32
}

func runSim(t *testing.T, seed uint64, steps int) simStats {
	s := newSim(t, seed)
	s.run(steps)
	return s.st
}

func newSim(t testing.TB, seed uint64) *sim {
	rnd := rand.New(rand.NewPCG(seed, 0x5eed))
	elr := rnd.IntN(2) == 0
	static := map[string]string{"min.insync.replicas": strconv.Itoa(1 + rnd.IntN(2)),
		"unclean.leader.election.interval.ms": "3000", "leader.imbalance.check.interval.seconds": "7"}
	if rnd.IntN(4) == 0 {
		static["unclean.leader.election.enable"] = "true"
	}
	s := &sim{t: t, seed: seed, rnd: rnd, elr: elr, brokers: []int32{1, 2, 3, 4}, alive: map[int32]bool{}, incs: map[int32]int{},
		clean: map[int32]int64{}, replies: map[uint64]int{}, sentTo: map[uint64]int32{}, leaders: map[partitionEpochKey]int32{},
		states: map[partitionEpochKey]string{}, epochs: map[int32][]int64{}, activations: map[uint64]int32{}}
	s.c = newCluster(t, clusterOpts{nodes: 3, static: static, elr: elr, seed: seed, maxBatchOps: 1 + rnd.IntN(4)})
	s.c.onEntry = s.checkEntry
	if os.Getenv("GREGOR_SIM_TRACE") != "" {
		s.c.onEntry = func(index uint64, e *metadata.Entry, prev, next *metadata.Image, p pendingEntry) {
			t.Logf("entry %d node %d term %d seq %d", index, e.Proposer, e.Term, e.Seq)
			for _, r := range e.Records {
				t.Logf("  %s", s.c.fmtRecord(r))
			}
			s.checkEntry(index, e, prev, next, p)
		}
	}
	s.c.onReply = s.noteReply
	s.c.onElection = func(int32, Election) { s.st.elections++ }
	return s
}

func (s *sim) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("seed %d (replay with GREGOR_SEED=%d), at %v:\n%s\n%s", s.seed, s.seed, s.c.now,
		fmt.Sprintf(format, args...), describeImage(s.c.im))
}

func (s *sim) run(steps int) {
	s.c.elect(1, 1, true)
	s.st.leaderChanges++
	for i := 0; i < steps; i++ {
		s.step()
		s.checkImage()
		s.checkControllers()
	}
	s.quiesce()
}

// quiesce lets everything finish: the log resumes, a live node leads, time
// passes; then every request sent to a live node has been answered.
func (s *sim) quiesce() {
	s.c.paused = false
	if s.c.leader < 0 || s.c.dead[s.c.leader] {
		for _, id := range s.c.ids {
			if !s.c.dead[id] {
				s.c.elect(id, s.c.term+1, true)
				break
			}
		}
	}
	s.c.settle()
	s.c.advance(20 * time.Second)
	for id, node := range s.sentTo {
		if !s.c.dead[node] && s.replies[id] != 1 {
			s.fatalf("request %d to node %d (%T) got %d replies", id, node, s.c.requests[id], s.replies[id])
		}
	}
	s.checkImage()
}

func (s *sim) pick(ids []int32) int32 { return ids[s.rnd.IntN(len(ids))] }

func (s *sim) step() {
	c := s.c
	switch n := s.rnd.IntN(100); {
	case n < 2:
		s.leaderChange()
	case n < 3:
		s.restartNode()
	case n < 6:
		c.paused = !c.paused
		c.settle()
	case n < 8 && len(c.pending) > 0:
		c.commit(1 + s.rnd.IntN(len(c.pending)))
		c.settle()
	case n < 26:
		c.advance(time.Duration(50+s.rnd.IntN(4000)) * time.Millisecond)
	case n < 32:
		s.brokerEvent()
	case n < 58:
		s.heartbeats()
	case n < 78:
		s.alterPartition()
	default:
		s.admin()
	}
}

func (s *sim) send(req Request) {
	c := s.c
	node := c.leader
	if node < 0 || s.rnd.IntN(10) == 0 {
		node = s.pick(c.ids)
	}
	if c.dead[node] {
		return
	}
	s.sentTo[c.nextID+1] = node
	c.submit(node, req)
}

func (s *sim) leaderChange() {
	c := s.c
	var live []int32
	for _, id := range c.ids {
		if !c.dead[id] {
			live = append(live, id)
		}
	}
	s.st.leaderChanges++
	c.elect(s.pick(live), c.term+1+uint64(s.rnd.IntN(2)), s.rnd.IntN(2) == 0)
}

func (s *sim) restartNode() {
	c := s.c
	id := s.pick(c.ids)
	if c.dead[id] || s.rnd.IntN(2) == 0 {
		s.st.restarts++
		// Requests to the old process die with it.
		for rid, node := range s.sentTo {
			if node == id && s.replies[rid] == 0 {
				delete(s.sentTo, rid)
			}
		}
		c.restart(id)
		return
	}
	dead := 0
	for _, d := range c.dead {
		if d {
			dead++
		}
	}
	if dead == 0 {
		c.dead[id] = true
	}
}

// brokerEvent starts, crashes or cleanly stops a broker.
func (s *sim) brokerEvent() {
	b := s.pick(s.brokers)
	switch {
	case !s.alive[b]:
		s.alive[b] = true
		s.incs[b]++
		prev := int64(-1)
		if e, ok := s.clean[b]; ok {
			prev = e
			delete(s.clean, b)
		}
		s.st.registrations++
		s.send(registration(b, fmt.Sprintf("b%d-%d", b, s.incs[b]), prev))
	case s.rnd.IntN(2) == 0:
		s.alive[b] = false // crash: no clean-shutdown file
	default:
		s.send(&BrokerHeartbeatRequest{BrokerID: b, BrokerEpoch: s.c.epochs[b], CurrentMetadataOffset: int64(s.c.im.Index),
			WantShutDown: true})
	}
}

// heartbeats: every live broker heartbeats, reporting a metadata offset
// that may lag.
func (s *sim) heartbeats() {
	for _, b := range s.brokers {
		if !s.alive[b] || s.rnd.IntN(5) == 0 {
			continue
		}
		offset := int64(s.c.im.Index) - int64(s.rnd.IntN(3))
		s.send(&BrokerHeartbeatRequest{BrokerID: b, BrokerEpoch: s.c.epochs[b], CurrentMetadataOffset: offset,
			WantFence: s.rnd.IntN(20) == 0})
	}
}

// alterPartition: a partition's leader proposes an ISR, sometimes from a
// stale view (old epochs, old broker epochs).
func (s *sim) alterPartition() {
	im := s.c.im
	topics := im.SortedTopics()
	if len(topics) == 0 {
		return
	}
	t := topics[s.rnd.IntN(len(topics))]
	p := int32(s.rnd.IntN(len(t.Partitions)))
	cur := t.Partitions[p]
	if cur.Leader < 0 {
		return
	}
	isr := []int32{cur.Leader}
	for _, r := range cur.Replicas {
		if r != cur.Leader && s.rnd.IntN(2) == 0 {
			isr = append(isr, r)
		}
	}
	rp := AlterPartitionPartition{Partition: p, LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch,
		LeaderRecoveryState: metadata.Recovered}
	if cur.LeaderRecoveryState == metadata.Recovering && len(isr) == 1 && s.rnd.IntN(2) == 0 {
		rp.LeaderRecoveryState = metadata.Recovering
	}
	if s.rnd.IntN(5) == 0 {
		rp.PartitionEpoch -= int32(s.rnd.IntN(2))
		rp.LeaderEpoch -= int32(s.rnd.IntN(2))
	}
	for _, id := range isr {
		epoch := int64(-1)
		if b := im.Brokers[id]; b != nil {
			epoch = b.Epoch
		}
		if s.rnd.IntN(8) == 0 {
			epoch-- // an older incarnation's fetch state
		}
		rp.NewISR = append(rp.NewISR, BrokerState{BrokerID: id, BrokerEpoch: epoch})
	}
	s.send(&AlterPartitionRequest{BrokerID: cur.Leader, BrokerEpoch: s.c.epochs[cur.Leader],
		Topics: []AlterPartitionTopic{{TopicID: t.ID, Partitions: []AlterPartitionPartition{rp}}}})
}

func (s *sim) admin() {
	im := s.c.im
	names := im.TopicNames()
	topic := fmt.Sprintf("t%d", s.rnd.IntN(6))
	switch n := s.rnd.IntN(10); {
	case n < 4:
		s.send(&CreateTopicsRequest{Topics: []CreatableTopic{{Name: topic, NumPartitions: int32(1 + s.rnd.IntN(4)),
			ReplicationFactor: int16(1 + s.rnd.IntN(3))}}})
	case len(names) == 0:
	case n < 5:
		s.send(&ElectLeadersRequest{ElectionType: int8(s.rnd.IntN(2))})
	case n < 6:
		name := names[s.rnd.IntN(len(names))]
		replicas := slices.Clone(s.brokers)
		s.rnd.Shuffle(len(replicas), func(i, j int) { replicas[i], replicas[j] = replicas[j], replicas[i] })
		rp := ReassignablePartition{Partition: int32(s.rnd.IntN(len(im.Topic(name).Partitions))), Replicas: replicas[:1+s.rnd.IntN(3)]}
		if s.rnd.IntN(4) == 0 {
			rp.Replicas = nil
		}
		s.send(&AlterPartitionReassignmentsRequest{AllowReplicationFactorChange: true,
			Topics: []ReassignableTopic{{Name: name, Partitions: []ReassignablePartition{rp}}}})
	case n < 7:
		name := names[s.rnd.IntN(len(names))]
		s.send(&CreatePartitionsRequest{Topics: []CreatePartitionsTopic{{Name: name, Count: int32(len(im.Topic(name).Partitions) + 1)}}})
	case n < 9:
		v := strconv.Itoa(1 + s.rnd.IntN(3))
		k := "min.insync.replicas"
		if s.rnd.IntN(2) == 0 {
			k, v = "unclean.leader.election.enable", strconv.FormatBool(s.rnd.IntN(2) == 0)
		}
		s.send(&IncrementalAlterConfigsRequest{Resources: []IncrementalAlterConfigsResource{{Type: metadata.ResourceTopic,
			Name: names[s.rnd.IntN(len(names))], Ops: []config.AlterEntry{{Name: k, Op: config.AlterSet, Value: &v}}}}})
	default:
		s.send(&DeleteTopicsRequest{Topics: []DeleteTopicState{{Name: names[s.rnd.IntN(len(names))]}}})
	}
}

func (s *sim) noteReply(node int32, r Reply, req Request) {
	s.replies[r.ID]++
	if s.replies[r.ID] > 1 {
		s.fatalf("request %d (%T) answered twice", r.ID, req)
	}
	if r.Err == nil && (r.Index == 0 || r.Index > s.c.im.Index) {
		s.fatalf("reply %d (%T) holds at index %d; the log is at %d", r.ID, req, r.Index, s.c.im.Index)
	}
	switch v := r.Value.(type) {
	case *BrokerHeartbeatResponse:
		b := req.(*BrokerHeartbeatRequest).BrokerID
		if v.ShouldShutDown {
			// A clean stop: the broker writes its epoch and exits.
			s.alive[b] = false
			s.clean[b] = req.(*BrokerHeartbeatRequest).BrokerEpoch
		}
	case *AlterPartitionResponse:
		if v.Topics[0].Partitions[0].Err == nil {
			s.st.alterOK++
		} else {
			s.st.alterRefused++
		}
	}
	var ke *kerr.Error
	if r.Err != nil && !errors.As(r.Err, &ke) {
		s.fatalf("reply without a Kafka error: %v", r.Err)
	}
	if ke == kerr.RequestTimedOut {
		s.st.timeouts++
	}
}

func (s *sim) checkEntry(index uint64, e *metadata.Entry, prev, next *metadata.Image, p pendingEntry) {
	s.st.entries++
	// Every batch is built on the image its entry applies to, timed-out
	// ones included: nothing is ever skipped (the harness never commits
	// an entry in another term than its proposer's).
	if skipped := next.Skipped - prev.Skipped; skipped > 0 {
		s.fatalf("entry %d (node %d term %d seq %d) had %d record(s) skipped", index, e.Proposer, e.Term, e.Seq, skipped)
	}
	for _, r := range e.Records {
		switch r := r.(type) {
		case metadata.BrokerRegistrationChange:
			if r.Fenced == metadata.Fence {
				s.st.fences++
			}
		case metadata.Activation:
			if e.Term != p.raftTerm {
				continue
			}
			if node, ok := s.activations[r.Term]; ok && node != r.Node {
				s.fatalf("term %d activated by nodes %d and %d", r.Term, node, r.Node)
			}
			s.activations[r.Term] = r.Node
			if r.Node != e.Proposer || r.Term != e.Term {
				s.fatalf("activation %+v proposed by node %d in term %d", r, e.Proposer, e.Term)
			}
		}
	}
	for id, b := range next.Brokers {
		hist := s.epochs[id]
		if len(hist) > 0 && hist[len(hist)-1] == b.Epoch {
			continue
		}
		if len(hist) > 0 && b.Epoch <= hist[len(hist)-1] {
			s.fatalf("broker %d epoch went from %d to %d", id, hist[len(hist)-1], b.Epoch)
		}
		s.epochs[id] = append(hist, b.Epoch)
	}
}

// checkImage checks the committed image: each partition's shape, and that
// no (partition, leader epoch) ever had two leaders and no (partition,
// partition epoch) two states.
func (s *sim) checkImage() {
	im := s.c.im
	for _, t := range im.SortedTopics() {
		for i, p := range t.Partitions {
			if err := s.checkPartition(im, p); err != nil {
				s.fatalf("%s-%d %s: %v", t.Name, i, fmtPartition(p), err)
			}
			k := partitionEpochKey{t.ID, int32(i), p.LeaderEpoch}
			if l, ok := s.leaders[k]; ok && l != p.Leader {
				s.fatalf("%s-%d leader epoch %d had leaders %d and %d", t.Name, i, p.LeaderEpoch, l, p.Leader)
			}
			s.leaders[k] = p.Leader
			k.epoch = -1 - p.PartitionEpoch
			state := fmtPartition(p)
			if old, ok := s.states[k]; ok && old != state {
				s.fatalf("%s-%d partition epoch %d had states %s and %s", t.Name, i, p.PartitionEpoch, old, state)
			}
			s.states[k] = state
		}
	}
}

func (s *sim) checkPartition(im *metadata.Image, p *metadata.PartitionImage) error {
	for i, id := range p.ISR {
		if !p.IsReplica(id) || slices.Contains(p.ISR[:i], id) {
			return fmt.Errorf("ISR is not a set of replicas")
		}
		if !im.Usable(id) && !(!s.elr && len(p.ISR) == 1 && p.Leader == metadata.NoLeader) {
			return fmt.Errorf("broker %d is fenced or shutting down but in the ISR", id)
		}
	}
	for i, id := range p.ELR {
		if !p.IsReplica(id) || slices.Contains(p.ELR[:i], id) || p.InISR(id) {
			return fmt.Errorf("ELR is not a set of replicas outside the ISR")
		}
	}
	if !s.elr && (len(p.ELR) > 0 || len(p.LastKnownELR) > 0 || len(p.ISR) == 0) {
		return fmt.Errorf("ELR state or an empty ISR with ELR off")
	}
	if p.Leader != metadata.NoLeader && (!p.InISR(p.Leader) || !im.Usable(p.Leader)) {
		return fmt.Errorf("leader %d is not a usable ISR member", p.Leader)
	}
	if p.LeaderRecoveryState == metadata.Recovering && len(p.ISR) > 1 {
		return fmt.Errorf("RECOVERING with more than the leader in the ISR")
	}
	// Nothing acknowledges elections here, so every election that set
	// RECOVERING is still recorded, at or below the current leader epoch.
	if u := p.Unclean; p.LeaderRecoveryState == metadata.Recovering && (u == nil || u.LeaderEpoch > p.LeaderEpoch) {
		return fmt.Errorf("RECOVERING at leader epoch %d without its unclean election recorded (%+v)", p.LeaderEpoch, u)
	}
	for _, id := range p.Adding {
		if !p.IsReplica(id) {
			return fmt.Errorf("adding replica %d is not a replica", id)
		}
	}
	for _, id := range p.Removing {
		if !p.IsReplica(id) {
			return fmt.Errorf("removing replica %d is not a replica", id)
		}
	}
	return nil
}

// checkControllers: at most one node believes it is active in a term, and
// it is the one whose activation applied.
func (s *sim) checkControllers() {
	for term, nodes := range s.c.activeControllers() {
		if len(nodes) > 1 {
			s.fatalf("term %d has active controllers %v", term, nodes)
		}
		if s.activations[term] != nodes[0] {
			s.fatalf("node %d is active in term %d, whose activation was node %d's", nodes[0], term, s.activations[term])
		}
	}
}
