package controller

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/metadata"
)

// session is a broker's heartbeat session (Kafka's BrokerHeartbeatState). It
// lives only in the active controller's memory: a new controller gives
// every broker a fresh one.
type session struct {
	lastContact time.Time
	// metadataOffset is the applied metadata index the broker last
	// reported, -1 before its first heartbeat to this controller.
	metadataOffset int64
	// controlledShutdownOffset is the index of the entry that moved the
	// broker's leaderships away, -1 when it is not shutting down: the
	// broker may stop once every active broker has applied it.
	controlledShutdownOffset int64
}

func newSession(now time.Time) *session {
	return &session{lastContact: now, metadataOffset: -1, controlledShutdownOffset: -1}
}

// session returns a broker's session, starting one if it has none (a broker
// registered by an entry this controller did not write).
func (c *Core) session(id int32) *session {
	s := c.sessions[id]
	if s == nil {
		s = newSession(c.now)
		c.sessions[id] = s
	}
	return s
}

func (c *Core) sessionTimeout() time.Duration {
	return time.Duration(c.cfg.Broker.Int("broker.session.timeout.ms")) * time.Millisecond
}

// expired reports whether a broker's session has run out (Kafka's
// lastContact + timeout < now).
func (c *Core) expired(id int32) bool {
	return c.now.After(c.session(id).lastContact.Add(c.sessionTimeout()))
}

// hasValidSession is Kafka's: an unfenced broker that heartbeated within the
// session timeout.
func (c *Core) hasValidSession(im *metadata.Image, id int32) bool {
	b := im.Brokers[id]
	return b != nil && !b.Fenced && !c.expired(id)
}

func (c *Core) anyStaleBroker() bool {
	for id, b := range c.applied.Brokers {
		if !b.Fenced && c.expired(id) {
			return true
		}
	}
	return false
}

