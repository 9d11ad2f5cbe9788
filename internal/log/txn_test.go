package log

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Transactions on one partition: markers, the last stable offset, the
// aborted-transaction index and verification. The cases port the intent of
// Kafka's UnifiedLogTest / ProducerStateManagerTest / TransactionIndexTest
// cases named in each comment.

// txnData is n transactional records of pid at epoch from sequence seq.
func txnData(t testing.TB, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	spec := &record.BatchSpec{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Transactional: true}
	for i := range n {
		spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: t0.UnixMilli(),
			Key: fmt.Appendf(nil, "p%d-%d", pid, int(seq)+i), Value: []byte("v")})
	}
	b, err := record.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustMarker(t testing.TB, l *Log, pid int64, epoch int16, commit bool, coordEpoch int32) AppendResult {
	t.Helper()
	res, err := l.AppendMarker(MarkerSpec{ProducerID: pid, ProducerEpoch: epoch, Commit: commit,
		CoordinatorEpoch: coordEpoch, TransactionVersion: TV1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func checkOffsets(t testing.TB, l *Log, lso, hw int64) {
	t.Helper()
	if got := l.LastStableOffset(); got != lso {
		t.Fatalf("last stable offset %d, want %d", got, lso)
	}
	if got := l.HighWatermark(); got != hw {
		t.Fatalf("high watermark %d, want %d", got, hw)
	}
	if !(l.LogStartOffset() <= l.LastStableOffset() && l.LastStableOffset() <= l.HighWatermark() && l.HighWatermark() <= l.LogEndOffset()) {
		t.Fatalf("log start %d, LSO %d, HW %d, LEO %d out of order", l.LogStartOffset(), l.LastStableOffset(), l.HighWatermark(), l.LogEndOffset())
	}
}

// testFirstUnstableOffsetWithTransactionalData: the open transaction holds
// the LSO at its first offset whatever the HW does; its COMMIT marker frees
// it only once the HW passes the marker (the marker could still be lost
// with this leader until then).
func TestLSOFollowsTransaction(t *testing.T) {
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	defer l.Close()
	mustAppend(t, l, testBatch(t, 2, t0.UnixMilli(), "plain"), 0) // 0-1
	mustAppend(t, l, txnData(t, 1, 0, 0, 3), 0)                   // 2-4
	mustAppend(t, l, testBatch(t, 2, t0.UnixMilli(), "plain"), 0) // 5-6
	mustAppend(t, l, txnData(t, 1, 0, 3, 2), 0)                   // 7-8
	checkOffsets(t, l, 0, 0)
	l.SetHighWatermark(l.LogEndOffset())
	checkOffsets(t, l, 2, 9)
	m := mustMarker(t, l, 1, 0, true, 0) // 9
	if m.BaseOffset != 9 || l.LogEndOffset() != 10 {
		t.Fatalf("marker at %d, LEO %d: a marker takes one offset", m.BaseOffset, l.LogEndOffset())
	}
	checkOffsets(t, l, 2, 9) // decided, but the marker is not under the HW
	l.MaybeIncrementHighWatermark(10)
	checkOffsets(t, l, 10, 10)
	if txns := l.OpenTransactions(); len(txns) != 0 {
		t.Fatalf("open transactions after the commit: %+v", txns)
	}
}

// testLastStableOffsetWithMixedProducerData: with two producers the LSO is
// the earliest open transaction's first offset; an abort enters the index
// with the LSO of its moment (the other producer's first offset).
func TestLSOWithTwoProducers(t *testing.T) {
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	defer l.Close()
	mustAppend(t, l, txnData(t, 1, 0, 0, 2), 0) // 0-1
	mustAppend(t, l, txnData(t, 2, 0, 0, 2), 0) // 2-3
	mustAppend(t, l, txnData(t, 1, 0, 2, 2), 0) // 4-5
	l.SetHighWatermark(l.LogEndOffset())
	checkOffsets(t, l, 0, 6)
	mustMarker(t, l, 1, 0, false, 0) // 6: abort pid 1
	l.MaybeIncrementHighWatermark(l.LogEndOffset())
	checkOffsets(t, l, 2, 7)
	want := []AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 6, LastStableOffset: 2}}
	got, err := l.AbortedTransactions(0, 7)
	if err != nil || !cmp.Equal(got, want) {
		t.Fatalf("aborted %+v %v, want %+v", got, err, want)
	}
	mustMarker(t, l, 2, 0, true, 0) // 7: commit pid 2
	l.MaybeIncrementHighWatermark(l.LogEndOffset())
	checkOffsets(t, l, 8, 8)
	// The last abort, with nothing else open: its LSO is the offset after
	// its marker.
	mustAppend(t, l, txnData(t, 2, 0, 2, 1), 0) // 8
	mustMarker(t, l, 2, 0, false, 0)            // 9
	got, _ = l.AbortedTransactions(0, 10)
	want = append(want, AbortedTxn{ProducerID: 2, FirstOffset: 8, LastOffset: 9, LastStableOffset: 10})
	if !cmp.Equal(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
}

// testZombieCoordinatorFenced and testEndTxnWithFencedProducerEpoch: a
// marker from an older coordinator epoch is TRANSACTION_COORDINATOR_FENCED,
// one with an older producer epoch INVALID_PRODUCER_EPOCH; neither is
// written.
func TestMarkerFencing(t *testing.T) {
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	defer l.Close()
	mustAppend(t, l, txnData(t, 1, 1, 0, 2), 0)
	mustMarker(t, l, 1, 1, false, 2)
	leo := l.LogEndOffset()
	_, err := l.AppendMarker(MarkerSpec{ProducerID: 1, ProducerEpoch: 1, Commit: true, CoordinatorEpoch: 1, TransactionVersion: TV1}, 0)
	if !errors.Is(err, ErrTransactionCoordinatorFenced) {
		t.Fatalf("marker from coordinator epoch 1 after 2: %v, want TRANSACTION_COORDINATOR_FENCED", err)
	}
	_, err = l.AppendMarker(MarkerSpec{ProducerID: 1, ProducerEpoch: 0, Commit: true, CoordinatorEpoch: 3, TransactionVersion: TV1}, 0)
	if !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("marker with producer epoch 0 after 1: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	if l.LogEndOffset() != leo {
		t.Fatal("a refused marker was written")
	}
	// TV1 accepts the same epoch again (a coordinator re-sending after a
	// reload); TV2 needs a newer one, except the retry of a marker already
	// written (KAFKA-19999): same epoch, no transaction open.
	mustMarker(t, l, 1, 1, false, 2)
	if _, err := l.AppendMarker(MarkerSpec{ProducerID: 1, ProducerEpoch: 1, CoordinatorEpoch: 2, TransactionVersion: TV2}, 0); err != nil {
		t.Fatalf("TV2 marker retry at the current epoch with no transaction open: %v", err)
	}
	mustAppend(t, l, txnData(t, 1, 1, 2, 1), 0)
	if _, err := l.AppendMarker(MarkerSpec{ProducerID: 1, ProducerEpoch: 1, CoordinatorEpoch: 2, TransactionVersion: TV2}, 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("TV2 marker at the epoch of an open transaction: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	if _, err := l.AppendMarker(MarkerSpec{ProducerID: 1, ProducerEpoch: 2, CoordinatorEpoch: 2, TransactionVersion: TV2}, 0); err != nil {
		t.Fatalf("TV2 marker with the bumped epoch: %v", err)
	}
	if e, _ := l.Producer(1); e.Epoch != 2 || e.CurrentTxnFirstOffset != -1 || e.CoordinatorEpoch != 2 {
		t.Fatalf("producer after the TV2 marker: %+v", e)
	}
	// The next transaction of a TV2 producer starts at sequence 0 of the new
	// epoch.
	mustAppend(t, l, txnData(t, 1, 2, 0, 1), 0)
}

// A marker for a producer with no transaction open here completes nothing:
// no index entry, no LSO effect (Kafka emits no CompletedTxn).
func TestMarkerWithoutTransaction(t *testing.T) {
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	defer l.Close()
	mustAppend(t, l, testBatch(t, 3, t0.UnixMilli(), "plain"), 0)
	mustMarker(t, l, 9, 0, false, 0)
	l.SetHighWatermark(l.LogEndOffset())
	checkOffsets(t, l, 4, 4)
	if got, _ := l.AbortedTransactions(0, 4); len(got) != 0 {
		t.Fatalf("aborted %+v for a marker without a transaction", got)
	}
}

// A plain batch from a producer with a transaction open is INVALID_TXN_STATE
// (Kafka's appendDataBatch); an older epoch is INVALID_PRODUCER_EPOCH before
// anything else (KAFKA-19690).
func TestTransactionalProduceChecks(t *testing.T) {
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	defer l.Close()
	mustAppend(t, l, txnData(t, 1, 3, 0, 2), 0)
	plain, err := record.Build(&record.BatchSpec{ProducerID: 1, ProducerEpoch: 3, BaseSequence: 2,
		Records: []record.BuildRecord{{Timestamp: t0.UnixMilli(), Value: []byte("x")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(plain, OriginClient, 0); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("plain batch during a transaction: %v, want INVALID_TXN_STATE", err)
	}
	// A fenced producer writing to a partition its old transaction never
	// reached: the epoch answers first, not the verification gate.
	l.AppendMarker(MarkerSpec{ProducerID: 1, ProducerEpoch: 4, CoordinatorEpoch: 0, TransactionVersion: TV1}, 0)
	if _, err := l.Append(txnData(t, 1, 3, 2, 1), OriginClient, 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("fenced transactional batch: %v, want INVALID_PRODUCER_EPOCH", err)
	}
}

// testTransactionIsOngoingAndVerificationGuard: a transactional batch opens
// a transaction only with the producer's current guard. A marker between
// the verification and the append (the transaction was aborted meanwhile)
// voids the guard, so a late batch cannot open a transaction nobody will
// end (KAFKA-14884).
func TestVerificationGuard(t *testing.T) {
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	defer l.Close()
	b := txnData(t, 1, 0, 0, 1)
	if _, err := l.Append(bytes.Clone(b), OriginClient, 0); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("unverified transactional batch: %v, want INVALID_TXN_STATE", err)
	}
	g := l.StartTransactionVerification(1, 0, 0, false)
	if g == 0 {
		t.Fatal("no guard for a producer with no transaction open")
	}
	if again := l.StartTransactionVerification(1, 0, 0, false); again != g {
		t.Fatalf("a second verification got guard %d, want the same %d", again, g)
	}
	mustMarker(t, l, 1, 0, false, 0) // the transaction aborted meanwhile
	if _, err := l.AppendVerified(bytes.Clone(b), 0, g); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("batch with a guard a marker voided: %v, want INVALID_TXN_STATE", err)
	}
	g = l.StartTransactionVerification(1, 0, 0, false)
	if _, err := l.AppendVerified(bytes.Clone(b), 0, g); err != nil {
		t.Fatal(err)
	}
	if g := l.StartTransactionVerification(1, 1, 0, false); g != 0 {
		t.Fatalf("guard %d for a producer with a transaction open here: none is needed", g)
	}
	if _, err := l.AppendVerified(txnData(t, 1, 0, 1, 1), 0, 0); err != nil {
		t.Fatalf("next batch of the open transaction: %v", err)
	}
	// With verification off, Kafka appends without asking.
	cfg := l.Config()
	cfg.TransactionVerification = false
	l.SetConfig(cfg)
	if _, err := l.Append(txnData(t, 5, 0, 0, 1), OriginClient, 0); err != nil {
		t.Fatalf("transactional batch with verification off: %v", err)
	}
}

// Of several batches in flight, verified together, only the lowest sequence
// may open the transaction; a transactions v2 producer with no state here
// must start at sequence 0.
func TestVerificationSequences(t *testing.T) {
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	defer l.Close()
	g := l.StartTransactionVerification(1, 5, 0, false)
	l.StartTransactionVerification(1, 3, 0, false)
	if _, err := l.AppendVerified(txnData(t, 1, 0, 5, 1), 0, g); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence 5 before the verified 3: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", err)
	}
	if _, err := l.AppendVerified(txnData(t, 1, 0, 3, 2), 0, g); err != nil {
		t.Fatal(err)
	}
	g = l.StartTransactionVerification(2, 4, 0, true)
	if _, err := l.AppendVerified(txnData(t, 2, 0, 4, 1), 0, g); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("TV2 producer's first batch at sequence 4: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", err)
	}
}

// testAbortedTransactionSpanningMultipleSegments: the entry lives in the
// segment of the ABORT marker, so a read of the first segment finds it in a
// later one; a read past the aborted range does not see it.
func TestAbortSpanningSegments(t *testing.T) {
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	defer l.Close()
	mustAppend(t, l, txnData(t, 1, 0, 0, 5), 0) // 0-4
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, txnData(t, 1, 0, 5, 5), 0) // 5-9
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, testBatch(t, 2, t0.UnixMilli(), "x"), 0) // 10-11
	mustMarker(t, l, 1, 0, false, 0)                          // 12
	l.SetHighWatermark(l.LogEndOffset())
	want := []AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 12, LastStableOffset: 13}}
	for _, r := range [][2]int64{{0, 5}, {3, 10}, {11, 13}} {
		got, err := l.AbortedTransactions(r[0], r[1])
		if err != nil || !cmp.Equal(got, want) {
			t.Fatalf("aborted in [%d, %d): %+v %v, want %+v", r[0], r[1], got, err, want)
		}
	}
	if got, _ := l.AbortedTransactions(13, 14); len(got) != 0 {
		t.Fatalf("aborted past the marker: %+v", got)
	}
	if n := len(l.segments()); n != 3 || l.segments()[2].txn.count() != 1 || l.segments()[0].txn.count() != 0 {
		t.Fatal("the entry is not in the marker's segment only")
	}
}

