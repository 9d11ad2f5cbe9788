package log

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Crash tests: a workload runs on a MemFS whose operations fail from the k-th
// on (the machine stops there), for every k; the log recovered from the
// durable state (and from a torn variant of it) must hold every acknowledged
// record and nothing that was never written.

const crashDir = "/data/t-0"

// crashTrace is what the workload knows about what it wrote.
type crashTrace struct {
	versions map[int64][][]byte // base offset -> every batch ever written there
	live     map[int64][]byte   // base offset -> the batch the log holds now
	required map[int64][]byte   // acknowledged and not since deleted or truncated
	ackedEnd int64              // acknowledged up to here (exclusive), of what is required
	rp       int64              // the last RecoveryPoint seen after a successful sync
	rpStale  int64              // the same, not lowered after a truncation
}

func newCrashTrace() *crashTrace {
	return &crashTrace{versions: map[int64][][]byte{}, live: map[int64][]byte{}, required: map[int64][]byte{}}
}

func (c *crashTrace) ackAll(end int64) {
	for base, b := range c.live {
		if base < end {
			c.required[base] = b
		}
	}
	c.ackedEnd = max(c.ackedEnd, end)
}

// forget makes records that may now legitimately be gone optional.
func (c *crashTrace) forget(keep func(base int64, b []byte) bool) {
	for base, b := range c.required {
		if !keep(base, b) {
			delete(c.required, base)
		}
	}
	c.ackedEnd = 0
	for base, b := range c.required {
		h, _ := record.ParseHeader(b)
		c.ackedEnd = max(c.ackedEnd, h.NextOffset())
		_ = base
	}
}

// dropBelow forgets the batches of deleted segments (the removal is durable
// when the call returns).
func (c *crashTrace) dropBelow(first int64) {
	c.forget(func(base int64, _ []byte) bool { return base >= first })
	for base := range c.live {
		if base < first {
			delete(c.live, base)
		}
	}
}

func crashConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 3000
	c.SegmentIndexBytes = 120
	c.IndexIntervalBytes = 300
	c.TimestampAfterMs = -1
	c.RetentionMs = 3600_000
	c.FileDeleteDelayMs = 1000
	return c
}

