package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gregor-broker/gregor/internal/kclient"
)

// Shutdown stops the broker (SIGTERM in gregor serve): first a controlled
// shutdown (design §2.10: the broker heartbeats asking to shut down, the
// controller moves its leaderships away and says when every active broker
// has seen that; bounded by broker.session.timeout.ms, after which it goes
// on as Kafka does), then the client listener lets in-flight requests
// finish, the transaction and group coordinators, admin listener and cleaner stop, the logs
// are flushed and closed, and the broker epoch is written for the next
// start (a clean shutdown). The metadata log, the controller and the
// CONTROLLER listener stop last, and the log dirs' locks are released.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.shutdownOnce.Do(func() {
		var errs []error
		if b.stopStart != nil {
			b.stopStart()
			<-b.startDone
		}
		cleanStop := b.controlledShutdown(ctx)
		if b.replicas != nil {
			b.replicas.BeginShutdown()
		}
		if b.orphans != nil {
			b.orphans.Close()
		}
		if b.txns != nil {
			b.txns.Close()
		}
		if b.groups != nil {
			b.groups.Close()
		}
		for _, l := range b.listeners {
			if l.srv != nil {
				if err := l.srv.Shutdown(ctx); err != nil {
					errs = append(errs, fmt.Errorf("kafka listener %s: %w", l.Bind.Listener, err))
				}
			}
		}
		if b.adm != nil {
			if err := b.adm.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("admin listener: %w", err))
			}
		}
		if b.cleaner != nil {
			b.cleaner.Stop()
		}
		if b.node != nil {
			// No partition is hosted or dropped once the logs close.
			b.node.StopPublishing()
		}
		if b.replicas != nil {
			// Nor fetched into, nor its ISR changed.
			b.replicas.StopReplication()
		}
		logsClosed := false
		if b.logs != nil {
			if err := b.logs.Close(); err != nil {
				errs = append(errs, fmt.Errorf("closing logs: %w", err))
			} else {
				logsClosed = true
			}
		}
		errs = append(errs, b.stopNode(ctx, logsClosed && cleanStop))
		// Last: the dirs stay locked until nothing of this broker writes.
		if b.dirs != nil {
			if err := b.dirs.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		b.shutdownErr = errors.Join(errs...)
		if b.shutdownErr == nil && len(b.listeners) > 0 && b.listeners[0].srv != nil { // a broker that never started has nothing to report
			b.logger.Info("shut down cleanly")
		}
	})
	return b.shutdownErr
}

// controlledShutdown asks the controller to move this broker's leaderships
// away, and reports whether the broker is clean to stop: it was never
// registered, or it was registered (the controller may or may not have
// answered in time: the logs still hold everything acknowledged once they
// are closed).
func (b *Broker) controlledShutdown(ctx context.Context) bool {
	if b.life == nil {
		return false
	}
	select {
	case <-b.life.Registered():
	default:
		return false
	}
	timeout := time.Duration(b.Config().Long("broker.session.timeout.ms")) * time.Millisecond
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := b.o.Clock.Now()
	if b.life.ControlledShutdown(cctx) {
		b.logger.Info("controlled shutdown done: the controller moved this broker's leaderships away",
			"took", b.o.Clock.Now().Sub(start))
	} else {
		b.logger.Warn("controlled shutdown did not complete (no active controller answered in time); shutting down anyway",
			"waited", b.o.Clock.Now().Sub(start))
	}
	return true
}

// stopNode ends the broker's lifecycle and the metadata quorum member,
// writing the broker epoch file first when the logs closed cleanly.
func (b *Broker) stopNode(ctx context.Context, clean bool) error {
	var errs []error
	if b.life != nil {
		b.life.Stop()
		if epoch := b.life.Epoch(); clean && epoch > 0 {
			if err := writeCleanEpoch(b, epoch); err != nil {
				errs = append(errs, fmt.Errorf("writing the broker epoch: %w", err))
			}
		}
	}
	if b.ctrlSrv != nil {
		if err := b.ctrlSrv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("controller listener: %w", err))
		}
	}
	if b.node != nil {
		if err := b.node.Close(); err != nil {
			errs = append(errs, fmt.Errorf("metadata log: %w", err))
		}
	} else if b.ctrlLn != nil {
		b.ctrlLn.Close()
	}
	for _, p := range []*kclient.Pool{b.pool, b.ctrlPool} {
		if p != nil {
			p.Close()
		}
	}
	return errors.Join(errs...)
}
