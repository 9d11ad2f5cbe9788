package isr

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// BrokerInfo is what the metadata image says of a broker: its epoch (the
// incarnation registered now) and whether it may be in an ISR.
type BrokerInfo struct {
	Epoch        int64
	Fenced       bool
	ShuttingDown bool
}

// Brokers looks a registered broker up in the metadata image; ok is false
// for a broker that is not registered.
type Brokers func(id int32) (info BrokerInfo, ok bool)

// Config is what does not change while a broker runs.
type Config struct {
	// LocalID is this broker's node id: the leader.
	LocalID int32
	// LagTimeMax is replica.lag.time.max.ms.
	LagTimeMax time.Duration
}

// Assignment is the partition's registration in the metadata image.
type Assignment struct {
	Replicas       []int32
	ISR            []int32
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	// Recovering is LeaderRecoveryState RECOVERING (an unclean election).
	Recovering bool
}

// Follower is what the leader knows of one follower (Kafka's
// Replica.ReplicaState).
type Follower struct {
	ID int32
	// LogEndOffset is the follower's last fetch offset; -1 until it
	// fetched from this leader.
	LogEndOffset   int64
	LogStartOffset int64
	// LastFetch and LastCaughtUp are zero until set; LastFetchLeaderLEO is
	// the leader's log end offset when the follower last fetched.
	LastFetch          time.Time
	LastCaughtUp       time.Time
	LastFetchLeaderLEO int64
	// BrokerEpoch is the epoch its last fetch carried, -1 unknown.
	BrokerEpoch int64
	// FetchedThisEpoch: a fetch arrived in the current leader epoch.
	FetchedThisEpoch bool
	// Waiting: its last fetch waits at the leader for data (a long poll)
	// and has not been answered yet.
	Waiting bool
}

func newFollower(id int32) *Follower {
	return &Follower{ID: id, LogEndOffset: -1, LogStartOffset: -1, LastFetchLeaderLEO: -1, BrokerEpoch: -1}
}

// Departure says why and when a replica left the ISR.
type Departure struct {
	At time.Time
	// Cause is one of the Cause* constants.
	Cause string
	// Detail is a sentence naming the config or event, for people.
	Detail string
}

// Causes of a Departure.
const (
	CauseLagged            = "lagged"
	CauseFenced            = "fenced"
	CauseShutdown          = "controlled-shutdown"
	CauseUnregistered      = "unregistered"
	CauseController        = "controller"
	CauseNeverJoined       = "never-joined"
	CauseLeaderChange      = "leader-change"
	CauseReplicaReassigned = "reassigned"
)

// PendingKind is the in-flight change of the ISR, if any.
type PendingKind uint8

// The ISR states (design §2.4).
const (
	Committed PendingKind = iota
	PendingExpand
	PendingShrink
)

func (k PendingKind) String() string {
	switch k {
	case PendingExpand:
		return "pending-expand"
	case PendingShrink:
		return "pending-shrink"
	}
	return "committed"
}

// Member is an ISR member with the broker epoch vouched for (-1 unknown):
// AlterPartition v3's NewIsrWithEpochs.
type Member struct {
	ID          int32
	BrokerEpoch int64
}

// Proposal is an ISR change for the controller (AlterPartition).
type Proposal struct {
	// Seq identifies the proposal: a result is applied only to the
	// proposal still pending with its Seq.
	Seq            uint64
	Kind           PendingKind
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []Member
}

// IDs are the proposal's ISR members.
func (p *Proposal) IDs() []int32 {
	ids := make([]int32, len(p.ISR))
	for i, m := range p.ISR {
		ids[i] = m.ID
	}
	return ids
}

// Result is the controller's answer to a Proposal: an error (kerr), or the
// partition's state after the change.
type Result struct {
	Err            error
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
	Recovering     bool
}

// Outcome is what a Result or an Assignment did.
type Outcome uint8

// Outcomes.
const (
	// Ignored: stale (another proposal, epoch or partition epoch).
	Ignored Outcome = iota
	// Applied: the state changed to the result or assignment.
	Applied
	// RolledBack: the proposal was refused; the committed state stands.
	RolledBack
	// StillPending: our view is stale; a metadata update will settle it.
	StillPending
	// Resubmit: a transient error; send the same proposal again.
	Resubmit
	// NewEpoch: an assignment started a new leader epoch.
	NewEpoch
)

