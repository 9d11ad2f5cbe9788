package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/logmgr"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/replica/isr"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// Role is a hosted partition's place in its replica set, as the metadata
// image says (Kafka's PartitionRegistration seen from one broker): whether
// this broker leads it, who does, in which leader epoch, and the sizes of
// the replica set and ISR. A replica that does not lead is a follower: it
// fetches from LeaderID; with no leader at all (LeaderID -1) it serves
// nothing.
type Role struct {
	Leader         bool
	LeaderID       int32
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas, ISR  int32
}

// soleLeader is the role Host gives: the only replica, leading epoch 0.
var soleLeader = Role{Leader: true, LeaderID: -1, Replicas: 1, ISR: 1}

// Partition is a hosted partition.
type Partition struct {
	TP      topicpart.TopicPartition
	Log     *log.Log
	TopicID [16]byte

	// roleMu guards role. An append to the log holds it for reading, from
	// the leadership check to the write, so a record is never written
	// under a leader epoch the partition has left (Kafka's
	// leaderIsrUpdateLock); SetRole holds it for writing.
	roleMu sync.RWMutex
	role   Role

	// stats are the topic's BrokerTopicMetrics counters, fixed at Host.
	stats TopicStats
	// reserve is the log dir holding the log, fixed at Host: its
	// free-space reserve admits client appends, and a follower's (admit).
	// Nil for an internal topic, whose appends are the coordinators' the
	// reserve is kept for.
	reserve *logmgr.LogDir

	// replMu guards leader and sentHW. It is taken after roleMu (held for
	// reading or writing), never before.
	replMu sync.Mutex
	// leader is the ISR state while this broker leads a partition with
	// more than one replica (nil otherwise: a sole replica is its own ISR).
	leader *isr.Leader
	// sentHW is the high watermark last sent to each follower, so a
	// follower's parked fetch is answered when it grows.
	sentHW map[int32]int64

	mu sync.Mutex
	// waiters are the long-poll fetches registered on p (Waiter).
	waiters map[*Waiter]struct{}
	// acks are acks=all produces waiting for the high watermark.
	acks []*ackWaiter
	// minISR is min.insync.replicas for the topic.
	minISR int32
	// syncPending coalesces background syncs for acks=0.
	syncPending bool
	// lastTruncation is this replica's last cut of its log to match a
	// leader (nil: none since it was hosted).
	lastTruncation *Truncated
}

// Truncated is a follower's cut of its log to match its leader's: what an
// unclean election took from this replica. FromLogEnd and FromHighWatermark
// are its log end offset and high watermark before the cut (the high
// watermark as this replica knew it: after a restart, as last
// checkpointed), To where it cut.
type Truncated struct {
	LeaderEpoch       int32
	FromLogEnd        int64
	FromHighWatermark int64
	To                int64
	At                time.Time
}

// LastTruncation is p's last truncation to match a leader, if any.
func (p *Partition) LastTruncation() *Truncated {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastTruncation
}

func (p *Partition) noteTruncation(t Truncated) {
	p.mu.Lock()
	p.lastTruncation = &t
	p.mu.Unlock()
}

// notify wakes every fetch waiting on p. The sends never block (a waiter
// keeps at most one pending wake-up), so they are made under p.mu.
func (p *Partition) notify() { p.wake(false) }

// notifyFollowers wakes the followers' fetches waiting on p: its log end
// offset moved, which consumers cannot see before the high watermark does.
func (p *Partition) notifyFollowers() { p.wake(true) }

