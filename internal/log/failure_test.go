package log

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// fsyncgate: a sync that fails is not retried. Today's bug was a requeue
// after the error, so the next SyncTo "succeeded" over bytes whose
// writeback the kernel had dropped, and acknowledged them (an idempotent
// retry of the lost batch was answered as a duplicate with its original
// offsets). Now the log fails: the failed sync and every later one return
// ErrStorageFailed, appends are refused, the recovery point stays at the
// last good sync, and a restart recovers what that sync covered.
func TestFailedSyncIsNeverRetried(t *testing.T) {
	mem := durableDirFS(t)
	clk := clock.NewFake(t0)
	next := vfs.OnIndex(0, vfs.OpSync).WithErr(vfs.ErrWritebackLost)
	inj := &armed{next: next}
	l := openAt(t, vfs.NewInjecting(mem, inj), clk, smallConfig(), false, 0, -1)

	a := mustAppend(t, l, idempotentBatch(t, 7, 0, 2), 0)
	if err := l.SyncTo(a.LastOffset + 1); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	good := l.RecoveryPoint()
	b := mustAppend(t, l, idempotentBatch(t, 7, 2, 2), 0)
	inj.on.Store(true)
	err := l.SyncTo(b.LastOffset + 1)
	if !next.Fired() {
		t.Fatalf("the second sync was not the injected failure (syncs seen: %d)", next.Count())
	}
	if !errors.Is(err, ErrStorageFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("failed sync = %v, want ErrStorageFailed wrapping EIO", err)
	}
	if err := l.SyncTo(b.LastOffset + 1); !errors.Is(err, ErrStorageFailed) {
		t.Fatalf("sync retried after a failure = %v, want ErrStorageFailed", err)
	}
	if err := l.SyncTo(a.LastOffset + 1); !errors.Is(err, ErrStorageFailed) {
		t.Fatalf("sync of offsets an earlier sync covered, after the failure = %v, want ErrStorageFailed", err)
	}
	if _, err := l.Append(idempotentBatch(t, 7, 2, 2), OriginClient, 0); !errors.Is(err, ErrStorageFailed) {
		t.Fatalf("idempotent retry of the lost batch = %v, want ErrStorageFailed", err)
	}
	if _, err := l.Append(testBatch(t, 1, t0.UnixMilli(), "c"), OriginClient, 0); !errors.Is(err, ErrStorageFailed) {
		t.Fatalf("append after a failed sync = %v, want ErrStorageFailed", err)
	}
	if rp := l.RecoveryPoint(); rp != good {
		t.Fatalf("recovery point moved to %d after the failure, want %d", rp, good)
	}
	if err := l.Failed(); !errors.Is(err, ErrStorageFailed) {
		t.Fatalf("Failed() = %v", err)
	}
	if l.FlushDue(t0.Add(1e12)) {
		t.Fatal("a failed log asks for a flush")
	}
	if err := l.Close(); !errors.Is(err, ErrStorageFailed) {
		t.Fatalf("Close of a failed log = %v, want the failure", err)
	}
	// A restart recovers from the last good recovery point: what the good
	// sync covered is there, the lost bytes are not mistaken for batches.
	l2 := openAt(t, mem.CrashClone(), clk, smallConfig(), false, good, -1)
	defer l2.Close()
	if l2.LogEndOffset() != a.LastOffset+1 {
		t.Fatalf("recovered log end offset %d, want %d", l2.LogEndOffset(), a.LastOffset+1)
	}
}

// armed passes operations to next only once on is set, so a test can count
// a workload's operations from after Open.
type armed struct {
	on   atomic.Bool
	next vfs.Injector
}

func (a *armed) MaybeError(op vfs.Op, path string) error {
	if !a.on.Load() {
		return nil
	}
	return a.next.MaybeError(op, path)
}

// A failed write (not for want of space) fails the log too: whatever the
// disk did with it, the log can no longer vouch for its files.
func TestFailedWriteFailsLog(t *testing.T) {
	mem := durableDirFS(t)
	clk := clock.NewFake(t0)
	inj := &armed{next: vfs.OnIndex(0, vfs.OpWrite)}
	var calls atomic.Int32
	dom := NewFailureDomain(func(error) { calls.Add(1) })
	l, err := Open(Options{FS: vfs.NewInjecting(mem, inj), Clock: clk, Dir: "/data/t-0", Config: smallConfig(),
		Logger: discardLogger(), RecoveryPoint: 0, LogStartOffset: -1, HighWatermark: -1, Failure: dom})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mustAppend(t, l, testBatch(t, 1, t0.UnixMilli(), "a"), 0)
	inj.on.Store(true)
	if _, err := l.Append(testBatch(t, 1, t0.UnixMilli(), "b"), OriginClient, 0); !errors.Is(err, ErrStorageFailed) ||
		!errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("append whose write fails = %v, want ErrStorageFailed", err)
	}
	if _, err := l.Append(testBatch(t, 1, t0.UnixMilli(), "c"), OriginClient, 0); !errors.Is(err, ErrStorageFailed) {
		t.Fatalf("append after a failed write = %v, want ErrStorageFailed", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("onFail called %d times, want once", calls.Load())
	}
}