// Errors of FollowerFetched.
var (
	// ErrUnknownReplica: the fetching broker is not a replica (Kafka
	// answers UNKNOWN_LEADER_EPOCH when the fetch names an epoch, so a
	// replica added by a reassignment retries until the leader knows it).
	ErrUnknownReplica = errors.New("not a replica of the partition")
	// ErrStaleBrokerEpoch: the fetch names an older incarnation than the
	// metadata's (KIP-903); NOT_LEADER_OR_FOLLOWER.
	ErrStaleBrokerEpoch = errors.New("stale broker epoch")
)

// Leader is one partition's ISR state on its leader.
type Leader struct {
	cfg Config
	a   Assignment // a.ISR is the committed ISR
	// leso is the leader epoch start offset: the log end offset when this
	// broker took the current leader epoch.
	leso   int64
	minISR int32

	pending  PendingKind
	proposal *Proposal // the pending proposal
	seq      uint64
	// causes are why the members a pending shrink removes leave.
	causes map[int32]Departure

	followers  map[int32]*Follower
	departures map[int32]Departure
}

// NewLeader returns the state of a partition this broker is about to lead;
// Become gives it its assignment.
func NewLeader(cfg Config, minISR int32) *Leader {
	return &Leader{cfg: cfg, minISR: minISR, leso: -1, a: Assignment{Leader: -1, LeaderEpoch: -1, PartitionEpoch: -1},
		followers: map[int32]*Follower{}, departures: map[int32]Departure{}}
}

// Become applies the partition's assignment from a metadata image in which
// this broker leads it (Kafka's makeLeader): an assignment older than the
// one applied (a lower partition epoch), or the one applied, is Ignored; a
// new leader epoch
// starts at leo (the log end offset) and resets follower state (NewEpoch);
// the same leader epoch with a newer partition epoch commits the image's ISR
// and replicas and drops any pending change (Applied). A RECOVERING
// partition is taken as recovered at once, as Kafka's is: every proposal
// says RECOVERED.
func (l *Leader) Become(a Assignment, leo int64, now time.Time, brokers Brokers) Outcome {
	first := l.a.LeaderEpoch < 0
	if !first && (a.PartitionEpoch < l.a.PartitionEpoch ||
		a.PartitionEpoch == l.a.PartitionEpoch && a.LeaderEpoch == l.a.LeaderEpoch) {
		return Ignored // older, or what is applied already (a whole image published again)
	}
	newEpoch := first || a.LeaderEpoch > l.a.LeaderEpoch
	l.noteDepartures(a, now, brokers, newEpoch)
	old := l.a
	l.a = Assignment{Replicas: slices.Clone(a.Replicas), ISR: slices.Clone(a.ISR), Leader: a.Leader,
		LeaderEpoch: a.LeaderEpoch, PartitionEpoch: a.PartitionEpoch, Recovering: a.Recovering}
	l.pending, l.proposal, l.causes = Committed, nil, nil
	for id := range l.followers {
		if !slices.Contains(a.Replicas, id) {
			delete(l.followers, id)
			delete(l.departures, id)
		}
	}
	if !newEpoch {
		for _, id := range a.Replicas {
			if id != l.cfg.LocalID && l.followers[id] == nil {
				l.followers[id] = newFollower(id)
			}
		}
		return Applied
	}
	l.leso = leo
	sameLeader := !first && old.Leader == l.cfg.LocalID
	for _, id := range a.Replicas {
		if id == l.cfg.LocalID {
			continue
		}
		f := l.followers[id]
		if !slices.Contains(a.ISR, id) {
			// design §2.12.8: a replica outside the ISR starts over, so
			// state from before this epoch can never re-admit it.
			l.followers[id] = newFollower(id)
			continue
		}
		if f == nil || !sameLeader {
			f = newFollower(id)
			l.followers[id] = f
		}
		f.LastCaughtUp, f.FetchedThisEpoch, f.LastFetch = now, false, time.Time{}
	}
	return NewEpoch
}

