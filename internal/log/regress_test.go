package log

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Regression tests, one per bug found while testing the log.

// mustAppend appends a client batch; a transactional one is verified
// first, as the produce path does once the transaction coordinator agrees.
func mustAppend(t testing.TB, l *Log, b []byte, epoch int32) AppendResult {
	t.Helper()
	res, err := appendVerified(l, b, epoch)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func appendVerified(l *Log, b []byte, epoch int32) (AppendResult, error) {
	h, err := record.ParseHeader(b)
	if err != nil || !h.Transactional() {
		return l.Append(b, OriginClient, epoch)
	}
	g := l.StartTransactionVerification(h.ProducerID, h.BaseSequence, h.ProducerEpoch, false)
	return l.AppendVerified(b, epoch, g)
}

func batchWithTimestamps(t testing.TB, ts ...int64) []byte {
	t.Helper()
	spec := &record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	for i, x := range ts {
		spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: x, Value: []byte("v")})
	}
	b, err := record.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func idempotentBatch(t testing.TB, pid int64, seq int32, n int) []byte {
	t.Helper()
	spec := &record.BatchSpec{ProducerID: pid, ProducerEpoch: 0, BaseSequence: seq}
	for i := 0; i < n; i++ {
		spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: t0.UnixMilli(), Value: []byte("v")})
	}
	b, err := record.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// durableDirFS is a MemFS whose partition directory already exists durably
// (as if made by an earlier run), so that crash tests do not depend on Open
// syncing a directory it creates.
func durableDirFS(t testing.TB) *vfs.MemFS {
	t.Helper()
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/data/t-0", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/", "/data", "/data/t-0"} {
		if err := fs.SyncDir(d); err != nil {
			t.Fatal(err)
		}
	}
	return fs
}

func openAt(t testing.TB, fs vfs.FS, clk clock.Clock, cfg Config, clean bool, recoveryPoint, logStart int64) *Log {
	t.Helper()
	l, err := Open(Options{FS: fs, Clock: clk, Dir: "/data/t-0", Config: cfg, Logger: discardLogger(),
		RecoveryPoint: recoveryPoint, LogStartOffset: logStart, HighWatermark: -1, CleanShutdown: clean})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Read bounded by maxOffset == the log end offset it saw must not return
// batches appended after it looked (segment sizes are loaded later than the
// log end offset).
func TestReadStopsAtMaxOffsetWhenSizeRunsAhead(t *testing.T) {
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	mustAppend(t, l, testBatch(t, 2, t0.UnixMilli(), "a"), 0)
	hw := l.LogEndOffset()
	mustAppend(t, l, testBatch(t, 2, t0.UnixMilli(), "b"), 0)
	// A reader that loaded the log end offset before the second append but
	// the segment size after it.
	l.leo.Store(hw)
	data, err := l.Read(nil, 0, 1<<20, hw, true)
	l.leo.Store(hw + 2)
	if err != nil {
		t.Fatal(err)
	}
	for len(data) > 0 {
		b, rest, _ := record.Split(data)
		h, _ := record.ParseHeader(b)
		if h.LastOffset() >= hw {
			t.Fatalf("read bounded by %d returned batch %d..%d", hw, h.BaseOffset, h.LastOffset())
		}
		data = rest
	}
}

// Readers racing with the appender never see a batch at or past the bound
// they asked for, and never a partial or corrupt batch.
func TestConcurrentReadersAndAppender(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 16 << 10
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), cfg, false)
	const appends = 400
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 8)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			off := int64(0)
			for {
				select {
				case <-done:
					return
				default:
				}
				hw := l.HighWatermark()
				var err error
				buf, err = l.Read(buf[:0], off, 8<<10, hw, true)
				if err != nil {
					errs <- err
					return
				}
				for data := buf; len(data) > 0; {
					b, rest, ok := record.Split(data)
					h, err := record.ValidateStored(b)
					if !ok || err != nil || h.LastOffset() >= hw || h.BaseOffset != off {
						errs <- errors.New("bad batch from a concurrent read")
						return
					}
					off, data = h.NextOffset(), rest
				}
				if off >= appends*3 {
					off = 0
				}
			}
		}()
	}
	for i := 0; i < appends; i++ {
		mustAppend(t, l, testBatch(t, 3, t0.UnixMilli(), "k"), 0)
		l.SetHighWatermark(l.LogEndOffset() - int64(i%2)*3)
	}
	close(done)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// FindOffsetByTimestamp went no further than the first batch reaching the