// crashWorkload appends, syncs, rolls, runs retention, deletes records,
// truncates and restarts cleanly, stopping at the first error.
func crashWorkload(fs vfs.FS, seed uint64, steps int, tr *crashTrace) error {
	rng := rand.New(rand.NewPCG(seed, 7))
	clk := clock.NewFake(t0)
	cfg := crashConfig()
	open := func(clean bool) (*Log, error) {
		return Open(Options{FS: fs, Clock: clk, Dir: crashDir, Config: cfg, Logger: discardLogger(),
			RecoveryPoint: 0, LogStartOffset: -1, HighWatermark: -1, CleanShutdown: clean})
	}
	l, err := open(false)
	if err != nil {
		return err
	}
	epoch := int32(0)
	codecs := []record.Codec{record.CodecNone, record.CodecNone, record.CodecGzip, record.CodecLz4, record.CodecSnappy}
	for step := 0; step < steps; step++ {
		switch p := rng.IntN(100); {
		case p < 60:
			n := 1 + rng.IntN(6)
			spec := &record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: codecs[rng.IntN(len(codecs))]}
			ts := clk.Now().UnixMilli()
			for i := 0; i < n; i++ {
				spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: ts + int64(rng.IntN(1000)),
					Key: fmt.Appendf(nil, "k%d", rng.IntN(50)), Value: bytes.Repeat([]byte{byte(step)}, rng.IntN(200))})
			}
			b, err := record.Build(spec)
			if err != nil {
				return err
			}
			if rng.IntN(10) == 0 {
				epoch++
			}
			leo := l.LogEndOffset()
			want := bytes.Clone(b)
			record.SetBaseOffset(want, leo)
			record.SetLeaderEpoch(want, epoch)
			tr.versions[leo] = append(tr.versions[leo], want)
			if _, err := l.Append(b, OriginClient, epoch); err != nil {
				return err
			}
			tr.live[leo] = want
			clk.Advance(time.Duration(rng.IntN(120)) * time.Second)
		case p < 78:
			leo := l.LogEndOffset()
			if err := l.SyncTo(leo); err != nil {
				return err
			}
			tr.ackAll(leo)
			tr.rp = l.RecoveryPoint()
			tr.rpStale = tr.rp
		case p < 83:
			if err := l.Roll(); err != nil {
				return err
			}
		case p < 88:
			l.SetHighWatermark(l.LogEndOffset())
			// Up to 1.5 retention.ms: at times every segment has expired,
			// and the pass rolls the active segment before deleting it.
			clk.Advance(time.Duration(rng.IntN(90)) * time.Minute)
			// The segments the pass deletes may be gone, done or not (their
			// removal is durable before the epoch checkpoint is cut).
			plan, err := l.RetentionPlan(clk.Now())
			if err != nil {
				return err
			}
			tr.forget(func(base int64, _ []byte) bool { return plan.Now.Segments == 0 || base >= plan.Now.ToOffset })
			if _, err := l.DeleteOldSegments(clk.Now()); err != nil {
				return err
			}
			tr.dropBelow(l.segments()[0].baseOffset)
		case p < 91:
			l.SetHighWatermark(l.LogEndOffset())
			to := l.LogStartOffset() + int64(rng.IntN(int(l.LogEndOffset()-l.LogStartOffset())+1))
			segs := l.segments()
			kept := segs[segmentFor(segs, to)].baseOffset
			tr.forget(func(base int64, _ []byte) bool { return base >= kept })
			if _, err := l.IncrementLogStartOffset(to); err != nil {
				return err
			}
			tr.dropBelow(l.segments()[0].baseOffset)
		case p < 95:
			to := max(l.LogEndOffset()-int64(rng.IntN(15)), 0)
			// Whatever the truncation reaches may be gone, done or not.
			tr.forget(func(base int64, b []byte) bool {
				h, _ := record.ParseHeader(b)
				return h.LastOffset() < to
			})
			if err := l.TruncateTo(to); err != nil {
				return err
			}
			// The recovery-point checkpoint is rewritten after a truncation
			// (Kafka's LogManager.truncateTo does the same).
			tr.rp = min(tr.rp, l.RecoveryPoint())
			leo := l.LogEndOffset()
			for base := range tr.live {
				if base >= leo {
					delete(tr.live, base)
				}
			}
		default:
			if err := l.Close(); err != nil {
				return err
			}
			tr.ackAll(l.LogEndOffset())
			if l, err = open(true); err != nil {
				return err
			}
			tr.rp = l.RecoveryPoint()
			tr.rpStale = tr.rp
		}
	}
	return nil
}

// checkRecovered opens a crash image and checks it against the trace. It
// returns the batches read, for the stability check.
func checkRecovered(t *testing.T, fs *vfs.MemFS, tr *crashTrace, recoveryPoint int64, what string) (*Log, [][]byte) {
	t.Helper()
	l, err := Open(Options{FS: fs, Clock: clock.NewFake(t0), Dir: crashDir, Config: crashConfig(), Logger: discardLogger(),
		RecoveryPoint: recoveryPoint, LogStartOffset: -1, HighWatermark: -1})
	if err != nil {
		t.Fatalf("%s: open: %v\n%s", what, err, fs)
	}
	// As logmgr does once it has loaded its logs: what Open repaired or
	// found above the recovery point is made durable.
	if l.NeedsSync() {
		if err := l.Flush(); err != nil {
			t.Fatalf("%s: sync after open: %v", what, err)
		}
	}
	if l.NeedsSync() || l.RecoveryPoint() != l.LogEndOffset() {
		t.Fatalf("%s: after the sync, recovery point %d, LEO %d, needs sync %v", what, l.RecoveryPoint(), l.LogEndOffset(), l.NeedsSync())
	}
	got := readAllBatches(prefixed{t, what + ": "}, l, l.LogStartOffset())
	seen := map[int64]bool{}
	prevNext := int64(-1)
	for _, b := range got {
		h, _ := record.ParseHeader(b)
		if h.BaseOffset < prevNext {
			t.Fatalf("%s: batch at %d after one ending at %d", what, h.BaseOffset, prevNext)
		}
		prevNext = h.NextOffset()
		ok := false
		for _, v := range tr.versions[h.BaseOffset] {
			ok = ok || bytes.Equal(v, b)
		}
		if !ok {
			t.Fatalf("%s: batch at %d was never written", what, h.BaseOffset)
		}
		seen[h.BaseOffset] = true
		if req, ok := tr.required[h.BaseOffset]; ok && !bytes.Equal(req, b) {
			t.Fatalf("%s: acknowledged batch at %d differs", what, h.BaseOffset)
		}
	}
	for base := range tr.required {
		if !seen[base] {
			t.Fatalf("%s: acknowledged batch at %d lost (log start %d, LEO %d)\n%s", what, base, l.LogStartOffset(), l.LogEndOffset(), fs)
		}
	}
	if l.LogEndOffset() < tr.ackedEnd {
		t.Fatalf("%s: LEO %d below the acknowledged %d", what, l.LogEndOffset(), tr.ackedEnd)
	}
	return l, got
}

