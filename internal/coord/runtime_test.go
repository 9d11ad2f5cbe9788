package coord

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/logmgr"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/replica"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// kvShard is a last-value-per-key map whose state is the replay of its
// records, plus waiters parked until a deadline.
type kvShard struct {
	data     map[string]string
	parked   []Waiter
	deadline time.Time
}

func newKV(int32) *kvShard { return &kvShard{data: map[string]string{}} }

func (s *kvShard) Replay(_ int64, r Record) error {
	if r.Value == nil {
		delete(s.data, string(r.Key))
	} else {
		s.data[string(r.Key)] = string(r.Value)
	}
	return nil
}
func (s *kvShard) Loaded(time.Time) {}
func (s *kvShard) Tick(now time.Time, out *Output) {
	for _, w := range s.parked {
		out.Reply(w, "woken", nil)
	}
	s.parked, s.deadline = nil, time.Time{}
}
func (s *kvShard) NextDeadline() (time.Time, bool) { return s.deadline, !s.deadline.IsZero() }

func put(k, v string) Op[*kvShard] {
	return func(s *kvShard, _ time.Time, w Waiter, out *Output) {
		s.data[k] = v
		out.Write(Record{Key: []byte(k), Value: []byte(v)})
		out.Reply(w, "ok", nil)
	}
}

func get(k string) Op[*kvShard] {
	return func(s *kvShard, _ time.Time, w Waiter, out *Output) { out.Reply(w, s.data[k], nil) }
}

type env struct {
	t     *testing.T
	clk   *clock.Fake
	logs  *logmgr.Manager
	reps  *replica.Manager
	rt    *Runtime[*kvShard]
	codec record.Codec
}

func newEnv(t *testing.T, codec record.Codec) *env {
	t.Helper()
	e := &env{t: t, clk: clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), codec: codec}
	cfg := log.DefaultConfig()
	cfg.Compact, cfg.Delete = true, false
	cfg.MaxMessageBytes = 4096
	logs, err := logmgr.Open(logmgr.Options{FS: vfs.NewMem(), Clock: e.clk, Dirs: []string{"/d"},
		ConfigFor: func(string) log.Config { return cfg }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logs.Close() })
	e.logs = logs
	e.reps = replica.New(logs, true, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for p := range int32(2) {
		if _, err := e.reps.Host(topicpart.TopicPartition{Topic: "__kv", Partition: p}, [16]byte{1}, cfg, 1); err != nil {
			t.Fatal(err)
		}
	}
	e.rt = e.newRuntime()
	return e
}

func (e *env) newRuntime() *Runtime[*kvShard] {
	rt := New(Options[*kvShard]{Topic: "__kv", Replicas: e.reps, NewShard: newKV, Clock: e.clk,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Codec: func() record.Codec { return e.codec }})
	e.t.Cleanup(rt.Close)
	return rt
}

func (e *env) log(p int32) *log.Log {
	part, _ := e.reps.Get(topicpart.TopicPartition{Topic: "__kv", Partition: p})
	return part.Log
}

// loaded loads p and waits until it serves.
func (e *env) loaded(rt *Runtime[*kvShard], p int32) {
	e.t.Helper()
	rt.Load(p)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := rt.Do(context.Background(), p, get("x"))
		if err == nil {
			return
		}
		if !errors.Is(err, kerr.CoordinatorLoadInProgress) || time.Now().After(deadline) {
			e.t.Fatalf("partition %d never loaded: %v", p, err)
		}
		time.Sleep(time.Millisecond)
	}
}

func (e *env) do(rt *Runtime[*kvShard], p int32, op Op[*kvShard]) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return rt.Do(ctx, p, op)
}

func TestWritesAreDurableBeforeTheReplyAndReplayed(t *testing.T) {
	for _, codec := range []record.Codec{record.CodecNone, record.CodecGzip} {
		e := newEnv(t, codec)
		if _, err := e.rt.Do(context.Background(), 0, get("k")); !errors.Is(err, kerr.NotCoordinator) {
			t.Fatalf("unloaded partition: %v", err)
		}
		e.loaded(e.rt, 0)
		for _, kv := range [][2]string{{"a", "1"}, {"b", "2"}, {"a", "3"}} {
			v, err := e.do(e.rt, 0, put(kv[0], kv[1]))
			if err != nil || v != "ok" {
				t.Fatalf("put: %v %v", v, err)
			}
			l := e.log(0)
			if l.HighWatermark() != l.LogEndOffset() || l.RecoveryPoint() != l.LogEndOffset() {
				t.Fatalf("reply before the write was durable: hw %d recovery point %d leo %d",
					l.HighWatermark(), l.RecoveryPoint(), l.LogEndOffset())
			}
		}
		if leo := e.log(0).LogEndOffset(); leo != 3 {
			t.Fatalf("log end offset %d, want 3 records", leo)
		}
		// A fresh runtime rebuilds the state from the log.
		e.rt.Close()
		rt2 := e.newRuntime()
		e.loaded(rt2, 0)
		if v, _ := e.do(rt2, 0, get("a")); v != "3" {
			t.Fatalf("codec %s: replayed a=%v", codec, v)
		}
		if v, _ := e.do(rt2, 0, get("b")); v != "2" {
			t.Fatalf("codec %s: replayed b=%v", codec, v)
		}
	}
}

