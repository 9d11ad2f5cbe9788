package log

import (
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// TestTransactionModel drives a log with transactional producers, markers,
// plain batches, high watermark moves, rolls, DeleteRecords, truncation and
// restarts (clean, and crashes after a sync), and checks after every step
// the last stable offset and the aborted-transaction index against a naive
// replay of every batch appended and not truncated (the oracle), and
// logStart ≤ LSO ≤ HW ≤ LEO. rapid prints the seed that replays a failure.
func TestTransactionModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := newTxnModel(rt)
		m.tb = t
		defer m.l.Close()
		for i, n := 0, rapid.IntRange(1, 60).Draw(rt, "steps"); i < n; i++ {
			m.step(rt)
			m.check(rt)
		}
	})
}

// txnEvent is one batch in the oracle's history.
type txnEvent struct {
	base, last int64
	pid        int64 // -1: plain
	marker     bool
	commit     bool
}

type txnModel struct {
	tb     testing.TB // builds batches (which cannot fail)
	fs     *vfs.MemFS
	clk    *clock.Fake
	l      *Log
	events []txnEvent // appended, not truncated, in offset order
	epoch  map[int64]int16
	seq    map[int64]int32
	// unreplicated: markers (by pid, first offset, marker offset) of
	// transactions the oracle still counts as unstable.
	unreplicated []CompletedTxn
}

func newTxnModel(t *rapid.T) *txnModel {
	fs := vfs.NewMem()
	fs.MkdirAll("/data/t-0", 0o755)
	for _, d := range []string{"/", "/data", "/data/t-0"} {
		fs.SyncDir(d)
	}
	m := &txnModel{fs: fs, clk: clock.NewFake(t0), epoch: map[int64]int16{}, seq: map[int64]int32{}}
	m.l = m.open(t, false, 0, -1)
	return m
}

func (m *txnModel) open(t *rapid.T, clean bool, rp, hw int64) *Log {
	cfg := smallConfig()
	cfg.SegmentBytes = 600
	cfg.FileDeleteDelayMs = 0
	l, err := Open(Options{FS: m.fs, Clock: m.clk, Dir: "/data/t-0", Config: cfg, Logger: discardLogger(),
		RecoveryPoint: rp, LogStartOffset: -1, HighWatermark: hw, CleanShutdown: clean})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return l
}

// open is the oracle's view of open transactions: pid -> first offset.
func (m *txnModel) openTxns() map[int64]int64 {
	open := map[int64]int64{}
	for _, e := range m.events {
		switch {
		case e.pid < 0:
		case e.marker:
			delete(open, e.pid)
		default:
			if _, ok := open[e.pid]; !ok {
				open[e.pid] = e.base
			}
		}
	}
	return open
}

// aborted replays the history into Kafka's index entries.
func (m *txnModel) aborted() []AbortedTxn {
	open := map[int64]int64{}
	var out []AbortedTxn
	for _, e := range m.events {
		switch {
		case e.pid < 0:
		case e.marker:
			first, ok := open[e.pid]
			delete(open, e.pid)
			if !ok || e.commit {
				continue
			}
			lso := e.base + 1
			for _, f := range open {
				lso = min(lso, f)
			}
			out = append(out, AbortedTxn{ProducerID: e.pid, FirstOffset: first, LastOffset: e.base, LastStableOffset: lso})
		default:
			if _, ok := open[e.pid]; !ok {
				open[e.pid] = e.base
			}
		}
	}
	return out
}