// The .txnindex is Kafka's: 34-byte entries, version 0 and four int64s.
func TestTxnIndexFormat(t *testing.T) {
	fs := vfs.NewMem()
	l := openTest(t, fs, clock.NewFake(t0), smallConfig(), false)
	mustAppend(t, l, txnData(t, 0x0102, 0, 0, 2), 0)
	mustMarker(t, l, 0x0102, 0, false, 7)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := vfs.ReadFile(fs, "/data/t-0/"+FileName(0)+TxnIndexSuffix)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0, 0, // version
		0, 0, 0, 0, 0, 0, 1, 2, // producer id
		0, 0, 0, 0, 0, 0, 0, 0, // first offset
		0, 0, 0, 0, 0, 0, 0, 2, // last offset: the marker
		0, 0, 0, 0, 0, 0, 0, 3, // last stable offset
	}
	if !bytes.Equal(data, want) {
		t.Fatalf("txnindex bytes\n%x, want\n%x", data, want)
	}
	// The marker itself: control and transactional, sequence -1, one record
	// whose key is {0, ABORT} and value {0, coordinator epoch 7}.
	got := readAllBatches(t, openTest(t, fs, clock.NewFake(t0), smallConfig(), true), 0)
	h, _ := record.ParseHeader(got[1])
	m, err := record.ParseControl(got[1], 1<<20)
	if err != nil || !h.Control() || !h.Transactional() || h.BaseSequence != -1 || h.ProducerID != 0x0102 ||
		m.Type != record.ControlAbort || m.CoordinatorEpoch != 7 || h.NumRecords != 1 {
		t.Fatalf("marker %+v %+v %v", h, m, err)
	}
}