func (p *Partition) wake(followersOnly bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for w := range p.waiters {
		if followersOnly && !w.follower {
			continue
		}
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
}

// Offline is nil while the partition's log dir is online, else why it is
// not (an error wrapping log.ErrStorageFailed): the partition then answers
// KAFKA_STORAGE_ERROR, as Kafka's offline partitions do.
func (p *Partition) Offline() error { return p.Log.Failed() }

// SetMinISR updates min.insync.replicas.
func (p *Partition) SetMinISR(n int32) {
	p.mu.Lock()
	p.minISR = n
	p.mu.Unlock()
	p.roleMu.RLock()
	if p.leader != nil {
		p.replMu.Lock()
		p.leader.SetMinISR(n)
		p.replMu.Unlock()
	}
	p.roleMu.RUnlock()
}

// ReplicaState is a partition's replication state as this broker sees it.
type ReplicaState struct {
	// Leader reports whether this broker leads the partition.
	Leader bool
	// Replicas and ISR are the sizes of the replica set and of the in-sync
	// replica set.
	Replicas, ISR int32
	// MinISR is the effective min.insync.replicas: the topic's, capped at
	// the number of replicas (Kafka's effectiveMinIsr).
	MinISR int32
}

// UnderReplicated: a led partition whose ISR is smaller than its replica set.
func (s ReplicaState) UnderReplicated() bool { return s.Leader && s.ISR < s.Replicas }

// UnderMinISR: a led partition whose ISR is smaller than
// min.insync.replicas, so acks=all produce requests are refused with
// NOT_ENOUGH_REPLICAS.
func (s ReplicaState) UnderMinISR() bool { return s.Leader && s.ISR < s.MinISR }

// AtMinISR: a led partition whose ISR is exactly min.insync.replicas, so
// losing one more in-sync replica stops acks=all produce requests.
func (s ReplicaState) AtMinISR() bool { return s.Leader && s.ISR == s.MinISR }

// ReplicaState returns the partition's current replication state.
func (p *Partition) ReplicaState() ReplicaState {
	r := p.Role()
	p.mu.Lock()
	defer p.mu.Unlock()
	minISR := p.minISR
	if r.Replicas > 0 {
		minISR = min(minISR, r.Replicas)
	}
	return ReplicaState{Leader: r.Leader, Replicas: r.Replicas, ISR: r.ISR, MinISR: minISR}
}

// Role is the partition's current role.
func (p *Partition) Role() Role {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	return p.role
}

// LeaderEpoch is the partition's current leader epoch.
func (p *Partition) LeaderEpoch() int32 { return p.Role().LeaderEpoch }

// IsLeader reports whether this broker leads the partition.
func (p *Partition) IsLeader() bool { return p.Role().Leader }

// Manager routes requests to partitions.
type Manager struct {
	logs     *logmgr.Manager
	ackFsync bool
	logger   *slog.Logger

	mu    sync.RWMutex
	parts map[topicpart.TopicPartition]*Partition

	closing atomic.Bool
	// closingC is closed by BeginShutdown: waiting fetches answer then.
	closingC chan struct{}
	// waiting counts the long-poll fetches between NewWaiter and Done.
	waiting atomic.Int64

	metrics   *TopicMetrics
	flushTime prometheus.Histogram

	// repl is replication, from StartReplication on (replication.go).
	repl *replication
	// image is the last metadata image applied (brokers' epochs and
	// fencing decide who may join an ISR); nil until the first.
	image atomic.Pointer[metadata.Image]
	// runSync runs an acknowledgement's fsync; nil: on a goroutine of its
	// own. The simulation schedules them as events.
	runSync func(func())
}

// BeginShutdown wakes every waiting fetch and makes new ones answer at once,
// so a broker shutdown does not wait out long polls.
func (m *Manager) BeginShutdown() {
	if m.closing.Swap(true) {
		return
	}
	// Every waiting fetch, also one waiting on partitions no longer hosted
	// (a deleted topic's), whose notify would never come.
	close(m.closingC)
}

// Closing reports whether the broker is shutting down.
func (m *Manager) Closing() bool { return m.closing.Load() }

// New makes a Manager over logs.
func New(logs *logmgr.Manager, ackFsync bool, logger *slog.Logger) *Manager {
	if logger == nil {
		logger = slog.Default()
	}
	return &Manager{logs: logs, ackFsync: ackFsync, logger: logger, parts: make(map[topicpart.TopicPartition]*Partition),
		metrics: newTopicMetrics(), flushTime: newFlushHistogram(), closingC: make(chan struct{}), repl: newReplication()}
}

// AckFsync reports whether acknowledgements wait for fsync.
func (m *Manager) AckFsync() bool { return m.ackFsync }

// Host makes tp a hosted partition, creating its log if needed, as its only
// replica and leader in leader epoch 0.
func (m *Manager) Host(tp topicpart.TopicPartition, topicID [16]byte, cfg log.Config, minISR int32) (*Partition, error) {
	return m.HostAs(tp, topicID, cfg, minISR, soleLeader)
}

// HostAs makes tp a hosted partition in role, creating its log if needed;
// an already hosted partition takes role (SetRole).
func (m *Manager) HostAs(tp topicpart.TopicPartition, topicID [16]byte, cfg log.Config, minISR int32, role Role) (*Partition, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, created, err := m.hostLocked(tp, topicID, cfg, minISR)
	if err != nil {
		return nil, err
	}
	if err := m.setRole(p, role, nil); err != nil {
		if created {
			delete(m.parts, tp)
			m.metrics.dropped(tp.Topic)
		}
		return nil, err
	}
	return p, nil
}

// hostLocked returns the hosted partition tp, hosting it (its log created
// if needed) when it was not; m.mu is held.
func (m *Manager) hostLocked(tp topicpart.TopicPartition, topicID [16]byte, cfg log.Config, minISR int32) (*Partition, bool, error) {
	if p := m.parts[tp]; p != nil {
		return p, false, nil
	}
	l, err := m.logs.GetOrCreate(tp, cfg)
	if err != nil {
		return nil, false, err
	}
	if err := l.AssignTopicID(topicID); err != nil {
		return nil, false, err
	}
	p := &Partition{TP: tp, Log: l, TopicID: topicID, minISR: minISR}
	p.stats = TopicStats{all: m.metrics.all, topic: m.metrics.hosted(tp.Topic)}
	if !topicpart.Internal(tp.Topic) {
		p.reserve = m.logs.LogDirOf(tp)
	}
	m.parts[tp] = p
	return p, true, nil
}

// SetRole gives a hosted partition the role the metadata now says it has.
func (m *Manager) SetRole(tp topicpart.TopicPartition, role Role) error {
	p, ok := m.Get(tp)
	if !ok {
		return kerr.UnknownTopicOrPartition
	}
	return m.setRole(p, role, nil)
}

// setRole changes p's role, with no append in between (Kafka's makeLeader
// and makeFollower). Becoming leader in a new epoch starts that epoch at the
// log end (the epoch cache gets (epoch, LEO)), so the records the partition
// takes from now on carry it and OffsetForLeaderEpoch answers for it. a is
// the partition's assignment from the metadata (nil: a sole replica, its
// own ISR); a leader of several replicas keeps its ISR state (package isr)
// from it. A follower whose leader or leader epoch changed fetches from
// its leader from its log end on. A role from an older partition epoch than
// the current one is ignored.
func (m *Manager) setRole(p *Partition, role Role, a *isr.Assignment) error {
	p.mu.Lock()
	minISR := p.minISR
	p.mu.Unlock()
	p.roleMu.Lock()
	old := p.role
	if p.Log != nil && old != (Role{}) && role.PartitionEpoch < old.PartitionEpoch {
		p.roleMu.Unlock()
		return nil
	}
	if role.Leader && (!old.Leader || role.LeaderEpoch != old.LeaderEpoch || old == (Role{})) {
		if err := p.Log.AssignLeaderEpoch(role.LeaderEpoch); err != nil {
			p.roleMu.Unlock()
			return fmt.Errorf("assigning leader epoch %d to %s: %w", role.LeaderEpoch, p.TP, err)
		}
	}
	m.applyLeaderState(p, &role, a, minISR)
	p.role = role
	if old.Leader && !role.Leader {
		// Kafka completes a lost leadership's delayed produces so; a
		// record may still survive on the new leader.
		p.failAcks(NotLeaderError(role))
	}
	p.roleMu.Unlock()
	newLeadership := old == (Role{}) || old.Leader != role.Leader || old.LeaderEpoch != role.LeaderEpoch || old.LeaderID != role.LeaderID
	switch {
	case role.Leader:
		m.repl.fetchers.remove(p)
		m.advanceHW(p)
		m.checkMinISR(p)
	case role.LeaderID < 0:
		m.repl.fetchers.remove(p)
	case newLeadership:
		m.repl.fetchers.add(p, role.LeaderID, role.LeaderEpoch)
	}
	if old.Leader != role.Leader || old.LeaderEpoch != role.LeaderEpoch {
		p.notify() // long polls re-check the leadership
	}
	return nil
}

// Drop stops hosting tp and deletes its log.
func (m *Manager) Drop(tp topicpart.TopicPartition) error {
	m.mu.Lock()
	p := m.parts[tp]
	delete(m.parts, tp)
	if p != nil {
		m.metrics.dropped(tp.Topic)
	}
	m.mu.Unlock()
	if p != nil {
		m.repl.fetchers.remove(p)
		p.roleMu.Lock()
		p.failAcks(fmt.Errorf("%w: this broker no longer hosts %s", kerr.NotLeaderForPartition, tp))
		p.roleMu.Unlock()
		p.notify()
	}
	return m.logs.Delete(tp)
}

// Get returns a hosted partition.
func (m *Manager) Get(tp topicpart.TopicPartition) (*Partition, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.parts[tp]
	return p, ok
}

// Log returns a hosted partition's log.
func (m *Manager) Log(tp topicpart.TopicPartition) (*log.Log, bool) {
	if p, ok := m.Get(tp); ok {
		return p.Log, true
	}
	return nil, false
}

// Partitions returns every hosted partition.
func (m *Manager) Partitions() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Partition, 0, len(m.parts))
	for _, p := range m.parts {
		out = append(out, p)
	}
	return out
}