// noteDepartures records why members of the committed ISR that a leaves out
// left it.
func (l *Leader) noteDepartures(a Assignment, now time.Time, brokers Brokers, newEpoch bool) {
	for _, id := range a.ISR {
		delete(l.departures, id)
	}
	for _, id := range a.Replicas {
		if slices.Contains(a.ISR, id) {
			continue
		}
		if _, known := l.departures[id]; known {
			continue
		}
		if d, ok := l.causes[id]; ok {
			l.departures[id] = d
			continue
		}
		switch {
		case l.a.LeaderEpoch < 0 || !slices.Contains(l.a.ISR, id):
			if !slices.Contains(l.a.Replicas, id) && l.a.LeaderEpoch >= 0 {
				l.departures[id] = Departure{At: now, Cause: CauseReplicaReassigned,
					Detail: "added to the replicas by a reassignment; it joins the ISR once it has caught up"}
			} else {
				l.departures[id] = Departure{At: now, Cause: CauseNeverJoined,
					Detail: fmt.Sprintf("not in the ISR when this broker became leader in leader epoch %d", a.LeaderEpoch)}
			}
		default:
			l.departures[id] = brokerDeparture(id, now, brokers, newEpoch)
		}
	}
}

// brokerDeparture explains a removal this leader did not propose.
func brokerDeparture(id int32, now time.Time, brokers Brokers, newEpoch bool) Departure {
	b, ok := brokers(id)
	switch {
	case !ok:
		return Departure{At: now, Cause: CauseUnregistered, Detail: fmt.Sprintf("broker %d is not registered", id)}
	case b.Fenced:
		return Departure{At: now, Cause: CauseFenced, Detail: fmt.Sprintf(
			"broker %d was fenced by the controller: no heartbeat within broker.session.timeout.ms, or it restarted", id)}
	case b.ShuttingDown:
		return Departure{At: now, Cause: CauseShutdown, Detail: fmt.Sprintf("broker %d is in controlled shutdown", id)}
	case newEpoch:
		return Departure{At: now, Cause: CauseLeaderChange, Detail: "left out of the ISR by the election of a new leader"}
	}
	return Departure{At: now, Cause: CauseController, Detail: "removed from the ISR by the controller"}
}

// SetMinISR updates min.insync.replicas.
func (l *Leader) SetMinISR(n int32) { l.minISR = n }

// Assignment is the partition's registration with the committed ISR.
func (l *Leader) Assignment() Assignment { return l.a }

// LeaderEpochStartOffset is the log end offset when the current leader
// epoch began here.
func (l *Leader) LeaderEpochStartOffset() int64 { return l.leso }

// ISR is the committed ISR.
func (l *Leader) ISR() []int32 { return l.a.ISR }

// Pending is the state of the ISR and the pending proposal, if any.
func (l *Leader) Pending() (PendingKind, *Proposal) { return l.pending, l.proposal }

// MaximalISR is the committed ISR plus a pending expansion's new member.
func (l *Leader) MaximalISR() []int32 {
	if l.pending == PendingExpand {
		return l.proposal.IDs()
	}
	return l.a.ISR
}

func (l *Leader) inMaximal(id int32) bool { return slices.Contains(l.MaximalISR(), id) }

// EffectiveMinISR is min(min.insync.replicas, replicas) (Kafka's
// effectiveMinIsr).
func (l *Leader) EffectiveMinISR() int {
	return min(int(l.minISR), len(l.a.Replicas))
}

// UnderMinISR reports whether the committed ISR is smaller than the
// effective min.insync.replicas: acks=all appends are refused with
// NOT_ENOUGH_REPLICAS and the high watermark stands still.
func (l *Leader) UnderMinISR() bool { return len(l.a.ISR) < l.EffectiveMinISR() }

// EnoughReplicas reports whether the maximal ISR has at least the effective
// min.insync.replicas: whether an acks=all produce the high watermark has
// passed succeeds (else NOT_ENOUGH_REPLICAS_AFTER_APPEND).
func (l *Leader) EnoughReplicas() bool { return len(l.MaximalISR()) >= l.EffectiveMinISR() }

// Follower returns a copy of a follower's state.
func (l *Leader) Follower(id int32) (Follower, bool) {
	f := l.followers[id]
	if f == nil {
		return Follower{}, false
	}
	return *f, true
}

// Departure says why a replica outside the ISR is not in it.
func (l *Leader) Departure(id int32) (Departure, bool) {
	d, ok := l.departures[id]
	return d, ok
}

