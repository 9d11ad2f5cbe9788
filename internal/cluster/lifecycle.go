package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/controller"
)

// ControllerAPI is how a broker reaches the active controller, wherever it
// runs: in this process or over the CONTROLLER listener of another node.
// Implementations find the controller themselves and retry NOT_CONTROLLER
// and connection errors until ctx ends.
type ControllerAPI interface {
	RegisterBroker(ctx context.Context, r *controller.BrokerRegistrationRequest) (*controller.BrokerRegistrationResponse, error)
	BrokerHeartbeat(ctx context.Context, r *controller.BrokerHeartbeatRequest) (*controller.BrokerHeartbeatResponse, error)
}

// LifecycleConfig configures a broker's Lifecycle.
type LifecycleConfig struct {
	// Registration is what the broker registers with: id, cluster id,
	// incarnation, listeners, rack, log dirs and PreviousBrokerEpoch.
	Registration controller.BrokerRegistrationRequest
	Controller   ControllerAPI
	// MetadataOffset is the metadata index this broker has applied.
	MetadataOffset func() int64
	// HeartbeatInterval is broker.heartbeat.interval.ms; SessionTimeout
	// broker.session.timeout.ms (it bounds each heartbeat).
	HeartbeatInterval, SessionTimeout time.Duration
	// OnRegistered runs once the broker has its epoch, before the first
	// heartbeat; an error from it stops the lifecycle (Err).
	OnRegistered func(epoch int64) error
	Clock        clock.Clock
	Logger       *slog.Logger
}

// Lifecycle is a broker's side of Kafka's broker lifecycle (design §2.10,
// BrokerLifecycleManager): register a new incarnation, then heartbeat every
// HeartbeatInterval, asking to stay fenced until ReadyToUnfence (log
// recovery done, metadata caught up and published), and, from
// ControlledShutdown on, asking to shut down until the controller says the
// broker may (its leaderships moved away and every active broker has seen
// that). It runs on its own goroutine from Start to Stop.
type Lifecycle struct {
	cfg LifecycleConfig
	log *slog.Logger

	mu           sync.Mutex
	epoch        int64
	ready        bool // wantFence=false from now on
	wantShutdown bool
	fenced       bool
	err          error

	registered  chan struct{}
	unfenced    chan struct{}
	shutdownNow chan struct{}
	failed      chan struct{}
	kick        chan struct{}
	stop        chan struct{}
	done        chan struct{}
	stopOnce    sync.Once
}

// NewLifecycle returns a Lifecycle; Start runs it.
func NewLifecycle(cfg LifecycleConfig) *Lifecycle {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Lifecycle{cfg: cfg, log: cfg.Logger.With("component", "broker-lifecycle"), epoch: -1, fenced: true,
		registered: make(chan struct{}), unfenced: make(chan struct{}), shutdownNow: make(chan struct{}),
		failed: make(chan struct{}), kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// Start begins registering, then heartbeating.
func (l *Lifecycle) Start() { go l.run() }

// Registered is closed once the broker has its epoch.
func (l *Lifecycle) Registered() <-chan struct{} { return l.registered }

// Unfenced is closed the first time the controller unfences the broker.
func (l *Lifecycle) Unfenced() <-chan struct{} { return l.unfenced }

// Failed is closed when the lifecycle stopped on an error it cannot get
// past (Err says which: another cluster, a refused registration).
func (l *Lifecycle) Failed() <-chan struct{} { return l.failed }

// Err is why the lifecycle failed, nil while it has not.
func (l *Lifecycle) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Epoch is the broker epoch, -1 before registration.
func (l *Lifecycle) Epoch() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epoch
}

// Fenced reports whether the last heartbeat left the broker fenced.
func (l *Lifecycle) Fenced() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fenced
}

// ReadyToUnfence makes the heartbeats ask to be unfenced, the next one at
// once.
func (l *Lifecycle) ReadyToUnfence() {
	l.mu.Lock()
	l.ready = true
	l.mu.Unlock()
	l.nudge()
}

// ControlledShutdown asks the controller to move this broker's leaderships
// away and let it shut down, and waits until it may (true) or ctx ends
// (false: the controller could not be reached, or took too long; the broker
// shuts down anyway, as Kafka's does after its timeout).
func (l *Lifecycle) ControlledShutdown(ctx context.Context) bool {
	select {
	case <-l.registered:
	default:
		return false // never registered: nothing to move
	}
	l.mu.Lock()
	l.wantShutdown = true
	l.mu.Unlock()
	l.nudge()
	select {
	case <-l.shutdownNow:
		return true
	case <-ctx.Done():
	case <-l.failed:
	case <-l.done:
	}
	return false
}

