package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/logmgr"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// faultInjector fails the k-th operation of the given kinds on files under
// /d1, counting only once armed, and remembers when it fired.
type faultInjector struct {
	armed atomic.Bool
	ops   map[vfs.Op]bool
	k     int64
	err   error
	n     atomic.Int64
	fired atomic.Bool
}

func (f *faultInjector) MaybeError(op vfs.Op, path string) error {
	if !f.armed.Load() || !f.ops[op] || !strings.HasPrefix(path, "/d1/") {
		return nil
	}
	if f.n.Add(1)-1 == f.k {
		f.fired.Store(true)
		return f.err
	}
	return nil
}

// ackedBatch is a produce the replica manager acknowledged: where, and the
// bytes the log holds for it.
type ackedBatch struct {
	tp   topicpart.TopicPartition
	base int64
	data []byte
}

// faultRun is one run of the produce workload with one injected fault.
type faultRun struct {
	mem     *vfs.MemFS
	inj     *faultInjector
	offline atomic.Bool // /d1 was reported offline
	logs    *logmgr.Manager
	m       *Manager
	parts   []topicpart.TopicPartition // 0 and 2 in /d1, 1 in /d2
}

func faultConfig(string) log.Config {
	c := log.DefaultConfig()
	c.SegmentBytes = 8 << 10
	c.SegmentIndexBytes = 1 << 10
	c.IndexIntervalBytes = 1 << 10
	c.TimestampAfterMs = -1
	return c
}