func checkCrashImage(t *testing.T, img *vfs.MemFS, tr *crashTrace, rp int64, what string) {
	t.Helper()
	l, got := checkRecovered(t, img, tr, rp, what)
	// A second crash right after recovery (and its sync) changes nothing,
	// with the recovery point it then had checkpointed or an older one.
	rp2 := l.RecoveryPoint()
	if len(got)%2 == 0 {
		rp2 = 0
	}
	l2, got2 := checkRecovered(t, img.CrashClone(), tr, rp2, what+", crashed again")
	if l2.LogEndOffset() != l.LogEndOffset() || l2.LogStartOffset() != l.LogStartOffset() || len(got2) != len(got) {
		t.Fatalf("%s: unstable after a second crash: LEO %d -> %d, log start %d -> %d, %d -> %d batches",
			what, l.LogEndOffset(), l2.LogEndOffset(), l.LogStartOffset(), l2.LogStartOffset(), len(got), len(got2))
	}
	for i := range got {
		if !bytes.Equal(got[i], got2[i]) {
			t.Fatalf("%s: batch %d changed after a second crash", what, i)
		}
	}
	// The recovered log takes appends and syncs them.
	res, err := l2.Append(testBatch(t, 2, t0.UnixMilli(), "after"), OriginClient, 1000)
	if err != nil || res.BaseOffset != l2.LogEndOffset()-2 {
		t.Fatalf("%s: append after recovery: %+v %v", what, res, err)
	}
	if err := l2.SyncTo(l2.LogEndOffset()); err != nil {
		t.Fatalf("%s: sync after recovery: %v", what, err)
	}
}

func longTests() bool { return os.Getenv("GREGOR_LONG") != "" }

func TestCrashAtEveryStep(t *testing.T) {
	seeds, steps := []uint64{1}, 120
	if longTests() {
		seeds, steps = []uint64{1, 2, 3, 4, 5, 6, 7, 8}, 300
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			counter := vfs.NewCountingInjector()
			if err := crashWorkload(vfs.NewInjecting(vfs.NewMem(), counter), seed, steps, newCrashTrace()); err != nil {
				t.Fatalf("workload without faults: %v", err)
			}
			n := counter.Count()
			t.Logf("seed %d: %d filesystem operations", seed, n)
			stride := int64(1)
			if testing.Short() {
				stride = 7
			}
			if raceEnabled && !longTests() {
				stride = 29
			}
			for k := int64(0); k < n; k += stride {
				mem := vfs.NewMem()
				tr := newCrashTrace()
				inj := vfs.FromIndex(k)
				err := crashWorkload(vfs.NewInjecting(mem, inj), seed, steps, tr)
				// A failure can land in a delayed file removal, whose error
				// is only logged: then the workload may finish.
				if !inj.Fired() || (err != nil && !errors.Is(err, vfs.ErrInjected)) {
					t.Fatalf("k=%d: workload ended with %v, want an injected error", k, err)
				}
				var rp int64 // no recovery-point checkpoint: rescan everything
				switch k % 4 {
				case 1, 2:
					rp = tr.rp // as the checkpoint would have it
				case 3:
					rp = tr.rpStale // a checkpoint not rewritten after a truncation
				}
				checkCrashImage(t, mem.CrashClone(), tr, rp, fmt.Sprintf("seed %d, crash at op %d", seed, k))
				torn := mem.CrashCloneTorn(rand.New(rand.NewPCG(uint64(k), seed)))
				checkCrashImage(t, torn, tr, rp, fmt.Sprintf("seed %d, torn crash at op %d", seed, k))
			}
		})
	}
}