// Stop ends the lifecycle and waits for its goroutine.
func (l *Lifecycle) Stop() {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.done
}

func (l *Lifecycle) nudge() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

func (l *Lifecycle) run() {
	defer close(l.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if !l.register(ctx) {
		return
	}
	pendingShutdown := false
	for {
		l.heartbeat(ctx)
		select {
		case <-l.shutdownNow:
			return
		default:
		}
		next := l.cfg.HeartbeatInterval
		l.mu.Lock()
		if l.wantShutdown && !pendingShutdown {
			// Kafka's: the first heartbeat of a controlled shutdown that
			// is not done yet is followed sooner than usual, since the
			// controller often finishes it at once.
			pendingShutdown, next = true, min(next, 50*time.Millisecond)
		}
		l.mu.Unlock()
		ch, t := clock.NewTimer(l.cfg.Clock, next)
		select {
		case <-ch:
		case <-l.kick:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// register registers a new incarnation, retrying until the controller
// answers: NOT_CONTROLLER and unreachable controllers while the quorum
// elects, DUPLICATE_BROKER_REGISTRATION while the previous incarnation's
// session lasts (a restart after a crash).
func (l *Lifecycle) register(ctx context.Context) bool {
	req := l.cfg.Registration
	for attempt := 0; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, l.cfg.SessionTimeout)
		resp, err := l.cfg.Controller.RegisterBroker(rctx, &req)
		cancel()
		if err == nil {
			l.mu.Lock()
			l.epoch = resp.BrokerEpoch
			l.mu.Unlock()
			l.log.Info("registered with the controller", "broker", req.BrokerID, "broker_epoch", resp.BrokerEpoch,
				"previous_broker_epoch", req.PreviousBrokerEpoch)
			if l.cfg.OnRegistered != nil {
				if err := l.cfg.OnRegistered(resp.BrokerEpoch); err != nil {
					l.fail(err)
					return false
				}
			}
			close(l.registered)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if fatalRegistration(err) {
			l.fail(fmt.Errorf("broker registration refused: %w", err))
			return false
		}
		level := slog.LevelDebug
		if attempt%10 == 0 {
			level = slog.LevelWarn
		}
		l.log.Log(ctx, level, "broker registration not accepted yet; retrying", "attempt", attempt+1, "err", err)
		ch, t := clock.NewTimer(l.cfg.Clock, l.cfg.HeartbeatInterval)
		select {
		case <-ch:
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}

// fatalRegistration: errors no retry can get past.
func fatalRegistration(err error) bool {
	return errors.Is(err, kerr.InconsistentClusterID) || errors.Is(err, kerr.InvalidRegistration) ||
		errors.Is(err, kerr.UnsupportedVersion)
}

func (l *Lifecycle) fail(err error) {
	l.mu.Lock()
	l.err = err
	l.mu.Unlock()
	l.log.Error("broker lifecycle stopped", "err", err)
	close(l.failed)
}

func (l *Lifecycle) heartbeat(ctx context.Context) {
	l.mu.Lock()
	req := &controller.BrokerHeartbeatRequest{BrokerID: l.cfg.Registration.BrokerID, BrokerEpoch: l.epoch,
		CurrentMetadataOffset: l.cfg.MetadataOffset(), WantFence: !l.ready, WantShutDown: l.wantShutdown}
	l.mu.Unlock()
	hctx, cancel := context.WithTimeout(ctx, l.cfg.SessionTimeout)
	resp, err := l.cfg.Controller.BrokerHeartbeat(hctx, req)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			l.log.Warn("broker heartbeat failed", "broker_epoch", req.BrokerEpoch, "err", err)
		}
		return
	}
	l.mu.Lock()
	was := l.fenced
	l.fenced = resp.IsFenced
	l.mu.Unlock()
	if was != resp.IsFenced {
		l.log.Info("broker fencing changed", "fenced", resp.IsFenced, "caught_up", resp.IsCaughtUp,
			"metadata_offset", req.CurrentMetadataOffset)
	}
	if !resp.IsFenced {
		select {
		case <-l.unfenced:
		default:
			close(l.unfenced)
		}
	}
	if resp.ShouldShutDown {
		close(l.shutdownNow)
	}
}
