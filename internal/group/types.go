package group

import (
	"bytes"
	"sort"

	"github.com/gregor-broker/gregor/internal/coord"
)

// State is a classic group's state (Kafka's ClassicGroupState).
type State int8

const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	default:
		return "Dead"
	}
}

// ConsumerProtocolType is the protocol type of Kafka consumers; only such
// groups have subscriptions the coordinator understands.
const ConsumerProtocolType = "consumer"

// GroupType is the type ListGroups v5 reports for classic groups.
const GroupType = "classic"

// Offset is one committed offset.
type Offset struct {
	Offset          int64
	LeaderEpoch     int32 // -1: none
	Metadata        string
	CommitTimestamp int64 // ms
	ExpireTimestamp int64 // ms; -1 unless an OffsetCommit v2-v4 set a retention time
	// seq orders commits as the log does (the record's offset once
	// replayed; a counter above every replayed offset for records written
	// since): a transactional offset materialises only over an older one.
	seq int64
}

// Protocol is one (name, metadata) pair of a JoinGroup.
type Protocol struct {
	Name     string
	Metadata []byte
}

type member struct {
	id                 string
	instanceID         *string
	clientID           string
	clientHost         string
	rebalanceTimeoutMs int32
	sessionTimeoutMs   int32
	protocolType       string
	protocols          []Protocol
	assignment         []byte
	seq                uint64 // join order, for deterministic iteration

	joinWaiter coord.Waiter // parked JoinGroup, if any
	syncWaiter coord.Waiter // parked SyncGroup, if any
	isNew      bool
}

func (m *member) awaitingJoin() bool { return m.joinWaiter != 0 }
func (m *member) awaitingSync() bool { return m.syncWaiter != 0 }
func (m *member) static() bool       { return m.instanceID != nil }

// metadata is the member's metadata for protocol (nil when it has none).
func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// matches reports whether protocols are exactly the member's.
func (m *member) matches(protocols []Protocol) bool {
	if len(protocols) != len(m.protocols) {
		return false
	}
	for i, p := range protocols {
		if p.Name != m.protocols[i].Name || !bytes.Equal(p.Metadata, m.protocols[i].Metadata) {
			return false
		}
	}
	return true
}

// vote is the member's most preferred protocol among candidates.
func (m *member) vote(candidates map[string]bool) string {
	for _, p := range m.protocols {
		if candidates[p.Name] {
			return p.Name
		}
	}
	return ""
}

// hasSatisfiedHeartbeat: members parked in a rebalance need not heartbeat;
// new members must complete their first join in time.
func (m *member) hasSatisfiedHeartbeat() bool {
	if m.isNew {
		return false
	}
	return m.awaitingJoin() || m.awaitingSync()
}

// group is one classic group with its committed offsets. A group known only
// by its offsets (a "simple" consumer committing with generation -1) is an
// Empty group with no protocol type.
type group struct {
	id              string
	state           State
	prevState       State
	stateTimestamp  int64 // ms; -1: unknown
	protocolType    string
	protocol        string
	generation      int32
	leader          string
	members         map[string]*member
	nextSeq         uint64
	pending         map[string]bool   // dynamic members told MEMBER_ID_REQUIRED
	static          map[string]string // group.instance.id → member id
	pendingSync     map[string]bool
	numAwaitingJoin int
	newMemberAdded  bool
	// The initial-rebalance delay of an Empty group's first join phase.
	initialDelayMs, initialRemainingMs int32
	// subscribed is the union of the members' subscribed topics (consumer
	// protocol); nil when unknown, in which case every topic counts as
	// subscribed.
	subscribed map[string]bool
	offsets    map[string]map[int32]*Offset
}

func newGroup(id string, nowMs int64) *group {
	return &group{
		id: id, state: Empty, prevState: Empty, stateTimestamp: nowMs,
		members: map[string]*member{}, pending: map[string]bool{}, static: map[string]string{},
		pendingSync: map[string]bool{}, subscribed: map[string]bool{}, offsets: map[string]map[int32]*Offset{},
	}
}

func (g *group) transition(s State, nowMs int64) {
	g.prevState, g.state = g.state, s
	g.stateTimestamp = nowMs
}