// FollowerFetched records a follower's fetch at fetchOffset, made by
// broker epoch brokerEpoch, when the leader's log end offset was leaderLEO
// (Kafka's updateFollowerFetchState). Call it only for a fetch that did not
// diverge.
func (l *Leader) FollowerFetched(id int32, fetchOffset, logStart, brokerEpoch, leaderLEO int64, now time.Time, brokers Brokers) error {
	f := l.followers[id]
	if f == nil {
		return fmt.Errorf("%w: broker %d is not among the replicas %v of leader epoch %d", ErrUnknownReplica, id, l.a.Replicas, l.a.LeaderEpoch)
	}
	if b, ok := brokers(id); ok && brokerEpoch != -1 && b.Epoch > brokerEpoch {
		return fmt.Errorf("%w: the fetch from broker %d carries broker epoch %d, the metadata says %d", ErrStaleBrokerEpoch, id, brokerEpoch, b.Epoch)
	}
	switch {
	case fetchOffset >= leaderLEO:
		f.LastCaughtUp = later(f.LastCaughtUp, now)
	case fetchOffset >= f.LastFetchLeaderLEO && !f.LastFetch.IsZero():
		f.LastCaughtUp = later(f.LastCaughtUp, f.LastFetch)
	}
	f.LogEndOffset, f.LogStartOffset = fetchOffset, logStart
	f.LastFetchLeaderLEO = max(f.LastFetchLeaderLEO, leaderLEO)
	f.LastFetch = now
	f.BrokerEpoch = brokerEpoch
	f.FetchedThisEpoch = true
	f.Waiting = false
	return nil
}

