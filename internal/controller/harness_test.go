package controller

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/metadata"
)

// cluster drives several Cores over a fake metadata log: one committed
// sequence of entries and images shared by every node (raft's log matching
// is assumed, not tested here), a raft leader and term set by the test,
// proposals that wait uncommitted while the log is paused, are lost or
// commit late when leadership moves, and a fake clock.
type cluster struct {
	tb      testing.TB
	now     time.Time
	ids     []int32
	nodes   map[int32]*Core
	dead    map[int32]bool // nodes whose core no longer gets inputs
	im      *metadata.Image
	leader  int32 // raft leader (-1: none)
	term    uint64
	pending []pendingEntry
	paused  bool

	deadline map[int32]time.Time
	nextID   uint64
	requests map[uint64]Request
	// epochs are the broker epochs the brokers were told, for defaults.
	epochs map[int32]int64
	names  map[metadata.TopicID]string
	// quiet keeps replies from onReply.
	quiet   bool
	newCore func(id int32) *Core
	// dropNext makes raft drop the leader's next proposals.
	dropNext int

	// onEntry, onReply and onElection observe what happens (transcripts
	// print, the randomised test checks).
	onEntry    func(index uint64, e *metadata.Entry, prev, next *metadata.Image, p pendingEntry)
	onReply    func(node int32, r Reply, req Request)
	onElection func(node int32, e Election)
}

// pendingEntry is an entry raft has appended but not committed, in the
// raft term it was appended in.
type pendingEntry struct {
	e        *metadata.Entry
	raftTerm uint64
}

var errDropped = errors.New("raft: proposal dropped")

type clusterOpts struct {
	nodes  int
	static map[string]string
	elr    bool
	seed   uint64
	// maxBatchOps overrides Config.MaxBatchOps.
	maxBatchOps int
}

func newCluster(tb testing.TB, o clusterOpts) *cluster {
	static := map[string]string{"node.id": "1", "process.roles": "broker,controller", "controller.listener.names": "CONTROLLER",
		"broker.session.timeout.ms": "9000"}
	for k, v := range o.static {
		static[k] = v
	}
	b, err := config.NewBroker(static)
	if err != nil {
		tb.Fatal(err)
	}
	recs := []metadata.Record{metadata.ClusterID{ID: "test-cluster"}}
	if o.elr {
		recs = BootstrapRecords("test-cluster")
	}
	im, _ := metadata.Apply(metadata.Empty(), 1, 0, &metadata.Entry{Proposer: -1, Term: 0, Records: recs})
	c := &cluster{tb: tb, now: time.Unix(1_000_000, 0), nodes: map[int32]*Core{}, dead: map[int32]bool{}, im: im, leader: -1,
		deadline: map[int32]time.Time{}, requests: map[uint64]Request{}, epochs: map[int32]int64{}, names: map[metadata.TopicID]string{}}
	var topicSeq uint32
	restarts := uint64(0)
	c.newCore = func(id int32) *Core {
		restarts++
		return New(Config{NodeID: id, Broker: b, MaxBatchOps: o.maxBatchOps,
			Rand: rand.New(rand.NewPCG(o.seed, uint64(id)<<32|restarts)),
			NewTopicID: func() metadata.TopicID {
				topicSeq++
				return metadata.TopicID{0: 0xAB, 12: byte(topicSeq >> 24), 13: byte(topicSeq >> 16), 14: byte(topicSeq >> 8), 15: byte(topicSeq)}
			},
			Logger: discardLogger()}, c.im)
	}
	for i := 1; i <= o.nodes; i++ {
		id := int32(i)
		c.ids = append(c.ids, id)
		c.nodes[id] = c.newCore(id)
	}
	return c
}

// restart replaces a node's core with a new one over the committed image,
// as a restarted process would have after replaying its log.
func (c *cluster) restart(id int32) {
	c.nodes[id] = c.newCore(id)
	delete(c.dead, id)
	c.nodes[id].LeadershipChanged(c.now, false, c.term)
}

