package group

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/coord"
)

// The classic rebalance protocol: JoinGroup, SyncGroup, Heartbeat and
// LeaveGroup, with Kafka's state transitions (Empty → PreparingRebalance →
// CompletingRebalance → Stable) and timers (initial rebalance delay,
// rebalance timeout, pending-sync timeout, session timeout).

func joinError(err error, memberID string) *JoinResult {
	return &JoinResult{Err: err, MemberID: memberID, Generation: -1}
}

// Join handles a JoinGroup. The reply to w is sent at once (errors, a
// MEMBER_ID_REQUIRED, a follower rejoining unchanged) or when the join phase
// completes.
func (s *Shard) Join(now time.Time, w coord.Waiter, req *JoinRequest, out *coord.Output) {
	nowMs := now.UnixMilli()
	cfg := s.cfg()
	if req.Group == "" {
		out.Reply(w, joinError(fmt.Errorf("%w: the group id is empty", kerr.InvalidGroupID), req.MemberID), nil)
		return
	}
	if req.SessionTimeoutMs < cfg.MinSessionTimeoutMs || req.SessionTimeoutMs > cfg.MaxSessionTimeoutMs {
		out.Reply(w, joinError(fmt.Errorf("%w: session timeout %d ms is outside [group.min.session.timeout.ms %d, group.max.session.timeout.ms %d]",
			kerr.InvalidSessionTimeout, req.SessionTimeoutMs, cfg.MinSessionTimeoutMs, cfg.MaxSessionTimeoutMs), req.MemberID), nil)
		return
	}
	unknown := req.MemberID == ""
	g := s.groups[req.Group]
	if g == nil {
		if !unknown {
			out.Reply(w, joinError(errUnknownMember(req.MemberID), req.MemberID), nil)
			return
		}
		g = newGroup(req.Group, nowMs)
		s.groups[req.Group] = g
	}
	switch {
	case !s.acceptJoiningMember(g, req.MemberID, cfg):
		if m := g.members[req.MemberID]; m != nil {
			s.removeMember(g, m, out)
		} else {
			delete(g.pending, req.MemberID)
		}
		out.Reply(w, joinError(fmt.Errorf("%w: group %s has reached group.max.size %d", kerr.GroupMaxSizeReached, g.id, cfg.MaxSize), req.MemberID), nil)
	case unknown:
		s.joinNewMember(nowMs, g, req, w, out)
	default:
		s.joinExistingMember(nowMs, g, req, w, out)
	}
	// The initial rebalance of an Empty group always waits out its delay.
	if g.state == PreparingRebalance && g.hasAllMembersJoined() && g.prevState != Empty {
		s.completeJoin(nowMs, g, out)
	}
}

// acceptJoiningMember applies group.max.size (Kafka counts members awaiting
// join while preparing a rebalance, so the last rejoiners are refused when
// the limit was lowered).
func (s *Shard) acceptJoiningMember(g *group, memberID string, cfg Config) bool {
	m := g.members[memberID]
	switch g.state {
	case PreparingRebalance:
		return (m != nil && m.awaitingJoin()) || int32(g.numAwaitingJoin) < cfg.MaxSize
	case CompletingRebalance, Stable:
		return m != nil || int32(len(g.members)) < cfg.MaxSize
	default:
		return true
	}
}

func (s *Shard) joinNewMember(nowMs int64, g *group, req *JoinRequest, w coord.Waiter, out *coord.Output) {
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		out.Reply(w, joinError(fmt.Errorf("%w: protocol type %q and protocols do not match group %s", kerr.InconsistentGroupProtocol, req.ProtocolType, g.id), ""), nil)
		return
	}
	prefix := req.ClientID
	if req.InstanceID != nil {
		prefix = *req.InstanceID
	}
	id := prefix + "-" + s.newID()
	switch {
	case req.InstanceID != nil:
		if old, ok := g.static[*req.InstanceID]; ok {
			s.replaceStaticMember(nowMs, g, req, old, id, w, out)
		} else {
			s.addMemberAndRebalance(nowMs, g, req, id, w, out)
		}
	case req.RequireKnownMemberID:
		// Two-step join (KIP-394): the member learns its id first, so a
		// retry after a lost response does not leave a defunct member.
		g.pending[id] = true
		s.timers.schedule(timerKey{kind: timerHeartbeat, group: g.id, member: id}, nowMs+int64(req.SessionTimeoutMs))
		out.Reply(w, joinError(fmt.Errorf("%w: rejoin with the assigned member id", kerr.MemberIDRequired), id), nil)
	default:
		s.addMemberAndRebalance(nowMs, g, req, id, w, out)
	}
}

