package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/metadata"
)

// Proposer is what the controller needs from the metadata log to write: it
// appends an encoded metadata.Entry to the raft log (RawNode.Propose on the
// raft loop). An error means the entry was dropped (raft's
// ErrProposalDropped: not the leader, or leadership being transferred).
// Propose must not wait for the entry to commit, and must not call back into
// the Shell.
type Proposer interface {
	Propose(ctx context.Context, data []byte) error
}

// ShellConfig configures a Shell.
type ShellConfig struct {
	Core     Config
	Clock    clock.Clock
	Proposer Proposer
	// OnElection, when set, is called (on the shell's goroutine) for every
	// unclean or last-known-leader election once it has applied, after the
	// shell has logged it; metrics count them here.
	OnElection func(Election)
}

// Shell runs a Core on one goroutine (Run): it feeds it the metadata log's
// applied entries and leadership changes, requests and timer ticks, proposes
// what it asks, and hands out its replies. Every method but Run may be
// called from any goroutine; Applied and LeadershipChanged never block, so
// the raft loop may call them directly.
type Shell struct {
	cfg  ShellConfig
	core *Core
	log  *slog.Logger

	mu      sync.Mutex
	events  []event
	stopped bool // Run has returned: requests are refused at once
	wake    chan struct{}

	active atomic.Bool
	term   atomic.Uint64
	nextID atomic.Uint64
}

// event is one input for the core, queued for the shell's goroutine.
type event struct {
	kind   eventKind
	im     *metadata.Image
	entry  *metadata.Entry
	leader bool
	term   uint64
	id     uint64
	req    Request
	reply  chan Reply
}

type eventKind uint8

const (
	evApplied eventKind = iota
	evLeadership
	evRequest
)

// NewShell returns a shell over the node's applied image; call Run.
func NewShell(cfg ShellConfig, applied *metadata.Image) *Shell {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	core := New(cfg.Core, applied)
	return &Shell{cfg: cfg, core: core, log: core.log, wake: make(chan struct{}, 1)}
}

// Applied reports that entry e applied and turned the image into im (e nil:
// a snapshot replaced the image). Call it in log order for every entry.
func (s *Shell) Applied(im *metadata.Image, e *metadata.Entry) {
	s.push(event{kind: evApplied, im: im, entry: e})
}

// LeadershipChanged reports raft's leadership: whether this node leads, and
// the term. Call it on every change of either.
func (s *Shell) LeadershipChanged(leader bool, term uint64) {
	s.push(event{kind: evLeadership, leader: leader, term: term})
}

// Active reports whether this node is the active controller (its
// activation has applied), and its term.
func (s *Shell) Active() (bool, uint64) { return s.active.Load(), s.term.Load() }

// Do submits a request and waits for its reply or for ctx to end (then the
// request may still be written; its reply is dropped). The reply's Value is
// the request's *…Response and its Index the log index it holds at (see
// Reply).
func (s *Shell) Do(ctx context.Context, req Request) Reply {
	ch := make(chan Reply, 1)
	id := s.nextID.Add(1)
	s.push(event{kind: evRequest, id: id, req: req, reply: ch})
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return Reply{ID: id, Err: fmt.Errorf("%w: waiting for the controller: %v", kerr.RequestTimedOut, ctx.Err())}
	}
}

func (s *Shell) push(ev event) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		if ev.kind == evRequest {
			ev.reply <- Reply{ID: ev.id, Err: errNotController}
		}
		return
	}
	s.events = append(s.events, ev)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Shell) take() []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs := s.events
	s.events = nil
	return evs
}

// Run is the shell's goroutine. It returns when ctx ends, failing every
// waiting request, and every later one, with NOT_CONTROLLER. Call it once.
func (s *Shell) Run(ctx context.Context) error {
	waiting := map[uint64]chan Reply{}
	var timer clock.Timer
	var timerC <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		s.mu.Lock()
		s.stopped = true
		s.mu.Unlock()
		for _, ev := range s.take() {
			if ev.kind == evRequest {
				waiting[ev.id] = ev.reply
			}
		}
		for _, ch := range waiting {
			ch <- Reply{Err: errNotController}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.wake:
			for _, ev := range s.take() {
				s.feed(ev, waiting)
			}
		case <-timerC:
			timerC = nil
			s.core.Tick(s.cfg.Clock.Now())
		}
		deadline := s.drain(ctx, waiting)
		if timer != nil {
			timer.Stop()
			timer, timerC = nil, nil
		}
		if !deadline.IsZero() {
			timerC, timer = clock.NewTimer(s.cfg.Clock, max(deadline.Sub(s.cfg.Clock.Now()), 0))
		}
	}
}

func (s *Shell) feed(ev event, waiting map[uint64]chan Reply) {
	now := s.cfg.Clock.Now()
	switch ev.kind {
	case evApplied:
		s.core.Applied(now, ev.im, ev.entry)
	case evLeadership:
		s.core.LeadershipChanged(now, ev.leader, ev.term)
	case evRequest:
		waiting[ev.id] = ev.reply
		s.core.Submit(now, ev.id, ev.req)
	}
}