// timestamp even when only records below the log start offset did.
func TestFindOffsetByTimestampSkipsRecordsBelowLogStart(t *testing.T) {
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	base := t0.UnixMilli()
	mustAppend(t, l, batchWithTimestamps(t, base+1000, base+10, base+10), 0) // 0..2
	mustAppend(t, l, batchWithTimestamps(t, base+500, base+600), 0)          // 3..4
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.IncrementLogStartOffset(1); err != nil {
		t.Fatal(err)
	}
	got, ok, err := l.FindOffsetByTimestamp(base + 400)
	if err != nil || !ok || got.Offset != 3 || got.Timestamp != base+500 {
		t.Fatalf("FindOffsetByTimestamp: %+v %v %v, want offset 3", got, ok, err)
	}
}

// A timestamp of math.MinInt64 made the time index lookup wrap around to its
// last entry.
func TestFindOffsetByTimestampMinInt64(t *testing.T) {
	cfg := smallConfig()
	cfg.IndexIntervalBytes = 0
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), cfg, false)
	for i := 0; i < 10; i++ {
		mustAppend(t, l, testBatch(t, 1, t0.UnixMilli()+int64(i), "k"), 0)
	}
	got, ok, err := l.FindOffsetByTimestamp(math.MinInt64)
	if err != nil || !ok || got.Offset != 0 {
		t.Fatalf("FindOffsetByTimestamp(MinInt64): %+v %v %v, want offset 0", got, ok, err)
	}
}

// Truncating below the log start offset clamped the target to the log start
// offset and left the log end offset below the log start offset.
func TestTruncateBelowLogStartOffset(t *testing.T) {
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	mustAppend(t, l, testBatch(t, 3, t0.UnixMilli(), "a"), 0) // 0..2
	mustAppend(t, l, testBatch(t, 5, t0.UnixMilli(), "b"), 0) // 3..7
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.IncrementLogStartOffset(5); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(4); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 3 || l.LogStartOffset() != 3 || l.HighWatermark() != 3 {
		t.Fatalf("after truncating to 4: log start %d, HW %d, LEO %d; want 3, 3, 3",
			l.LogStartOffset(), l.HighWatermark(), l.LogEndOffset())
	}
	if res := mustAppend(t, l, testBatch(t, 1, t0.UnixMilli(), "c"), 0); res.BaseOffset != 3 {
		t.Fatalf("append after truncation at %d", res.BaseOffset)
	}
}

// Truncating below the first segment empties the log and restarts it at the
// target offset (Kafka's truncateFullyAndStartAt).
func TestTruncateBelowFirstSegment(t *testing.T) {
	fs := durableDirFS(t)
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.FileDeleteDelayMs = 0
	l := openTest(t, fs, clk, cfg, false)
	for i := 0; i < 40; i++ {
		mustAppend(t, l, testBatch(t, 3, t0.UnixMilli(), "k"), int32(i/10))
	}
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.IncrementLogStartOffset(60); err != nil {
		t.Fatal(err)
	}
	first := l.segments()[0].baseOffset
	if first == 0 {
		t.Fatal("no segment was deleted")
	}
	if err := l.TruncateTo(first - 5); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != first-5 || l.LogStartOffset() != first-5 || l.NumSegments() != 1 || l.LatestEpoch() != -1 {
		t.Fatalf("after full truncation: log start %d, LEO %d, %d segments, epoch %d",
			l.LogStartOffset(), l.LogEndOffset(), l.NumSegments(), l.LatestEpoch())
	}
	if res := mustAppend(t, l, testBatch(t, 1, t0.UnixMilli(), "c"), 7); res.BaseOffset != first-5 {
		t.Fatalf("append after full truncation at %d", res.BaseOffset)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	l2 := openAt(t, fs.CrashClone(), clk, cfg, false, 0, -1)
	if l2.LogStartOffset() != first-5 || l2.LogEndOffset() != first-4 {
		t.Fatalf("after a crash: log start %d, LEO %d", l2.LogStartOffset(), l2.LogEndOffset())
	}
}

// Truncating inside a batch left a time index entry pointing at the cut
// batch, so the segment's largest timestamp stayed the cut batch's.
func TestTruncateMidBatchTrimsTimeIndex(t *testing.T) {
	cfg := smallConfig()
	cfg.IndexIntervalBytes = 0
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), cfg, false)
	base := t0.UnixMilli()
	mustAppend(t, l, batchWithTimestamps(t, base+1, base+2), 0)       // 0..1
	mustAppend(t, l, batchWithTimestamps(t, base+3, base+4), 0)       // 2..3
	mustAppend(t, l, batchWithTimestamps(t, base+9000, base+9001), 0) // 4..5, then an entry (9001, 4)
	mustAppend(t, l, batchWithTimestamps(t, base+9002), 0)            // 6, indexes the batch at 4
	if err := l.TruncateTo(5); err != nil {
		t.Fatal(err)
	}
	got, ok, err := l.MaxTimestampOffset()
	if err != nil || !ok || got.Offset != 3 || got.Timestamp != base+4 {
		t.Fatalf("max timestamp after truncating to 5: %+v %v %v, want offset 3", got, ok, err)
	}
	if _, ok, _ := l.FindOffsetByTimestamp(base + 5); ok {
		t.Fatal("found a record later than every remaining one")
	}
}

