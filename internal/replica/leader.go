package replica

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/replica/isr"
)

// applyLeaderState keeps p's ISR state (isr.Leader) in step with its role:
// a leader of several replicas has one, updated from each assignment; any
// other partition has none. role.ISR becomes the committed ISR's size. It
// runs under roleMu's write lock.
func (m *Manager) applyLeaderState(p *Partition, role *Role, a *isr.Assignment, minISR int32) {
	p.replMu.Lock()
	defer p.replMu.Unlock()
	if !role.Leader || a == nil || len(a.Replicas) <= 1 {
		p.leader, p.sentHW = nil, nil
		return
	}
	if p.leader == nil {
		p.leader = isr.NewLeader(isr.Config{LocalID: m.repl.nodeID, LagTimeMax: m.repl.cfg.LagTimeMax}, minISR)
	}
	p.leader.SetMinISR(minISR)
	switch p.leader.Become(*a, p.Log.LogEndOffset(), m.now(), m.brokerInfo) {
	case isr.NewEpoch:
		p.sentHW = map[int32]int64{}
		m.logger.Info("leading partition", "partition", p.TP, "leader_epoch", a.LeaderEpoch,
			"partition_epoch", a.PartitionEpoch, "replicas", a.Replicas, "isr", a.ISR,
			"leader_epoch_start_offset", p.leader.LeaderEpochStartOffset(), "high_watermark", p.Log.HighWatermark())
		if a.Recovering {
			m.logger.Warn("partition was elected uncleanly (RECOVERING); marking it recovered", "partition", p.TP)
		}
	case isr.Ignored:
		m.logger.Debug("ignoring a stale partition assignment", "partition", p.TP, "partition_epoch", a.PartitionEpoch)
	}
	role.ISR = int32(len(p.leader.ISR()))
}

// DivergingEpoch is the leader's divergence check of a fetch that names the
// epoch of the last batch its fetcher holds (Kafka's readRecords, KIP-320),
// made before reading: nil when the fetcher's log matches; an
// EpochEndOffset telling it where to truncate when the epoch ends before
// the fetch offset here, or this log does not have that epoch;
// OFFSET_OUT_OF_RANGE when this log knows nothing at or below that epoch,
// or the fetch offset is below the log start offset.
func (p *Partition) DivergingEpoch(lastFetchedEpoch int32, fetchOffset int64) (*EpochEndOffset, error) {
	if lastFetchedEpoch < 0 {
		return nil, nil
	}
	epoch, end := p.Log.EndOffsetForEpoch(lastFetchedEpoch)
	switch {
	case epoch < 0 || end < 0:
		return nil, fmt.Errorf("%w: no leader epoch at or below %d in this log", kerr.OffsetOutOfRange, lastFetchedEpoch)
	case fetchOffset < p.Log.LogStartOffset():
		return nil, fmt.Errorf("%w: fetch offset %d is below the log start offset %d", kerr.OffsetOutOfRange,
			fetchOffset, p.Log.LogStartOffset())
	case epoch < lastFetchedEpoch || end < fetchOffset:
		return &EpochEndOffset{Epoch: epoch, EndOffset: end}, nil
	}
	return nil, nil
}

// FollowerFetch is what a follower's fetch of one partition told the
// leader: where it fetched from, its log start offset and broker epoch, and
// the leader's log end offset when the fetch was read.
type FollowerFetch struct {
	ReplicaID   int32
	BrokerEpoch int64
	FetchOffset int64
	LogStart    int64
	LeaderLEO   int64
	// CurrentLeaderEpoch is the epoch the fetch named, -1 none.
	CurrentLeaderEpoch int32
}

// FollowerFetched records a follower's fetch on its leader (Kafka's
// updateFollowerFetchState): the follower's log end offset, its caught-up
// time, then an ISR expansion when it meets every rule, and the high
// watermark it may let through. Call it only for a fetch that did not
// diverge. Errors: UNKNOWN_LEADER_EPOCH for a broker not (yet) among the
// replicas of a fetch naming its epoch, NOT_LEADER_OR_FOLLOWER otherwise and
// for a fetch from an older incarnation than the metadata's (KIP-903).
func (m *Manager) FollowerFetched(p *Partition, f FollowerFetch) error {
	p.roleMu.RLock()
	if !p.role.Leader {
		role := p.role
		p.roleMu.RUnlock()
		return NotLeaderError(role)
	}
	if p.leader == nil {
		p.roleMu.RUnlock()
		return unknownReplica(f, fmt.Errorf("%w: %s has a single replica", isr.ErrUnknownReplica, p.TP))
	}
	now := m.now()
	p.replMu.Lock()
	err := p.leader.FollowerFetched(f.ReplicaID, f.FetchOffset, f.LogStart, f.BrokerEpoch, f.LeaderLEO, now, m.brokerInfo)
	var prop *isr.Proposal
	if err == nil {
		prop = p.leader.MaybeExpand(f.ReplicaID, p.Log.HighWatermark(), m.brokerInfo)
	}
	p.replMu.Unlock()
	p.roleMu.RUnlock()
	if err != nil {
		return unknownReplica(f, err)
	}
	if prop != nil {
		m.logger.Info("expanding the ISR", "partition", p.TP, "replica", f.ReplicaID, "proposed_isr", prop.IDs(),
			"leader_epoch", prop.LeaderEpoch, "partition_epoch", prop.PartitionEpoch)
		m.repl.alter.submit(p, prop)
	}
	m.advanceHW(p)
	return nil
}

