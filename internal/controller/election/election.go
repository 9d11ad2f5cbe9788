// Package election decides how a partition changes: Kafka's
// PartitionChangeBuilder as a pure function from a partition's state and a
// target (ISR, replicas, reassignment, election type) to the
// metadata.PartitionChange record that gets there, or to no record when
// nothing changes.
//
// The steps, in Kafka's order:
//  1. complete a reassignment whose adding replicas have all joined the
//     target ISR (the removing replicas leave replicas and ISR);
//  2. maintain the ELR (KIP-966) when enabled: an ISR at or above
//     min.insync.replicas clears ELR and last known ELR; below it, the ELR
//     becomes (old ISR ∪ old ELR) − target ISR − replicas that shut down
//     uncleanly;
//  3. elect: keep a leader that is still valid; else (PREFERRED) the first
//     replica if valid; else the first valid replica in assignment order,
//     valid meaning acceptable (registered, unfenced, not shutting down) and
//     in the target ISR, or in the ELR when the ISR is empty; else the last
//     known leader when ISR and ELR are empty; else, for an UNCLEAN election,
//     the first acceptable replica. A leader from the ELR leaves it and is
//     the whole ISR; an unclean one is the whole ISR, clears the ELR and
//     marks the partition RECOVERING;
//  4. a reassignment that drops a replica bumps the leader epoch (by setting
//     the leader to itself); an ISR shrink does not (KAFKA-15021);
//  5. record the ISR if it changed (it may become empty only with ELR on),
//     the last known leader when the partition first becomes leaderless,
//     and the assignment fields.
//
// Two deliberate differences: Kafka elects the last known leader even when
// it is fenced (its check logs and carries on), which leaves a leader that
// cannot serve; here it must be acceptable, like every other candidate. And
// Kafka keeps a replica that a completed reassignment removed in the ELR
// (it can never be elected, since candidates come from the replicas, but
// tools show it); here the ELR holds only replicas.
//
// Lists written into records are sorted where Kafka's come from a hash set
// (ELR, last known ELR), so every node and every run computes the same record.
package election

import (
	"slices"

	"github.com/gregor-broker/gregor/internal/metadata"
)

// Kind is the election type.
type Kind int8

const (
	// Online keeps the partition online from the ISR (or the ELR).
	Online Kind = iota
	// Preferred elects the first replica when it is valid.
	Preferred
	// Unclean may elect a replica outside the ISR: data may be lost.
	Unclean
)

// Request is a change to decide. Nil target lists keep the current value.
type Request struct {
	Topic     metadata.TopicID
	Partition int32
	Current   *metadata.PartitionImage
	// Acceptable reports whether a broker may lead: registered, unfenced,
	// not in controlled shutdown.
	Acceptable func(broker int32) bool
	Kind       Kind
	MinISR     int
	// ELR turns on eligible leader replicas (KIP-966).
	ELR bool

	TargetISR      []int32
	TargetReplicas []int32
	TargetAdding   []int32
	TargetRemoving []int32
	// UncleanShutdown are replicas that came back from an unclean shutdown:
	// they may not stay in (or enter) the ELR.
	UncleanShutdown []int32
	// TargetRecovery changes the leader recovery state when not
	// NoRecoveryChange (the zero value is Recovered, so set it explicitly).
	TargetRecovery metadata.LeaderRecoveryState
}

// Result says what the change does besides its record.
type Result struct {
	// Change is the record; valid only when Changed.
	Change  metadata.PartitionChange
	Changed bool
	// Leader is the partition's leader after the change.
	Leader int32
	// Unclean: the new leader was elected from outside the ISR and ELR
	// (including the last known leader): records acknowledged by the old
	// ISR may be lost. Callers log and count it loudly.
	Unclean bool
	// FromELR: the new leader came from the ELR.
	FromELR bool
}

type builder struct {
	req                                  Request
	cur                                  *metadata.PartitionImage
	isr, replicas, adding, removing, elr []int32
}