func TestTruncateNegative(t *testing.T) {
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	mustAppend(t, l, testBatch(t, 1, t0.UnixMilli(), "a"), 0)
	if err := l.TruncateTo(-1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("truncate to -1: %v", err)
	}
}

// An append that won the race with Close was closed without an fsync,
// although Close makes the next start skip recovery.
func TestCloseSyncsRacingAppends(t *testing.T) {
	for round := 0; round < 20; round++ {
		fs := vfs.NewMem()
		clk := clock.NewFake(t0)
		l := openTest(t, fs, clk, smallConfig(), false)
		var mu sync.Mutex
		var acked []int64
		var wg sync.WaitGroup
		for g := 0; g < 2; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 200; i++ {
					res, err := l.Append(testBatch(t, 1, t0.UnixMilli(), "k"), OriginClient, 0)
					if errors.Is(err, ErrClosed) {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					acked = append(acked, res.BaseOffset)
					mu.Unlock()
				}
			}()
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if err := l.SyncTo(math.MaxInt64); !errors.Is(err, ErrClosed) {
			t.Fatalf("SyncTo after Close: %v", err)
		}
		l2 := openAt(t, fs.CrashClone(), clk, smallConfig(), true, math.MaxInt64, -1)
		for _, off := range acked {
			if off >= l2.LogEndOffset() {
				t.Fatalf("round %d: offset %d appended before Close returned is lost (LEO %d)", round, off, l2.LogEndOffset())
			}
		}
	}
}

// SyncTo failed (and kept failing) when retention deleted and closed a
// rolled segment while the sync was under way.
func TestSyncToWhileRetentionDeletesRolledSegment(t *testing.T) {
	mem := vfs.NewMem()
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.FileDeleteDelayMs = 0
	var l *Log
	armed := false
	inj := vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if armed && op == vfs.OpSync {
			armed = false
			if _, err := l.IncrementLogStartOffset(l.LogEndOffset()); err != nil {
				t.Errorf("delete records: %v", err)
			}
		}
		return nil
	})
	l = openAt(t, vfs.NewInjecting(mem, inj), clk, cfg, false, 0, -1)
	for i := 0; i < 30; i++ {
		mustAppend(t, l, testBatch(t, 3, t0.UnixMilli(), "k"), 0)
	}
	if l.NumSegments() < 3 {
		t.Fatal("expected rolls")
	}
	l.SetHighWatermark(l.LogEndOffset())
	armed = true
	if err := l.Flush(); err != nil {
		t.Fatalf("flush with a concurrent retention pass: %v", err)
	}
	mustAppend(t, l, testBatch(t, 3, t0.UnixMilli(), "k"), 0)
	if err := l.Flush(); err != nil {
		t.Fatalf("second flush: %v", err)
	}
}