// advanceHW moves a leader's high watermark up to what its ISR holds: its
// own durable log end offset (its log end offset without
// gregor.ack.fsync), lowered to what the followers hold (isr.Leader's
// HighWatermark) when it has any. Every completed sync and follower fetch
// calls it, concurrently: the target read here may be older than one
// another caller has already applied, so the log only ever raises the high
// watermark (it never moves back on a leader). A follower's high watermark
// is its leader's (see the fetcher), never its own.
func (m *Manager) advanceHW(p *Partition) {
	p.roleMu.RLock()
	if !p.role.Leader {
		p.roleMu.RUnlock()
		return
	}
	leo := p.Log.LogEndOffset()
	target := leo
	if m.ackFsync {
		target = p.Log.RecoveryPoint()
	}
	enough := true
	if p.leader != nil {
		p.replMu.Lock()
		hw, ok := p.leader.HighWatermark(target, leo, m.now(), m.brokerInfo)
		enough = p.leader.EnoughReplicas()
		p.replMu.Unlock()
		if !ok {
			p.roleMu.RUnlock()
			return
		}
		target = hw
	}
	moved := p.Log.MaybeIncrementHighWatermark(target)
	p.roleMu.RUnlock()
	if moved {
		p.notify()
		p.completeAcks(p.Log.HighWatermark(), enough)
	}
}