// Build decides the change. It never modifies its inputs.
func Build(req Request) Result {
	cur := req.Current
	b := &builder{req: req, cur: cur, isr: orCurrent(req.TargetISR, cur.ISR),
		replicas: orCurrent(req.TargetReplicas, cur.Replicas), adding: orCurrent(req.TargetAdding, cur.Adding),
		removing: orCurrent(req.TargetRemoving, cur.Removing), elr: slices.Clone(cur.ELR)}
	rec := metadata.PartitionChange{Topic: req.Topic, Partition: req.Partition, ExpectedPartitionEpoch: cur.PartitionEpoch,
		Leader: metadata.NoLeaderChange, LeaderRecoveryState: metadata.NoRecoveryChange}
	b.completeReassignment()
	b.populateELR()
	res := b.elect(&rec)
	if rec.Leader == metadata.NoLeaderChange && !containsAll(b.replicas, cur.Replicas) {
		rec.Leader = cur.Leader // a removed replica must not keep fetching in the old epoch
	}
	b.recordELR(&rec)
	if rec.ISR == nil && (len(b.isr) > 0 || req.ELR) && !slices.Equal(b.isr, cur.ISR) {
		rec.ISR = nonNil(b.isr)
	}
	b.recordLastKnownLeader(&rec)
	b.recordAssignment(&rec)
	if req.TargetRecovery != metadata.NoRecoveryChange && req.TargetRecovery != cur.LeaderRecoveryState {
		rec.LeaderRecoveryState = req.TargetRecovery
	}
	res.Change, res.Changed = rec, !isNoOp(&rec)
	res.Leader = cur.Leader
	if rec.Leader != metadata.NoLeaderChange {
		res.Leader = rec.Leader
	}
	return res
}