// elect makes node the raft leader of term; keep says whether the old
// leader's uncommitted entries survive (the new leader has them and commits
// them in their own term) or are lost.
func (c *cluster) elect(node int32, term uint64, keep bool) {
	if !keep {
		c.pending = nil
	}
	c.leader, c.term = node, term
	for _, id := range c.ids {
		if !c.dead[id] {
			c.nodes[id].LeadershipChanged(c.now, id == node, term)
		}
	}
	c.settle()
}

// submit sends a request to node (the raft leader when node is 0).
func (c *cluster) submit(node int32, req Request) {
	if node == 0 {
		node = c.leader
		if node < 0 {
			node = c.ids[0]
		}
	}
	c.nextID++
	c.requests[c.nextID] = req
	c.nodes[node].Submit(c.now, c.nextID, req)
	c.settle()
}

// advance moves the clock to now+d, ticking every node at each deadline
// on the way, as the shell's timer would.
func (c *cluster) advance(d time.Duration) {
	target := c.now.Add(d)
	for {
		next := target
		for _, id := range c.ids {
			if dl := c.deadline[id]; !c.dead[id] && !dl.IsZero() && dl.Before(next) {
				next = dl
			}
		}
		if next.After(c.now) {
			c.now = next
		}
		for _, id := range c.ids {
			if !c.dead[id] {
				c.nodes[id].Tick(c.now)
			}
		}
		c.settle()
		if !c.now.Before(target) {
			return
		}
	}
}

// settle runs every node's output until nothing more happens: replies and
// elections are reported, the raft leader's proposals are appended (others
// are dropped, as raft drops them), and unless the log is paused pending
// entries commit.
func (c *cluster) settle() {
	for round := 0; ; round++ {
		if round > 10000 {
			c.tb.Fatal("cluster does not settle")
		}
		busy := false
		for _, id := range c.ids {
			if c.dead[id] {
				continue
			}
			out := c.nodes[id].Ready()
			c.deadline[id] = out.Deadline
			for _, r := range out.Replies {
				c.noteReply(r)
				if c.onReply != nil && !c.quiet {
					c.onReply(id, r, c.requests[r.ID])
				}
			}
			for _, e := range out.Elections {
				if c.onElection != nil {
					c.onElection(id, e)
				}
			}
			if out.Propose == nil {
				continue
			}
			busy = true
			if id != c.leader || c.dropNext > 0 {
				if id == c.leader {
					c.dropNext--
				}
				c.nodes[id].ProposalFailed(c.now, out.Propose.Seq, errDropped)
				continue
			}
			c.pending = append(c.pending, pendingEntry{e: out.Propose, raftTerm: c.term})
		}
		if !c.paused && len(c.pending) > 0 {
			c.commit(len(c.pending))
			busy = true
		}
		if !busy {
			return
		}
	}
}

// commit commits the first n pending entries and hands every live node the
// new images.
func (c *cluster) commit(n int) {
	batch := c.pending[:n]
	c.pending = append([]pendingEntry(nil), c.pending[n:]...)
	for _, p := range batch {
		prev := c.im
		index := prev.Index + 1
		c.im, _ = metadata.Apply(prev, index, p.raftTerm, p.e)
		for _, r := range p.e.Records {
			if t, ok := r.(metadata.Topic); ok {
				c.names[t.ID] = t.Name
			}
		}
		if c.onEntry != nil {
			c.onEntry(index, p.e, prev, c.im, p)
		}
		for _, id := range c.ids {
			if !c.dead[id] {
				c.nodes[id].Applied(c.now, c.im, p.e)
			}
		}
	}
}

func (c *cluster) topicName(id metadata.TopicID) string {
	if n, ok := c.names[id]; ok {
		return n
	}
	return "<topic " + id.String() + ">"
}

func (c *cluster) noteReply(r Reply) {
	if resp, ok := r.Value.(*BrokerRegistrationResponse); ok {
		c.epochs[c.requests[r.ID].(*BrokerRegistrationRequest).BrokerID] = resp.BrokerEpoch
	}
}

// activeControllers counts the nodes that believe they are active, by term.
func (c *cluster) activeControllers() map[uint64][]int32 {
	out := map[uint64][]int32{}
	for _, id := range c.ids {
		if ok, term := c.nodes[id].Active(); ok && !c.dead[id] {
			out[term] = append(out[term], id)
		}
	}
	return out
}