func (g *group) sortedMembers() []*member {
	out := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

func (g *group) add(m *member) {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	g.nextSeq++
	m.seq = g.nextSeq
	if g.leader == "" {
		g.leader = m.id
	}
	g.members[m.id] = m
	if m.static() {
		g.static[*m.instanceID] = m.id
	}
	if m.awaitingJoin() {
		g.numAwaitingJoin++
	}
	delete(g.pending, m.id)
}

// remove drops a member (its parked requests must have been answered).
func (g *group) remove(id string) {
	m := g.members[id]
	if m == nil {
		delete(g.pending, id)
		return
	}
	if m.awaitingJoin() {
		g.numAwaitingJoin--
	}
	delete(g.members, id)
	delete(g.pendingSync, id)
	if m.static() && g.static[*m.instanceID] == id {
		delete(g.static, *m.instanceID)
	}
	if g.leader == id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

func (g *group) hasAllMembersJoined() bool {
	return len(g.members) == g.numAwaitingJoin && len(g.pending) == 0
}

// rebalanceTimeoutMs is the longest rebalance timeout of the members.
func (g *group) rebalanceTimeoutMs() int32 {
	var t int32
	for _, m := range g.members {
		t = max(t, m.rebalanceTimeoutMs)
	}
	return t
}

// candidateProtocols are the protocols every member supports.
func (g *group) candidateProtocols() map[string]bool {
	count := map[string]int{}
	for _, m := range g.members {
		seen := map[string]bool{}
		for _, p := range m.protocols {
			if !seen[p.Name] {
				seen[p.Name] = true
				count[p.Name]++
			}
		}
	}
	out := map[string]bool{}
	for name, n := range count {
		if n == len(g.members) {
			out[name] = true
		}
	}
	return out
}

func (g *group) supportsProtocols(protocolType string, protocols []Protocol) bool {
	if g.state == Empty {
		return protocolType != "" && len(protocols) > 0
	}
	if g.protocolType != protocolType {
		return false
	}
	cands := g.candidateProtocols()
	for _, p := range protocols {
		if cands[p.Name] {
			return true
		}
	}
	return false
}

// selectProtocol lets every member vote for its most preferred candidate;
// ties go to the candidate voted for by the earliest member.
func (g *group) selectProtocol() string {
	cands := g.candidateProtocols()
	votes := map[string]int{}
	var order []string
	for _, m := range g.sortedMembers() {
		v := m.vote(cands)
		if v == "" {
			continue
		}
		if votes[v] == 0 {
			order = append(order, v)
		}
		votes[v]++
	}
	best := ""
	for _, name := range order {
		if best == "" || votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

// validateMember applies Kafka's member identity checks (static members are
// fenced by group.instance.id).
func (g *group) validateMember(memberID string, instanceID *string) error {
	if instanceID != nil {
		existing, ok := g.static[*instanceID]
		if !ok {
			return errUnknownMember(memberID)
		}
		if existing != memberID {
			return errFenced(*instanceID, memberID)
		}
		return nil
	}
	if g.members[memberID] == nil {
		return errUnknownMember(memberID)
	}
	return nil
}

// computeSubscribed recomputes the subscribed topics from the members'
// subscriptions for the selected protocol.
func (g *group) computeSubscribed() {
	if len(g.members) == 0 {
		g.subscribed = map[string]bool{}
		return
	}
	if g.protocolType != ConsumerProtocolType || g.protocol == "" {
		g.subscribed = nil
		return
	}
	sub := map[string]bool{}
	for _, m := range g.members {
		topics, ok := subscribedTopics(m.metadata(g.protocol))
		if !ok {
			g.subscribed = nil
			return
		}
		for _, t := range topics {
			sub[t] = true
		}
	}
	g.subscribed = sub
}

func (g *group) isSubscribedTo(topic string) bool {
	if g.subscribed == nil {
		return true
	}
	return g.subscribed[topic]
}

func (g *group) numOffsets() int {
	n := 0
	for _, ps := range g.offsets {
		n += len(ps)
	}
	return n
}

func (g *group) setOffset(topic string, partition int32, o Offset) {
	ps := g.offsets[topic]
	if ps == nil {
		ps = map[int32]*Offset{}
		g.offsets[topic] = ps
	}
	ps[partition] = &o
}

func (g *group) deleteOffset(topic string, partition int32) bool {
	ps := g.offsets[topic]
	if ps == nil || ps[partition] == nil {
		return false
	}
	delete(ps, partition)
	if len(ps) == 0 {
		delete(g.offsets, topic)
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

func sortedPartitions(m map[int32]*Offset) []int32 {
	out := make([]int32, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