// Producer state with open transactions and the index survive a clean
// restart (snapshot) and a crash (replay from an older snapshot, index
// rebuilt); truncation drops the entries of what it removes.
func TestTransactionsAfterRestartAndTruncation(t *testing.T) {
	for _, how := range []string{"clean", "crash", "crash-no-snapshot"} {
		t.Run(how, func(t *testing.T) {
			fs := durableDirFS(t)
			clk := clock.NewFake(t0)
			l := openTest(t, fs, clk, smallConfig(), false)
			mustAppend(t, l, txnData(t, 1, 0, 0, 2), 0) // 0-1
			mustAppend(t, l, txnData(t, 2, 0, 0, 2), 0) // 2-3
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
			mustMarker(t, l, 1, 0, false, 0)            // 4
			mustAppend(t, l, txnData(t, 3, 0, 0, 1), 0) // 5
			mustMarker(t, l, 3, 0, false, 0)            // 6
			mustAppend(t, l, txnData(t, 1, 0, 2, 1), 0) // 7: pid 1's next transaction, left open
			l.SetHighWatermark(l.LogEndOffset())
			wantAborted, _ := l.AbortedTransactions(0, 8)
			wantLSO := l.LastStableOffset()
			if len(wantAborted) != 2 || wantLSO != 2 {
				t.Fatalf("before restart: aborted %+v, LSO %d", wantAborted, wantLSO)
			}
			var l2 *Log
			switch how {
			case "clean":
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				l2 = openAt(t, fs, clk, smallConfig(), true, l.LogEndOffset(), 0)
			default:
				if err := l.SyncTo(l.LogEndOffset()); err != nil {
					t.Fatal(err)
				}
				img := fs.CrashClone()
				if how == "crash-no-snapshot" {
					for _, n := range mustList(t, img) {
						if bytes.HasSuffix([]byte(n), []byte(SnapshotSuffix)) {
							img.Remove("/data/t-0/" + n)
						}
					}
				}
				l2 = openAt(t, img, clk, smallConfig(), false, 0, 0)
			}
			defer l2.Close()
			l2.SetHighWatermark(l2.LogEndOffset())
			if got, _ := l2.AbortedTransactions(0, 8); !cmp.Equal(got, wantAborted) {
				t.Fatalf("aborted after %s restart %+v, want %+v", how, got, wantAborted)
			}
			if got := l2.LastStableOffset(); got != wantLSO {
				t.Fatalf("LSO after %s restart %d, want %d", how, got, wantLSO)
			}
			// Truncating to 5 removes pid 3's abort (marker 6) and pid 1's
			// second transaction; pid 2's stays open.
			if err := l2.TruncateTo(5); err != nil {
				t.Fatal(err)
			}
			l2.SetHighWatermark(l2.LogEndOffset())
			if got, _ := l2.AbortedTransactions(0, 5); !cmp.Equal(got, wantAborted[:1]) {
				t.Fatalf("aborted after truncation %+v, want %+v", got, wantAborted[:1])
			}
			if got := l2.LastStableOffset(); got != 2 {
				t.Fatalf("LSO after truncation %d, want 2 (pid 2 still open)", got)
			}
			mustMarker(t, l2, 3, 0, true, 0) // the index accepts appends again at 5
		})
	}
}

