package controller

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/metadata"
)

// Config configures a Core.
type Config struct {
	// NodeID is this node's id: the proposer of its entries.
	NodeID int32
	// Broker is this node's static broker configuration (server.properties
	// plus overrides). The cluster-wide dynamic broker configs come from the
	// image; together they give broker.session.timeout.ms, num.partitions,
	// default.replication.factor, delete.topic.enable,
	// min.insync.replicas, unclean.leader.election.enable,
	// unclean.leader.election.interval.ms, auto.leader.rebalance.enable and
	// leader.imbalance.check.interval.seconds.
	Broker *config.Broker
	// WriteTimeout bounds how long a proposed batch may take to apply
	// before its requests fail with REQUEST_TIMED_OUT. Default 5s.
	WriteTimeout time.Duration
	// MaxBatchOps bounds the requests written in one entry. Default 64.
	MaxBatchOps int
	// LocalIncarnation is the incarnation of the broker in this node's own
	// process (combined mode; zero: none). Its registration replaces an
	// earlier incarnation of this node at once, valid session or not, when
	// the two share a log dir: the earlier one ran on that dir, whose lock
	// this process holds, so it is gone. Without it a node restarted after
	// a crash waits for its old session to expire, as a Kafka broker does.
	LocalIncarnation [16]byte
	// Rand drives replica placement. Default: seeded from the runtime.
	Rand *rand.Rand
	// NewTopicID makes topic ids. Default metadata.NewTopicID.
	NewTopicID func() metadata.TopicID
	Logger     *slog.Logger
}

// Output is what the shell must do after an input: propose an entry, deliver
// replies, report elections, and call Tick at Deadline.
type Output struct {
	// Propose is the entry to propose to the metadata log, at most one.
	Propose *metadata.Entry
	// Replies answer submitted requests, in no particular order.
	Replies []Reply
	// Elections are the unclean and last-known-leader elections whose
	// records have just applied: each may have lost acknowledged records.
	Elections []Election
	// Deadline is when Tick must next be called; zero when no timer runs.
	Deadline time.Time
}

// Reply answers the request submitted with ID: Value is its *…Response, or
// Err when the whole request failed. Index is the log index the answer
// holds at: the entry that carried the request's records, or the applied
// index when it wrote none (0 with Err). A broker that forwarded the
// request waits until its own applied index reaches it before answering
// its client, so the client's next read on that broker sees the change.
type Reply struct {
	ID    uint64
	Value any
	Index uint64
	Err   error
}

// Election reports a leader elected from outside the ISR and ELR. The
// write that elected it also carries its metadata.UncleanElection record
// (Record), so every node shows it until an operator acknowledges it.
type Election struct {
	Topic       string
	TopicID     metadata.TopicID
	Partition   int32
	Leader      int32
	LeaderEpoch int32 // the new leader's epoch
	// LastKnownLeader: the leader was the partition's last known leader
	// (ISR and ELR empty); otherwise an unclean election chose it.
	LastKnownLeader bool
	// At is the controller's time of the decision.
	At time.Time
	// PreviousLeader, PreviousISR and PreviousELR are the partition's
	// state before (the leader is the last known one when it had none).
	PreviousLeader int32
	PreviousISR    []int32
	PreviousELR    []int32
	// Count is the partition's unclean elections since the last
	// acknowledgement, this one included.
	Count int32
}

// Record is the election's metadata record.
func (e *Election) Record() metadata.UncleanElection {
	return metadata.UncleanElection{Topic: e.TopicID, Partition: e.Partition, LeaderEpoch: e.LeaderEpoch, Leader: e.Leader,
		AtMs: e.At.UnixMilli(), LastKnownLeader: e.LastKnownLeader, PreviousLeader: e.PreviousLeader,
		PreviousISR: e.PreviousISR, PreviousELR: e.PreviousELR, Count: e.Count}
}

type role uint8

const (
	follower role = iota
	claiming      // raft leader; its Activation is not applied yet
	active
)

func (r role) String() string {
	return [...]string{"follower", "claiming", "active"}[r]
}