func orCurrent(target, current []int32) []int32 {
	if target != nil {
		return slices.Clone(target)
	}
	return slices.Clone(current)
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

func containsAll(set, of []int32) bool {
	for _, id := range of {
		if !slices.Contains(set, id) {
			return false
		}
	}
	return true
}

func without(ids []int32, drop func(int32) bool) []int32 {
	out := make([]int32, 0, len(ids))
	for _, id := range ids {
		if !drop(id) {
			out = append(out, id)
		}
	}
	return out
}

// completeReassignment is PartitionReassignmentReplicas.maybeCompleteReassignment.
func (b *builder) completeReassignment() {
	if len(b.adding) == 0 && len(b.removing) == 0 {
		return
	}
	isr, replicas := b.isr, b.replicas
	if len(b.removing) > 0 {
		removing := func(id int32) bool { return slices.Contains(b.removing, id) }
		if isr = without(b.isr, removing); len(isr) == 0 {
			return
		}
		if replicas = without(b.replicas, removing); len(replicas) == 0 {
			return
		}
	}
	if !containsAll(isr, replicas) {
		return
	}
	b.isr, b.replicas, b.adding, b.removing = isr, replicas, []int32{}, []int32{}
}

// populateELR is maybePopulateTargetElr. The last known ELR holds only the
// last known leader (Kafka's useLastKnownLeaderInBalancedRecovery, on by
// default), so the member list Kafka computes for it is never written and is
// not computed here.
func (b *builder) populateELR() {
	if !b.req.ELR {
		return
	}
	if len(b.isr) >= b.req.MinISR {
		b.elr = []int32{}
		return
	}
	b.elr = without(union(b.elr, b.cur.ISR), func(id int32) bool {
		return slices.Contains(b.isr, id) || slices.Contains(b.req.UncleanShutdown, id) || !slices.Contains(b.replicas, id)
	})
}

// union is a sorted set of both lists.
func union(a, b []int32) []int32 {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

func (b *builder) valid(id int32) bool {
	inISR := slices.Contains(b.isr, id)
	return (inISR || (len(b.isr) == 0 && slices.Contains(b.elr, id))) && b.req.Acceptable(id)
}

// canElectLastKnownLeader: ELR on, ISR and ELR empty, exactly one last known
// leader, and (unlike Kafka, see the package doc) that broker acceptable.
func (b *builder) canElectLastKnownLeader() bool {
	return b.req.ELR && len(b.elr) == 0 && len(b.isr) == 0 && len(b.cur.LastKnownELR) == 1 &&
		b.req.Acceptable(b.cur.LastKnownELR[0])
}

// choose is electPreferredLeader / electAnyLeader.
func (b *builder) choose() (leader int32, unclean bool) {
	if b.req.Kind == Preferred && len(b.replicas) > 0 && b.valid(b.replicas[0]) {
		return b.replicas[0], false
	}
	if b.valid(b.cur.Leader) {
		return b.cur.Leader, false
	}
	for _, r := range b.replicas {
		if b.valid(r) {
			return r, false
		}
	}
	if b.canElectLastKnownLeader() {
		return b.cur.LastKnownELR[0], true
	}
	if b.req.Kind == Unclean {
		for _, r := range b.replicas {
			if b.req.Acceptable(r) {
				return r, true
			}
		}
	}
	return metadata.NoLeader, false
}

// elect is tryElection.
func (b *builder) elect(rec *metadata.PartitionChange) Result {
	leader, unclean := b.choose()
	res := Result{Unclean: unclean}
	if leader == b.cur.Leader {
		return res
	}
	if slices.Contains(b.elr, leader) {
		b.isr = []int32{leader}
		b.elr = without(b.elr, func(id int32) bool { return id == leader })
		res.FromELR = true
	}
	rec.Leader = leader
	if unclean {
		rec.ISR = []int32{leader}
		if b.cur.LeaderRecoveryState != metadata.Recovering {
			rec.LeaderRecoveryState = metadata.Recovering
		}
	}
	return res
}

// recordELR is maybeUpdateRecordElr (with the last known leader kept in the
// last known ELR, so that field is written by recordLastKnownLeader).
func (b *builder) recordELR(rec *metadata.PartitionChange) {
	if rec.ISR != nil || !b.req.ELR { // an unclean election, or ELR off
		b.elr = []int32{}
	}
	if !slices.Equal(b.elr, b.cur.ELR) {
		rec.ELR = nonNil(b.elr)
	}
}

// recordLastKnownLeader is maybeUpdateLastKnownLeader.
func (b *builder) recordLastKnownLeader(rec *metadata.PartitionChange) {
	if !b.req.ELR {
		return
	}
	cur := b.cur
	switch {
	case rec.ISR != nil && len(rec.ISR) == 0 && (len(cur.LastKnownELR) != 1 || cur.LastKnownELR[0] != cur.Leader):
		rec.LastKnownELR = []int32{cur.Leader}
	case (rec.Leader >= 0 || (cur.Leader != metadata.NoLeader && rec.Leader != metadata.NoLeader)) && len(cur.LastKnownELR) > 0:
		rec.LastKnownELR = []int32{}
	}
}

// recordAssignment is setAssignmentChanges.
func (b *builder) recordAssignment(rec *metadata.PartitionChange) {
	if len(b.replicas) > 0 && !slices.Equal(b.replicas, b.cur.Replicas) {
		rec.Replicas = b.replicas
	}
	if !slices.Equal(b.removing, b.cur.Removing) {
		rec.Removing = nonNil(b.removing)
	}
	if !slices.Equal(b.adding, b.cur.Adding) {
		rec.Adding = nonNil(b.adding)
	}
}

func isNoOp(r *metadata.PartitionChange) bool {
	return r.ISR == nil && r.ELR == nil && r.LastKnownELR == nil && r.Leader == metadata.NoLeaderChange &&
		r.Replicas == nil && r.Removing == nil && r.Adding == nil && r.LeaderRecoveryState == metadata.NoRecoveryChange
}