// Append writes a client batch to tp and waits for the acknowledgement acks
// asks for. The error is a Kafka error (kerr) or one from record/log for the
// caller's error table.
func (m *Manager) Append(ctx context.Context, tp topicpart.TopicPartition, batch []byte, acks int16, origin log.Origin) (log.AppendResult, error) {
	pend, err := m.AppendNoWait(tp, batch, acks, origin)
	if err != nil {
		return pend.Result, err
	}
	return pend.Result, m.AwaitContext(ctx, []*Pending{&pend})[0]
}

// AppendMarker writes a transaction marker to tp (the leader's side of
// WriteTxnMarkers: Kafka appends it with origin COORDINATOR and acks=-1) and
// waits for the acknowledgement acks asks for: with acks=-1 until the
// partition's high watermark passes the marker, as a produce with acks=all.
// The log checks it against the producer state (INVALID_PRODUCER_EPOCH,
// TRANSACTION_COORDINATOR_FENCED).
func (m *Manager) AppendMarker(ctx context.Context, tp topicpart.TopicPartition, spec log.MarkerSpec, acks int16) (log.AppendResult, error) {
	pend, err := m.AppendMarkerNoWait(tp, spec, acks)
	if err != nil {
		return pend.Result, err
	}
	return pend.Result, m.AwaitContext(ctx, []*Pending{&pend})[0]
}

// AppendMarkerNoWait is AppendMarker without the wait: pass the Pending
// values of several partitions to Await, which waits for them at once.
// Only a leader writes a marker (a follower copies it from its leader);
// with acks=-1 an ISR below min.insync.replicas refuses it
// (NOT_ENOUGH_REPLICAS), as Kafka's appendRecords for the coordinator.
func (m *Manager) AppendMarkerNoWait(tp topicpart.TopicPartition, spec log.MarkerSpec, acks int16) (Pending, error) {
	p, ok := m.Get(tp)
	if !ok {
		return Pending{}, kerr.UnknownTopicOrPartition
	}
	if acks == -1 {
		if st := p.ReplicaState(); st.UnderMinISR() {
			return Pending{}, fmt.Errorf("%w: the ISR of %s has %d replicas, min.insync.replicas is %d",
				kerr.NotEnoughReplicas, tp, st.ISR, st.MinISR)
		}
	}
	p.roleMu.RLock()
	role := p.role
	if !role.Leader {
		p.roleMu.RUnlock()
		return Pending{}, NotLeaderError(role)
	}
	res, err := p.Log.AppendMarker(spec, role.LeaderEpoch)
	p.roleMu.RUnlock()
	if err != nil {
		return Pending{Result: res}, err
	}
	return m.afterAppend(p, res, acks, role.Replicas), nil
}

