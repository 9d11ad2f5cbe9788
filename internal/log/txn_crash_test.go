package log

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// TestTxnCrashAtEveryStep runs a transactional workload (data of three
// producers, commit and abort markers, syncs, rolls, truncations, clean
// restarts) on a filesystem that stops at its k-th operation, for every k,
// and recovers the crash image (and a torn one): the aborted-transaction
// index and the open transactions must be what a replay of the recovered
// batches gives, whatever point the crash hit — between a marker and its
// index entry, in a snapshot write, in a truncation.
func TestTxnCrashAtEveryStep(t *testing.T) {
	seeds, steps := []uint64{1, 2}, 80
	if longTests() {
		seeds, steps = []uint64{1, 2, 3, 4, 5, 6}, 250
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			counter := vfs.NewCountingInjector()
			if err := txnCrashWorkload(vfs.NewInjecting(vfs.NewMem(), counter), seed, steps); err != nil {
				t.Fatalf("workload without faults: %v", err)
			}
			n := counter.Count()
			stride := int64(1)
			if raceEnabled && !longTests() {
				stride = 13
			}
			for k := int64(0); k < n; k += stride {
				mem := vfs.NewMem()
				inj := vfs.FromIndex(k)
				if err := txnCrashWorkload(vfs.NewInjecting(mem, inj), seed, steps); !inj.Fired() || (err != nil && !errors.Is(err, vfs.ErrInjected)) {
					t.Fatalf("k=%d: workload ended with %v, want an injected error", k, err)
				}
				what := fmt.Sprintf("seed %d, crash at op %d", seed, k)
				checkTxnRecovered(t, mem.CrashClone(), what)
				checkTxnRecovered(t, mem.CrashCloneTorn(rand.New(rand.NewPCG(uint64(k), seed))), what+" (torn)")
			}
		})
	}
}

