package group

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/coord"
)

func syncError(err error) *SyncResult { return &SyncResult{Err: err, Assignment: []byte{}} }

// Sync handles a SyncGroup. Followers of a rebalancing group are parked
// until the leader's SyncGroup brings the assignment; the leader's assignment
// is written as the group's metadata record and every parked member is
// answered once it is durable.
func (s *Shard) Sync(now time.Time, w coord.Waiter, req *SyncRequest, out *coord.Output) {
	nowMs := now.UnixMilli()
	if req.Group == "" {
		out.Reply(w, syncError(fmt.Errorf("%w: the group id is empty", kerr.InvalidGroupID)), nil)
		return
	}
	g := s.groups[req.Group]
	if g == nil {
		out.Reply(w, syncError(errUnknownMember(req.MemberID)), nil)
		return
	}
	if err := s.validateSync(g, req); err != nil {
		out.Reply(w, syncError(err), nil)
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case PreparingRebalance:
		out.Reply(w, syncError(fmt.Errorf("%w: group %s is rebalancing", kerr.RebalanceInProgress, g.id)), nil)
	case CompletingRebalance:
		if m.awaitingSync() {
			out.Reply(m.syncWaiter, syncError(fmt.Errorf("%w: superseded by a newer SyncGroup of the member", kerr.RebalanceInProgress)), nil)
		}
		m.syncWaiter = w
		s.removePendingSync(g, m.id)
		s.scheduleHeartbeat(g, m, nowMs)
		if g.leader != m.id {
			return
		}
		assignment := make(map[string][]byte, len(g.members))
		for _, a := range req.Assignments {
			// Request bytes alias the connection's read buffer.
			assignment[a.MemberID] = append([]byte{}, a.Assignment...)
		}
		for id := range g.members {
			if assignment[id] == nil {
				assignment[id] = []byte{}
			}
		}
		s.logger.Info("assignment received from the leader", "group", g.id, "generation", g.generation, "leader", m.id)
		out.Write(groupMetadataRecord(g, assignment))
		s.setAndPropagateAssignment(nowMs, g, assignment, out)
		g.transition(Stable, nowMs)
	case Stable:
		s.removePendingSync(g, m.id)
		s.scheduleHeartbeat(g, m, nowMs)
		out.Reply(w, s.syncResult(g, m.assignment), nil)
	default:
		out.Reply(w, syncError(errUnknownMember(req.MemberID)), nil)
	}
}

func (s *Shard) validateSync(g *group, req *SyncRequest) error {
	if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
		return err
	}
	if req.Generation != g.generation {
		return errIllegalGeneration(req.Generation, g.generation)
	}
	if req.ProtocolType != nil && *req.ProtocolType != g.protocolType {
		return fmt.Errorf("%w: protocol type %q is not the group's %q", kerr.InconsistentGroupProtocol, *req.ProtocolType, g.protocolType)
	}
	if req.Protocol != nil && *req.Protocol != g.protocol {
		return fmt.Errorf("%w: protocol %q is not the group's %q", kerr.InconsistentGroupProtocol, *req.Protocol, g.protocol)
	}
	return nil
}

func (s *Shard) syncResult(g *group, assignment []byte) *SyncResult {
	r := &SyncResult{Assignment: assignment}
	if r.Assignment == nil {
		r.Assignment = []byte{}
	}
	if g.protocolType != "" {
		r.ProtocolType = strPtr(g.protocolType)
	}
	if g.protocol != "" {
		r.Protocol = strPtr(g.protocol)
	}
	return r
}

func (s *Shard) removePendingSync(g *group, id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 {
		s.timers.cancel(timerKey{kind: timerSync, group: g.id})
	}
}

func (s *Shard) setAndPropagateAssignment(nowMs int64, g *group, assignment map[string][]byte, out *coord.Output) {
	for _, m := range g.sortedMembers() {
		m.assignment = assignment[m.id]
		if m.awaitingSync() {
			out.Reply(m.syncWaiter, s.syncResult(g, m.assignment), nil)
			m.syncWaiter = 0
			// A session that ended while the member was parked was ignored.
			s.scheduleHeartbeat(g, m, nowMs)
		}
	}
}

func (s *Shard) resetAndPropagateAssignmentError(nowMs int64, g *group, err error, out *coord.Output) {
	for _, m := range g.sortedMembers() {
		m.assignment = nil
		if m.awaitingSync() {
			out.Reply(m.syncWaiter, syncError(err), nil)
			m.syncWaiter = 0
			s.scheduleHeartbeat(g, m, nowMs)
		}
	}
}

// Heartbeat handles a Heartbeat: it extends the member's session and tells
// it whether a rebalance is in progress.
func (s *Shard) Heartbeat(now time.Time, req *HeartbeatRequest) error {
	if req.Group == "" {
		return fmt.Errorf("%w: the group id is empty", kerr.InvalidGroupID)
	}
	g := s.groups[req.Group]
	if g == nil {
		return errUnknownMember(req.MemberID)
	}
	if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
		return err
	}
	if req.Generation != g.generation {
		return errIllegalGeneration(req.Generation, g.generation)
	}
	m := g.members[req.MemberID]
	switch g.state {
	case PreparingRebalance:
		s.scheduleHeartbeat(g, m, now.UnixMilli())
		return fmt.Errorf("%w: group %s is rebalancing", kerr.RebalanceInProgress, g.id)
	case CompletingRebalance, Stable:
		s.scheduleHeartbeat(g, m, now.UnixMilli())
		return nil
	default:
		return errUnknownMember(req.MemberID)
	}
}

// Leave handles a LeaveGroup: members leave by member id, or by
// group.instance.id alone (administrative removal of static members).
func (s *Shard) Leave(now time.Time, req *LeaveRequest, out *coord.Output) *LeaveResult {
	nowMs := now.UnixMilli()
	res := &LeaveResult{Members: make([]error, len(req.Members))}
	if req.Group == "" {
		res.Err = fmt.Errorf("%w: the group id is empty", kerr.InvalidGroupID)
		return res
	}
	g := s.groups[req.Group]
	if g == nil {
		res.Err = fmt.Errorf("%w: group %s does not exist", kerr.UnknownMemberID, req.Group)
		return res
	}
	left := 0
	for i, lm := range req.Members {
		switch {
		case lm.MemberID == "":
			id, ok := "", false
			if lm.InstanceID != nil {
				id, ok = g.static[*lm.InstanceID]
			}
			if !ok {
				res.Members[i] = errUnknownMember(lm.MemberID)
				continue
			}
			s.leaveMember(g, g.members[id], lm.Reason, out)
		case g.pending[lm.MemberID]:
			delete(g.pending, lm.MemberID)
			s.timers.cancel(heartbeatKey(g, lm.MemberID))
		default:
			if err := g.validateMember(lm.MemberID, lm.InstanceID); err != nil {
				res.Members[i] = err
				continue
			}
			s.leaveMember(g, g.members[lm.MemberID], lm.Reason, out)
		}
		left++
	}
	if left > 0 {
		switch g.state {
		case Stable, CompletingRebalance:
			s.maybePrepareRebalanceOrCompleteJoin(nowMs, g, out)
		case PreparingRebalance:
			s.maybeCompleteJoinPhase(nowMs, g, out)
		}
	}
	return res
}

func (s *Shard) leaveMember(g *group, m *member, reason string, out *coord.Output) {
	s.logger.Info("member leaves group", "group", g.id, "member", m.id, "instance", derefOr(m.instanceID, ""), "reason", reason)
	s.removeMember(g, m, out)
}