// afterAppend starts what an appended batch's acknowledgement needs: the
// followers woken, the fsync (or the high watermark's advance without one),
// and for acks=all the high watermark to wait for.
func (m *Manager) afterAppend(p *Partition, res log.AppendResult, acks int16, replicas int32) Pending {
	pend := Pending{Result: res, p: p}
	if acks == -1 {
		pend.required = res.LastOffset + 1
	}
	if replicas > 1 {
		p.notifyFollowers()
	}
	switch {
	case !m.ackFsync:
		m.advanceHW(p)
		if p.Log.FlushDue(m.logs.Clock().Now()) {
			m.syncAsync(p)
		}
	case acks == 0:
		m.syncAsync(p)
	default:
		ps, upTo := &pendingSync{done: make(chan struct{})}, res.LastOffset+1
		pend.sync = ps
		sync := func() {
			defer close(ps.done)
			ps.err = m.syncForAck(p, upTo)
		}
		if m.runSync != nil {
			m.runSync(sync)
		} else {
			go sync()
		}
	}
	return pend
}

// StartTransactionVerification is log.StartTransactionVerification on tp.
func (m *Manager) StartTransactionVerification(tp topicpart.TopicPartition, pid int64, seq int32, epoch int16, tv2 bool) (log.VerificationGuard, error) {
	p, ok := m.Get(tp)
	if !ok {
		return 0, kerr.UnknownTopicOrPartition
	}
	return p.Log.StartTransactionVerification(pid, seq, epoch, tv2), nil
}

// Pending is an appended batch whose acknowledgement may still need its
// partition's high watermark to pass it.
type Pending struct {
	Result log.AppendResult
	p      *Partition
	// sync is the fsync started for this append as soon as it was written,
	// so that in a request for several partitions one partition's fsync
	// overlaps the validation and write of the next; nil when none is needed.
	sync *pendingSync
	// required is the high watermark an acks=all produce waits for (its
	// last offset + 1); 0 for acks 0 and 1.
	required int64
}

// Durable reports whether the batch can be answered without waiting:
// nothing was started for it (acks=0, gregor.ack.fsync=false), or its fsync
// has ended well and its log has not failed since; never for acks=all.
func (pd *Pending) Durable() bool {
	if pd.required > 0 {
		return false // acks=all: Await checks the high watermark and the ISR
	}
	if pd.sync == nil {
		return true
	}
	select {
	case <-pd.sync.done:
		return pd.sync.err == nil && pd.p.Offline() == nil
	default:
		return false
	}
}

// pendingSync is one started fsync: err is set before done is closed.
type pendingSync struct {
	done chan struct{}
	err  error
}

// AppendNoWait writes a batch without waiting for durability; pass the
// Pending values of one request to Await, which waits for all of them at
// once (one group-committed fsync per partition, partitions in parallel).
func (m *Manager) AppendNoWait(tp topicpart.TopicPartition, batch []byte, acks int16, origin log.Origin) (Pending, error) {
	return m.appendNoWait(tp, batch, nil, acks, origin, 0)
}

// AppendProduced is AppendNoWait for a client's batch whose header the
// caller has decoded (record.ParseProduce), so it is not decoded again.
func (m *Manager) AppendProduced(tp topicpart.TopicPartition, p *record.Produced, acks int16) (Pending, error) {
	return m.appendNoWait(tp, p.Bytes, p, acks, log.OriginClient, 0)
}

// AppendProducedVerified is AppendProduced for a client's transactional
// batch the transaction coordinator verified with guard (KIP-890).
func (m *Manager) AppendProducedVerified(tp topicpart.TopicPartition, p *record.Produced, acks int16, guard log.VerificationGuard) (Pending, error) {
	return m.appendNoWait(tp, p.Bytes, p, acks, log.OriginClient, guard)
}