func (m *txnModel) step(t *rapid.T) {
	l := m.l
	switch op := rapid.IntRange(0, 99).Draw(t, "op"); {
	case op < 30: // transactional data
		pid := rapid.Int64Range(1, 3).Draw(t, "pid")
		n := rapid.IntRange(1, 4).Draw(t, "n")
		res, err := appendVerified(l, txnData(m.tb, pid, m.epoch[pid], m.seq[pid], n), 0)
		if err != nil {
			t.Fatalf("transactional append: %v", err)
		}
		m.seq[pid] += int32(n)
		m.events = append(m.events, txnEvent{base: res.BaseOffset, last: res.LastOffset, pid: pid})
	case op < 50: // marker
		pid := rapid.Int64Range(1, 3).Draw(t, "pid")
		commit := rapid.Bool().Draw(t, "commit")
		if rapid.IntRange(0, 3).Draw(t, "bump") == 0 {
			m.epoch[pid]++
			m.seq[pid] = 0
		}
		c, open := CompletedTxn{ProducerID: pid, Aborted: !commit}, m.openTxns()
		res, err := l.AppendMarker(MarkerSpec{ProducerID: pid, ProducerEpoch: m.epoch[pid], Commit: commit, TransactionVersion: TV1}, 0)
		if err != nil {
			t.Fatalf("marker: %v", err)
		}
		m.events = append(m.events, txnEvent{base: res.BaseOffset, last: res.BaseOffset, pid: pid, marker: true, commit: commit})
		if first, ok := open[pid]; ok {
			c.FirstOffset, c.LastOffset = first, res.BaseOffset
			m.unreplicated = append(m.unreplicated, c)
		}
	case op < 62: // plain data
		res, err := l.Append(testBatch(m.tb, rapid.IntRange(1, 3).Draw(t, "n"), t0.UnixMilli(), "x"), OriginClient, 0)
		if err != nil {
			t.Fatal(err)
		}
		m.events = append(m.events, txnEvent{base: res.BaseOffset, last: res.LastOffset, pid: -1})
	case op < 75: // the high watermark moves up
		hw := l.HighWatermark() + rapid.Int64Range(0, l.LogEndOffset()-l.HighWatermark()).Draw(t, "hw")
		l.MaybeIncrementHighWatermark(hw)
		m.hwMoved()
	case op < 80:
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	case op < 85: // DeleteRecords
		to := l.LogStartOffset() + rapid.Int64Range(0, l.HighWatermark()-l.LogStartOffset()).Draw(t, "deleteTo")
		if _, err := l.IncrementLogStartOffset(to); err != nil {
			t.Fatal(err)
		}
	case op < 90: // a follower truncating, then catching up to the leader's HW
		to := l.LogEndOffset() - rapid.Int64Range(0, min(6, l.LogEndOffset()-l.LogStartOffset())).Draw(t, "truncateBy")
		if err := l.TruncateTo(to); err != nil {
			t.Fatal(err)
		}
		m.truncated(l.LogEndOffset())
		l.SetHighWatermark(l.LogEndOffset())
		m.hwMoved()
	default: // restart: clean, or a crash after everything was synced
		clean := rapid.Bool().Draw(t, "clean")
		l.SetHighWatermark(l.LogEndOffset())
		m.hwMoved()
		leo, hw := l.LogEndOffset(), l.HighWatermark()
		if clean {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			if err := l.SyncTo(leo); err != nil {
				t.Fatal(err)
			}
			m.fs = m.fs.CrashClone()
		}
		m.l = m.open(t, clean, rapid.Int64Range(0, leo).Draw(t, "recoveryPoint"), hw)
	}
}

func (m *txnModel) hwMoved() {
	hw := m.l.HighWatermark()
	n := 0
	for _, c := range m.unreplicated {
		if c.LastOffset >= hw {
			m.unreplicated[n] = c
			n++
		}
	}
	m.unreplicated = m.unreplicated[:n]
}

func (m *txnModel) truncated(leo int64) {
	n := 0
	for _, e := range m.events {
		if e.last < leo {
			m.events[n] = e
			n++
		}
	}
	m.events = m.events[:n]
	n = 0
	for _, c := range m.unreplicated {
		if c.LastOffset < leo {
			m.unreplicated[n] = c
			n++
		}
	}
	m.unreplicated = m.unreplicated[:n]
	m.seq = map[int64]int32{} // a truncated producer's state reloads; new epochs start at 0
	for pid := int64(1); pid <= 3; pid++ {
		m.epoch[pid]++
	}
}

func (m *txnModel) check(t *rapid.T) {
	l := m.l
	logStart, lso, hw, leo := l.LogStartOffset(), l.LastStableOffset(), l.HighWatermark(), l.LogEndOffset()
	if !(logStart <= lso && lso <= hw && hw <= leo) {
		t.Fatalf("log start %d, LSO %d, HW %d, LEO %d out of order", logStart, lso, hw, leo)
	}
	want := hw
	for _, f := range m.openTxns() {
		want = min(want, f)
	}
	for _, c := range m.unreplicated {
		want = min(want, c.FirstOffset)
	}
	if want < hw {
		want = max(want, min(logStart, hw))
	}
	if lso != want {
		t.Fatalf("LSO %d, oracle %d (HW %d, open %v, unreplicated %+v)", lso, want, hw, m.openTxns(), m.unreplicated)
	}
	all := m.aborted()
	for range 3 {
		if leo == logStart {
			break
		}
		from := logStart + rapid.Int64Range(0, leo-logStart-1).Draw(t, "from")
		upper := from + 1 + rapid.Int64Range(0, leo-from-1).Draw(t, "upper")
		got, err := l.AbortedTransactions(from, upper)
		if err != nil {
			t.Fatal(err)
		}
		var wantA []AbortedTxn
		for _, a := range all {
			if a.LastOffset < from {
				continue
			}
			if a.FirstOffset < upper {
				wantA = append(wantA, a)
			}
			if a.LastStableOffset >= upper {
				break
			}
		}
		if !cmp.Equal(got, wantA, cmp.Comparer(func(a, b []AbortedTxn) bool { return fmt.Sprint(a) == fmt.Sprint(b) })) {
			t.Fatalf("aborted in [%d, %d): %+v, oracle %+v", from, upper, got, wantA)
		}
	}
	open := m.openTxns()
	var pids []int64
	for _, o := range l.OpenTransactions() {
		if !o.Unreplicated {
			pids = append(pids, o.ProducerID)
			if open[o.ProducerID] != o.FirstOffset {
				t.Fatalf("open transaction of %d at %d, oracle %d", o.ProducerID, o.FirstOffset, open[o.ProducerID])
			}
		}
	}
	if len(pids) != len(open) {
		sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
		t.Fatalf("open transactions of %v, oracle %v", pids, open)
	}
	if errors.Is(l.Failed(), ErrStorageFailed) {
		t.Fatal("log failed")
	}
}
