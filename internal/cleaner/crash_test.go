package cleaner

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// armedInjector fails every operation from the k-th (counting from 0) on,
// once armed: the machine stops there.
type armedInjector struct {
	armed atomic.Bool
	k     int64
	n     atomic.Int64
}

func (a *armedInjector) MaybeError(vfs.Op, string) error {
	if !a.armed.Load() {
		return nil
	}
	if a.n.Add(1)-1 >= a.k {
		return vfs.ErrInjected
	}
	return nil
}

// failOnce fails only the k-th operation once armed: a transient error.
// op is the operation it failed.
type failOnce struct {
	armedInjector
	op atomic.Int32
}

func (f *failOnce) MaybeError(op vfs.Op, _ string) error {
	if !f.armed.Load() {
		return nil
	}
	if f.n.Add(1)-1 == f.k {
		f.op.Store(int32(op))
		return vfs.ErrInjected
	}
	return nil
}

const crashDir = "/data/t-0"

// crashStride samples every step, or every 29th under the race detector.
func crashStride() int64 {
	if raceEnabled {
		return 29
	}
	return 1
}

func crashCleanConfig(delay int64) log.Config {
	c := compactConfig()
	c.SegmentBytes = 1500
	c.IndexIntervalBytes = 128
	c.FileDeleteDelayMs = delay
	return c
}

// crashFixture is a log (cleanly closed on a MemFS) about to be cleaned,
// with what it holds before and after one round of cleaning.
type crashFixture struct {
	img      *vfs.MemFS // durable state before the round
	points   map[topicpart.TopicPartition]int64
	old, new []readRec
	bases    []int64 // base offsets of the segments after the round
	leo      int64
	cfg      log.Config
	clk      *clock.Fake
}

func newCrashFixture(t *testing.T, delay int64) *crashFixture {
	fs := vfs.NewMem()
	clk := clock.NewFake(t0)
	cfg := crashCleanConfig(delay)
	l := openLog(t, fs, clk, crashDir, cfg, false)
	rng := rand.New(rand.NewPCG(1, 2))
	write := func(n int) {
		for i := 0; i < n; i++ {
			var recs []kv
			for j := 0; j < 1+rng.IntN(3); j++ {
				k := keyName(rng.IntN(12))
				if rng.IntN(8) == 0 {
					recs = append(recs, tomb(k))
				} else {
					recs = append(recs, put(k, fmt.Sprint(i, "-", strings.Repeat("v", rng.IntN(60)))))
				}
			}
			appendBatch(t, l, []record.Codec{record.CodecNone, record.CodecGzip, record.CodecLz4}[rng.IntN(3)], clk.Now().UnixMilli(), recs...)
		}
		l.Roll()
	}
	logs := newFakeLogs()
	logs.add("t", 0, l)
	tc := newTestCleaner(t, logs, clk, 1<<20)
	// A first round leaves small cleaned segments, so that the next one
	// merges several of them per group.
	write(70)
	tc.cleanUntilIdle(t)
	write(50)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f := &crashFixture{img: fs.CrashClone(), points: logs.points, cfg: cfg, clk: clk}
	// The reference round, without faults.
	ref := openLog(t, f.img.CrashClone(), clk, crashDir, cfg, true)
	defer ref.Close()
	f.old, f.leo = readAll(t, ref), ref.LogEndOffset()
	rl := newFakeLogs()
	rl.add("t", 0, ref)
	for k, v := range f.points {
		rl.points[k] = v
	}
	rc := newTestCleaner(t, rl, clk, 1<<20)
	if !rc.roundNow() {
		t.Fatal("reference round cleaned nothing")
	}
	if st := rc.status(t, "t", 0); st.LastRun == nil || st.LastRun.SegmentsWritten < 2 {
		t.Fatalf("reference round: %+v", st.LastRun)
	}
	f.new = readAll(t, ref)
	snap, _ := ref.CleanSnapshot()
	for _, s := range snap.Segments {
		f.bases = append(f.bases, s.BaseOffset)
	}
	if cmp.Equal(f.old, f.new) {
		t.Fatal("the round changed nothing")
	}
	return f
}