// TestCrashDuringSegmentSwap walks the .cleaned -> .swap -> rename protocol a
// cleaner follows, crashing after every filesystem operation: recovery must
// end with either the old segments or the new one, never a mix.
func TestCrashDuringSegmentSwap(t *testing.T) {
	for _, keepTail := range []bool{true, false} {
		t.Run(fmt.Sprint("keepTail=", keepTail), func(t *testing.T) { testCrashDuringSwap(t, keepTail) })
	}
}

func testCrashDuringSwap(t *testing.T, keepTail bool) {
	fs := vfs.NewMem()
	clk := clock.NewFake(t0)
	cfg := crashConfig()
	l := openAt(t, fs, clk, cfg, false, 0, -1)
	for i := 0; i < 40; i++ {
		mustAppend(t, l, testBatch(t, 4, t0.UnixMilli()+int64(i), fmt.Sprint("k", i%7)), 0)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs := l.segments()
	if len(segs) < 6 {
		t.Fatalf("only %d segments", len(segs))
	}
	group := segs[1:4] // three closed segments, cleaned into one
	base := group[0].baseOffset
	oldAll := readAllBatches(t, openAt(t, fs.CrashClone(), clk, cfg, true, 1<<62, -1), 0)

	// The rewrite: every batch of the group re-encoded with gzip, dropping
	// all but the first and last record of each (offsets keep their gaps).
	// Without keepTail the group's last segment is dropped entirely.
	var cleaned []byte
	var groupBatches [][]byte
	for _, b := range oldAll {
		h, _ := record.ParseHeader(b)
		if h.BaseOffset >= base && h.BaseOffset < segs[4].baseOffset {
			groupBatches = append(groupBatches, b)
		}
	}
	if !keepTail { // the whole last segment of the group compacts away
		for len(groupBatches) > 0 {
			h, _ := record.ParseHeader(groupBatches[len(groupBatches)-1])
			if h.BaseOffset < group[2].baseOffset {
				break
			}
			groupBatches = groupBatches[:len(groupBatches)-1]
		}
	}
	for _, b := range groupBatches {
		h, _ := record.ParseHeader(b)
		spec := &record.BatchSpec{BaseOffset: h.BaseOffset, LeaderEpoch: h.LeaderEpoch, Codec: record.CodecGzip,
			ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
		err := record.Iterate(b, 1<<20, func(r *record.Record) error {
			if r.OffsetDelta == 0 || r.OffsetDelta == h.LastOffsetDelta {
				spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: r.OffsetDelta,
					Timestamp: h.BaseTimestamp + r.TimestampDelta, Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value)})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		nb, err := record.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		cleaned = append(cleaned, nb...)
	}
	var newAll [][]byte
	for _, b := range oldAll {
		h, _ := record.ParseHeader(b)
		if h.BaseOffset == base {
			for c := cleaned; len(c) > 0; {
				nb, rest, _ := record.Split(c)
				newAll = append(newAll, nb)
				c = rest
			}
		}
		if h.BaseOffset < base || h.BaseOffset >= segs[4].baseOffset {
			newAll = append(newAll, b)
		}
	}

	// The protocol, one filesystem operation per step.
	p := func(off int64, sfx string) string { return crashDir + "/" + FileName(off) + sfx }
	var steps []func() error
	for _, sfx := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
		sfx := sfx
		steps = append(steps, func() error {
			f, err := fs.Create(p(base, sfx+CleanedSuffix))
			if err != nil {
				return err
			}
			if sfx == LogSuffix {
				if _, err := f.Write(cleaned); err != nil {
					return err
				}
			}
			if err := f.Sync(); err != nil {
				return err
			}
			return f.Close()
		})
	}
	syncDir := func() error { return fs.SyncDir(crashDir) }
	steps = append(steps, syncDir)
	for _, sfx := range []string{IndexSuffix, TimeIndexSuffix, LogSuffix} { // the log last: its .swap marks completion
		sfx := sfx
		steps = append(steps, func() error { return fs.Rename(p(base, sfx+CleanedSuffix), p(base, sfx+SwapSuffix)) }, syncDir)
	}
	for _, s := range group {
		for _, sfx := range segmentSuffixes() {
			s, sfx := s, sfx
			steps = append(steps, func() error {
				err := fs.Rename(p(s.baseOffset, sfx), p(s.baseOffset, sfx+DeletedSuffix))
				if vfs.IsNotExist(err) {
					return nil
				}
				return err
			}, syncDir)
		}
	}
	for _, sfx := range []string{IndexSuffix, TimeIndexSuffix, LogSuffix} {
		sfx := sfx
		steps = append(steps, func() error { return fs.Rename(p(base, sfx+SwapSuffix), p(base, sfx)) }, syncDir)
	}
	for _, s := range group {
		for _, sfx := range segmentSuffixes() {
			s, sfx := s, sfx
			steps = append(steps, func() error {
				if err := fs.Remove(p(s.baseOffset, sfx+DeletedSuffix)); err != nil && !vfs.IsNotExist(err) {
					return err
				}
				return nil
			})
		}
	}
	steps = append(steps, syncDir)

	same := func(a, b [][]byte) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if !bytes.Equal(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	outcomes := map[string]int{}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("protocol step %d: %v", i, err)
		}
		for _, clean := range []bool{false, true} {
			img := fs.CrashClone()
			l, err := Open(Options{FS: img, Clock: clk, Dir: crashDir, Config: cfg, Logger: discardLogger(),
				RecoveryPoint: 1 << 62, LogStartOffset: -1, HighWatermark: -1, CleanShutdown: clean})
			if err != nil {
				t.Fatalf("crash after step %d: open: %v", i, err)
			}
			got := readAllBatches(t, l, 0)
			switch {
			case same(got, oldAll):
				outcomes["old"]++
			case same(got, newAll):
				outcomes["new"]++
			case !keepTail && isMixWithOldTail(got, newAll, oldAll):
				// The swap file alone cannot tell that the group's last
				// segment was part of it (Kafka has the same limit):
				// recovery keeps that segment's old batches after the new
				// ones. Offsets still increase and nothing is lost.
				outcomes["new+old tail"]++
			default:
				t.Fatalf("crash after step %d (clean=%v): %d batches, neither the old (%d) nor the new (%d) set\n%s",
					i, clean, len(got), len(oldAll), len(newAll), img)
			}
			l2 := openAt(t, img.CrashClone(), clk, cfg, false, 0, -1)
			if got2 := readAllBatches(t, l2, 0); !same(got, got2) {
				t.Fatalf("crash after step %d: unstable after a second crash", i)
			}
			names, _ := img.List(crashDir)
			for _, n := range names {
				if hasSuffixAny(n, CleanedSuffix, SwapSuffix, DeletedSuffix) {
					t.Fatalf("crash after step %d: %s left behind", i, n)
				}
			}
		}
	}
	t.Logf("outcomes: %v", outcomes)
	if outcomes["old"] == 0 || outcomes["new"] == 0 {
		t.Fatalf("outcomes %v: expected both the old and the new set", outcomes)
	}
}