// The logs of one dir share a failure domain: a failed fsync of one takes
// the others out of service, and onFail runs once.
func TestFailureDomainIsShared(t *testing.T) {
	mem := vfs.NewMem()
	clk := clock.NewFake(t0)
	var causes []error
	dom := NewFailureDomain(func(c error) { causes = append(causes, c) })
	armed := false
	fs := vfs.NewInjecting(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if armed && op == vfs.OpSync {
			return vfs.ErrWritebackLost
		}
		return nil
	}))
	open := func(dir string) *Log {
		l, err := Open(Options{FS: fs, Clock: clk, Dir: dir, Config: smallConfig(), Logger: discardLogger(),
			RecoveryPoint: 0, LogStartOffset: -1, HighWatermark: -1, Failure: dom})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b := open("/data/a-0"), open("/data/b-0")
	ra := mustAppend(t, a, testBatch(t, 1, t0.UnixMilli(), "a"), 0)
	rb := mustAppend(t, b, testBatch(t, 1, t0.UnixMilli(), "b"), 0)
	armed = true
	if err := a.SyncTo(ra.LastOffset + 1); !errors.Is(err, ErrStorageFailed) {
		t.Fatalf("failing sync = %v", err)
	}
	armed = false
	if err := b.SyncTo(rb.LastOffset + 1); !errors.Is(err, ErrStorageFailed) {
		t.Fatalf("sync of the other log of the dir = %v, want ErrStorageFailed", err)
	}
	if _, err := b.Append(testBatch(t, 1, t0.UnixMilli(), "b"), OriginClient, 0); !errors.Is(err, ErrStorageFailed) {
		t.Fatalf("append to the other log of the dir = %v, want ErrStorageFailed", err)
	}
	if len(causes) != 1 || !errors.Is(causes[0], vfs.ErrWritebackLost) {
		t.Fatalf("onFail causes = %v, want the one lost writeback", causes)
	}
	a.Close()
	b.Close()
}

// A full disk is not a failed disk: the append that does not fit is cut
// back to the last whole batch and refused with ErrNoSpace, the log stays
// writable and readable, and appends work again once space returns; a
// crash keeps every batch synced before and after.
func TestAppendOnFullDiskIsCutBack(t *testing.T) {
	mem := durableDirFS(t)
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.SegmentBytes = 64 << 10
	l := openAt(t, mem, clk, cfg, false, 0, -1)
	u, err := mem.DiskUsage("/data")
	if err != nil {
		t.Fatal(err)
	}
	mem.SetCapacity(u.Total - u.Usable + 20_000) // room for about 15 batches of ~1.3 kB
	var kept [][]byte
	var full error
	for i := 0; i < 100 && full == nil; i++ {
		b := testBatch(t, 10, t0.UnixMilli(), fmt.Sprint("k", i))
		if _, err := l.Append(b, OriginClient, 0); err != nil {
			full = err
			break
		}
		kept = append(kept, b)
	}
	if !errors.Is(full, ErrNoSpace) || !errors.Is(full, syscall.ENOSPC) {
		t.Fatalf("append on a full disk = %v, want ErrNoSpace wrapping ENOSPC", full)
	}
	if err := l.Failed(); err != nil {
		t.Fatalf("a full disk failed the log: %v", err)
	}
	want := int64(0)
	for _, b := range kept {
		want += int64(len(b))
	}
	if l.Size() != want {
		t.Fatalf("log holds %d bytes after the refused append, want the %d of its whole batches", l.Size(), want)
	}
	if err := l.Flush(); err != nil {
		t.Fatalf("flush on a full disk: %v", err)
	}
	if got := readAll(t, l, 0); len(got) != len(kept) {
		t.Fatalf("read %d batches, want %d", len(got), len(kept))
	}
	mem.SetCapacity(1 << 40)
	more := testBatch(t, 10, t0.UnixMilli(), "after")
	if _, err := l.Append(more, OriginClient, 0); err != nil {
		t.Fatalf("append once space returned: %v", err)
	}
	kept = append(kept, more)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	l2 := openAt(t, mem.CrashClone(), clk, cfg, false, 0, -1)
	defer l2.Close()
	checkBatches(t, l2, kept)
	l.Close()
}