// check verifies a recovered log: within each segment range of the cleaned
// log, either the old records or the new ones, nothing else.
func (f *crashFixture) check(t *testing.T, got []readRec, what string) (allOld, allNew bool) {
	t.Helper()
	allOld, allNew = true, true
	for i, base := range f.bases {
		end := int64(1 << 62)
		if i+1 < len(f.bases) {
			end = f.bases[i+1]
		}
		in := func(recs []readRec) []readRec {
			var out []readRec
			for _, r := range recs {
				if r.Offset >= base && r.Offset < end {
					out = append(out, r)
				}
			}
			return out
		}
		g, o, n := in(got), in(f.old), in(f.new)
		isOld, isNew := cmp.Equal(g, o), cmp.Equal(g, n)
		if !isOld && !isNew {
			t.Fatalf("%s: offsets [%d, %d) hold neither the old nor the new records:\n%s", what, base, end,
				cmp.Diff(o, g))
		}
		allOld = allOld && isOld
		allNew = allNew && isNew
	}
	return allOld, allNew
}

// TestCrashAtEveryStepOfACleaning fails the filesystem from every step of a
// cleaning round on (reads, .cleaned writes and syncs, renames, directory
// syncs, removals), takes the durable image, recovers it and checks that
// every group of segments is either all old or all new: never a mix, never
// a loss.
func TestCrashAtEveryStepOfACleaning(t *testing.T) {
	for _, delay := range []int64{0, 60000} {
		t.Run(fmt.Sprint("file.delete.delay.ms=", delay), func(t *testing.T) { testCrashAtEveryStep(t, delay) })
	}
}

func testCrashAtEveryStep(t *testing.T, delay int64) {
	f := newCrashFixture(t, delay)
	outcomes := map[string]int{}
	for k := int64(0); ; k += crashStride() {
		img := f.img.CrashClone()
		inj := &armedInjector{k: k}
		l := openLog(t, vfs.NewInjecting(img, inj), f.clk, crashDir, f.cfg, true)
		logs := newFakeLogs()
		logs.add("t", 0, l)
		for tp, v := range f.points {
			logs.points[tp] = v
		}
		tc := newTestCleaner(t, logs, f.clk, 1<<20)
		inj.armed.Store(true)
		tc.roundNow()
		fired := inj.n.Load() > k
		inj.armed.Store(false)
		for _, rp := range []int64{0, f.leo} {
			crashed := img.CrashClone()
			l2, err := log.Open(log.Options{FS: crashed, Clock: f.clk, Dir: crashDir, Config: f.cfg, Logger: discard(),
				RecoveryPoint: rp, LogStartOffset: -1, HighWatermark: -1})
			if err != nil {
				t.Fatalf("crash at step %d: open: %v", k, err)
			}
			what := fmt.Sprintf("crash at step %d (recovery point %d)", k, rp)
			got := readAll(t, l2)
			allOld, allNew := f.check(t, got, what)
			switch {
			case allOld:
				outcomes["old"]++
			case allNew:
				outcomes["new"]++
			default:
				outcomes["some groups new"]++
			}
			if l2.LogEndOffset() != f.leo || l2.LogStartOffset() != 0 {
				t.Fatalf("%s: log end offset %d (want %d), log start %d", what, l2.LogEndOffset(), f.leo, l2.LogStartOffset())
			}
			names, _ := crashed.List(crashDir)
			for _, n := range names {
				if strings.HasSuffix(n, log.CleanedSuffix) || strings.HasSuffix(n, log.SwapSuffix) || strings.HasSuffix(n, log.DeletedSuffix) {
					t.Fatalf("%s: %s left behind", what, n)
				}
			}
			// Recovery is stable: a second crash changes nothing.
			l2.Close()
			l3 := openLog(t, crashed.CrashClone(), f.clk, crashDir, f.cfg, false)
			if diff := cmp.Diff(got, readAll(t, l3)); diff != "" {
				t.Fatalf("%s: a second recovery differs:\n%s", what, diff)
			}
			l3.Close()
		}
		l.Close()
		if !fired {
			t.Logf("%d steps; outcomes %v", k, outcomes)
			if crashStride() == 1 && (outcomes["old"] == 0 || outcomes["new"] == 0 || outcomes["some groups new"] == 0) {
				t.Fatalf("outcomes %v: expected old, new and partly new logs", outcomes)
			}
			return
		}
		if k > 5000 {
			t.Fatal("the round never ends")
		}
	}
}