// FollowerWaiting records that follower id's fetch at fetchOffset (the one
// FollowerFetched recorded) waits for data at the leader, or (waiting
// false) has been answered, when the leader's log end offset is leaderLEO.
// Either way the follower is caught up at now if its fetch offset is at
// the leader's log end offset then: Kafka's updateFetchStateOrThrow rule,
// applied at the long poll's end as well as at its start, so an idle
// follower's last caught-up time does not lag by up to
// replica.fetch.wait.max.ms. A fetch of an earlier offset or leader epoch
// (the follower state was reset since) is ignored.
func (l *Leader) FollowerWaiting(id int32, fetchOffset, leaderLEO int64, waiting bool, now time.Time) {
	f := l.followers[id]
	if f == nil || !f.FetchedThisEpoch || f.LogEndOffset != fetchOffset {
		return
	}
	f.Waiting = waiting
	if fetchOffset >= leaderLEO {
		f.LastCaughtUp = later(f.LastCaughtUp, now)
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// caughtUp is Replica.isCaughtUp.
func (l *Leader) caughtUp(f *Follower, leaderLEO int64, now time.Time) bool {
	if f.LogEndOffset < 0 {
		return false
	}
	return f.LogEndOffset == leaderLEO || (!f.LastCaughtUp.IsZero() && now.Sub(f.LastCaughtUp) <= l.cfg.LagTimeMax)
}

// eligible is isReplicaIsrEligible: registered, unfenced, not shutting
// down, and the follower's last fetch made by the registered incarnation.
func (l *Leader) eligible(f *Follower, brokers Brokers) bool {
	b, ok := brokers(f.ID)
	return ok && !b.Fenced && !b.ShuttingDown && (f.BrokerEpoch == -1 || f.BrokerEpoch == b.Epoch)
}

// HighWatermark is the high watermark the ISR allows (Kafka's
// maybeIncrementLeaderHW): none (ok false) under min ISR; else own, the
// leader's offset (its flushed offset under gregor.ack.fsync, else its log
// end offset), lowered to the log end offset of every follower in the
// maximal ISR and of every caught-up eligible follower. leaderLEO is the
// leader's log end offset.
func (l *Leader) HighWatermark(own, leaderLEO int64, now time.Time, brokers Brokers) (int64, bool) {
	if l.UnderMinISR() {
		return 0, false
	}
	hw := own
	for _, f := range l.followers {
		if l.inMaximal(f.ID) || (l.caughtUp(f, leaderLEO, now) && l.eligible(f, brokers)) {
			hw = min(hw, f.LogEndOffset)
		}
	}
	return hw, hw >= 0
}

// MaybeExpand proposes adding follower id to the ISR when it meets every
// expansion rule, given the leader's high watermark hw; nil otherwise.
func (l *Leader) MaybeExpand(id int32, hw int64, brokers Brokers) *Proposal {
	if len(l.blockers(id, hw, brokers)) > 0 {
		return nil
	}
	isr := append(slices.Clone(l.a.ISR), id)
	return l.propose(PendingExpand, isr, brokers)
}

// MaybeShrink proposes removing the ISR followers that are not caught up
// (Kafka's maybeShrinkIsr, run every replica.lag.time.max.ms/2); nil when
// none lag or a change is in flight.
func (l *Leader) MaybeShrink(leaderLEO int64, now time.Time, brokers Brokers) *Proposal {
	if l.pending != Committed {
		return nil
	}
	var out []int32
	causes := map[int32]Departure{}
	for _, id := range l.a.ISR {
		f := l.followers[id]
		if id == l.cfg.LocalID || f == nil || l.caughtUp(f, leaderLEO, now) {
			continue
		}
		out = append(out, id)
		causes[id] = lagDeparture(f, leaderLEO, now, l.cfg.LagTimeMax)
	}
	if len(out) == 0 {
		return nil
	}
	isr := slices.DeleteFunc(slices.Clone(l.a.ISR), func(id int32) bool { return slices.Contains(out, id) })
	p := l.propose(PendingShrink, isr, brokers)
	l.causes = causes
	return p
}

func lagDeparture(f *Follower, leaderLEO int64, now time.Time, lag time.Duration) Departure {
	var d string
	switch {
	case f.LogEndOffset < 0:
		d = fmt.Sprintf("broker %d has not fetched from this leader within replica.lag.time.max.ms=%d", f.ID, lag.Milliseconds())
	case f.LastCaughtUp.IsZero():
		d = fmt.Sprintf("broker %d never caught up (log end offset %d, leader's %d) within replica.lag.time.max.ms=%d",
			f.ID, f.LogEndOffset, leaderLEO, lag.Milliseconds())
	default:
		d = fmt.Sprintf("broker %d was last caught up %d ms ago, more than replica.lag.time.max.ms=%d (log end offset %d, leader's %d)",
			f.ID, now.Sub(f.LastCaughtUp).Milliseconds(), lag.Milliseconds(), f.LogEndOffset, leaderLEO)
	}
	return Departure{At: now, Cause: CauseLagged, Detail: d}
}

// propose makes isr the pending change, with each member's broker epoch:
// the leader's own, a follower's from its last fetch (Kafka's
// addBrokerEpochToIsr).
func (l *Leader) propose(kind PendingKind, isr []int32, brokers Brokers) *Proposal {
	l.seq++
	p := &Proposal{Seq: l.seq, Kind: kind, LeaderEpoch: l.a.LeaderEpoch, PartitionEpoch: l.a.PartitionEpoch}
	for _, id := range isr {
		m := Member{ID: id, BrokerEpoch: -1}
		if id == l.cfg.LocalID {
			if b, ok := brokers(id); ok {
				m.BrokerEpoch = b.Epoch
			}
		} else if f := l.followers[id]; f != nil {
			m.BrokerEpoch = f.BrokerEpoch
		}
		p.ISR = append(p.ISR, m)
	}
	l.pending, l.proposal = kind, p
	return p
}

// Completed applies the controller's answer to proposal seq (Kafka's
// handleAlterPartitionUpdate and handleAlterPartitionError); for Resubmit
// the proposal to send again is returned.
func (l *Leader) Completed(seq uint64, r Result, now time.Time) (Outcome, *Proposal) {
	if l.pending == Committed || l.proposal.Seq != seq {
		return Ignored, nil
	}
	if r.Err != nil {
		switch {
		case errors.Is(r.Err, kerr.OperationNotAttempted), errors.Is(r.Err, kerr.IneligibleReplica):
			l.pending, l.proposal, l.causes = Committed, nil, nil
			return RolledBack, nil
		case errors.Is(r.Err, kerr.UnknownTopicOrPartition), errors.Is(r.Err, kerr.UnknownTopicID),
			errors.Is(r.Err, kerr.FencedLeaderEpoch), errors.Is(r.Err, kerr.InvalidUpdateVersion),
			errors.Is(r.Err, kerr.InvalidRequest), errors.Is(r.Err, kerr.NewLeaderElected):
			return StillPending, nil
		}
		return Resubmit, l.proposal
	}
	if r.LeaderEpoch != l.a.LeaderEpoch || r.PartitionEpoch < l.a.PartitionEpoch {
		return Ignored, nil
	}
	for _, id := range l.a.ISR {
		if !slices.Contains(r.ISR, id) {
			if d, ok := l.causes[id]; ok {
				l.departures[id] = d
			} else {
				l.departures[id] = Departure{At: now, Cause: CauseController, Detail: "removed from the ISR by the controller"}
			}
		}
	}
	for _, id := range r.ISR {
		delete(l.departures, id)
	}
	l.a.ISR, l.a.PartitionEpoch, l.a.Recovering = slices.Clone(r.ISR), r.PartitionEpoch, r.Recovering
	l.pending, l.proposal, l.causes = Committed, nil, nil
	return Applied, nil
}