// nextSessionExpiry is when the next unfenced broker's session runs out;
// zero while a fencing write is already queued or any batch is in flight
// (the deadline is recomputed when it applies).
func (c *Core) nextSessionExpiry() time.Time {
	if c.queued[fenceStaleBrokers] || c.inflight != nil {
		return time.Time{}
	}
	var next time.Time
	for id, b := range c.applied.Brokers {
		if b.Fenced {
			continue
		}
		at := c.session(id).lastContact.Add(c.sessionTimeout() + time.Nanosecond)
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

func checkBrokerEpoch(im *metadata.Image, id int32, epoch int64) error {
	b := im.Brokers[id]
	if b == nil {
		return fmt.Errorf("%w: No broker registration found for broker id %d", kerr.StaleBrokerEpoch, id)
	}
	if b.Epoch != epoch {
		return fmt.Errorf("%w: Expected broker epoch %d, but got broker epoch %d", kerr.StaleBrokerEpoch, b.Epoch, epoch)
	}
	return nil
}

// registerBroker is ClusterControlManager.registerBroker. A new incarnation
// first leaves its old incarnation's ISRs, as a clean shutdown does when
// PreviousBrokerEpoch names the registered epoch, else (ELR on) also the
// ELRs, as an unclean restart must; then registers fenced. Its broker epoch
// is the index of the entry. The same incarnation again is a retry and gets
// the epoch it has.
func (c *Core) registerBroker(w *write, r *BrokerRegistrationRequest) built {
	im := w.im
	if r.ClusterID != im.ClusterID {
		return answer(nil, fmt.Errorf("%w: Expected cluster ID %s, but got cluster ID %s",
			kerr.InconsistentClusterID, im.ClusterID, r.ClusterID))
	}
	existing := im.Brokers[r.BrokerID]
	if existing != nil && existing.Incarnation == r.IncarnationID {
		c.log.Info("broker registration retried; the broker epoch stays", "broker", r.BrokerID, "epoch", existing.Epoch)
		return answer(&BrokerRegistrationResponse{BrokerEpoch: existing.Epoch}, nil)
	}
	// KAFKA-19047: a broker in controlled shutdown may come back at once.
	if existing != nil && c.hasValidSession(im, r.BrokerID) && !existing.InControlledShutdown && !c.replacesLocal(existing, r) {
		return answer(nil, fmt.Errorf("%w: Another broker is registered with that broker id.", kerr.DuplicateBrokerRegistration))
	}
	if err := checkLogDirs(im, r); err != nil {
		return answer(nil, err)
	}
	clean := existing != nil && r.PreviousBrokerEpoch == existing.Epoch
	var elections []Election
	if elrEnabled(im) && !clean {
		recs, els := w.updatePartitions(-1, r.BrokerID, func(p *metadata.PartitionImage) bool {
			return p.InISR(r.BrokerID) || slices.Contains(p.ELR, r.BrokerID)
		})
		w.emit(recs...)
		elections = els
	} else {
		recs, els := w.updatePartitions(r.BrokerID, -1, func(p *metadata.PartitionImage) bool { return p.InISR(r.BrokerID) })
		w.emit(recs...)
		elections = els
	}
	w.emit(metadata.RegisterBroker{ID: r.BrokerID, Incarnation: r.IncarnationID, Endpoints: r.Listeners,
		Rack: r.Rack, Fenced: true, LogDirs: r.LogDirs})
	c.sessions[r.BrokerID] = newSession(c.now)
	partitionChanges := len(w.recs) - 1
	return built{
		elections: elections,
		applied: func(index uint64) {
			c.log.Info("registered a broker incarnation", "broker", r.BrokerID, "epoch", index, "clean_restart", clean,
				"had_registration", existing != nil, "partition_changes", partitionChanges)
		},
		reply: func(_ *metadata.Image, index uint64) (any, error) {
			return &BrokerRegistrationResponse{BrokerEpoch: int64(index)}, nil
		},
	}
}

// replacesLocal reports whether r is this process's own broker coming back
// on a log dir its earlier incarnation registered (see
// Config.LocalIncarnation).
func (c *Core) replacesLocal(old *metadata.Broker, r *BrokerRegistrationRequest) bool {
	if r.BrokerID != c.cfg.NodeID || r.IncarnationID != c.cfg.LocalIncarnation || r.IncarnationID == ([16]byte{}) {
		return false
	}
	for _, d := range r.LogDirs {
		if slices.Contains(old.LogDirs, d) {
			return true
		}
	}
	return false
}

// checkLogDirs makes Kafka's directory checks: some directories, none
// reserved, none twice, none registered by another broker.
func checkLogDirs(im *metadata.Image, r *BrokerRegistrationRequest) error {
	if len(r.LogDirs) == 0 {
		return fmt.Errorf("%w: No directories specified in request", kerr.InvalidRegistration)
	}
	for i, d := range r.LogDirs {
		if reservedDirectory(d) {
			return fmt.Errorf("%w: Reserved directory ID in request", kerr.InvalidRegistration)
		}
		if slices.Contains(r.LogDirs[:i], d) {
			return fmt.Errorf("%w: Duplicate directory ID in request", kerr.InvalidRegistration)
		}
	}
	for _, b := range im.SortedBrokers() {
		if b.ID == r.BrokerID {
			continue
		}
		for _, d := range r.LogDirs {
			if slices.Contains(b.LogDirs, d) {
				return fmt.Errorf("%w: Broker %d is already registered with directory %s",
					kerr.InvalidRegistration, b.ID, metadata.TopicID(d))
			}
		}
	}
	return nil
}

// reservedDirectory is Kafka's DirectoryId.reserved: the first 100 UUIDs
// (UNASSIGNED, LOST, MIGRATING and room for more).
func reservedDirectory(d [16]byte) bool {
	return binary.BigEndian.Uint64(d[:8]) == 0 && binary.BigEndian.Uint64(d[8:]) < 100
}

// brokerState is Kafka's BrokerControlState.
type brokerState uint8

const (
	stateFenced brokerState = iota
	stateUnfenced
	stateControlledShutdown
	stateShutdownNow
)

func (s brokerState) fenced() bool { return s == stateFenced || s == stateShutdownNow }

// currentState is the broker's state in the image.
func currentState(b *metadata.Broker) brokerState {
	switch {
	case b.Fenced:
		return stateFenced
	case b.InControlledShutdown:
		return stateControlledShutdown
	}
	return stateUnfenced
}

// heartbeat is ReplicationControlManager.processBrokerHeartbeat: refresh the
// session, compute the next state (calculateNextBrokerState) and write the
// transition.
func (c *Core) heartbeat(w *write, r *BrokerHeartbeatRequest) built {
	if err := checkBrokerEpoch(w.im, r.BrokerID, r.BrokerEpoch); err != nil {
		return answer(nil, err)
	}
	b := w.im.Brokers[r.BrokerID]
	s := c.session(r.BrokerID)
	cur := currentState(b)
	next := c.nextState(w.im, b, s, r)
	var elections []Election
	if next != cur {
		switch next {
		case stateFenced, stateShutdownNow:
			if !b.Fenced {
				elections = w.fence(b)
			}
		case stateUnfenced:
			elections = w.unfence(b)
		case stateControlledShutdown:
			elections = w.startControlledShutdown(b)
		}
	}
	s.lastContact, s.metadataOffset = c.now, r.CurrentMetadataOffset
	if next.fenced() {
		s.controlledShutdownOffset = -1
	}
	resp := &BrokerHeartbeatResponse{IsCaughtUp: r.CurrentMetadataOffset >= b.Epoch, IsFenced: next.fenced(),
		ShouldShutDown: next == stateShutdownNow}
	return built{
		elections: elections,
		applied: func(index uint64) {
			if next == stateControlledShutdown && s.controlledShutdownOffset < 0 {
				s.controlledShutdownOffset = int64(index)
			}
			if next != cur {
				c.log.Info("broker state changed", "broker", r.BrokerID, "epoch", b.Epoch, "from", cur, "to", next, "index", index)
			}
		},
		reply: func(*metadata.Image, uint64) (any, error) { return resp, nil },
	}
}

// expiredHeartbeat is processExpiredBrokerHeartbeat: a heartbeat that
// waited too long for the controller still proves the broker alive, so it
// refreshes the session (a slow controller must not fence its brokers),
// but changes nothing else.
func (c *Core) expiredHeartbeat(r *BrokerHeartbeatRequest) {
	if checkBrokerEpoch(c.applied, r.BrokerID, r.BrokerEpoch) != nil || c.sessions == nil {
		return
	}
	s := c.session(r.BrokerID)
	s.lastContact, s.metadataOffset = c.now, r.CurrentMetadataOffset
	c.log.Error("a broker heartbeat timed out waiting for the controller; its session was refreshed",
		"broker", r.BrokerID, "epoch", r.BrokerEpoch)
}

// nextState is BrokerHeartbeatManager.calculateNextBrokerState.
func (c *Core) nextState(im *metadata.Image, b *metadata.Broker, s *session, r *BrokerHeartbeatRequest) brokerState {
	switch currentState(b) {
	case stateFenced:
		switch {
		case r.WantShutDown:
			return stateShutdownNow
		case !r.WantFence && r.CurrentMetadataOffset >= b.Epoch:
			return stateUnfenced
		}
		return stateFenced
	case stateUnfenced:
		switch {
		case r.WantFence && r.WantShutDown:
			return stateShutdownNow
		case r.WantFence:
			return stateFenced
		case r.WantShutDown && leadsAny(im, b.ID):
			return stateControlledShutdown
		case r.WantShutDown:
			return stateShutdownNow
		}
		return stateUnfenced
	default: // controlled shutdown
		if leadsAny(im, b.ID) {
			return stateControlledShutdown
		}
		// A controller that took over mid-shutdown starts counting from
		// what is applied now: the moves away are all in it.
		offset := s.controlledShutdownOffset
		if offset < 0 {
			offset = int64(c.applied.Index)
		}
		if offset <= c.lowestActiveOffset(im) {
			return stateShutdownNow
		}
		return stateControlledShutdown
	}
}

func leadsAny(im *metadata.Image, id int32) bool {
	for _, t := range im.SortedTopics() {
		for _, p := range t.Partitions {
			if p.Leader == id {
				return true
			}
		}
	}
	return false
}

// lowestActiveOffset is the least metadata index reported by a broker that
// is unfenced and not shutting down (MaxInt64 when there is none).
func (c *Core) lowestActiveOffset(im *metadata.Image) int64 {
	low := int64(math.MaxInt64)
	for id, b := range im.Brokers {
		if b.Fenced || b.InControlledShutdown {
			continue
		}
		low = min(low, c.session(id).metadataOffset)
	}
	return low
}

// fence is handleBrokerFenced: the broker leaves every ISR (leaders move),
// then is fenced.
func (w *write) fence(b *metadata.Broker) []Election {
	recs, elections := w.updatePartitions(b.ID, -1, func(p *metadata.PartitionImage) bool { return p.InISR(b.ID) })
	recs = append(recs, metadata.BrokerRegistrationChange{ID: b.ID, Epoch: b.Epoch, Fenced: metadata.Fence})
	w.emit(recs...)
	return elections
}

// unfence is handleBrokerUnfenced: the broker is unfenced, then every
// leaderless partition it may lead elects.
func (w *write) unfence(b *metadata.Broker) []Election {
	w.emit(metadata.BrokerRegistrationChange{ID: b.ID, Epoch: b.Epoch, Fenced: metadata.Unfence})
	recs, elections := w.updatePartitions(-1, -1, func(p *metadata.PartitionImage) bool { return p.Leader == metadata.NoLeader })
	w.emit(recs...)
	return elections
}

// startControlledShutdown is handleBrokerInControlledShutdown: the broker is
// marked shutting down, leaves every ISR and its leaderships move.
func (w *write) startControlledShutdown(b *metadata.Broker) []Election {
	if !b.InControlledShutdown {
		w.emit(metadata.BrokerRegistrationChange{ID: b.ID, Epoch: b.Epoch, InControlledShutdown: true})
	}
	recs, elections := w.updatePartitions(b.ID, -1, func(p *metadata.PartitionImage) bool { return p.InISR(b.ID) })
	w.emit(recs...)
	return elections
}

// fenceStaleBrokers fences every unfenced broker whose session expired, in
// one batch: each fence's partition changes are built on the previous ones,
// so the ELR logic sees every removal.
func (c *Core) fenceStaleBrokers(w *write) built {
	var elections []Election
	var fenced []int32
	for _, b := range w.im.SortedBrokers() {
		if b.Fenced || !c.expired(b.ID) {
			continue
		}
		elections = append(elections, w.fence(b)...)
		c.session(b.ID).controlledShutdownOffset = -1
		fenced = append(fenced, b.ID)
	}
	return built{elections: elections, applied: func(index uint64) {
		if len(fenced) > 0 {
			c.log.Warn("fenced brokers whose sessions timed out", "brokers", fenced, "index", index,
				"session_timeout", c.sessionTimeout())
		}
	}}
}

// allocateProducerIDs is ProducerIdControlManager.generateNextProducerId:
// blocks of 1000, recorded so no id is handed out twice.
func (c *Core) allocateProducerIDs(w *write, r *AllocateProducerIDsRequest) built {
	if err := checkBrokerEpoch(w.im, r.BrokerID, r.BrokerEpoch); err != nil {
		return answer(nil, err)
	}
	first := w.im.NextProducerID
	if first > math.MaxInt64-ProducerIDBlockSize {
		return answer(nil, fmt.Errorf("%w: Exhausted all producerIds as the next block's end producerId has exceeded the int64 type limit",
			kerr.UnknownServerError))
	}
	w.emit(metadata.ProducerIDs{BrokerID: r.BrokerID, BrokerEpoch: r.BrokerEpoch, NextBlockStart: first + ProducerIDBlockSize})
	return answer(&AllocateProducerIDsResponse{Start: first, Len: ProducerIDBlockSize}, nil)
}

func (s brokerState) String() string {
	return [...]string{"FENCED", "UNFENCED", "CONTROLLED_SHUTDOWN", "SHUTDOWN_NOW"}[s]
}
