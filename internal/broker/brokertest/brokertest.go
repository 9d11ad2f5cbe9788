// Package brokertest starts real in-process brokers on loopback for tests.
package brokertest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/broker"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Broker is a running test broker.
type Broker struct {
	*broker.Broker
	Dir   string
	Props map[string]string
	t     testing.TB
	stop  func()

	exited  chan struct{}
	runErr  error
	crashed bool
}

// Props returns the base configuration for a test broker in dir: ephemeral
// ports, fast checkpoints, a __transaction_state of 5 partitions (50 take
// a second to create and load on a shared machine).
func Props(dir string) map[string]string {
	return map[string]string{
		"node.id":                                  "1",
		"process.roles":                            "broker,controller",
		"controller.listener.names":                "CONTROLLER",
		"listeners":                                "PLAINTEXT://127.0.0.1:0",
		"listener.security.protocol.map":           "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"log.dirs":                                 dir,
		"gregor.admin.listen":                      "127.0.0.1:0",
		"offsets.topic.replication.factor":         "1",
		"transaction.state.log.replication.factor": "1",
		"transaction.state.log.min.isr":            "1",
		"transaction.state.log.num.partitions":     "5",
	}
}

// Start runs a broker in a fresh temp dir with overrides applied. It stops
// when the test ends.
func Start(t testing.TB, overrides map[string]string) *Broker {
	t.Helper()
	return StartIn(t, t.TempDir(), overrides)
}

// StartIn runs a broker on dir (reusing its data).
func StartIn(t testing.TB, dir string, overrides map[string]string) *Broker {
	t.Helper()
	return StartOn(t, nil, dir, overrides)
}

// StartOn runs a broker on dir in fs (nil: the real filesystem), e.g. a
// vfs.MemFS with a capacity, behind an injecting FS.
func StartOn(t testing.TB, fs vfs.FS, dir string, overrides map[string]string) *Broker {
	t.Helper()
	props := Props(dir)
	for k, v := range overrides {
		props[k] = v
	}
	tb := launch(t, broker.Options{Static: props, FS: fs}, dir)
	tb.WaitReady()
	return tb
}

// launch starts a broker and runs it, without waiting for it to be ready
// (a node of a cluster is ready only once a quorum of nodes runs).
func launch(t testing.TB, o broker.Options, dir string) *Broker {
	t.Helper()
	o.Logger = testLogger()
	b, err := broker.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = b.Shutdown(ctx) // releases what Start took, the log dirs' locks included
		t.Fatal(err)
	}
	return run(t, b, dir, o.Static)
}

func testLogger() *slog.Logger {
	if os.Getenv("GREGOR_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// WaitReady waits (30 s at most) until the broker serves clients, failing
// the test otherwise.
func (b *Broker) WaitReady() {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Broker.WaitReady(ctx); err != nil {
		b.Stop()
		b.t.Fatal(err)
	}
}

// run runs a started broker until the test ends (or Stop).
func run(t testing.TB, b *broker.Broker, dir string, props map[string]string) *Broker {
	ctx, cancel := context.WithCancel(context.Background())
	tb := &Broker{Broker: b, Dir: dir, Props: props, t: t, exited: make(chan struct{})}
	go func() {
		tb.runErr = b.Run(ctx)
		close(tb.exited)
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		select {
		case <-tb.exited:
			return // stopped by itself: RunErr is the test's to check
		default:
		}
		cancel()
		select {
		case <-tb.exited:
			if tb.runErr != nil && !tb.crashed {
				t.Errorf("broker shutdown: %v", tb.runErr)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("broker did not shut down in 30s")
		}
	}
	tb.stop = stop
	t.Cleanup(stop)
	return tb
}

// Stop shuts the broker down cleanly (idempotent).
func (b *Broker) Stop() { b.stop() }

// Crashed stops a broker whose filesystem a test made fail (it took the
// crash image it recovers from before): the shutdown's errors, the failed
// writes of a machine that stopped, are not the test's failures.
func (b *Broker) Crashed() {
	b.crashed = true
	b.stop()
}

// Exited is closed once Run has returned: after Stop, or when the broker
// stopped by itself (every log dir offline).
func (b *Broker) Exited() <-chan struct{} { return b.exited }

// RunErr is what Run returned; valid once Exited is closed.
func (b *Broker) RunErr() error {
	<-b.exited
	return b.runErr
}

func (b *Broker) addr() string { return b.Addr().String() }

// Client returns a kgo client for the broker, closed at test end.
func (b *Broker) Client(opts ...kgo.Opt) *kgo.Client {
	b.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addr())}, opts...)...)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(cl.Close)
	return cl
}

// Admin returns a kadm client.
func (b *Broker) AdminClient(opts ...kgo.Opt) *kadm.Client {
	return kadm.NewClient(b.Client(opts...))
}

// CreateTopic creates a topic with replication factor 1 and the given
// config overrides, failing the test on a request or topic error.
func CreateTopic(t testing.TB, adm *kadm.Client, name string, partitions int32, configs map[string]string) {
	t.Helper()
	cfg := map[string]*string{}
	for k, v := range configs {
		cfg[k] = &v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, cfg, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

// Context is a context that ends after d or with the test.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Produce produces recs synchronously, failing the test on any error.
func Produce(t testing.TB, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(Context(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}