func incarnation(s string) [16]byte {
	var b [16]byte
	copy(b[:], s)
	return b
}

func logDir(broker int32, n int) [16]byte {
	var d [16]byte
	d[0], d[1], d[2] = 0xD1, byte(broker), byte(n)
	return d
}

func registration(broker int32, inc string, prev int64) *BrokerRegistrationRequest {
	return &BrokerRegistrationRequest{BrokerID: broker, ClusterID: "test-cluster", IncarnationID: incarnation(inc),
		Listeners:           []metadata.Endpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9000 + broker}},
		LogDirs:             [][16]byte{logDir(broker, 0)},
		PreviousBrokerEpoch: prev}
}

// describeImage prints brokers and partitions.
func describeImage(im *metadata.Image) string {
	var b strings.Builder
	for _, br := range im.SortedBrokers() {
		state := "unfenced"
		if br.Fenced {
			state = "fenced"
		}
		if br.InControlledShutdown {
			state += " shutting-down"
		}
		fmt.Fprintf(&b, "broker %d epoch=%d %s\n", br.ID, br.Epoch, state)
	}
	for _, t := range im.SortedTopics() {
		for i, p := range t.Partitions {
			fmt.Fprintf(&b, "%s-%d %s\n", t.Name, i, fmtPartition(p))
		}
	}
	if im.NextProducerID > 0 {
		fmt.Fprintf(&b, "next producer id %d\n", im.NextProducerID)
	}
	if im.Skipped > 0 {
		fmt.Fprintf(&b, "skipped records %d\n", im.Skipped)
	}
	return b.String()
}

func fmtPartition(p *metadata.PartitionImage) string {
	s := fmt.Sprintf("leader=%d epochs=%d/%d replicas=%v isr=%v", p.Leader, p.LeaderEpoch, p.PartitionEpoch, p.Replicas, p.ISR)
	if len(p.ELR) > 0 || len(p.LastKnownELR) > 0 {
		s += fmt.Sprintf(" elr=%v last-known=%v", p.ELR, p.LastKnownELR)
	}
	if len(p.Adding) > 0 || len(p.Removing) > 0 {
		s += fmt.Sprintf(" adding=%v removing=%v", p.Adding, p.Removing)
	}
	if p.LeaderRecoveryState == metadata.Recovering {
		s += " RECOVERING"
	}
	if u := p.Unclean; u != nil {
		s += fmt.Sprintf(" UNCLEAN(leader-epoch=%d count=%d)", u.LeaderEpoch, u.Count)
	}
	return s
}

