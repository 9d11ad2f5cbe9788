package controller

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/goleak"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/metadata"
)

// fakeRaft is a one-node metadata log for the shell: proposals are decoded
// and applied in order on its own goroutine, which reports each applied
// entry to the shell as the raft loop would. It can stall (keep proposals
// without committing them) or refuse them.
type fakeRaft struct {
	mu      sync.Mutex
	im      *metadata.Image
	term    uint64
	stalled bool
	refuse  error
	held    [][]byte
	ch      chan []byte
	shell   *Shell
}

func (r *fakeRaft) Propose(_ context.Context, data []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refuse != nil {
		return r.refuse
	}
	if r.stalled {
		r.held = append(r.held, data)
		return nil
	}
	r.ch <- data
	return nil
}

func (r *fakeRaft) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case data := <-r.ch:
			e, err := metadata.DecodeEntry(data)
			if err != nil {
				panic(err)
			}
			r.mu.Lock()
			r.im, _ = metadata.Apply(r.im, r.im.Index+1, r.term, e)
			im := r.im
			r.mu.Unlock()
			r.shell.Applied(im, e)
		}
	}
}

func (r *fakeRaft) image() *metadata.Image {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.im
}

type shellEnv struct {
	t     *testing.T
	clock *clock.Fake
	raft  *fakeRaft
	shell *Shell
	ctx   context.Context
	stop  func()
}

func newShellEnv(t *testing.T) *shellEnv {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	b, err := config.NewBroker(map[string]string{"node.id": "1", "process.roles": "broker,controller",
		"controller.listener.names": "CONTROLLER"})
	if err != nil {
		t.Fatal(err)
	}
	im, _ := metadata.Apply(metadata.Empty(), 1, 0, &metadata.Entry{Records: []metadata.Record{metadata.ClusterID{ID: "c"}}})
	fc := clock.NewFake(time.Unix(1000, 0))
	r := &fakeRaft{im: im, term: 1, ch: make(chan []byte, 64)}
	s := NewShell(ShellConfig{Core: Config{NodeID: 1, Broker: b, Logger: discardLogger()}, Clock: fc, Proposer: r}, im)
	r.shell = s
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.run(ctx) }()
	go func() { defer wg.Done(); _ = s.Run(ctx) }()
	stop := func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return &shellEnv{t: t, clock: fc, raft: r, shell: s, ctx: ctx, stop: stop}
}

// waitFor polls cond until it holds or a second passes.
func (e *shellEnv) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func (e *shellEnv) activate() {
	e.shell.LeadershipChanged(true, 1)
	e.waitFor("activation", func() bool { ok, _ := e.shell.Active(); return ok })
}

func TestShellServesRequests(t *testing.T) {
	e := newShellEnv(t)
	ctx := context.Background()
	if _, _, err := e.shell.RegisterBroker(ctx, registration(1, "a", -1)); !errors.Is(err, kerr.NotController) {
		t.Fatalf("before leadership: %v, want NOT_CONTROLLER", err)
	}
	e.activate()
	reg := registration(1, "a", -1)
	reg.ClusterID = "c"
	resp, index, err := e.shell.RegisterBroker(ctx, reg)
	if err != nil || uint64(resp.BrokerEpoch) != index {
		t.Fatalf("register: %+v at %d, %v; want the epoch to be the index", resp, index, err)
	}
	hb, _, err := e.shell.BrokerHeartbeat(ctx, &BrokerHeartbeatRequest{BrokerID: 1, BrokerEpoch: resp.BrokerEpoch,
		CurrentMetadataOffset: resp.BrokerEpoch})
	if err != nil || hb.IsFenced {
		t.Fatalf("heartbeat: %+v, %v; want unfenced", hb, err)
	}
	ct, index, err := e.shell.CreateTopics(ctx, &CreateTopicsRequest{Topics: []CreatableTopic{{Name: "t", NumPartitions: 2, ReplicationFactor: 1}}})
	if err != nil || ct.Topics[0].Err != nil {
		t.Fatalf("create topic: %+v, %v", ct, err)
	}
	// The reply comes only once the records have applied, and names the
	// entry that holds them.
	im := e.raft.image()
	if tp := im.Topic("t"); tp == nil || len(tp.Partitions) != 2 || tp.ID != ct.Topics[0].TopicID || index != im.Index {
		t.Fatalf("topic in the log: %+v at %d, reply at %d", tp, im.Index, index)
	}
}