// Open created the partition directory without syncing its parent, so a
// crash could lose the directory with every acknowledged record in it.
func TestOpenMakesNewDirectoryDurable(t *testing.T) {
	fs := vfs.NewMem()
	clk := clock.NewFake(t0)
	l := openTest(t, fs, clk, smallConfig(), false)
	res := mustAppend(t, l, testBatch(t, 2, t0.UnixMilli(), "k"), 0)
	if err := l.SyncTo(res.LastOffset + 1); err != nil {
		t.Fatal(err)
	}
	l2 := openTest(t, fs.CrashClone(), clk, smallConfig(), false)
	if l2.LogEndOffset() != 2 {
		t.Fatalf("acknowledged records lost with the directory: LEO %d", l2.LogEndOffset())
	}
}

// After an unclean stop, a snapshot taken at a roll could describe batches
// that never reached the disk; a retried batch was then answered as a
// duplicate with offsets that do not exist.
func TestUncleanOpenDropsSnapshotsAboveRecoveryPoint(t *testing.T) {
	fs := durableDirFS(t)
	clk := clock.NewFake(t0)
	l := openTest(t, fs, clk, smallConfig(), false)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, idempotentBatch(t, 9, 0, 2), 0) // not synced
	if err := l.Roll(); err != nil {                 // the snapshot at 2 is synced
		t.Fatal(err)
	}
	l2 := openAt(t, fs.CrashClone(), clk, smallConfig(), false, 0, -1)
	res, err := l2.Append(idempotentBatch(t, 9, 0, 2), OriginClient, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Duplicate {
		t.Fatalf("retry of a lost batch answered as a duplicate at %d..%d (LEO %d)", res.BaseOffset, res.LastOffset, l2.LogEndOffset())
	}
}

// A segment rebuilt by recovery lacked the final time index entry a roll
// writes, so after a later clean start its largest timestamp was unknown.
func TestRecoveredSegmentKeepsLargestTimestamp(t *testing.T) {
	fs := durableDirFS(t)
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.SegmentIndexBytes = 0 // no index entries at all: a roll per batch
	l := openTest(t, fs, clk, cfg, false)
	mustAppend(t, l, testBatch(t, 1, t0.UnixMilli()+5, "a"), 0)
	mustAppend(t, l, testBatch(t, 1, t0.UnixMilli()+5, "b"), 0)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	fs = fs.CrashClone()
	l = openTest(t, fs, clk, cfg, false)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openAt(t, fs, clk, cfg, true, l.LogEndOffset(), -1)
	got, ok, err := l.FindOffsetByTimestamp(t0.UnixMilli() + 5)
	if err != nil || !ok || got.Offset != 0 {
		t.Fatalf("FindOffsetByTimestamp: %+v %v %v, want offset 0", got, ok, err)
	}
}