// checkBatches reads l from its start and compares it with want, the
// batches as appended (offsets assigned in place).
func checkBatches(t *testing.T, l *Log, want [][]byte) {
	t.Helper()
	var got [][]byte
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		data, err := l.Read(nil, off, 1<<20, l.LogEndOffset(), true)
		if err != nil || len(data) == 0 {
			t.Fatalf("read at %d: %d bytes, %v", off, len(data), err)
		}
		for len(data) > 0 {
			b, rest, ok := record.Split(data)
			if !ok {
				t.Fatalf("partial batch at %d", off)
			}
			h, err := record.ValidateStored(b)
			if err != nil {
				t.Fatal(err)
			}
			got, off, data = append(got, b), h.NextOffset(), rest
		}
	}
	if len(got) != len(want) {
		t.Fatalf("log holds %d batches, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs from what was appended", i)
		}
	}
}

// faultWorkload has writers goroutines append batches and wait for each to
// be synced, as concurrent producers with acks=all do, until each has
// appended perWriter batches or its log failed. It returns the batches
// acknowledged (SyncTo returned nil), keyed by base offset, and whether an
// append that started after fired() became true was acknowledged.
func faultWorkload(t *testing.T, l *Log, writers, perWriter int, fired func() bool) (acked map[int64][]byte, late int) {
	var mu sync.Mutex
	acked = map[int64][]byte{}
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				after := fired()
				b := testBatch(t, 1+i%3, t0.UnixMilli(), fmt.Sprintf("w%d-%d", w, i))
				res, err := l.Append(b, OriginClient, 0)
				if err != nil {
					return
				}
				if err := l.SyncTo(res.LastOffset + 1); err != nil {
					continue // keeps trying: every later append must fail
				}
				mu.Lock()
				acked[res.BaseOffset] = b
				if after {
					late++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return acked, late
}

// For every sync (and, separately, every write) of a concurrent
// append-and-sync workload, fail that one: nothing that started after the
// failure is acknowledged, the log takes no more appends, and after a crash
// every acknowledged batch is there, byte for byte. A failed fsync loses
// its writeback as on Linux, so acknowledging anything it did not cover
// would show up as a lost batch.
func TestNothingAcknowledgedAfterAFault(t *testing.T) {
	writers, perWriter := 4, 12
	if longTests() {
		writers, perWriter = 8, 60
	}
	for _, tc := range []struct {
		name string
		ops  []vfs.Op
		err  error
	}{
		{"sync", []vfs.Op{vfs.OpSync, vfs.OpSyncDir}, vfs.ErrWritebackLost},
		{"write", []vfs.Op{vfs.OpWrite}, syscall.EIO},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counter := vfs.NewCountingInjector(tc.ops...)
			inj := &armed{next: counter}
			l := openAt(t, vfs.NewInjecting(durableDirFS(t), inj), clock.NewFake(t0), smallConfig(), false, 0, -1)
			inj.on.Store(true)
			faultWorkload(t, l, writers, perWriter, func() bool { return false })
			l.Close()
			n := counter.Count() + 4 // group commit makes the count vary run to run
			for k := int64(0); k < n; k++ {
				runFaultAt(t, tc.ops, tc.err, k, writers, perWriter)
			}
		})
	}
}

func runFaultAt(t *testing.T, ops []vfs.Op, injErr error, k int64, writers, perWriter int) {
	mem := durableDirFS(t)
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	next := vfs.OnIndex(k, ops...).WithErr(injErr)
	inj := &armed{next: next} // Open's own syncs and writes do not count
	l := openAt(t, vfs.NewInjecting(mem, inj), clk, cfg, false, 0, -1)
	inj.on.Store(true)
	acked, late := faultWorkload(t, l, writers, perWriter, next.Fired)
	if late > 0 {
		t.Fatalf("fault at %s #%d: %d appends started after the fault were acknowledged", ops[0], k, late)
	}
	if next.Fired() {
		if err := l.Failed(); !errors.Is(err, ErrStorageFailed) {
			t.Fatalf("fault at %s #%d: log not failed: %v", ops[0], k, err)
		}
		if _, err := l.Append(testBatch(t, 1, t0.UnixMilli(), "x"), OriginClient, 0); !errors.Is(err, ErrStorageFailed) {
			t.Fatalf("fault at %s #%d: append after the fault = %v", ops[0], k, err)
		}
	}
	l.Close()
	l2 := openAt(t, mem.CrashClone(), clk, cfg, false, 0, -1)
	defer l2.Close()
	for base, b := range acked {
		if base >= l2.LogEndOffset() {
			t.Fatalf("fault at %s #%d: acknowledged batch at %d lost (recovered log end offset %d)", ops[0], k, base, l2.LogEndOffset())
		}
		data, err := l2.Read(nil, base, len(b), l2.LogEndOffset(), true)
		if err != nil || !bytes.HasPrefix(data, b) {
			t.Fatalf("fault at %s #%d: acknowledged batch at %d differs after recovery (%v)", ops[0], k, base, err)
		}
	}
}