// Core is the active controller's state machine (see doc.go). It is not safe
// for concurrent use; one goroutine owns it.
type Core struct {
	cfg Config
	log *slog.Logger
	now time.Time

	applied   *metadata.Image
	brokerCfg *config.Broker // cfg.Broker under the applied image's cluster-wide dynamic configs

	role    role
	term    uint64
	nextSeq uint64
	// inflight is the proposed batch not yet applied; queue waits for it.
	inflight *batch
	queue    []*op
	// queued marks the timer-driven writes waiting in queue.
	queued   map[internalKind]bool
	sessions map[int32]*session

	uncleanAt, balanceAt time.Time
	// reclaimAt is when to propose the Activation again after raft
	// dropped it.
	reclaimAt time.Time

	out Output
}

// batch is one proposed entry and the ops whose records it carries.
type batch struct {
	seq        uint64
	ops        []*op
	deadline   time.Time
	activation bool
	// timedOut: its requests were failed at deadline; it still blocks the
	// next batch until it applies, the term ends or raft drops it.
	timedOut bool
}

// op is a submitted request or a timer-driven write.
type op struct {
	id       uint64 // reply id; 0 for internal writes
	queuedAt time.Time
	req      Request
	internal internalKind
	res      built
	recs     []metadata.Record // what the op wrote (write.emit)
	after    *metadata.Image   // the scratch image after this op's records
}

// built says how to answer an op once the records it emitted have applied.
type built struct {
	// reply computes the answer from the image after the op's records (with
	// index, the entry's raft index). Nil for internal writes.
	reply func(after *metadata.Image, index uint64) (any, error)
	// applied runs once the records have applied, for session bookkeeping.
	applied   func(index uint64)
	elections []Election
}

type internalKind uint8

const (
	notInternal internalKind = iota
	fenceStaleBrokers
	electUncleanLeaders
	balanceLeaders
)