func newFaultRun(t *testing.T, inj *faultInjector) *faultRun {
	t.Helper()
	r := &faultRun{mem: vfs.NewMem(), inj: inj}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	var err error
	r.logs, err = logmgr.Open(logmgr.Options{FS: vfs.NewInjecting(r.mem, inj), Clock: clock.Real{},
		Dirs: []string{"/d1", "/d2"}, ConfigFor: faultConfig, Logger: logger,
		OnDirChange: func(st logmgr.DirState, _ []logmgr.DirState) {
			if st.Path == "/d1" && st.Offline != nil {
				r.offline.Store(true)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	r.m = New(r.logs, true, logger)
	for p := int32(0); p < 3; p++ {
		tp := topicpart.TopicPartition{Topic: "t", Partition: p}
		if _, err := r.m.Host(tp, [16]byte{1}, faultConfig("t"), 1); err != nil {
			t.Fatal(err)
		}
		r.parts = append(r.parts, tp)
	}
	if r.logs.DirOf(r.parts[0]) != "/d1" || r.logs.DirOf(r.parts[1]) != "/d2" || r.logs.DirOf(r.parts[2]) != "/d1" {
		t.Fatalf("placement %s %s %s", r.logs.DirOf(r.parts[0]), r.logs.DirOf(r.parts[1]), r.logs.DirOf(r.parts[2]))
	}
	return r
}

// produce runs producers goroutines, each sending perProducer acks=all
// batches to one partition (producer i to partition i%3), as concurrent
// clients do. It returns the acknowledged batches, how many produces that
// started after /d1 was reported offline were acknowledged for partitions
// in /d1, and the errors seen for the partition in /d2. (Between the
// failing operation and the report, a produce to the other partition of
// /d1 may still be synced and acknowledged: its bytes are durable.)
func (r *faultRun) produce(t *testing.T, producers, perProducer int) (acked []ackedBatch, late int, d2Errs []error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < producers; g++ {
		tp := r.parts[g%3]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perProducer; i++ {
				after := r.offline.Load()
				b := batchOf(t, 1+i%4, 100)
				res, err := r.m.Append(context.Background(), tp, b, -1, log.OriginClient)
				mu.Lock()
				switch {
				case err == nil:
					acked = append(acked, ackedBatch{tp, res.BaseOffset, b})
					if after && tp.Partition != 1 {
						late++
					}
				case tp.Partition == 1:
					d2Errs = append(d2Errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return acked, late, d2Errs
}

// For each sync (and, separately, each write) of a produce workload of
// concurrent acks=all producers to three partitions in two log dirs, fail
// that one operation under /d1: no produce to /d1 that started after the
// dir was reported offline (which the failing call does before it returns)
// is acknowledged, later ones are refused with
// KAFKA_STORAGE_ERROR, /d2 goes on acknowledging everything, and after a
// crash every acknowledged batch is there byte for byte. A failed fsync
// loses its writeback as on Linux, so acknowledging a batch that no
// successful fsync covered would show up as a lost batch.
func TestProduceThroughFaultsAcknowledgesOnlyDurableBatches(t *testing.T) {
	producers, perProducer := 6, 8
	if os.Getenv("GREGOR_LONG") != "" {
		producers, perProducer = 12, 40
	}
	for _, tc := range []struct {
		name string
		ops  []vfs.Op
		err  error
	}{
		{"fsync", []vfs.Op{vfs.OpSync, vfs.OpSyncDir}, vfs.ErrWritebackLost},
		{"write", []vfs.Op{vfs.OpWrite}, syscall.EIO},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops := map[vfs.Op]bool{}
			for _, op := range tc.ops {
				ops[op] = true
			}
			// A run without a fault counts the operations under /d1.
			count := &faultInjector{ops: ops, k: -1}
			r := newFaultRun(t, count)
			count.armed.Store(true)
			r.produce(t, producers, perProducer)
			r.logs.Close()
			n := count.n.Load() + 4 // group commit makes the count vary from run to run
			for k := int64(0); k < n; k++ {
				runProduceFault(t, &faultInjector{ops: ops, k: k, err: tc.err}, producers, perProducer)
			}
			t.Logf("%d runs, one per %s under /d1 (%d in the run without a fault)", n, tc.name, n-4)
		})
	}
}

func runProduceFault(t *testing.T, inj *faultInjector, producers, perProducer int) {
	t.Helper()
	what := fmt.Sprintf("fault at operation %d", inj.k)
	r := newFaultRun(t, inj)
	inj.armed.Store(true)
	acked, late, d2Errs := r.produce(t, producers, perProducer)
	if late > 0 {
		t.Fatalf("%s: %d produces to /d1 started after it went offline were acknowledged", what, late)
	}
	if inj.fired.Load() != r.offline.Load() {
		t.Fatalf("%s: fault fired %v, /d1 offline %v", what, inj.fired.Load(), r.offline.Load())
	}
	if len(d2Errs) > 0 {
		t.Fatalf("%s: produce to the partition in the healthy /d2 failed: %v", what, d2Errs[0])
	}
	if inj.fired.Load() {
		for _, tp := range []topicpart.TopicPartition{r.parts[0], r.parts[2]} {
			_, err := r.m.Append(context.Background(), tp, batchOf(t, 1, 10), -1, log.OriginClient)
			if !errors.Is(err, log.ErrStorageFailed) {
				t.Fatalf("%s: produce to %s after the fault = %v, want a storage failure", what, tp, err)
			}
			if p, _ := r.m.Get(tp); p.Offline() == nil {
				t.Fatalf("%s: %s not offline", what, tp)
			}
		}
		if st := r.logs.LogDir("/d1").State(); st.Offline == nil {
			t.Fatalf("%s: /d1 not offline", what)
		}
	}
	r.logs.Close()
	crashed := r.mem.CrashClone()
	logs, err := logmgr.Open(logmgr.Options{FS: crashed, Clock: clock.Real{}, Dirs: []string{"/d1", "/d2"},
		ConfigFor: faultConfig, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("%s: restart: %v", what, err)
	}
	defer logs.Close()
	for _, a := range acked {
		l := logs.Get(a.tp)
		if l == nil || a.base >= l.LogEndOffset() {
			t.Fatalf("%s: acknowledged batch at %s@%d lost in the crash", what, a.tp, a.base)
		}
		got, err := l.Read(nil, a.base, len(a.data), l.LogEndOffset(), true)
		if err != nil || !bytes.HasPrefix(got, a.data) {
			t.Fatalf("%s: acknowledged batch at %s@%d differs after the crash (%v)", what, a.tp, a.base, err)
		}
	}
}

// A produce refused for want of space is KAFKA_STORAGE_ERROR for the
// client (retriable), and the log is left as it was; so is a follower's
// append, unless it copies an internal topic.
func TestAppendRefusedAboveReserve(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	mem.SetCapacity(2 << 20)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	logs, err := logmgr.Open(logmgr.Options{FS: mem, Clock: clock.Real{}, Dirs: []string{"/d"}, ConfigFor: faultConfig,
		Logger: logger, MinFreeBytes: func() int64 { return 1 << 20 }})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	m := New(logs, true, logger)
	tp := topicpart.TopicPartition{Topic: "t", Partition: 0}
	p, err := m.Host(tp, [16]byte{1}, faultConfig("t"), 1)
	if err != nil {
		t.Fatal(err)
	}
	var refused error
	for i := 0; i < 10_000 && refused == nil; i++ {
		_, refused = m.Append(context.Background(), tp, batchOf(t, 10, 100), -1, log.OriginClient)
	}
	if !errors.Is(refused, log.ErrNoSpace) {
		t.Fatalf("produce on a full dir = %v", refused)
	}
	leo := p.Log.LogEndOffset()
	if _, err := m.Append(context.Background(), tp, batchOf(t, 10, 100), -1, log.OriginClient); !errors.Is(err, log.ErrNoSpace) {
		t.Fatalf("second produce on a full dir = %v", err)
	}
	if p.Log.LogEndOffset() != leo || p.Log.HighWatermark() != leo || p.Offline() != nil {
		t.Fatalf("refused produce changed the log: LEO %d → %d, HW %d, offline %v", leo, p.Log.LogEndOffset(),
			p.Log.HighWatermark(), p.Offline())
	}
	// Coordinator writes (group offsets) may use the reserve: that is
	// what it is for.
	if _, err := m.Append(context.Background(), tp, batchOf(t, 1, 10), -1, log.OriginCoordinator); err != nil {
		t.Fatalf("coordinator append on a full dir: %v", err)
	}
	// A follower's appends are held to the reserve as well, and nothing is
	// written; a follower of an internal topic's are not: its leader's
	// appends are the coordinators'.
	for _, c := range []struct {
		topic string
		want  error
	}{{"f", log.ErrNoSpace}, {topicpart.GroupMetadataTopic, nil}} {
		fp, err := m.HostAs(topicpart.TopicPartition{Topic: c.topic}, [16]byte{2}, faultConfig(c.topic), 1,
			Role{LeaderID: 2, Replicas: 2, ISR: 2})
		if err != nil {
			t.Fatal(err)
		}
		_, err = fp.appendAsFollower(batchOf(t, 10, 100), 0)
		if leo := fp.Log.LogEndOffset(); !errors.Is(err, c.want) || (err == nil) != (leo == 10) {
			t.Fatalf("follower append to %s on a full dir: %v, log end offset %d; want %v", c.topic, err, leo, c.want)
		}
	}
}