// A roll with nothing new to sync left the sealed segment's indexes unsynced:
// Flush returned at once and RecoveryPoint already covered the segment.
func TestFlushAfterRollSyncsSealedSegment(t *testing.T) {
	fs := durableDirFS(t)
	clk := clock.NewFake(t0)
	l := openTest(t, fs, clk, smallConfig(), false)
	mustAppend(t, l, testBatch(t, 2, t0.UnixMilli()+7, "a"), 0)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if rp := l.RecoveryPoint(); rp != 0 {
		t.Fatalf("recovery point %d covers a segment whose indexes are not synced", rp)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if rp := l.RecoveryPoint(); rp != 2 {
		t.Fatalf("recovery point %d after flush, want 2", rp)
	}
	l2 := openAt(t, fs.CrashClone(), clk, smallConfig(), false, l.RecoveryPoint(), -1)
	got, ok, err := l2.FindOffsetByTimestamp(t0.UnixMilli() + 7)
	if err != nil || !ok || got.Offset != 0 {
		t.Fatalf("FindOffsetByTimestamp after crash: %+v %v %v", got, ok, err)
	}
}

// Reloading producer state from a snapshot taken before DeleteRecords passed
// a producer's batch brought back a producer the log had evicted, so a reused
// sequence matched the old batch. Producers are no longer evicted by the log
// start offset (Kafka since KIP-360): the retry is a duplicate of the
// original batch before and after a reload from that snapshot.
func TestProducerKeptPastLogStartAcrossReload(t *testing.T) {
	fs := durableDirFS(t)
	clk := clock.NewFake(t0)
	l := openTest(t, fs, clk, smallConfig(), false)
	first := mustAppend(t, l, idempotentBatch(t, 1, 0, 1), 0) // offset 0
	if err := l.Roll(); err != nil {                          // snapshot at 1 knows producer 1
		t.Fatal(err)
	}
	mustAppend(t, l, testBatch(t, 5, t0.UnixMilli(), "x"), 0) // 1..5
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.IncrementLogStartOffset(3); err != nil { // deletes segment 0
		t.Fatal(err)
	}
	check := func(l *Log, what string) {
		t.Helper()
		dup, err := l.Append(idempotentBatch(t, 1, 0, 1), OriginClient, 0)
		if err != nil || !dup.Duplicate || dup.BaseOffset != first.BaseOffset {
			t.Fatalf("%s: retry %+v %v, want a duplicate of %d", what, dup, err, first.BaseOffset)
		}
		if _, err := l.Append(idempotentBatch(t, 1, 2, 1), OriginClient, 0); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("%s: sequence 2 after 0: %v", what, err)
		}
	}
	check(l, "running")
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	check(openAt(t, fs.CrashClone(), clk, smallConfig(), false, l.LogEndOffset(), 3), "after a crash")
}

// Replaying producer state from the log start offset skipped the batch that
// holds it.
func TestProducerReplayIncludesBatchHoldingLogStart(t *testing.T) {
	fs := durableDirFS(t)
	clk := clock.NewFake(t0)
	l := openTest(t, fs, clk, smallConfig(), false)
	first := mustAppend(t, l, idempotentBatch(t, 4, 0, 3), 0) // 0..2
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.IncrementLogStartOffset(1); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	l2 := openAt(t, fs.CrashClone(), clk, smallConfig(), false, 0, 1)
	dup, err := l2.Append(idempotentBatch(t, 4, 0, 3), OriginClient, 0)
	if err != nil || !dup.Duplicate || dup.BaseOffset != first.BaseOffset {
		t.Fatalf("retry after reopen: %+v %v, want a duplicate", dup, err)
	}
}