// fmtRecord prints a record compactly, topics by name.
func (c *cluster) fmtRecord(r metadata.Record) string {
	switch r := r.(type) {
	case metadata.Activation:
		return fmt.Sprintf("Activation node=%d term=%d", r.Node, r.Term)
	case metadata.RegisterBroker:
		return fmt.Sprintf("RegisterBroker %d fenced=%v", r.ID, r.Fenced)
	case metadata.BrokerRegistrationChange:
		s := fmt.Sprintf("BrokerRegistrationChange %d epoch=%d", r.ID, r.Epoch)
		switch r.Fenced {
		case metadata.Fence:
			s += " fence"
		case metadata.Unfence:
			s += " unfence"
		}
		if r.InControlledShutdown {
			s += " controlled-shutdown"
		}
		return s
	case metadata.Topic:
		return "Topic " + r.Name
	case metadata.Partition:
		return fmt.Sprintf("Partition %s-%d replicas=%v isr=%v leader=%d", c.names[r.Topic], r.Partition, r.Replicas, r.ISR, r.Leader)
	case metadata.PartitionChange:
		return fmt.Sprintf("PartitionChange %s-%d@%d%s", c.names[r.Topic], r.Partition, r.ExpectedPartitionEpoch, fmtChange(r))
	case metadata.RemoveTopic:
		return "RemoveTopic " + c.names[r.ID]
	case metadata.Config:
		v := "<delete>"
		if r.Value != nil {
			v = *r.Value
		}
		return fmt.Sprintf("Config %s %s=%s", fmtResource(r.Resource), r.Name, v)
	case metadata.ProducerIDs:
		return fmt.Sprintf("ProducerIDs broker=%d next=%d", r.BrokerID, r.NextBlockStart)
	case metadata.AccessControlEntry:
		return fmt.Sprintf("AccessControlEntry id=%x %s", r.ID[12:], fmtBinding(FromACL(r.ACL)))
	case metadata.RemoveAccessControlEntry:
		return fmt.Sprintf("RemoveAccessControlEntry id=%x", r.ID[12:])
	case metadata.UserScramCredential:
		return fmt.Sprintf("UserScramCredential %s %v iterations=%d salt=%q stored-key=%d bytes server-key=%d bytes", r.Key.User,
			auth.ScramMechanismOf(r.Key.Mechanism), r.Credential.Iterations, r.Credential.Salt, len(r.Credential.StoredKey), len(r.Credential.ServerKey))
	case metadata.RemoveUserScramCredential:
		return fmt.Sprintf("RemoveUserScramCredential %s %v", r.Key.User, auth.ScramMechanismOf(r.Key.Mechanism))
	case metadata.UncleanElection:
		return fmt.Sprintf("UncleanElection %s-%d leader-epoch=%d leader=%d at=+%s last-known-leader=%v previous: leader=%d isr=%v elr=%v; count=%d",
			c.names[r.Topic], r.Partition, r.LeaderEpoch, r.Leader, time.UnixMilli(r.AtMs).Sub(time.Unix(1_000_000, 0)),
			r.LastKnownLeader, r.PreviousLeader, r.PreviousISR, r.PreviousELR, r.Count)
	case metadata.FeatureLevel:
		return fmt.Sprintf("FeatureLevel %s=%d", r.Name, r.Level)
	case metadata.AckUncleanElection:
		return fmt.Sprintf("AckUncleanElection %s-%d leader-epoch=%d", c.names[r.Topic], r.Partition, r.LeaderEpoch)
	}
	return fmt.Sprintf("%T %+v", r, r)
}

func fmtChange(r metadata.PartitionChange) string {
	var b strings.Builder
	if r.Leader != metadata.NoLeaderChange {
		fmt.Fprintf(&b, " leader=%d", r.Leader)
	}
	for _, f := range []struct {
		name string
		v    []int32
	}{{"isr", r.ISR}, {"elr", r.ELR}, {"last-known", r.LastKnownELR}, {"replicas", r.Replicas}, {"adding", r.Adding}, {"removing", r.Removing}} {
		if f.v != nil {
			fmt.Fprintf(&b, " %s=%v", f.name, f.v)
		}
	}
	switch r.LeaderRecoveryState {
	case metadata.Recovering:
		b.WriteString(" RECOVERING")
	case metadata.Recovered:
		b.WriteString(" RECOVERED")
	}
	return b.String()
}

// fmtBinding prints an ACL as the transcripts write it: permission,
// principal, host, operation, resource type, name, pattern type.
func fmtBinding(b auth.Binding) string {
	return fmt.Sprintf("%v %s %s %v %v %s %v", b.Permission, b.Principal, b.Host, b.Operation, b.ResourceType, b.ResourceName, b.PatternType)
}

func fmtResource(r metadata.ConfigResource) string {
	if r.Type == metadata.ResourceTopic {
		return "topic:" + r.Name
	}
	if r.Name == "" {
		return "broker:<cluster>"
	}
	return "broker:" + r.Name
}

// fmtErr prints an error as Kafka's name and the message beside it.
func fmtErr(err error) string {
	if err == nil {
		return "OK"
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return "(not a Kafka error) " + err.Error()
	}
	if msg := strings.TrimPrefix(err.Error(), ke.Error()+": "); msg != err.Error() {
		return ke.Message + ": " + msg
	}
	return ke.Message
}

