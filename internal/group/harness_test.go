package group

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/coord"
)

// harness drives a Shard the way the coord runtime does, with simulated
// time: Advance fires every timer at its deadline, in order.
type harness struct {
	t       *testing.T
	s       *Shard
	cfg     Config
	now     time.Time
	nextW   coord.Waiter
	replies map[coord.Waiter]coord.Reply
	records []coord.Record
	ids     int
}

var t0 = time.UnixMilli(1_700_000_000_000)

func newHarness(t *testing.T, mutate ...func(*Config)) *harness {
	h := &harness{t: t, cfg: DefaultConfig(), now: t0, replies: map[coord.Waiter]coord.Reply{}}
	for _, f := range mutate {
		f(&h.cfg)
	}
	h.s = NewShard(0, func() Config { return h.cfg }, func() string {
		h.ids++
		return fmt.Sprintf("uuid%d", h.ids)
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	h.s.Loaded(h.now)
	return h
}

func (h *harness) absorb(out *coord.Output) {
	for _, r := range out.Replies {
		if _, dup := h.replies[r.Waiter]; dup {
			h.t.Fatalf("waiter %d answered twice", r.Waiter)
		}
		h.replies[r.Waiter] = r
	}
	h.records = append(h.records, out.Records...)
}

func (h *harness) waiter() coord.Waiter {
	h.nextW++
	return h.nextW
}

// advanceUntilAnswered advances in steps of the initial delay until w is
// answered.
func (h *harness) advanceUntilAnswered(w coord.Waiter) {
	h.t.Helper()
	for i := 0; i < 100 && h.pending(w); i++ {
		h.advance(time.Duration(h.cfg.InitialRebalanceDelayMs) * time.Millisecond)
	}
	if h.pending(w) {
		h.t.Fatalf("join %d never answered", w)
	}
}

// advance moves time forward by d, running timers at their deadlines.
func (h *harness) advance(d time.Duration) {
	h.now = advanceShard(h.s, h.now, h.now.Add(d), func(_ time.Time, out *coord.Output) { h.absorb(out) })
}

// advanceShard runs s's timers from now to end at their deadlines, as the
// coord runtime's owner does, handing each tick's output to done; it
// returns end.
func advanceShard(s *Shard, now, end time.Time, done func(at time.Time, out *coord.Output)) time.Time {
	for range 100000 {
		at, ok := s.NextDeadline()
		if !ok || at.After(end) {
			break
		}
		if at.After(now) {
			now = at
		}
		var out coord.Output
		s.Tick(now, &out)
		done(now, &out)
	}
	return end
}

type joinOpt func(*JoinRequest)

func withInstance(id string) joinOpt { return func(r *JoinRequest) { r.InstanceID = &id } }
func withProtocols(ps ...Protocol) joinOpt {
	return func(r *JoinRequest) { r.Protocols = ps }
}
func withTimeouts(session, rebalance time.Duration) joinOpt {
	return func(r *JoinRequest) {
		r.SessionTimeoutMs, r.RebalanceTimeoutMs = int32(session.Milliseconds()), int32(rebalance.Milliseconds())
	}
}
func v8() joinOpt { return func(r *JoinRequest) { r.SupportsSkipAssignment = false } }

// consumerMetadata is a consumer protocol subscription to topics.
func consumerMetadata(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = 3
	m.Topics = topics
	return m.AppendTo(nil)
}

func (h *harness) join(group, memberID string, opts ...joinOpt) coord.Waiter {
	req := &JoinRequest{Group: group, MemberID: memberID, ClientID: "client", ClientHost: "/127.0.0.1",
		SessionTimeoutMs: 10000, RebalanceTimeoutMs: 30000, ProtocolType: ConsumerProtocolType,
		Protocols:            []Protocol{{Name: "range", Metadata: consumerMetadata("t")}},
		RequireKnownMemberID: true, SupportsSkipAssignment: true}
	for _, o := range opts {
		o(req)
	}
	w := h.waiter()
	var out coord.Output
	h.s.Join(h.now, w, req, &out)
	h.absorb(&out)
	return w
}

// newMember joins with the two-step join and returns the member id and the
// waiter of its parked second join.
func (h *harness) newMember(group string, opts ...joinOpt) (string, coord.Waiter) {
	h.t.Helper()
	w := h.join(group, "", opts...)
	r := h.joinReply(w)
	if !errors.Is(r.Err, kerr.MemberIDRequired) {
		h.t.Fatalf("first join: %v, want MEMBER_ID_REQUIRED", r.Err)
	}
	return r.MemberID, h.join(group, r.MemberID, opts...)
}

func (h *harness) pending(w coord.Waiter) bool {
	_, ok := h.replies[w]
	return !ok
}

func (h *harness) joinReply(w coord.Waiter) *JoinResult {
	h.t.Helper()
	r, ok := h.replies[w]
	if !ok {
		h.t.Fatalf("join %d not answered", w)
	}
	return r.Value.(*JoinResult)
}

func (h *harness) syncReply(w coord.Waiter) *SyncResult {
	h.t.Helper()
	r, ok := h.replies[w]
	if !ok {
		h.t.Fatalf("sync %d not answered", w)
	}
	return r.Value.(*SyncResult)
}

func (h *harness) sync(group, memberID string, gen int32, assignments ...Assignment) coord.Waiter {
	w := h.waiter()
	var out coord.Output
	h.s.Sync(h.now, w, &SyncRequest{Group: group, MemberID: memberID, Generation: gen, Assignments: assignments}, &out)
	h.absorb(&out)
	return w
}

func (h *harness) heartbeat(group, memberID string, gen int32) error {
	return h.s.Heartbeat(h.now, &HeartbeatRequest{Group: group, MemberID: memberID, Generation: gen})
}

func (h *harness) commit(req *CommitRequest) *CommitResult {
	var out coord.Output
	res := h.s.Commit(h.now, req, &out)
	h.absorb(&out)
	return res
}

func (h *harness) leave(group string, members ...LeaveMember) *LeaveResult {
	var out coord.Output
	res := h.s.Leave(h.now, &LeaveRequest{Group: group, Members: members}, &out)
	h.absorb(&out)
	return res
}

func (h *harness) state(group string) State {
	g := h.s.groups[group]
	if g == nil {
		return Dead
	}
	return g.state
}

func (h *harness) generation(group string) int32 { return h.s.groups[group].generation }

func wantErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if want == nil {
		if got != nil {
			t.Fatalf("%s: %v, want no error", what, got)
		}
		return
	}
	if !errors.Is(got, want) {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
}

// stableGroup forms a Stable group of n dynamic members (the first is the
// leader) and returns their ids.
func (h *harness) stableGroup(group string, n int, opts ...joinOpt) []string {
	h.t.Helper()
	var ids []string
	var ws []coord.Waiter
	for range n {
		id, w := h.newMember(group, opts...)
		ids = append(ids, id)
		ws = append(ws, w)
	}
	// Members arriving during the initial delay extend it.
	h.advanceUntilAnswered(ws[0])
	var gen int32
	for _, w := range ws {
		r := h.joinReply(w)
		wantErr(h.t, "join", r.Err, nil)
		gen = r.Generation
	}
	var as []Assignment
	for i, id := range ids {
		as = append(as, Assignment{MemberID: id, Assignment: []byte(fmt.Sprintf("a%d", i))})
	}
	var sws []coord.Waiter
	for i, id := range ids {
		if i == 0 {
			continue
		}
		sws = append(sws, h.sync(group, id, gen))
	}
	sws = append(sws, h.sync(group, ids[0], gen, as...))
	for _, w := range sws {
		wantErr(h.t, "sync", h.syncReply(w).Err, nil)
	}
	if h.state(group) != Stable {
		h.t.Fatalf("group is %s, want Stable", h.state(group))
	}
	return ids
}