func mustList(t *testing.T, fs vfs.FS) []string {
	t.Helper()
	names, err := fs.List("/data/t-0")
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// DeleteRecords past an open transaction's first offset raises the LSO to
// the log start offset; retention removes a segment's index with it.
func TestTransactionsAndLogStart(t *testing.T) {
	cfg := smallConfig()
	cfg.FileDeleteDelayMs = 0
	fs := vfs.NewMem()
	l := openTest(t, fs, clock.NewFake(t0), cfg, false)
	defer l.Close()
	mustAppend(t, l, txnData(t, 1, 0, 0, 2), 0) // 0-1
	mustMarker(t, l, 1, 0, false, 0)            // 2
	mustAppend(t, l, txnData(t, 2, 0, 0, 2), 0) // 3-4
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, testBatch(t, 2, t0.UnixMilli(), "x"), 0) // 5-6
	l.SetHighWatermark(l.LogEndOffset())
	checkOffsets(t, l, 3, 7)
	if _, err := l.IncrementLogStartOffset(6); err != nil {
		t.Fatal(err)
	}
	checkOffsets(t, l, 6, 7)
	for _, n := range mustList(t, fs) {
		if n == FileName(0)+TxnIndexSuffix {
			t.Fatal("the deleted segment's .txnindex is still there")
		}
	}
}