func txnCrashWorkload(fs vfs.FS, seed uint64, steps int) error {
	rng := rand.New(rand.NewPCG(seed, 11))
	clk := clock.NewFake(t0)
	open := func(clean bool) (*Log, error) {
		return Open(Options{FS: fs, Clock: clk, Dir: crashDir, Config: crashConfig(), Logger: discardLogger(),
			RecoveryPoint: 0, LogStartOffset: -1, HighWatermark: -1, CleanShutdown: clean})
	}
	l, err := open(false)
	if err != nil {
		return err
	}
	epoch := map[int64]int16{}
	seq := map[int64]int32{}
	for range steps {
		pid := 1 + rng.Int64N(3)
		switch p := rng.IntN(100); {
		case p < 40:
			n := 1 + rng.IntN(3)
			spec := &record.BatchSpec{ProducerID: pid, ProducerEpoch: epoch[pid], BaseSequence: seq[pid], Transactional: true}
			for i := range n {
				spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: t0.UnixMilli(), Value: []byte("v")})
			}
			b, err := record.Build(spec)
			if err != nil {
				return err
			}
			if _, err := appendVerified(l, b, 0); err != nil {
				return err
			}
			seq[pid] += int32(n)
		case p < 65:
			if _, err := l.AppendMarker(MarkerSpec{ProducerID: pid, ProducerEpoch: epoch[pid], Commit: rng.IntN(2) == 0}, 0); err != nil {
				return err
			}
		case p < 80:
			if err := l.SyncTo(l.LogEndOffset()); err != nil {
				return err
			}
		case p < 87:
			if err := l.Roll(); err != nil {
				return err
			}
		case p < 93:
			if err := l.TruncateTo(max(l.LogEndOffset()-int64(rng.IntN(5)), 0)); err != nil {
				return err
			}
			for p := int64(1); p <= 3; p++ {
				epoch[p]++
				seq[p] = 0
			}
		default:
			if err := l.Close(); err != nil {
				return err
			}
			if l, err = open(true); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkTxnRecovered opens a crash image with no recovery point (rescan
// everything) and compares its transactional state with a replay of the
// batches it holds.
func checkTxnRecovered(t *testing.T, fs *vfs.MemFS, what string) {
	t.Helper()
	l, err := Open(Options{FS: fs, Clock: clock.NewFake(t0), Dir: crashDir, Config: crashConfig(), Logger: discardLogger(),
		RecoveryPoint: 0, LogStartOffset: -1, HighWatermark: -1})
	if err != nil {
		t.Fatalf("%s: open: %v", what, err)
	}
	defer l.Close()
	open := map[int64]int64{}
	var want []AbortedTxn
	for _, b := range readAllBatches(prefixed{t, what + ": "}, l, 0) {
		h, _ := record.ParseHeader(b)
		if !h.Control() {
			if _, ok := open[h.ProducerID]; !ok && h.Transactional() {
				open[h.ProducerID] = h.BaseOffset
			}
			continue
		}
		first, ok := open[h.ProducerID]
		delete(open, h.ProducerID)
		m, err := record.ParseControl(b, 1<<20)
		if err != nil {
			t.Fatalf("%s: marker at %d: %v", what, h.BaseOffset, err)
		}
		if ok && m.Type == record.ControlAbort {
			lso := h.BaseOffset + 1
			for _, f := range open {
				lso = min(lso, f)
			}
			want = append(want, AbortedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: h.BaseOffset, LastStableOffset: lso})
		}
	}
	got, err := l.AbortedTransactions(0, l.LogEndOffset()+1)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !cmp.Equal(got, want) {
		t.Fatalf("%s: aborted transactions after recovery\n%+v\nreplay of the recovered batches gives\n%+v", what, got, want)
	}
	gotOpen := map[int64]int64{}
	for _, o := range l.OpenTransactions() {
		if !o.Unreplicated {
			gotOpen[o.ProducerID] = o.FirstOffset
		}
	}
	if !cmp.Equal(gotOpen, open) {
		t.Fatalf("%s: open transactions %v, replay gives %v", what, gotOpen, open)
	}
	l.SetHighWatermark(l.LogEndOffset())
	lso := l.LogEndOffset()
	for _, f := range open {
		lso = min(lso, f)
	}
	if l.LastStableOffset() != lso {
		t.Fatalf("%s: LSO %d, want %d", what, l.LastStableOffset(), lso)
	}
}

// TestCrashDuringSwapKeepsTxnIndex crashes a segment replacement (Kafka's
// .cleaned → .swap → live protocol) at every filesystem operation, with a
// rewrite that drops an aborted transaction's data but keeps its ABORT
// marker and index entry: whichever set recovery ends with, old or new, the
// aborted-transaction index holds the entry. Recovery is told the shutdown
// was clean, so no replay rebuilds the index behind the swap's back.
func TestCrashDuringSwapKeepsTxnIndex(t *testing.T) {
	fs := durableDirFS(t)
	clk := clock.NewFake(t0)
	cfg := crashConfig()
	l := openAt(t, fs, clk, cfg, false, 0, -1)
	mustAppend(t, l, testBatch(t, 3, t0.UnixMilli(), "a"), 0)
	mustAppend(t, l, txnData(t, 1, 0, 0, 2), 0)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, testBatch(t, 3, t0.UnixMilli(), "b"), 0)
	mustMarker(t, l, 1, 0, false, 3)
	mustAppend(t, l, testBatch(t, 3, t0.UnixMilli(), "c"), 0)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, testBatch(t, 1, t0.UnixMilli(), "d"), 0)
	leo := l.LogEndOffset()
	l.SetHighWatermark(leo)
	want, _ := l.AbortedTransactions(0, leo)
	if len(want) != 1 {
		t.Fatalf("aborted %+v", want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	swap := func(fs vfs.FS) (int, error) {
		l, err := Open(Options{FS: fs, Clock: clk, Dir: "/data/t-0", Config: cfg, Logger: discardLogger(),
			RecoveryPoint: leo, LogStartOffset: -1, HighWatermark: leo, CleanShutdown: true})
		if err != nil {
			return 0, err
		}
		defer l.Close()
		snap, err := l.CleanSnapshot()
		if err != nil {
			return 0, err
		}
		group := snap.Segments[:2]
		w, err := l.NewCleanedSegment(group[0].BaseOffset, 4096)
		if err != nil {
			return 0, err
		}
		kept := 0
		for _, g := range group {
			buf := make([]byte, g.Size)
			if _, err := g.ReadAt(buf, 0); err != nil {
				w.Abort()
				return 0, err
			}
			for len(buf) > 0 {
				b, rest, _ := record.Split(buf)
				buf = rest
				if h, _ := record.ParseHeader(b); h.Transactional() && !h.Control() {
					continue // the aborted data goes
				}
				if err := w.Append(b); err != nil {
					w.Abort()
					return 0, err
				}
				kept++
			}
			entries, err := g.AbortedTxns()
			if err != nil {
				w.Abort()
				return 0, err
			}
			for _, a := range entries {
				if err := w.AppendAborted(a); err != nil {
					w.Abort()
					return 0, err
				}
			}
		}
		return kept, l.ReplaceSegments(w, group)
	}
	counter := vfs.NewCountingInjector()
	if _, err := swap(vfs.NewInjecting(fs.CrashClone(), counter)); err != nil {
		t.Fatalf("swap without faults: %v", err)
	}
	for k := int64(0); k < counter.Count(); k++ {
		mem := fs.CrashClone()
		swap(vfs.NewInjecting(mem, vfs.FromIndex(k)))
		img := mem.CrashClone()
		l, err := Open(Options{FS: img, Clock: clk, Dir: "/data/t-0", Config: cfg, Logger: discardLogger(),
			RecoveryPoint: leo, LogStartOffset: -1, HighWatermark: leo, CleanShutdown: true})
		if err != nil {
			t.Fatalf("crash at op %d: open: %v", k, err)
		}
		batches := len(readAllBatches(t, l, 0))
		got, err := l.AbortedTransactions(0, leo)
		if err != nil || !cmp.Equal(got, want) {
			t.Fatalf("crash at op %d (%d batches): aborted %+v %v, want %+v\n%s", k, batches, got, err, want, img)
		}
		if batches != 6 && batches != 5 {
			t.Fatalf("crash at op %d: %d batches, neither the old set (6) nor the new (5)", k, batches)
		}
		l.Close()
	}
}