// FollowerWaiting records that follower id's fetch of p at fetchOffset
// waits for data (a long poll) or, waiting false, has been answered (see
// isr.Leader.FollowerWaiting). Only fetches that wait call it, so a busy
// partition's fetches pay nothing for it.
func (m *Manager) FollowerWaiting(p *Partition, id int32, fetchOffset int64, waiting bool) {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if !p.role.Leader || p.leader == nil {
		return
	}
	now := m.now()
	p.replMu.Lock()
	p.leader.FollowerWaiting(id, fetchOffset, p.Log.LogEndOffset(), waiting, now)
	p.replMu.Unlock()
}

func unknownReplica(f FollowerFetch, err error) error {
	if errors.Is(err, isr.ErrUnknownReplica) && f.CurrentLeaderEpoch >= 0 {
		return fmt.Errorf("%w: %w", kerr.UnknownLeaderEpoch, err)
	}
	return fmt.Errorf("%w: %w", kerr.NotLeaderForPartition, err)
}

// SentHighWatermark records the high watermark a fetch response carried to
// follower id.
func (p *Partition) SentHighWatermark(id int32, hw int64) {
	p.replMu.Lock()
	if p.sentHW != nil {
		p.sentHW[id] = hw
	}
	p.replMu.Unlock()
}

// FollowerNeedsHighWatermark reports whether a follower whose fetch at
// fetchOffset found nothing new should be answered anyway, because its high
// watermark is behind the leader's (design §2.2 item 7): an idle follower
// then learns the high watermark within a round trip rather than after
// replica.fetch.wait.max.ms. The follower's high watermark is the one its
// fetch carried (v18, KIP-1166), else the one last sent to it (followerHW
// -1). Only a caught-up follower is answered so: one still catching up gets
// records, and the high watermark with them.
func (p *Partition) FollowerNeedsHighWatermark(id int32, fetchOffset, followerHW int64) bool {
	hw := p.Log.HighWatermark()
	if fetchOffset < p.Log.LogEndOffset() {
		return false
	}
	if followerHW >= 0 {
		return hw > followerHW
	}
	p.replMu.Lock()
	defer p.replMu.Unlock()
	sent, ok := p.sentHW[id]
	return ok && hw > sent
}

// checkISR is the isr-expiration task for one partition (every
// replica.lag.time.max.ms/2): it proposes removing the ISR followers that
// are no longer caught up, and moves the high watermark, which a follower
// that stopped being caught up may have held back.
func (m *Manager) checkISR(p *Partition) {
	p.roleMu.RLock()
	if !p.role.Leader || p.leader == nil {
		p.roleMu.RUnlock()
		return
	}
	p.replMu.Lock()
	prop := p.leader.MaybeShrink(p.Log.LogEndOffset(), m.now(), m.brokerInfo)
	p.replMu.Unlock()
	p.roleMu.RUnlock()
	if prop != nil {
		m.logger.Info("shrinking the ISR", "partition", p.TP, "proposed_isr", prop.IDs(),
			"leader_epoch", prop.LeaderEpoch, "partition_epoch", prop.PartitionEpoch,
			"replica.lag.time.max.ms", m.repl.cfg.LagTimeMax.Milliseconds())
		m.repl.alter.submit(p, prop)
	}
	m.advanceHW(p)
}

// alterPartitionDone applies the controller's answer to p's proposal seq.
func (m *Manager) alterPartitionDone(p *Partition, seq uint64, res isr.Result) {
	p.roleMu.Lock()
	if !p.role.Leader || p.leader == nil {
		p.roleMu.Unlock()
		return
	}
	p.replMu.Lock()
	kind, prop := p.leader.Pending()
	before := slices.Clone(p.leader.ISR())
	out, again := p.leader.Completed(seq, res, m.now())
	after := p.leader.ISR()
	p.role.ISR = int32(len(after))
	p.replMu.Unlock()
	p.roleMu.Unlock()
	switch out {
	case isr.Applied:
		m.repl.countISRChange(kind)
		m.logger.Info("ISR changed", "partition", p.TP, "from", before, "to", after, "partition_epoch", res.PartitionEpoch)
		m.advanceHW(p)
		m.checkMinISR(p)
	case isr.RolledBack:
		m.logger.Info("ISR change refused; keeping the committed ISR", "partition", p.TP, "proposed", prop.IDs(),
			"isr", before, "err", res.Err)
		m.advanceHW(p)
	case isr.StillPending:
		m.logger.Info("ISR change refused; waiting for the metadata to settle it", "partition", p.TP,
			"proposed", prop.IDs(), "err", res.Err)
	case isr.Resubmit:
		m.repl.alter.resubmit(p, again)
	}
}

// LeaderEpochStartOffset is where this leader's current leader epoch began
// (its log end offset then), -1 when it does not lead several replicas.
func (p *Partition) LeaderEpochStartOffset() int64 {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if p.leader == nil {
		return -1
	}
	p.replMu.Lock()
	defer p.replMu.Unlock()
	return p.leader.LeaderEpochStartOffset()
}

// ReplicaViews describes every replica of p as its leader sees it (log end
// offsets, last caught-up times, ISR membership, why a replica left the ISR
// and what it waits for to rejoin); nil when this broker does not lead p
// with followers.
func (m *Manager) ReplicaViews(p *Partition) []isr.ReplicaView {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if p.leader == nil || !p.role.Leader {
		return nil
	}
	p.replMu.Lock()
	defer p.replMu.Unlock()
	return p.leader.View(p.Log.LogEndOffset(), p.Log.HighWatermark(), m.now(), m.brokerInfo)
}