// A batch whose offsets run into the next segment (a damaged base offset
// field with a valid CRC) was accepted by recovery, giving overlapping
// segments.
func TestRecoveryCutsBatchOverlappingNextSegment(t *testing.T) {
	fs := vfs.NewMem()
	clk := clock.NewFake(t0)
	l := openTest(t, fs, clk, smallConfig(), false)
	for i := 0; i < 30; i++ {
		mustAppend(t, l, testBatch(t, 3, t0.UnixMilli(), "k"), 0)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs := l.segments()
	if len(segs) < 3 {
		t.Fatal("expected rolls")
	}
	// The base offset is not covered by the CRC.
	f, err := fs.OpenReadWrite(segs[0].path(LogSuffix))
	if err != nil {
		t.Fatal(err)
	}
	var off [8]byte
	off[7] = byte(segs[1].baseOffset)
	if _, err := f.WriteAt(off[:], 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	l2 := openTest(t, fs, clk, smallConfig(), false)
	if l2.LogEndOffset() != 0 || l2.NumSegments() != 1 {
		t.Fatalf("after recovery: LEO %d, %d segments; want an empty log", l2.LogEndOffset(), l2.NumSegments())
	}
}

// A damaged .swap file failed Open for good; with the segment it replaces
// still in place it is now dropped.
func TestDamagedSwapFileIsDropped(t *testing.T) {
	fs := vfs.NewMem()
	clk := clock.NewFake(t0)
	l := openTest(t, fs, clk, smallConfig(), false)
	for i := 0; i < 5; i++ {
		mustAppend(t, l, testBatch(t, 3, t0.UnixMilli(), "k"), 0)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create("/data/t-0/" + FileName(0) + LogSuffix + SwapSuffix)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("not a batch at all, just some bytes that are long enough to parse as a header........"))
	f.Close()
	l2 := openTest(t, fs, clk, smallConfig(), false)
	if l2.LogEndOffset() != 15 {
		t.Fatalf("LEO %d after dropping a damaged swap file", l2.LogEndOffset())
	}
}

// Append allocated once per index entry written (the entry array escaped
// through the File interface). Coordinator appends allocate nothing; client
// appends allocate once per batch, never per record, inside
// record.ValidateProduce (record.IterateRaw's Record escapes through its
// callback) — that one is the record package's to remove.
func TestAppendDoesNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts are noisy under -short")
	}
	for _, c := range []struct {
		origin  Origin
		records int
		max     float64
	}{{OriginCoordinator, 1, 0.05}, {OriginCoordinator, 100, 0.05}, {OriginClient, 1, 1.05}, {OriginClient, 100, 1.05}} {
		cfg := DefaultConfig()
		cfg.IndexIntervalBytes = 0 // an index entry per batch
		cfg.TimestampAfterMs = -1
		l, err := Open(Options{FS: vfs.OS(), Clock: clock.NewFake(t0), Dir: t.TempDir(), Config: cfg, Logger: discardLogger(),
			RecoveryPoint: -1, LogStartOffset: -1, HighWatermark: -1})
		if err != nil {
			t.Fatal(err)
		}
		b := testBatch(t, c.records, t0.UnixMilli(), "k")
		ts := t0.UnixMilli()
		allocs := testing.AllocsPerRun(2000, func() {
			ts++ // rising timestamps add a time index entry too
			binaryPutTimestamps(b, ts, c.records)
			if _, err := l.Append(b, c.origin, 0); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > c.max {
			t.Errorf("origin %d, %d records: %.2f allocations per append, want <= %.2f", c.origin, c.records, allocs, c.max)
		}
		l.Close()
	}
}

// binaryPutTimestamps sets the base and max timestamps of a testBatch of n
// records and fixes its CRC.
func binaryPutTimestamps(b []byte, ts int64, n int) {
	for i := 0; i < 8; i++ {
		b[27+i] = byte(uint64(ts) >> (56 - 8*i))
		b[35+i] = byte(uint64(ts+int64(n)-1) >> (56 - 8*i))
	}
	c := record.ComputeCRC(b)
	b[17], b[18], b[19], b[20] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
}

// For a LogAppendTime batch wholly below the log start offset,
// MaxTimestampOffset answered the log start offset, past the batch (here the
// log end offset, where no record is).
func TestMaxTimestampOffsetLogAppendTimeBelowLogStart(t *testing.T) {
	cfg := smallConfig()
	cfg.LogAppendTime = true
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), cfg, false)
	mustAppend(t, l, testBatch(t, 2, t0.UnixMilli()-5000, "a"), 0)
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.IncrementLogStartOffset(2); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := l.MaxTimestampOffset(); err != nil || ok {
		t.Fatalf("MaxTimestampOffset with every record below the log start offset: %+v %v %v", got, ok, err)
	}
}