func (s *Shard) joinExistingMember(nowMs int64, g *group, req *JoinRequest, w coord.Waiter, out *coord.Output) {
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		out.Reply(w, joinError(fmt.Errorf("%w: protocol type %q and protocols do not match group %s", kerr.InconsistentGroupProtocol, req.ProtocolType, g.id), req.MemberID), nil)
		return
	}
	if g.pending[req.MemberID] {
		if req.InstanceID != nil {
			out.Reply(w, joinError(fmt.Errorf("%w: pending dynamic member %s joined with group.instance.id %s", kerr.InvalidRequest, req.MemberID, *req.InstanceID), req.MemberID), nil)
			return
		}
		s.addMemberAndRebalance(nowMs, g, req, req.MemberID, w, out)
		return
	}
	if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
		out.Reply(w, joinError(err, req.MemberID), nil)
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case PreparingRebalance:
		s.updateMemberAndRebalance(nowMs, g, m, req, w, out)
	case CompletingRebalance:
		if m.matches(req.Protocols) {
			// A retry of a join whose response was lost.
			out.Reply(w, s.currentJoin(g, m.id, g.leader == m.id, false), nil)
		} else {
			s.updateMemberAndRebalance(nowMs, g, m, req, w, out)
		}
	case Stable:
		if g.leader == m.id || !m.matches(req.Protocols) {
			// A leader's join forces a rebalance: it may have seen changes
			// (new partitions) its metadata does not show.
			s.updateMemberAndRebalance(nowMs, g, m, req, w, out)
		} else {
			out.Reply(w, s.currentJoin(g, m.id, false, false), nil)
		}
	default:
		out.Reply(w, joinError(errUnknownMember(req.MemberID), req.MemberID), nil)
	}
}

// currentJoin is the current generation as a JoinGroup response.
func (s *Shard) currentJoin(g *group, memberID string, withMembers, skip bool) *JoinResult {
	r := &JoinResult{Generation: g.generation, Leader: g.leader, MemberID: memberID, SkipAssignment: skip}
	if g.protocolType != "" {
		r.ProtocolType = strPtr(g.protocolType)
	}
	if g.protocol != "" {
		r.Protocol = strPtr(g.protocol)
	}
	if withMembers {
		for _, m := range g.sortedMembers() {
			r.Members = append(r.Members, JoinMember{MemberID: m.id, InstanceID: m.instanceID, Metadata: m.metadata(g.protocol)})
		}
	}
	return r
}

func cloneProtocols(ps []Protocol) []Protocol {
	out := make([]Protocol, len(ps))
	for i, p := range ps {
		out[i] = Protocol{Name: p.Name, Metadata: append([]byte(nil), p.Metadata...)}
	}
	return out
}

func (s *Shard) addMemberAndRebalance(nowMs int64, g *group, req *JoinRequest, id string, w coord.Waiter, out *coord.Output) {
	m := &member{id: id, instanceID: req.InstanceID, clientID: req.ClientID, clientHost: req.ClientHost,
		rebalanceTimeoutMs: req.RebalanceTimeoutMs, sessionTimeoutMs: req.SessionTimeoutMs,
		protocolType: req.ProtocolType, protocols: cloneProtocols(req.Protocols), joinWaiter: w, isNew: true}
	if g.state == PreparingRebalance && g.prevState == Empty {
		g.newMemberAdded = true
	}
	g.add(m)
	// A new member cannot heartbeat and a parked join hides disconnects, so
	// its first join is bounded separately; a member that retries is
	// expected to come back.
	s.timers.schedule(heartbeatKey(g, id), nowMs+int64(s.cfg().NewMemberJoinTimeoutMs))
	s.logger.Info("member joins group", "group", g.id, "member", id, "instance", derefOr(req.InstanceID, ""), "client", req.ClientID, "reason", req.Reason)
	s.maybePrepareRebalanceOrCompleteJoin(nowMs, g, out)
}