// drain carries out the core's output until it asks for nothing more, and
// returns its next deadline.
func (s *Shell) drain(ctx context.Context, waiting map[uint64]chan Reply) time.Time {
	for {
		out := s.core.Ready()
		active, term := s.core.Active()
		s.active.Store(active)
		s.term.Store(term)
		for _, r := range out.Replies {
			if ch := waiting[r.ID]; ch != nil {
				ch <- r
				delete(waiting, r.ID)
			}
		}
		for _, e := range out.Elections {
			s.log.Error("unclean leader election: records acknowledged by the previous in-sync replicas may be lost",
				"topic", e.Topic, "partition", e.Partition, "leader", e.Leader, "leader_epoch", e.LeaderEpoch,
				"last_known_leader", e.LastKnownLeader, "previous_leader", e.PreviousLeader, "previous_isr", e.PreviousISR,
				"previous_elr", e.PreviousELR, "unacknowledged", e.Count)
			if s.cfg.OnElection != nil {
				s.cfg.OnElection(e)
			}
		}
		if out.Propose == nil {
			return out.Deadline
		}
		pctx, cancel := context.WithTimeout(ctx, s.cfg.Core.WriteTimeout+time.Second)
		err := s.cfg.Proposer.Propose(pctx, metadata.EncodeEntry(nil, out.Propose))
		cancel()
		if err == nil {
			return out.Deadline
		}
		s.core.ProposalFailed(s.cfg.Clock.Now(), out.Propose.Seq, err)
	}
}

// Typed calls, one per request: the response, the log index it holds at
// (see Reply), or the error that failed the whole request.

// RegisterBroker serves BrokerRegistration.
func (s *Shell) RegisterBroker(ctx context.Context, r *BrokerRegistrationRequest) (*BrokerRegistrationResponse, uint64, error) {
	return call[*BrokerRegistrationResponse](ctx, s, r)
}

// BrokerHeartbeat serves BrokerHeartbeat.
func (s *Shell) BrokerHeartbeat(ctx context.Context, r *BrokerHeartbeatRequest) (*BrokerHeartbeatResponse, uint64, error) {
	return call[*BrokerHeartbeatResponse](ctx, s, r)
}

// AlterPartition serves AlterPartition.
func (s *Shell) AlterPartition(ctx context.Context, r *AlterPartitionRequest) (*AlterPartitionResponse, uint64, error) {
	return call[*AlterPartitionResponse](ctx, s, r)
}

// CreateTopics serves CreateTopics.
func (s *Shell) CreateTopics(ctx context.Context, r *CreateTopicsRequest) (*CreateTopicsResponse, uint64, error) {
	return call[*CreateTopicsResponse](ctx, s, r)
}

// DeleteTopics serves DeleteTopics.
func (s *Shell) DeleteTopics(ctx context.Context, r *DeleteTopicsRequest) (*DeleteTopicsResponse, uint64, error) {
	return call[*DeleteTopicsResponse](ctx, s, r)
}

// CreatePartitions serves CreatePartitions.
func (s *Shell) CreatePartitions(ctx context.Context, r *CreatePartitionsRequest) (*CreatePartitionsResponse, uint64, error) {
	return call[*CreatePartitionsResponse](ctx, s, r)
}

// IncrementalAlterConfigs serves IncrementalAlterConfigs.
func (s *Shell) IncrementalAlterConfigs(ctx context.Context, r *IncrementalAlterConfigsRequest) (*AlterConfigsResponse, uint64, error) {
	return call[*AlterConfigsResponse](ctx, s, r)
}

// AlterConfigs serves the legacy AlterConfigs.
func (s *Shell) AlterConfigs(ctx context.Context, r *AlterConfigsRequest) (*AlterConfigsResponse, uint64, error) {
	return call[*AlterConfigsResponse](ctx, s, r)
}

// AllocateProducerIDs serves AllocateProducerIds.
func (s *Shell) AllocateProducerIDs(ctx context.Context, r *AllocateProducerIDsRequest) (*AllocateProducerIDsResponse, uint64, error) {
	return call[*AllocateProducerIDsResponse](ctx, s, r)
}

// ElectLeaders serves ElectLeaders.
func (s *Shell) ElectLeaders(ctx context.Context, r *ElectLeadersRequest) (*ElectLeadersResponse, uint64, error) {
	return call[*ElectLeadersResponse](ctx, s, r)
}

// AlterPartitionReassignments serves AlterPartitionReassignments.
func (s *Shell) AlterPartitionReassignments(ctx context.Context, r *AlterPartitionReassignmentsRequest) (*AlterPartitionReassignmentsResponse, uint64, error) {
	return call[*AlterPartitionReassignmentsResponse](ctx, s, r)
}

// ListPartitionReassignments serves ListPartitionReassignments.
func (s *Shell) ListPartitionReassignments(ctx context.Context, r *ListPartitionReassignmentsRequest) (*ListPartitionReassignmentsResponse, uint64, error) {
	return call[*ListPartitionReassignmentsResponse](ctx, s, r)
}

func call[T any](ctx context.Context, s *Shell, r Request) (T, uint64, error) {
	var zero T
	rep := s.Do(ctx, r)
	if rep.Err != nil {
		return zero, 0, rep.Err
	}
	return rep.Value.(T), rep.Index, nil
}