func TestParkedWaiterAnsweredByTimerAndUnload(t *testing.T) {
	e := newEnv(t, record.CodecNone)
	e.loaded(e.rt, 1)
	park := func(d time.Duration) Op[*kvShard] {
		return func(s *kvShard, now time.Time, w Waiter, _ *Output) {
			s.parked = append(s.parked, w)
			s.deadline = now.Add(d)
		}
	}
	res := make(chan any, 1)
	go func() {
		v, err := e.rt.Do(context.Background(), 1, park(time.Minute))
		if err != nil {
			res <- err
			return
		}
		res <- v
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		e.clk.Advance(time.Second)
		select {
		case v := <-res:
			if v != "woken" {
				t.Fatalf("parked op got %v", v)
			}
			goto unload
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("timer never woke the parked op")
		}
		time.Sleep(time.Millisecond)
	}
unload:
	go func() {
		_, err := e.rt.Do(context.Background(), 1, park(time.Hour))
		res <- err
	}()
	// Unload once the op is parked.
	parked := func(s *kvShard, _ time.Time, w Waiter, out *Output) { out.Reply(w, len(s.parked), nil) }
	for {
		if v, _ := e.do(e.rt, 1, parked); v == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("op never parked")
		}
		time.Sleep(time.Millisecond)
	}
	e.rt.Unload(1)
	if err := <-res; !errors.Is(err.(error), kerr.NotCoordinator) {
		t.Fatalf("parked op after unload: %v", err)
	}
	if _, err := e.rt.Do(context.Background(), 1, get("x")); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("after unload: %v", err)
	}
}

func TestOversizedOpIsRefusedAndStateRebuilt(t *testing.T) {
	e := newEnv(t, record.CodecNone)
	e.loaded(e.rt, 0)
	// Hold the owner so the next ops queue up and run as one round.
	release := make(chan struct{})
	held := make(chan struct{})
	go e.do(e.rt, 0, func(*kvShard, time.Time, Waiter, *Output) { close(held); <-release })
	<-held
	type result struct {
		v   any
		err error
	}
	results := make([]chan result, 3)
	ops := []Op[*kvShard]{put("small", "1"), put("big", string(bytes.Repeat([]byte("x"), 8000))), put("after", "2")}
	e.rt.mu.Lock()
	ow := e.rt.owners[0]
	e.rt.mu.Unlock()
	var wg sync.WaitGroup
	for i, op := range ops {
		results[i] = make(chan result, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := e.do(e.rt, 0, op)
			results[i] <- result{v, err}
		}()
		for len(ow.ops) != i+1 { // keep the submission order
			time.Sleep(100 * time.Microsecond)
		}
	}
	close(release)
	wg.Wait()
	if r := <-results[0]; r.err != nil || r.v != "ok" {
		t.Fatalf("op before the oversized one: %v %v", r.v, r.err)
	}
	if r := <-results[1]; !errors.Is(r.err, ErrRecordsTooLarge) {
		t.Fatalf("oversized op: %v", r.err)
	}
	if r := <-results[2]; r.err != nil || r.v != "ok" {
		t.Fatalf("op after the oversized one: %v %v", r.v, r.err)
	}
	if v, _ := e.do(e.rt, 0, get("big")); v != "" {
		t.Fatal("the oversized op's change survived: the state was not rebuilt from the log")
	}
	if v, _ := e.do(e.rt, 0, get("small")); v != "1" {
		t.Fatalf("small=%v", v)
	}
}

func TestNormalizeWriteError(t *testing.T) {
	for _, c := range []struct {
		in   error
		want *kerr.Error
	}{
		{kerr.NotEnoughReplicas, kerr.CoordinatorNotAvailable},
		{kerr.UnknownTopicOrPartition, kerr.CoordinatorNotAvailable},
		{kerr.KafkaStorageError, kerr.NotCoordinator},
		{log.ErrClosed, kerr.NotCoordinator},
		{kerr.MessageTooLarge, kerr.UnknownServerError},
		{context.DeadlineExceeded, kerr.CoordinatorNotAvailable},
	} {
		if got := NormalizeWriteError(c.in); !errors.Is(got, c.want) {
			t.Errorf("%v → %v, want %v", c.in, got, c.want)
		}
	}
}
