package group

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/gregor-broker/gregor/internal/coord"
)

// Config is the group coordinator's configuration, by Kafka property.
type Config struct {
	MinSessionTimeoutMs     int32 // group.min.session.timeout.ms
	MaxSessionTimeoutMs     int32 // group.max.session.timeout.ms
	InitialRebalanceDelayMs int32 // group.initial.rebalance.delay.ms
	MaxSize                 int32 // group.max.size
	OffsetsRetentionMs      int64 // offsets.retention.minutes × 60000
	RetentionCheckMs        int64 // offsets.retention.check.interval.ms
	OffsetMetadataMaxBytes  int32 // offset.metadata.max.bytes
	// NewMemberJoinTimeoutMs bounds a new member's first JoinGroup (Kafka's
	// internal classic new-member join timeout, 5 minutes).
	NewMemberJoinTimeoutMs int32
}

// DefaultConfig is Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		MinSessionTimeoutMs: 6000, MaxSessionTimeoutMs: 1800000, InitialRebalanceDelayMs: 3000,
		MaxSize: 1<<31 - 1, OffsetsRetentionMs: 10080 * 60000, RetentionCheckMs: 600000,
		OffsetMetadataMaxBytes: 4096, NewMemberJoinTimeoutMs: 300000,
	}
}

// Shard is the classic group coordinator state of one __consumer_offsets
// partition: every group that hashes to it and their committed offsets. It
// is a deterministic state machine (see doc.go): time comes in as arguments,
// member ids from the injected generator, and effects go out as records and
// replies in a coord.Output.
type Shard struct {
	partition int32
	cfg       func() Config
	newID     func() string
	logger    *slog.Logger
	groups    map[string]*group
	timers    *timers
	// pending are transactional offset commits awaiting their marker, by
	// producer id (txn_offsets.go); seq is the last record order handed out.
	pending map[int64]pendingOffsets
	seq     int64
}

// NewShard returns an empty shard. cfg is consulted on every operation (so
// dynamic config changes apply); newID returns a fresh UUID for member ids.
func NewShard(partition int32, cfg func() Config, newID func() string, logger *slog.Logger) *Shard {
	if logger == nil {
		logger = slog.Default()
	}
	return &Shard{partition: partition, cfg: cfg, newID: newID, logger: logger,
		groups: map[string]*group{}, timers: newTimers()}
}

// Replay applies one __consumer_offsets record.
func (s *Shard) Replay(offset int64, r coord.Record) error {
	s.seq = max(s.seq, offset)
	k, err := decodeKey(r.Key)
	if err != nil {
		return fmt.Errorf("record at offset %d: %w", offset, err)
	}
	switch k.kind {
	case kindOffset:
		g := s.groups[k.group]
		if r.Value == nil {
			if g != nil {
				g.deleteOffset(k.topic, k.partition)
			}
			return nil
		}
		o, err := decodeOffsetValue(r.Value)
		if err != nil {
			return fmt.Errorf("record at offset %d: %w", offset, err)
		}
		if g == nil {
			g = newGroup(k.group, -1)
			s.groups[k.group] = g
		}
		o.seq = offset
		g.setOffset(k.topic, k.partition, o)
	case kindGroup:
		if r.Value == nil {
			s.replayGroupTombstone(k.group)
			return nil
		}
		sg, err := decodeGroupValue(r.Value)
		if err != nil {
			return fmt.Errorf("record at offset %d: %w", offset, err)
		}
		s.replayGroup(k.group, sg)
	default:
		s.logger.Debug("skipping __consumer_offsets record of another group protocol", "key_version", k.version, "offset", offset)
	}
	return nil
}

func (s *Shard) replayGroupTombstone(id string) {
	g := s.groups[id]
	if g == nil {
		return
	}
	if g.numOffsets() == 0 {
		delete(s.groups, id)
		return
	}
	ng := newGroup(id, -1)
	ng.offsets = g.offsets
	s.groups[id] = ng
}

func (s *Shard) replayGroup(id string, sg storedGroup) {
	g := newGroup(id, sg.stateTimestamp)
	if old := s.groups[id]; old != nil {
		g.offsets = old.offsets
	}
	g.protocolType, g.generation, g.protocol = sg.protocolType, sg.generation, sg.protocol
	for _, sm := range sg.members {
		m := &member{id: sm.id, instanceID: sm.instanceID, clientID: sm.clientID, clientHost: sm.clientHost,
			rebalanceTimeoutMs: sm.rebalanceTimeoutMs, sessionTimeoutMs: sm.sessionTimeoutMs,
			protocolType: sg.protocolType, protocols: []Protocol{{Name: sg.protocol, Metadata: sm.subscription}},
			assignment: sm.assignment}
		g.add(m)
	}
	g.protocolType = sg.protocolType
	g.leader = sg.leader
	if len(g.members) > 0 {
		g.state = Stable
	}
	g.prevState = g.state
	g.computeSubscribed()
	s.groups[id] = g
}

// Loaded arms the timers of the loaded groups: every member of a Stable
// group gets a fresh session, over-capacity groups rebalance, and the
// offset expiration check is scheduled.
func (s *Shard) Loaded(now time.Time) {
	nowMs := now.UnixMilli()
	cfg := s.cfg()
	var discard coord.Output
	for _, id := range sortedKeys(s.groups) {
		g := s.groups[id]
		for _, m := range g.sortedMembers() {
			s.scheduleHeartbeat(g, m, nowMs)
		}
		if int32(len(g.members)) > cfg.MaxSize {
			s.logger.Info("freshly loaded group is over capacity; rebalancing", "group", id, "members", len(g.members), "group.max.size", cfg.MaxSize)
			s.prepareRebalance(nowMs, g, &discard)
		}
	}
	s.timers.schedule(timerKey{kind: timerExpireOffsets}, nowMs+cfg.RetentionCheckMs)
}

// NextDeadline is the earliest timer.
func (s *Shard) NextDeadline() (time.Time, bool) {
	at, ok := s.timers.next()
	if !ok {
		return time.Time{}, false
	}
	return time.UnixMilli(at), true
}

// maxTimersPerTick bounds one Tick; what remains runs on the next.
const maxTimersPerTick = 100000

// Tick runs every timer due at now.
func (s *Shard) Tick(now time.Time, out *coord.Output) {
	nowMs := now.UnixMilli()
	for range maxTimersPerTick {
		k, ok := s.timers.popDue(nowMs)
		if !ok {
			return
		}
		if k.kind == timerExpireOffsets {
			s.expireOffsets(nowMs, out)
			s.timers.schedule(k, nowMs+s.cfg().RetentionCheckMs)
			continue
		}
		g := s.groups[k.group]
		if g == nil {
			continue
		}
		switch k.kind {
		case timerHeartbeat:
			s.expireHeartbeat(nowMs, g, k.member, out)
		case timerJoin:
			if g.state == PreparingRebalance {
				s.completeJoin(nowMs, g, out)
			}
		case timerInitialJoin:
			s.initialJoinTimeout(nowMs, g, out)
		case timerSync:
			s.expirePendingSync(nowMs, g, out)
		}
	}
}

func heartbeatKey(g *group, memberID string) timerKey {
	return timerKey{kind: timerHeartbeat, group: g.id, member: memberID}
}

func (s *Shard) scheduleHeartbeat(g *group, m *member, nowMs int64) {
	s.timers.schedule(heartbeatKey(g, m.id), nowMs+int64(m.sessionTimeoutMs))
}

// Groups is the number of groups in the shard (metrics, tests).
func (s *Shard) Groups() int { return len(s.groups) }