// TestTransientErrorAtEveryStepOfACleaning fails one filesystem operation of
// a cleaning round, for each operation in turn: the running log still reads
// as old or new groups, the partition is reported uncleanable with the
// error (or the round succeeded), and after a restart cleaning converges to
// what an undisturbed round gives.
func TestTransientErrorAtEveryStepOfACleaning(t *testing.T) {
	f := newCrashFixture(t, 0)
	failed := 0
	for k := int64(0); ; k += crashStride() {
		img := f.img.CrashClone()
		inj := &failOnce{armedInjector: armedInjector{k: k}}
		l := openLog(t, vfs.NewInjecting(img, inj), f.clk, crashDir, f.cfg, true)
		logs := newFakeLogs()
		logs.add("t", 0, l)
		for tp, v := range f.points {
			logs.points[tp] = v
		}
		tc := newTestCleaner(t, logs, f.clk, 1<<20)
		inj.armed.Store(true)
		tc.roundNow()
		fired := inj.n.Load() > k
		inj.armed.Store(false)
		what := fmt.Sprintf("error at step %d", k)
		f.check(t, readAll(t, l), what+", live log")
		st := tc.status(t, "t", 0)
		if fired && st.Uncleanable == nil && (st.LastRun == nil || st.CleanerPoint != st.LastRun.EndOffset) {
			t.Fatalf("%s: neither cleaned nor reported: %+v", what, st)
		}
		if st.Uncleanable != nil {
			failed++
			if !strings.Contains(st.Uncleanable.Error, "injected") && !strings.Contains(st.Uncleanable.Error, "half replaced") {
				t.Fatalf("%s: reported error %q", what, st.Uncleanable.Error)
			}
		}
		// A failed write or sync fails the log's dir (it is not retried);
		// any other failed operation left the log as it was.
		switch vfs.Op(inj.op.Load()) {
		case vfs.OpWrite, vfs.OpSync, vfs.OpSyncDir, vfs.OpTruncate:
			if fired {
				if err := l.Flush(); !errors.Is(err, log.ErrStorageFailed) {
					t.Fatalf("%s (%s): flush = %v, want the log failed", what, vfs.Op(inj.op.Load()), err)
				}
				break
			}
			fallthrough
		default:
			if err := l.Flush(); err != nil {
				t.Fatalf("%s: flush: %v", what, err)
			}
		}
		// Restart and clean on: the end result is the undisturbed one.
		restarted := openLog(t, img.CrashClone(), f.clk, crashDir, f.cfg, false)
		rl := newFakeLogs()
		rl.add("t", 0, restarted)
		for tp, v := range logs.points {
			rl.points[tp] = v
		}
		newTestCleaner(t, rl, f.clk, 1<<20).cleanUntilIdle(t)
		if diff := cmp.Diff(f.new, readAll(t, restarted)); diff != "" {
			t.Fatalf("%s: after a restart and cleaning (-want +got):\n%s", what, diff)
		}
		restarted.Close()
		l.Close()
		if !fired {
			t.Logf("%d steps, %d reported uncleanable", k, failed)
			return
		}
	}
}
