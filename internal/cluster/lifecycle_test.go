package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/controller"
)

// fakeController answers as Kafka's controller would, scripted.
type fakeController struct {
	mu         sync.Mutex
	regErrs    []error // answers to the first registrations
	regs       []controller.BrokerRegistrationRequest
	heartbeats []controller.BrokerHeartbeatRequest
	// shutdownAfter: ShouldShutDown once this many shutdown heartbeats came.
	shutdownAfter int
}

func (f *fakeController) RegisterBroker(_ context.Context, r *controller.BrokerRegistrationRequest) (*controller.BrokerRegistrationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.regs = append(f.regs, *r)
	if len(f.regErrs) > 0 {
		err := f.regErrs[0]
		f.regErrs = f.regErrs[1:]
		return nil, err
	}
	return &controller.BrokerRegistrationResponse{BrokerEpoch: 77}, nil
}

func (f *fakeController) BrokerHeartbeat(_ context.Context, r *controller.BrokerHeartbeatRequest) (*controller.BrokerHeartbeatResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heartbeats = append(f.heartbeats, *r)
	resp := &controller.BrokerHeartbeatResponse{IsCaughtUp: true, IsFenced: r.WantFence}
	if r.WantShutDown {
		n := 0
		for _, h := range f.heartbeats {
			if h.WantShutDown {
				n++
			}
		}
		resp.ShouldShutDown = n >= f.shutdownAfter
	}
	return resp, nil
}

func (f *fakeController) snapshot() ([]controller.BrokerRegistrationRequest, []controller.BrokerHeartbeatRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]controller.BrokerRegistrationRequest(nil), f.regs...), append([]controller.BrokerHeartbeatRequest(nil), f.heartbeats...)
}

func newLifecycle(f *fakeController, onRegistered func(int64) error) *Lifecycle {
	return NewLifecycle(LifecycleConfig{
		Registration: controller.BrokerRegistrationRequest{BrokerID: 3, ClusterID: "c", PreviousBrokerEpoch: 12},
		Controller:   f, MetadataOffset: func() int64 { return 90 },
		HeartbeatInterval: 20 * time.Millisecond, SessionTimeout: time.Second, OnRegistered: onRegistered,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
}

func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not happen within 10s", what)
	}
}

// A restart after a crash: the controller refuses the new incarnation
// while the old one's session lasts; the broker retries, then heartbeats
// fenced until it is ready, is unfenced, and shuts down when told.
func TestLifecycleRegistersHeartbeatsAndShutsDown(t *testing.T) {
	f := &fakeController{regErrs: []error{kerr.DuplicateBrokerRegistration, kerr.NotController}, shutdownAfter: 2}
	var recorded int64
	l := newLifecycle(f, func(epoch int64) error { recorded = epoch; return nil })
	l.Start()
	defer l.Stop()
	waitClosed(t, "registration", l.Registered())
	if l.Epoch() != 77 || recorded != 77 {
		t.Fatalf("epoch %d, recorded %d", l.Epoch(), recorded)
	}
	regs, _ := f.snapshot()
	if len(regs) != 3 || regs[2].PreviousBrokerEpoch != 12 {
		t.Fatalf("registrations %+v", regs)
	}
	// Fenced heartbeats until ready.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, hbs := f.snapshot(); len(hbs) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no heartbeats")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-l.Unfenced():
		t.Fatal("unfenced before asking")
	default:
	}
	l.ReadyToUnfence()
	waitClosed(t, "unfencing", l.Unfenced())
	_, hbs := f.snapshot()
	for _, h := range hbs {
		if h.BrokerEpoch != 77 || h.CurrentMetadataOffset != 90 || h.WantShutDown {
			t.Fatalf("heartbeat %+v", h)
		}
	}
	if !hbs[0].WantFence || hbs[len(hbs)-1].WantFence {
		t.Fatalf("wantFence went %v ... %v", hbs[0].WantFence, hbs[len(hbs)-1].WantFence)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !l.ControlledShutdown(ctx) {
		t.Fatal("controlled shutdown did not complete")
	}
}

func TestLifecycleStopsOnAnotherCluster(t *testing.T) {
	f := &fakeController{regErrs: []error{kerr.InconsistentClusterID}}
	l := newLifecycle(f, nil)
	l.Start()
	defer l.Stop()
	waitClosed(t, "failure", l.Failed())
	if !errors.Is(l.Err(), kerr.InconsistentClusterID) {
		t.Fatalf("err %v", l.Err())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if l.ControlledShutdown(ctx) {
		t.Fatal("a broker never registered shut down in a controlled way")
	}
}