// fmtReply prints a reply to one request.
func (c *cluster) fmtReply(r Reply) string {
	if r.Err != nil {
		return "error: " + fmtErr(r.Err)
	}
	var b strings.Builder
	switch v := r.Value.(type) {
	case *BrokerRegistrationResponse:
		fmt.Fprintf(&b, "registered: epoch=%d", v.BrokerEpoch)
	case *BrokerHeartbeatResponse:
		fmt.Fprintf(&b, "heartbeat: caught-up=%v fenced=%v shutdown=%v", v.IsCaughtUp, v.IsFenced, v.ShouldShutDown)
	case *AlterPartitionResponse:
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				if p.Err != nil {
					fmt.Fprintf(&b, "%s-%d: %s\n", c.topicName(t.TopicID), p.Partition, fmtErr(p.Err))
					continue
				}
				fmt.Fprintf(&b, "%s-%d: OK leader=%d epochs=%d/%d isr=%v\n", c.topicName(t.TopicID), p.Partition, p.LeaderID,
					p.LeaderEpoch, p.PartitionEpoch, p.ISR)
			}
		}
	case *CreateTopicsResponse:
		for _, t := range v.Topics {
			if t.Err != nil {
				fmt.Fprintf(&b, "%s: %s\n", t.Name, fmtErr(t.Err))
				continue
			}
			fmt.Fprintf(&b, "%s: OK partitions=%d rf=%d\n", t.Name, t.NumPartitions, t.ReplicationFactor)
		}
	case *DeleteTopicsResponse:
		for _, t := range v.Topics {
			fmt.Fprintf(&b, "%s: %s\n", t.Name, fmtErr(t.Err))
		}
	case *CreatePartitionsResponse:
		for _, t := range v.Topics {
			fmt.Fprintf(&b, "%s: %s\n", t.Name, fmtErr(t.Err))
		}
	case *AlterConfigsResponse:
		for _, rr := range v.Resources {
			fmt.Fprintf(&b, "%s: %s\n", fmtResource(metadata.ConfigResource{Type: rr.Type, Name: rr.Name}), fmtErr(rr.Err))
		}
	case *AllocateProducerIDsResponse:
		fmt.Fprintf(&b, "producer ids [%d, %d)", v.Start, v.Start+int64(v.Len))
	case *ElectLeadersResponse:
		fmtPartitionResults(&b, v.Topics)
	case *AlterPartitionReassignmentsResponse:
		fmtPartitionResults(&b, v.Topics)
	case *ListPartitionReassignmentsResponse:
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				fmt.Fprintf(&b, "%s-%d replicas=%v adding=%v removing=%v\n", t.Name, p.Partition, p.Replicas, p.Adding, p.Removing)
			}
		}
		if len(v.Topics) == 0 {
			b.WriteString("no reassignments")
		}
	case *CreateAclsResponse:
		for i, err := range v.Results {
			fmt.Fprintf(&b, "acl %d: %s\n", i, fmtErr(err))
		}
	case *DeleteAclsResponse:
		for i, fr := range v.Results {
			fmt.Fprintf(&b, "filter %d: %s, %d deleted\n", i, fmtErr(fr.Err), len(fr.Deleted))
			for _, d := range fr.Deleted {
				fmt.Fprintf(&b, "  %s\n", fmtBinding(d))
			}
		}
	case *UpdateFeaturesResponse:
		for _, r := range v.Results {
			fmt.Fprintf(&b, "%s: %s\n", r.Feature, fmtErr(r.Err))
		}
	case *AckUncleanElectionResponse:
		fmt.Fprintf(&b, "acknowledged %s-%d leader-epoch=%d", c.topicName(v.Election.Topic), v.Election.Partition, v.Election.LeaderEpoch)
	case *AlterUserScramCredentialsResponse:
		for _, ur := range v.Results {
			fmt.Fprintf(&b, "%s: %s\n", ur.User, fmtErr(ur.Err))
		}
	default:
		fmt.Fprintf(&b, "%T", v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func fmtPartitionResults(b *strings.Builder, topics []TopicPartitionResults) {
	for _, t := range topics {
		for _, p := range t.Partitions {
			fmt.Fprintf(b, "%s-%d: %s\n", t.Topic, p.Partition, fmtErr(p.Err))
		}
	}
}