// appendNoWait appends produced (when not nil) or batch; guard is the
// verification a client's transactional batch passed (0: none).
func (m *Manager) appendNoWait(tp topicpart.TopicPartition, batch []byte, produced *record.Produced, acks int16, origin log.Origin,
	guard log.VerificationGuard) (Pending, error) {
	p, ok := m.Get(tp)
	if !ok {
		return Pending{}, kerr.UnknownTopicOrPartition
	}
	if acks == -1 {
		if st := p.ReplicaState(); st.UnderMinISR() {
			return Pending{}, fmt.Errorf("%w: the ISR of %s has %d replicas, min.insync.replicas is %d",
				kerr.NotEnoughReplicas, tp, st.ISR, st.MinISR)
		}
	}
	if origin == log.OriginClient {
		if err := p.admit(len(batch)); err != nil {
			return Pending{}, err
		}
	}
	p.roleMu.RLock()
	role := p.role
	if !role.Leader && origin != log.OriginReplication {
		p.roleMu.RUnlock()
		return Pending{}, NotLeaderError(role)
	}
	var res log.AppendResult
	var err error
	switch {
	case produced != nil && guard != 0:
		res, err = p.Log.AppendProducedVerified(produced, role.LeaderEpoch, guard)
	case produced != nil:
		res, err = p.Log.AppendProduced(produced, role.LeaderEpoch)
	case guard != 0:
		res, err = p.Log.AppendVerified(batch, role.LeaderEpoch, guard)
	default:
		res, err = p.Log.Append(batch, origin, role.LeaderEpoch)
	}
	p.roleMu.RUnlock()
	if err != nil {
		if errors.Is(err, record.ErrTooLarge) {
			p.count(cBytesRejected, len(batch))
		}
		return Pending{Result: res}, err
	}
	if origin != log.OriginReplication && !res.Duplicate {
		p.count(cBytesIn, len(batch))
		p.count(cMessagesIn, int(res.LastOffset-res.BaseOffset+1))
	}
	return m.afterAppend(p, res, acks, role.Replicas), nil
}

// admit holds an append of n bytes to the free-space reserve of p's log dir
// (logmgr.LogDir.Admit: two atomic operations while there is room): nil
// when it fits, log.ErrNoSpace when it would cross the reserve, the failure
// when the dir is offline.
func (p *Partition) admit(n int) error {
	if p.reserve == nil {
		return nil
	}
	return p.reserve.Admit(n)
}

// NotLeaderError is NOT_LEADER_OR_FOLLOWER for a partition in role.
func NotLeaderError(role Role) error {
	if role.LeaderID < 0 {
		return fmt.Errorf("%w: the partition has no leader (leader epoch %d)", kerr.NotLeaderForPartition, role.LeaderEpoch)
	}
	return fmt.Errorf("%w: broker %d leads the partition (leader epoch %d)", kerr.NotLeaderForPartition, role.LeaderID, role.LeaderEpoch)
}

// syncForAck makes a partition durable up to upTo and advances its HW, for
// an acknowledgement that waits on it.
func (m *Manager) syncForAck(p *Partition, upTo int64) error {
	if err := m.timedSync(p, upTo, func() error { return p.Log.SyncTo(upTo) }); err != nil {
		if errors.Is(err, log.ErrTruncated) {
			// Only a follower truncates: this broker lost the leadership
			// since the append, and the batch with it.
			return NotLeaderError(p.Role())
		}
		if !errors.Is(err, log.ErrStorageFailed) { // the log manager logged the dir going offline
			m.logger.Error("fsync failed", "partition", p.TP, "err", err)
		}
		return fmt.Errorf("%w: %w", kerr.KafkaStorageError, err)
	}
	m.advanceHW(p)
	return nil
}

// Await is AwaitContext without a deadline.
func (m *Manager) Await(pend []*Pending) []error { return m.AwaitContext(context.Background(), pend) }