func (s *Shard) updateMemberAndRebalance(nowMs int64, g *group, m *member, req *JoinRequest, w coord.Waiter, out *coord.Output) {
	s.updateMember(g, m, req.Protocols, req.RebalanceTimeoutMs, req.SessionTimeoutMs, w, out)
	s.maybePrepareRebalanceOrCompleteJoin(nowMs, g, out)
}

// updateMember records a member's new join; a join it had parked before is
// superseded (answered REBALANCE_IN_PROGRESS so it does not hang).
func (s *Shard) updateMember(g *group, m *member, protocols []Protocol, rebalanceMs, sessionMs int32, w coord.Waiter, out *coord.Output) {
	m.protocols = cloneProtocols(protocols)
	m.rebalanceTimeoutMs, m.sessionTimeoutMs = rebalanceMs, sessionMs
	if m.awaitingJoin() {
		out.Reply(m.joinWaiter, joinError(fmt.Errorf("%w: superseded by a newer JoinGroup of the member", kerr.RebalanceInProgress), m.id), nil)
		g.numAwaitingJoin--
		m.joinWaiter = 0
	}
	if w != 0 {
		m.joinWaiter = w
		g.numAwaitingJoin++
	}
}

// replaceStaticMember handles a known group.instance.id joining with a new
// member id (KIP-345): the old id is fenced; a Stable group keeps its
// assignment and generation unless the selected protocol would change.
func (s *Shard) replaceStaticMember(nowMs int64, g *group, req *JoinRequest, oldID, newID string, w coord.Waiter, out *coord.Output) {
	old := g.members[oldID]
	if old.awaitingJoin() {
		out.Reply(old.joinWaiter, &JoinResult{Err: errFenced(*req.InstanceID, oldID), MemberID: oldID, Generation: -1}, nil)
		g.numAwaitingJoin--
		old.joinWaiter = 0
	}
	if old.awaitingSync() {
		out.Reply(old.syncWaiter, &SyncResult{Err: errFenced(*req.InstanceID, oldID), Assignment: []byte{}}, nil)
		old.syncWaiter = 0
	}
	s.timers.cancel(heartbeatKey(g, oldID))
	delete(g.members, oldID)
	m := &member{id: newID, instanceID: old.instanceID, clientID: old.clientID, clientHost: old.clientHost,
		rebalanceTimeoutMs: old.rebalanceTimeoutMs, sessionTimeoutMs: old.sessionTimeoutMs,
		protocolType: old.protocolType, protocols: old.protocols, assignment: old.assignment, seq: old.seq}
	g.members[newID] = m
	g.static[*m.instanceID] = newID
	if g.leader == oldID {
		g.leader = newID
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
	s.scheduleHeartbeat(g, m, nowMs)
	s.updateMember(g, m, req.Protocols, req.RebalanceTimeoutMs, req.SessionTimeoutMs, w, out)
	s.logger.Info("static member rejoins with a new member id", "group", g.id, "instance", *req.InstanceID, "old_member", oldID, "member", newID)

	switch g.state {
	case Stable:
		if g.protocol != g.selectProtocol() {
			s.maybePrepareRebalanceOrCompleteJoin(nowMs, g, out)
			return
		}
		// No rebalance: persist the new member id and hand back the current
		// generation. A v9+ leader gets the members and skips assigning.
		g.computeSubscribed()
		out.Write(groupMetadataRecord(g, nil))
		leader := g.leader == newID && req.SupportsSkipAssignment
		out.Reply(m.joinWaiter, s.currentJoin(g, newID, leader, leader), nil)
		g.numAwaitingJoin--
		m.joinWaiter = 0
	case CompletingRebalance:
		// The leader may already be assigning to the old member id.
		s.prepareRebalance(nowMs, g, out)
	default:
		// PreparingRebalance: the member is parked like any other.
	}
}

func (s *Shard) maybePrepareRebalanceOrCompleteJoin(nowMs int64, g *group, out *coord.Output) {
	switch g.state {
	case Stable, CompletingRebalance, Empty:
		s.prepareRebalance(nowMs, g, out)
	default:
		s.maybeCompleteJoinPhase(nowMs, g, out)
	}
}

func (s *Shard) maybeCompleteJoinPhase(nowMs int64, g *group, out *coord.Output) {
	if g.state == PreparingRebalance && g.hasAllMembersJoined() && g.prevState != Empty {
		s.completeJoin(nowMs, g, out)
	}
}

func (s *Shard) prepareRebalance(nowMs int64, g *group, out *coord.Output) {
	if g.state == CompletingRebalance {
		s.resetAndPropagateAssignmentError(nowMs, g, fmt.Errorf("%w: group %s is rebalancing", kerr.RebalanceInProgress, g.id), out)
	}
	s.timers.cancel(timerKey{kind: timerSync, group: g.id})
	clear(g.pendingSync)
	initial := g.state == Empty
	if initial {
		// A new group waits group.initial.rebalance.delay.ms for more
		// members, extended while members keep arriving, up to the
		// rebalance timeout.
		delay := s.cfg().InitialRebalanceDelayMs
		g.initialDelayMs, g.initialRemainingMs = delay, max(g.rebalanceTimeoutMs()-delay, 0)
		g.newMemberAdded = false
		s.timers.cancel(timerKey{kind: timerJoin, group: g.id})
		s.timers.schedule(timerKey{kind: timerInitialJoin, group: g.id}, nowMs+int64(delay))
	}
	g.transition(PreparingRebalance, nowMs)
	s.logger.Info("preparing to rebalance group", "group", g.id, "generation", g.generation, "members", len(g.members))
	if !initial {
		if g.hasAllMembersJoined() {
			s.completeJoin(nowMs, g, out)
		} else {
			s.timers.schedule(timerKey{kind: timerJoin, group: g.id}, nowMs+int64(g.rebalanceTimeoutMs()))
		}
	}
}

func (s *Shard) initialJoinTimeout(nowMs int64, g *group, out *coord.Output) {
	if g.state != PreparingRebalance {
		return
	}
	if g.newMemberAdded && g.initialRemainingMs != 0 {
		g.newMemberAdded = false
		delay := min(s.cfg().InitialRebalanceDelayMs, g.initialRemainingMs)
		remaining := max(g.initialRemainingMs-g.initialDelayMs, 0)
		g.initialDelayMs, g.initialRemainingMs = delay, remaining
		s.timers.schedule(timerKey{kind: timerInitialJoin, group: g.id}, nowMs+int64(delay))
		return
	}
	s.completeJoin(nowMs, g, out)
}

// completeJoin ends a join phase: dynamic members that did not rejoin are
// removed, the next generation starts, every parked join is answered (the
// leader gets the member list), and members have until the rebalance timeout
// to SyncGroup.
func (s *Shard) completeJoin(nowMs int64, g *group, out *coord.Output) {
	s.timers.cancel(timerKey{kind: timerJoin, group: g.id})
	s.timers.cancel(timerKey{kind: timerInitialJoin, group: g.id})
	if g.state == Dead {
		return
	}
	for _, m := range g.sortedMembers() {
		if !m.awaitingJoin() && !m.static() {
			s.logger.Info("removing member that did not rejoin in time", "group", g.id, "member", m.id)
			s.removeMember(g, m, out)
		}
	}
	if len(g.members) > 0 && !s.electJoinedLeader(g) {
		// Only static members that have not rejoined remain: wait for them
		// to rejoin or for their sessions to end.
		s.timers.schedule(timerKey{kind: timerJoin, group: g.id}, nowMs+int64(g.rebalanceTimeoutMs()))
		return
	}
	g.generation++
	if len(g.members) == 0 {
		g.protocol, g.leader = "", ""
		g.subscribed = map[string]bool{}
		g.transition(Empty, nowMs)
		s.logger.Info("group is empty", "group", g.id, "generation", g.generation)
		out.Write(groupMetadataRecord(g, nil))
		return
	}
	g.protocol = g.selectProtocol()
	g.computeSubscribed()
	g.transition(CompletingRebalance, nowMs)
	s.logger.Info("group completed its join phase", "group", g.id, "generation", g.generation, "protocol", g.protocol, "leader", g.leader, "members", len(g.members))
	for _, m := range g.sortedMembers() {
		if !m.awaitingJoin() {
			continue
		}
		out.Reply(m.joinWaiter, s.currentJoin(g, m.id, m.id == g.leader, false), nil)
		m.joinWaiter = 0
		g.numAwaitingJoin--
		m.isNew = false
		s.scheduleHeartbeat(g, m, nowMs)
	}
	for id := range g.members {
		g.pendingSync[id] = true
	}
	s.timers.schedule(timerKey{kind: timerSync, group: g.id}, nowMs+int64(g.rebalanceTimeoutMs()))
}

// electJoinedLeader keeps the leader if it rejoined, or makes the first
// rejoined member leader; false when no member rejoined.
func (s *Shard) electJoinedLeader(g *group) bool {
	if l := g.members[g.leader]; l != nil && l.awaitingJoin() {
		return true
	}
	for _, m := range g.sortedMembers() {
		if m.awaitingJoin() {
			g.leader = m.id
			return true
		}
	}
	return false
}

// removeMember drops m, answering its parked requests UNKNOWN_MEMBER_ID.
func (s *Shard) removeMember(g *group, m *member, out *coord.Output) {
	if m.awaitingJoin() {
		out.Reply(m.joinWaiter, joinError(errUnknownMember(m.id), ""), nil)
	}
	if m.awaitingSync() {
		out.Reply(m.syncWaiter, &SyncResult{Err: errUnknownMember(m.id), Assignment: []byte{}}, nil)
		m.syncWaiter = 0
	}
	s.timers.cancel(heartbeatKey(g, m.id))
	g.remove(m.id)
	m.joinWaiter = 0
	if len(g.pendingSync) == 0 {
		s.timers.cancel(timerKey{kind: timerSync, group: g.id})
	}
}

func (s *Shard) removeMemberAndUpdateGroup(nowMs int64, g *group, m *member, out *coord.Output) {
	s.removeMember(g, m, out)
	switch g.state {
	case Stable, CompletingRebalance:
		s.maybePrepareRebalanceOrCompleteJoin(nowMs, g, out)
	case PreparingRebalance:
		s.maybeCompleteJoinPhase(nowMs, g, out)
	}
}

func (s *Shard) expireHeartbeat(nowMs int64, g *group, memberID string, out *coord.Output) {
	if g.pending[memberID] {
		s.logger.Info("pending member removed after its session timeout", "group", g.id, "member", memberID)
		delete(g.pending, memberID)
		s.maybeCompleteJoinPhase(nowMs, g, out)
		return
	}
	m := g.members[memberID]
	if m == nil || m.hasSatisfiedHeartbeat() {
		return
	}
	s.logger.Info("member failed to heartbeat in time; removing it", "group", g.id, "member", memberID, "session_timeout_ms", m.sessionTimeoutMs)
	s.removeMemberAndUpdateGroup(nowMs, g, m, out)
}

func (s *Shard) expirePendingSync(nowMs int64, g *group, out *coord.Output) {
	if g.state != CompletingRebalance && g.state != Stable {
		return
	}
	if len(g.pendingSync) == 0 {
		return
	}
	for _, m := range g.sortedMembers() {
		if g.pendingSync[m.id] {
			s.logger.Info("member did not SyncGroup in time; removing it", "group", g.id, "member", m.id, "generation", g.generation)
			s.removeMember(g, m, out)
		}
	}
	clear(g.pendingSync)
	s.maybePrepareRebalanceOrCompleteJoin(nowMs, g, out)
}

func derefOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}