// A broker whose heartbeats stop is fenced by the shell's own timer.
func TestShellFencesOnTimer(t *testing.T) {
	e := newShellEnv(t)
	e.activate()
	reg := registration(1, "a", -1)
	reg.ClusterID = "c"
	resp, _, err := e.shell.RegisterBroker(context.Background(), reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.shell.BrokerHeartbeat(context.Background(), &BrokerHeartbeatRequest{BrokerID: 1, BrokerEpoch: resp.BrokerEpoch,
		CurrentMetadataOffset: resp.BrokerEpoch}); err != nil {
		t.Fatal(err)
	}
	start := e.clock.Now()
	e.waitFor("the fence", func() bool {
		e.clock.Advance(100 * time.Millisecond)
		b := e.raft.image().Brokers[1]
		return b != nil && b.Fenced
	})
	if d := e.clock.Now().Sub(start); d < 9*time.Second {
		t.Fatalf("fenced after %v, before broker.session.timeout.ms", d)
	}
}

func TestShellWriteTimeoutAndContext(t *testing.T) {
	e := newShellEnv(t)
	e.activate()
	e.raft.mu.Lock()
	e.raft.stalled = true
	e.raft.mu.Unlock()

	reg := registration(1, "a", -1)
	reg.ClusterID = "c"

	// The caller's context ends first: the registration is proposed, but
	// the log never commits it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, err := e.shell.RegisterBroker(ctx, reg); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("ctx timeout: %v, want REQUEST_TIMED_OUT", err)
	}

	// A retry waits behind the stalled write, and fails after the
	// controller's write timeout.
	done := make(chan error, 1)
	go func() {
		_, _, err := e.shell.RegisterBroker(context.Background(), reg)
		done <- err
	}()
	e.waitFor("the stalled proposal", func() bool { e.raft.mu.Lock(); defer e.raft.mu.Unlock(); return len(e.raft.held) == 1 })
	e.waitFor("the write timer", func() bool { return e.clock.Pending() > 0 })
	// The retry may reach the queue before or after the first timer
	// fires; step the clock until it is answered.
	for i := 0; ; i++ {
		e.clock.Advance(time.Second)
		select {
		case err := <-done:
			if !errors.Is(err, kerr.RequestTimedOut) {
				t.Fatalf("write timeout: %v, want REQUEST_TIMED_OUT", err)
			}
			if i < 4 {
				t.Fatalf("the retry failed after %ds, before the 5s write timeout", i+1)
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
		if i > 30 {
			t.Fatal("the retry was never answered")
		}
	}
}

func TestShellProposalRefusedAndStop(t *testing.T) {
	e := newShellEnv(t)
	e.activate()
	e.raft.mu.Lock()
	e.raft.refuse = errors.New("raft: proposal dropped")
	e.raft.mu.Unlock()
	if _, _, err := e.shell.AllocateProducerIDs(context.Background(), &AllocateProducerIDsRequest{BrokerID: 1}); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("unregistered broker: %v", err) // refused before any write
	}
	reg := registration(1, "a", -1)
	reg.ClusterID = "c"
	if _, _, err := e.shell.RegisterBroker(context.Background(), reg); !errors.Is(err, kerr.NotController) {
		t.Fatalf("dropped proposal: %v, want NOT_CONTROLLER", err)
	}

	// Losing leadership fails what waits.
	e.raft.mu.Lock()
	e.raft.refuse, e.raft.stalled = nil, true
	e.raft.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		_, _, err := e.shell.RegisterBroker(context.Background(), reg)
		done <- err
	}()
	e.waitFor("the proposal", func() bool { e.raft.mu.Lock(); defer e.raft.mu.Unlock(); return len(e.raft.held) == 1 })
	e.shell.LeadershipChanged(false, 2)
	if err := <-done; !errors.Is(err, kerr.NotController) {
		t.Fatalf("renounce: %v, want NOT_CONTROLLER", err)
	}
	if ok, _ := e.shell.Active(); ok {
		t.Fatal("still active after losing leadership")
	}
}

func TestShellStopped(t *testing.T) {
	e := newShellEnv(t)
	e.activate()
	e.raft.mu.Lock()
	e.raft.stalled = true
	e.raft.mu.Unlock()
	reg := registration(1, "a", -1)
	reg.ClusterID = "c"
	done := make(chan error, 1)
	go func() {
		_, _, err := e.shell.RegisterBroker(context.Background(), reg)
		done <- err
	}()
	e.waitFor("the proposal", func() bool { e.raft.mu.Lock(); defer e.raft.mu.Unlock(); return len(e.raft.held) == 1 })
	e.stop()
	if err := <-done; !errors.Is(err, kerr.NotController) {
		t.Fatalf("waiting request when the shell stops: %v, want NOT_CONTROLLER", err)
	}
	if _, _, err := e.shell.RegisterBroker(context.Background(), reg); !errors.Is(err, kerr.NotController) {
		t.Fatalf("request after the shell stopped: %v, want NOT_CONTROLLER", err)
	}
}