// AwaitContext waits until every pending batch is acknowledged: durable on
// the leader (acks=1 under gregor.ack.fsync), and for acks=all under its
// partition's high watermark. Each partition's fsync started when
// AppendNoWait wrote it, so the partitions of one request sync
// concurrently, overlapping the writes that follow. errs[i] is pend[i]'s
// error: KAFKA_STORAGE_ERROR for a failed fsync; for acks=all
// NOT_LEADER_OR_FOLLOWER when the leadership moved,
// NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below
// min.insync.replicas, and REQUEST_TIMED_OUT when ctx ends first (all three
// indeterminate: the record may yet be committed).
//
// A batch whose log has failed by the time its fsync returns is answered
// with the failure even if an earlier fsync covered it: a connection's
// answers are decided in request order, so once one of them reports a
// failed log none after it acknowledges a batch of that log, whichever
// fsync goroutine happened to return first.
func (m *Manager) AwaitContext(ctx context.Context, pend []*Pending) []error {
	errs := make([]error, len(pend))
	for i, pd := range pend {
		if pd == nil {
			continue
		}
		if pd.sync != nil {
			<-pd.sync.done
			if errs[i] = pd.sync.err; errs[i] != nil {
				continue
			}
			if err := pd.p.Offline(); err != nil {
				errs[i] = fmt.Errorf("%w: %w", kerr.KafkaStorageError, err)
				continue
			}
		}
		if pd.required > 0 {
			errs[i] = pd.p.awaitHighWatermark(ctx, pd.required)
		}
	}
	return errs
}

// syncAsync syncs p in the background, coalescing requests.
func (m *Manager) syncAsync(p *Partition) {
	p.mu.Lock()
	if p.syncPending {
		p.mu.Unlock()
		return
	}
	p.syncPending = true
	p.mu.Unlock()
	go func() {
		p.mu.Lock()
		p.syncPending = false
		p.mu.Unlock()
		if err := m.timedSync(p, p.Log.LogEndOffset(), p.Log.Flush); err != nil && !errors.Is(err, log.ErrClosed) &&
			!errors.Is(err, log.ErrStorageFailed) {
			m.logger.Error("background fsync failed", "partition", p.TP, "err", err)
			return
		}
		m.advanceHW(p)
	}()
}

// Waiter lets a long-poll fetch sleep until one of its partitions' high
// watermarks moves. It is registered on each partition once, from NewWaiter
// to Done: a wake-up leaves every registration in place (notify signals, it
// does not unregister), so a fetch woken again and again by one busy
// partition holds one entry on each idle one, not one more per wake-up.
type Waiter struct {
	m     *Manager
	ch    chan struct{}
	parts []*Partition
	// follower: a replica's fetch, woken by appends too (consumers only
	// by the high watermark).
	follower bool
}

// NewWaiter registers a consumer's waiter on parts. Call Done when finished.
func (m *Manager) NewWaiter(parts []*Partition) *Waiter { return m.NewFetchWaiter(parts, false) }

// NewFetchWaiter registers a waiter on parts for a follower's fetch
// (follower) or a consumer's. Call Done when finished.
func (m *Manager) NewFetchWaiter(parts []*Partition, follower bool) *Waiter {
	w := &Waiter{m: m, ch: make(chan struct{}, 1), parts: parts, follower: follower}
	for _, p := range parts {
		p.mu.Lock()
		if p.waiters == nil {
			p.waiters = make(map[*Waiter]struct{})
		}
		p.waiters[w] = struct{}{}
		p.mu.Unlock()
	}
	m.waiting.Add(1)
	return w
}

// Wait returns true when woken, false on timeout or context end. A wake-up
// that came while the fetch was not waiting is kept (one), so an append
// between a fetch's read and its Wait is never missed.
func (w *Waiter) Wait(ctx context.Context, timer <-chan time.Time) bool {
	select {
	case <-w.ch:
		return true
	case <-timer:
		return false
	case <-ctx.Done():
		return false
	case <-w.m.closingC:
		return true
	}
}

// Done unregisters the waiter from every partition.
func (w *Waiter) Done() {
	for _, p := range w.parts {
		p.mu.Lock()
		delete(p.waiters, w)
		p.mu.Unlock()
	}
	w.m.waiting.Add(-1)
}

// FetchWaiters reports the long-poll fetches waiting now (Kafka's
// NumDelayedOperations for the Fetch purgatory) and the partition
// registrations they hold (its PurgatorySize: a fetch counts once per
// partition it waits on).
func (m *Manager) FetchWaiters() (fetches, registrations int) {
	for _, p := range m.Partitions() {
		p.mu.Lock()
		registrations += len(p.waiters)
		p.mu.Unlock()
	}
	return int(m.waiting.Load()), registrations
}