// isMixWithOldTail reports whether got is the new set with the old batches of
// some segments past the rewrite's end put back, in offset order.
func isMixWithOldTail(got, newAll, oldAll [][]byte) bool {
	in := func(set [][]byte, b []byte) bool {
		for _, x := range set {
			if bytes.Equal(x, b) {
				return true
			}
		}
		return false
	}
	offs := make([]int64, 0, len(got))
	for _, b := range got {
		if !in(newAll, b) && !in(oldAll, b) {
			return false
		}
		h, _ := record.ParseHeader(b)
		offs = append(offs, h.BaseOffset)
	}
	for _, b := range newAll {
		if !in(got, b) {
			return false
		}
	}
	return sort.SliceIsSorted(offs, func(i, j int) bool { return offs[i] < offs[j] })
}

// prefixed adds context to a fataler's messages.
type prefixed struct {
	*testing.T
	prefix string
}

func (p prefixed) Fatalf(format string, args ...any) {
	p.T.Helper()
	p.T.Fatalf(p.prefix+format, args...)
}

// A new log costs no fsync until its first record: Open, AssignTopicID and
// AssignLeaderEpoch write unsynced, and the sync of the first record makes
// the log's directory, its entry in the parent, partition.metadata and the
// epoch durable. Crashing at every step: once SyncTo has returned, the
// crash image holds the record, the topic id and the epoch; before, it
// holds a loadable log (or none) and never a record without its topic id.
func TestNewLogDurableWithItsFirstRecord(t *testing.T) {
	id := [16]byte{7, 7, 7}
	run := func(fs vfs.FS) (acked bool, err error) {
		l, err := Open(Options{FS: fs, Clock: clock.NewFake(t0), Dir: crashDir, Config: crashConfig(), Logger: discardLogger(),
			RecoveryPoint: 0, LogStartOffset: 0, HighWatermark: 0, CleanShutdown: true})
		if err != nil {
			return false, err
		}
		if err := l.AssignTopicID(id); err != nil {
			return false, err
		}
		if err := l.AssignLeaderEpoch(3); err != nil {
			return false, err
		}
		if _, err := l.Append(testBatch(t, 2, t0.UnixMilli(), "k"), OriginClient, 3); err != nil {
			return false, err
		}
		if err := l.SyncTo(2); err != nil {
			return false, err
		}
		return true, nil
	}
	counter := vfs.NewCountingInjector()
	if _, err := run(vfs.NewInjecting(vfs.NewMem(), counter)); err != nil {
		t.Fatal(err)
	}
	syncs := vfs.NewCountingInjector(vfs.OpSync, vfs.OpSyncDir)
	mem := vfs.NewMem()
	if _, err := run(vfs.NewInjecting(mem, syncs)); err != nil {
		t.Fatal(err)
	}
	if n := syncs.Count(); n > 6 {
		t.Fatalf("a new log and its first record cost %d fsyncs", n)
	}
	for k := int64(0); k <= counter.Count(); k++ {
		mem := vfs.NewMem()
		acked, _ := run(vfs.NewInjecting(mem, vfs.FromIndex(k)))
		img := mem.CrashClone()
		if _, err := img.Stat(crashDir); vfs.IsNotExist(err) {
			if acked {
				t.Fatalf("crash at op %d: the log's directory is lost after its record was acknowledged", k)
			}
			continue
		}
		l, err := Open(Options{FS: img, Clock: clock.NewFake(t0), Dir: crashDir, Config: crashConfig(), Logger: discardLogger(),
			RecoveryPoint: 0, LogStartOffset: -1, HighWatermark: -1})
		if err != nil {
			t.Fatalf("crash at op %d: open: %v", k, err)
		}
		gotID := ReadTopicID(img, crashDir)
		if l.LogEndOffset() > 0 && gotID != id {
			t.Fatalf("crash at op %d: a record without partition.metadata naming its topic (%x)", k, gotID)
		}
		if acked {
			if l.LogEndOffset() != 2 || gotID != id || l.LatestEpoch() != 3 {
				t.Fatalf("crash at op %d after the acknowledgement: LEO %d, topic id %x, epoch %d", k, l.LogEndOffset(), gotID, l.LatestEpoch())
			}
		}
		l.Close()
	}
}