// A stress test for the race detector: one appender (with rolls), group
// committers, retention and DeleteRecords, and readers, all at once. Offsets
// stay ordered (log start <= HW <= LEO), syncs never fail, readers see only
// whole, valid batches in offset order below their bound.
func TestConcurrentAppendSyncRetentionRead(t *testing.T) {
	fs := vfs.NewMem()
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.RetentionMs = 60_000
	cfg.FileDeleteDelayMs = 1 << 40 // files stay until the end: readers may hold old views
	l := openTest(t, fs, clk, cfg, false)
	const appends = 600
	var wg sync.WaitGroup
	stop := make(chan struct{})
	fail := make(chan error, 16)
	report := func(err error) {
		select {
		case fail <- err:
		default:
		}
	}
	spawn := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	for i := 0; i < 2; i++ {
		spawn(func() { // group committers
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := l.SyncTo(l.LogEndOffset()); err != nil {
					report(err)
					return
				}
				// Loaded in this order, since each only grows here.
				ls, hw, rp := l.LogStartOffset(), l.HighWatermark(), l.RecoveryPoint()
				if leo := l.LogEndOffset(); ls > hw || hw > leo || rp > leo {
					report(fmt.Errorf("offsets out of order: log start %d, HW %d, LEO %d, recovery point %d", ls, hw, leo, rp))
					return
				}
			}
		})
	}
	spawn(func() { // retention and DeleteRecords
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			clk.Advance(10 * time.Second)
			if _, err := l.DeleteOldSegments(clk.Now()); err != nil {
				report(err)
				return
			}
			if i%5 == 0 {
				if _, err := l.IncrementLogStartOffset((l.LogStartOffset() + l.HighWatermark()) / 2); err != nil {
					report(err)
					return
				}
			}
		}
	})
	for r := 0; r < 2; r++ {
		spawn(func() { // readers
			var buf []byte
			for {
				select {
				case <-stop:
					return
				default:
				}
				off, hw := l.LogStartOffset(), l.HighWatermark()
				var err error
				buf, err = l.Read(buf[:0], off, 4<<10, hw, true)
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue // retention passed off meanwhile
				}
				if err != nil {
					report(err)
					return
				}
				prev := int64(-1)
				for data := buf; len(data) > 0; {
					b, rest, ok := record.Split(data)
					h, err := record.ValidateStored(b)
					if !ok || err != nil || h.LastOffset() >= hw || h.BaseOffset <= prev {
						report(fmt.Errorf("bad batch read at %d (bound %d): %v", off, hw, err))
						return
					}
					prev, data = h.BaseOffset, rest
				}
			}
		})
	}
	for i := 0; i < appends; i++ {
		if _, err := l.Append(testBatch(t, 3, clk.Now().UnixMilli(), "k"), OriginClient, int32(i/100)); err != nil {
			t.Fatal(err)
		}
		l.SetHighWatermark(l.LogEndOffset())
		if i%50 == 0 {
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-fail:
		t.Fatal(err)
	default:
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TruncateTo removes the producer snapshots past the truncation point, and
// the removal is durable: found by TestLogModel (seed 5723859279618551588).
// A clean close writes a snapshot at the log end offset (22) holding producer
// 1; truncating to 5 cuts producer 1's batch away and removed that snapshot,
// but without a directory sync, so a crash after the log had grown past 22
// again brought it back, and the unclean reopen loaded producer 1 from it.
func TestTruncationRemovesSnapshotsDurably(t *testing.T) {
	fs := durableDirFS(t)
	clk := clock.NewFake(t0)
	cfg := DefaultConfig()
	l := openAt(t, fs, clk, cfg, true, -1, -1)
	mustAppend(t, l, batchWithTimestamps(t, t0.UnixMilli(), t0.UnixMilli(), t0.UnixMilli(), t0.UnixMilli(), t0.UnixMilli()), 0)
	mustAppend(t, l, idempotentBatch(t, 1, 0, 17), 0)
	if err := l.Close(); err != nil { // writes the snapshot at 22, with producer 1
		t.Fatal(err)
	}
	l = openAt(t, fs, clk, cfg, true, 22, 0)
	if err := l.TruncateTo(5); err != nil {
		t.Fatal(err)
	}
	ts := make([]int64, 20)
	for i := range ts {
		ts[i] = t0.UnixMilli()
	}
	mustAppend(t, l, batchWithTimestamps(t, ts...), 0)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	crashed := openAt(t, fs.CrashClone(), clk, cfg, false, 25, 0)
	defer crashed.Close()
	if _, ok := crashed.Producer(1); ok {
		t.Fatal("producer 1, whose batch was truncated away, is known again after a crash")
	}
	l.Close()
}

// An acknowledgement's fsync for offsets a follower truncation removed
// (the leader lost its leadership after appending) ends with ErrTruncated:
// before, SyncTo synced again and again for ever.
func TestSyncToTruncatedOffsets(t *testing.T) {
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	defer l.Close()
	for range 10 {
		if _, err := l.Append(testBatch(t, 1, t0.UnixMilli(), "k"), OriginClient, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.TruncateTo(5); err != nil {
		t.Fatal(err)
	}
	if err := l.SyncTo(10); !errors.Is(err, ErrTruncated) {
		t.Fatalf("SyncTo(10) after truncating to 5: %v, want ErrTruncated", err)
	}
	if err := l.SyncTo(5); err != nil {
		t.Fatalf("SyncTo(5): %v", err)
	}
}