// A follower appending its leader's batches (OriginReplication) as they
// are rebuilds the same transactional state: markers complete
// transactions, aborts enter its index with the leader's entries, and its
// last stable offset follows.
func TestFollowerReplicatesTransactions(t *testing.T) {
	leader := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	defer leader.Close()
	mustAppend(t, leader, txnData(t, 1, 0, 0, 2), 0)
	mustAppend(t, leader, txnData(t, 2, 0, 0, 1), 0)
	mustMarker(t, leader, 1, 0, false, 3)
	mustAppend(t, leader, testBatch(t, 2, t0.UnixMilli(), "x"), 0)
	mustMarker(t, leader, 2, 0, true, 3)
	mustAppend(t, leader, txnData(t, 1, 0, 2, 1), 0) // left open
	data := readAllBatches(t, leader, 0)

	follower, err := Open(Options{FS: vfs.NewMem(), Clock: clock.NewFake(t0), Dir: "/data/t-0", Config: smallConfig(),
		Logger: discardLogger(), RecoveryPoint: 0, LogStartOffset: -1, HighWatermark: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()
	for _, b := range data {
		if _, err := follower.Append(bytes.Clone(b), OriginReplication, 0); err != nil {
			t.Fatal(err)
		}
	}
	leader.SetHighWatermark(leader.LogEndOffset())
	follower.SetHighWatermark(follower.LogEndOffset())
	want, _ := leader.AbortedTransactions(0, leader.LogEndOffset())
	got, _ := follower.AbortedTransactions(0, follower.LogEndOffset())
	if len(want) != 1 || !cmp.Equal(got, want) {
		t.Fatalf("follower's aborted transactions %+v, leader's %+v", got, want)
	}
	if follower.LastStableOffset() != leader.LastStableOffset() || follower.LastStableOffset() != 7 {
		t.Fatalf("LSO: follower %d, leader %d, want 7", follower.LastStableOffset(), leader.LastStableOffset())
	}
}

// A follower's truncations cut its transactional state back with the log
// (Kafka's UnifiedLog.truncateTo reloads the producer state and truncates
// the transaction index): cut before an ABORT marker, the aborted
// transaction is open again and holds the LSO, its index entry is gone;
// fetched again, the state is the leader's again. Emptied and restarted past
// its end (truncateFullyAndStartAt), nothing is open and logStart = LSO = HW
// = LEO: the LSO does not stay behind at an offset the log no longer has.
func TestFollowerTruncationCutsTransactions(t *testing.T) {
	leader := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	defer leader.Close()
	mustAppend(t, leader, txnData(t, 1, 0, 0, 2), 0)               // 0-1
	mustMarker(t, leader, 1, 0, false, 3)                          // 2
	mustAppend(t, leader, txnData(t, 2, 0, 0, 1), 0)               // 3, left open
	mustAppend(t, leader, testBatch(t, 2, t0.UnixMilli(), "x"), 0) // 4-5
	data := readAllBatches(t, leader, 0)
	follower, err := Open(Options{FS: vfs.NewMem(), Clock: clock.NewFake(t0), Dir: "/data/t-0", Config: smallConfig(),
		Logger: discardLogger(), RecoveryPoint: 0, LogStartOffset: -1, HighWatermark: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()
	fetch := func(from int) {
		t.Helper()
		for _, b := range data[from:] {
			if _, err := follower.Append(bytes.Clone(b), OriginReplication, 0); err != nil {
				t.Fatal(err)
			}
		}
		follower.SetHighWatermark(follower.LogEndOffset())
	}
	fetch(0)
	checkOffsets(t, follower, 3, 6)
	if got, _ := follower.AbortedTransactions(0, 6); len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 2 {
		t.Fatalf("aborted transactions %+v, want pid 1's 0-2", got)
	}

	if err := follower.TruncateTo(2); err != nil { // the ABORT marker goes
		t.Fatal(err)
	}
	checkOffsets(t, follower, 0, 2)
	if got, _ := follower.AbortedTransactions(0, 2); len(got) != 0 {
		t.Fatalf("aborted transactions after cutting the marker: %+v", got)
	}
	if open := follower.OpenTransactions(); len(open) != 1 || open[0].ProducerID != 1 {
		t.Fatalf("open transactions after cutting the marker: %+v, want pid 1's", open)
	}
	fetch(1) // data[1] is the marker
	checkOffsets(t, follower, 3, 6)
	if got, _ := follower.AbortedTransactions(0, 6); len(got) != 1 {
		t.Fatalf("aborted transactions fetched again: %+v", got)
	}

	if err := follower.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	checkOffsets(t, follower, 100, 100)
	if open := follower.OpenTransactions(); len(open) != 0 {
		t.Fatalf("open transactions after restarting the log at 100: %+v", open)
	}
}