// New returns a follower Core over an applied image.
func New(cfg Config, applied *metadata.Image) *Core {
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 5 * time.Second
	}
	if cfg.MaxBatchOps <= 0 {
		cfg.MaxBatchOps = 64
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if cfg.NewTopicID == nil {
		cfg.NewTopicID = metadata.NewTopicID
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &Core{cfg: cfg, log: cfg.Logger, applied: applied, queued: map[internalKind]bool{}}
	c.refreshBrokerConfig()
	return c
}

// Active reports whether this node is the active controller, and its term.
func (c *Core) Active() (bool, uint64) { return c.role == active, c.term }

// Image is the last applied image.
func (c *Core) Image() *metadata.Image { return c.applied }

// Ready returns what the inputs so far asked for and clears it.
func (c *Core) Ready() Output {
	out := c.out
	c.out = Output{}
	out.Deadline = c.deadline()
	return out
}

// LeadershipChanged tells the core whether this node is the raft leader, in
// which term. Becoming leader starts the claim: the core proposes its
// Activation and serves requests only once that has applied. Losing it (or
// a new term) fails every pending request with NOT_CONTROLLER.
func (c *Core) LeadershipChanged(now time.Time, leader bool, term uint64) {
	c.now = now
	switch {
	case leader && (c.role == follower || term != c.term):
		c.renounce("leadership moved to a new term")
		c.role, c.term, c.nextSeq = claiming, term, 0
		c.proposeActivation()
	case !leader && c.role != follower:
		c.renounce("no longer the raft leader")
	}
}

// Applied hands the core the image after the entry e applied (e nil: the
// image was replaced by a snapshot). Images must arrive in log order.
func (c *Core) Applied(now time.Time, im *metadata.Image, e *metadata.Entry) {
	c.now = now
	if e != nil && im.Index <= c.applied.Index {
		c.log.Warn("ignoring an applied entry older than the controller's image", "index", im.Index, "applied", c.applied.Index)
		return
	}
	prev := c.applied
	c.applied = im
	if e == nil || touchesClusterConfig(e) {
		c.refreshBrokerConfig()
	}
	mine := Activation(c.cfg.NodeID, c.term)
	if c.role == active && im.Controller != mine {
		c.log.Error("another controller activated while this one was active; renouncing",
			"node", c.cfg.NodeID, "term", c.term, "activation", im.Controller)
		c.renounce("another controller activated")
		return
	}
	if e != nil && c.inflight != nil && e.Proposer == c.cfg.NodeID && e.Term == c.term && e.Seq == c.inflight.seq {
		b := c.inflight
		c.inflight = nil
		if !b.activation {
			c.complete(b, prev, im)
		}
	}
	if c.role == claiming && im.Controller == mine {
		c.activate()
	}
	c.maybePropose()
}

// BootstrapRecords are the records of a new cluster's first snapshot: its
// id, and eligible leader replicas on, as on Kafka 4.1+ clusters.
func BootstrapRecords(clusterID string) []metadata.Record {
	return []metadata.Record{metadata.ClusterID{ID: clusterID}, metadata.FeatureLevel{Name: FeatureELR, Level: 1}}
}

// Activation is the record by which node claims term.
func Activation(node int32, term uint64) metadata.Activation {
	return metadata.Activation{Node: node, Term: term}
}

// Submit queues a request; its reply carries id. A node that is not the
// active controller answers NOT_CONTROLLER at once.
func (c *Core) Submit(now time.Time, id uint64, req Request) {
	c.now = now
	if c.role != active {
		c.reply(id, nil, errNotController)
		return
	}
	c.queue = append(c.queue, &op{id: id, req: req, queuedAt: now})
	c.maybePropose()
}

// ProposalFailed reports that the metadata log refused the proposal of
// batch seq (raft dropped it): its requests fail with NOT_CONTROLLER.
func (c *Core) ProposalFailed(now time.Time, seq uint64, err error) {
	c.now = now
	b := c.inflight
	if b == nil || b.seq != seq {
		return
	}
	c.inflight = nil
	c.failBatch(b, fmt.Errorf("%w: the metadata log dropped the proposal: %v", kerr.NotController, err))
	if b.activation && c.role == claiming {
		// Raft refuses while a leadership transfer is under way; try
		// again a little later rather than spin.
		c.reclaimAt = now.Add(reclaimBackoff)
	}
	c.maybePropose()
}

// reclaimBackoff is how long a leader waits to propose its Activation again
// after raft dropped it.
const reclaimBackoff = 100 * time.Millisecond

// Tick runs the timers due at now.
func (c *Core) Tick(now time.Time) {
	c.now = now
	c.expireWrites()
	if c.role == claiming && c.inflight == nil && !c.reclaimAt.IsZero() && !now.Before(c.reclaimAt) {
		c.proposeActivation()
	}
	if c.role == active {
		if c.anyStaleBroker() {
			c.enqueueInternal(fenceStaleBrokers)
		}
		if !c.uncleanAt.IsZero() && !now.Before(c.uncleanAt) {
			c.uncleanAt = time.Time{}
			c.enqueueInternal(electUncleanLeaders)
		}
		if !c.balanceAt.IsZero() && !now.Before(c.balanceAt) {
			c.balanceAt = time.Time{}
			c.enqueueInternal(balanceLeaders)
		}
	}
	c.maybePropose()
}

// expireWrites fails, with REQUEST_TIMED_OUT, the requests of an in-flight
// batch past its deadline and the requests that waited that long in the
// queue. The batch itself stays in flight: raft either commits it (it
// applies like any entry, and the next batch is built on it) or drops it
// when the term ends, so a late commit never races a batch built without
// it.
func (c *Core) expireWrites() {
	timeout := c.cfg.WriteTimeout
	if b := c.inflight; b != nil && !b.timedOut && !c.now.Before(b.deadline) {
		c.failBatch(b, fmt.Errorf("%w: the metadata write did not commit within %v", kerr.RequestTimedOut, timeout))
		b.timedOut = true
		c.log.Warn("a controller write did not commit in time; waiting for it before writing more",
			"term", c.term, "seq", b.seq, "timeout", timeout)
	}
	kept := c.queue[:0]
	for _, o := range c.queue {
		if o.internal == notInternal && !c.now.Before(o.queuedAt.Add(timeout)) {
			if hb, ok := o.req.(*BrokerHeartbeatRequest); ok {
				c.expiredHeartbeat(hb)
			}
			c.reply(o.id, nil, fmt.Errorf("%w: the controller could not write for %v", kerr.RequestTimedOut, timeout))
			continue
		}
		kept = append(kept, o)
	}
	clear(c.queue[len(kept):])
	c.queue = kept
}

var errNotController = fmt.Errorf("%w: this node is not the active controller", kerr.NotController)

func (c *Core) reply(id uint64, v any, err error) {
	c.replyAt(id, v, 0, err)
}

func (c *Core) replyAt(id uint64, v any, index uint64, err error) {
	if id != 0 {
		c.out.Replies = append(c.out.Replies, Reply{ID: id, Value: v, Index: index, Err: err})
	}
}

func (c *Core) enqueueInternal(k internalKind) {
	if !c.queued[k] {
		c.queued[k] = true
		c.queue = append(c.queue, &op{internal: k})
	}
}

func (c *Core) proposeActivation() {
	c.reclaimAt = time.Time{}
	seq := c.nextSeq
	c.nextSeq++
	c.inflight = &batch{seq: seq, activation: true, deadline: c.now.Add(c.cfg.WriteTimeout)}
	c.out.Propose = &metadata.Entry{Proposer: c.cfg.NodeID, Term: c.term, Seq: seq,
		Records: []metadata.Record{Activation(c.cfg.NodeID, c.term)}}
}

// activate is Kafka's claim: every registered broker gets a fresh session
// (so a new controller does not fence the cluster), and the periodic
// elections start.
func (c *Core) activate() {
	c.role = active
	c.sessions = make(map[int32]*session, len(c.applied.Brokers))
	for id := range c.applied.Brokers {
		c.sessions[id] = newSession(c.now)
	}
	c.uncleanAt = c.now.Add(c.uncleanInterval())
	if c.brokerCfg.Bool("auto.leader.rebalance.enable") {
		c.balanceAt = c.now.Add(c.balanceInterval())
	}
	c.log.Info("active controller", "node", c.cfg.NodeID, "term", c.term, "index", c.applied.Index,
		"brokers", len(c.sessions))
}

// renounce stops acting as controller: every pending request fails with
// NOT_CONTROLLER, and sessions and timers are dropped. Entries already
// proposed may still commit; they apply like anyone else's.
func (c *Core) renounce(why string) {
	if c.role == active {
		c.log.Info("controller renounced", "node", c.cfg.NodeID, "term", c.term, "reason", why)
	}
	if c.inflight != nil {
		c.failBatch(c.inflight, errNotController)
		c.inflight = nil
	}
	for _, o := range c.queue {
		c.reply(o.id, nil, errNotController)
	}
	c.queue, c.sessions = nil, nil
	c.queued = map[internalKind]bool{}
	c.uncleanAt, c.balanceAt, c.reclaimAt = time.Time{}, time.Time{}, time.Time{}
	c.role = follower
}

func (c *Core) failBatch(b *batch, err error) {
	if b.timedOut {
		return // answered at its deadline
	}
	for _, o := range b.ops {
		c.reply(o.id, nil, err)
	}
}

// maybePropose builds the next batch when none is in flight: up to
// MaxBatchOps queued ops, each built against the scratch image that already
// holds the records of the ops before it, so ops in one batch see each
// other (Kafka's replay-before-commit, without timeline structures). A
// batch without records answers at once.
func (c *Core) maybePropose() {
	for c.role == active && c.inflight == nil && len(c.queue) > 0 {
		n := min(len(c.queue), c.cfg.MaxBatchOps)
		ops := c.queue[:n:n]
		c.queue = append([]*op(nil), c.queue[n:]...)
		w := c.newWrite()
		var recs []metadata.Record
		for _, o := range ops {
			if o.internal != notInternal {
				c.queued[o.internal] = false
			}
			w.recs = nil
			o.res = c.build(w, o)
			o.recs, o.after = w.recs, w.im
			recs = append(recs, o.recs...)
		}
		if len(recs) == 0 {
			c.finish(ops, c.applied.Index, true)
			continue
		}
		seq := c.nextSeq
		c.nextSeq++
		c.inflight = &batch{seq: seq, ops: ops, deadline: c.now.Add(c.cfg.WriteTimeout)}
		c.out.Propose = &metadata.Entry{Proposer: c.cfg.NodeID, Term: c.term, Seq: seq, Records: recs}
	}
}

// complete answers the ops of batch b, whose entry has just turned prev into
// im. Each batch is built on the image its entry applies to, so no record
// can be skipped; if one is (a controller bug), the answers cannot be
// trusted and the requests fail.
func (c *Core) complete(b *batch, prev, im *metadata.Image) {
	if skipped := im.Skipped - prev.Skipped; skipped > 0 {
		c.log.Error("controller bug: records of a batch were skipped when it applied",
			"term", c.term, "seq", b.seq, "index", im.Index, "skipped", skipped)
		c.failBatch(b, fmt.Errorf("%w: the metadata write was refused when it applied", kerr.UnknownServerError))
		return
	}
	c.finish(b.ops, im.Index, !b.timedOut)
}

// finish runs the ops' bookkeeping and reports their elections now that
// their records have applied, and answers them unless they were answered
// (timed out) already.
func (c *Core) finish(ops []*op, index uint64, answer bool) {
	for _, o := range ops {
		if o.res.applied != nil {
			o.res.applied(index)
		}
		c.out.Elections = append(c.out.Elections, o.res.elections...)
		if answer && o.res.reply != nil {
			v, err := o.res.reply(o.after, index)
			c.replyAt(o.id, v, index, err)
		}
	}
}

// deadline is the earliest timer: the in-flight batch's and the oldest
// queued request's timeouts, the next broker session expiry, and the
// periodic elections.
func (c *Core) deadline() time.Time {
	var d time.Time
	earlier := func(t time.Time) {
		if !t.IsZero() && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	if c.inflight != nil && !c.inflight.timedOut {
		earlier(c.inflight.deadline)
	}
	for _, o := range c.queue {
		if o.internal == notInternal {
			earlier(o.queuedAt.Add(c.cfg.WriteTimeout))
			break // the queue is in arrival order
		}
	}
	if c.role == claiming {
		earlier(c.reclaimAt)
	}
	if c.role == active {
		earlier(c.nextSessionExpiry())
		earlier(c.uncleanAt)
		earlier(c.balanceAt)
	}
	return d
}

// build decides an op's records against the scratch image of w.
func (c *Core) build(w *write, o *op) built {
	switch o.internal {
	case fenceStaleBrokers:
		return c.fenceStaleBrokers(w)
	case electUncleanLeaders:
		return c.electUncleanLeaders(w)
	case balanceLeaders:
		return c.balanceLeaders(w)
	}
	switch r := o.req.(type) {
	case *BrokerRegistrationRequest:
		return c.registerBroker(w, r)
	case *BrokerHeartbeatRequest:
		return c.heartbeat(w, r)
	case *AlterPartitionRequest:
		return c.alterPartition(w, r)
	case *CreateTopicsRequest:
		return c.createTopics(w, r)
	case *DeleteTopicsRequest:
		return c.deleteTopics(w, r)
	case *CreatePartitionsRequest:
		return c.createPartitions(w, r)
	case *IncrementalAlterConfigsRequest:
		return c.incrementalAlterConfigs(w, r)
	case *AlterConfigsRequest:
		return c.alterConfigs(w, r)
	case *AllocateProducerIDsRequest:
		return c.allocateProducerIDs(w, r)
	case *ElectLeadersRequest:
		return c.electLeaders(w, r)
	case *AlterPartitionReassignmentsRequest:
		return c.alterReassignments(w, r)
	case *ListPartitionReassignmentsRequest:
		return answer(listReassignments(w.im, r), nil)
	case *CreateAclsRequest:
		return c.createAcls(w, r)
	case *DeleteAclsRequest:
		return c.deleteAcls(w, r)
	case *AlterUserScramCredentialsRequest:
		return c.alterScram(w, r)
	case *AckUncleanElectionRequest:
		return c.ackUncleanElection(w, r)
	case *UpdateFeaturesRequest:
		return c.updateFeatures(w, r)
	}
	return answer(nil, fmt.Errorf("%w: the controller does not serve %T", kerr.InvalidRequest, o.req))
}

// answer is an op without records whose answer is already known.
func answer(v any, err error) built {
	return built{reply: func(*metadata.Image, uint64) (any, error) { return v, err }}
}

func (c *Core) refreshBrokerConfig() {
	c.brokerCfg = c.cfg.Broker
	if dyn := c.applied.ClusterBrokerConfigs(); len(dyn) > 0 {
		if b, err := c.cfg.Broker.WithDynamic(dyn); err == nil {
			c.brokerCfg = b
		} else {
			c.log.Error("cluster-wide dynamic broker configs do not apply to this controller's static configs",
				"err", err)
		}
	}
}

func touchesClusterConfig(e *metadata.Entry) bool {
	for _, r := range e.Records {
		if cr, ok := r.(metadata.Config); ok && cr.Resource.Type == metadata.ResourceBroker && cr.Resource.Name == "" {
			return true
		}
	}
	return false
}

func (c *Core) uncleanInterval() time.Duration {
	return time.Duration(c.brokerCfg.Long("unclean.leader.election.interval.ms")) * time.Millisecond
}

func (c *Core) balanceInterval() time.Duration {
	return time.Duration(c.brokerCfg.Long("leader.imbalance.check.interval.seconds")) * time.Second
}
