// Package jepsen is the checker of Gregor's Jepsen-style transaction tests
// (the single-node one in test/e2e, the cluster one in test/cluster): a
// History of transactions of unique values, each with the outcome its
// client saw (committed, aborted, or unknown when it lost the answer), and
// of every value read_committed consumers polled, with its partition and
// offset, and of a final read of everything decided. Check finds Jepsen's
// anomalies in it:
//
//   - aborted read: a value of an aborted transaction polled or in the
//     final read;
//   - uncommitted read: a value polled that the final read does not hold;
//   - lost write: no value of an acknowledged commit in the final read;
//   - torn transaction: the final read holds some values of a transaction
//     and not others;
//   - duplicate: a value at two offsets;
//   - inconsistent offsets: one partition offset read with two values;
//   - nonmonotonic poll: a consumer's offsets of a partition went back;
//   - unstable read: a read_committed fetch returned a record at or above
//     the last stable offset it reported, or an LSO above its HW.
//
// Callers may record anomalies of their own kinds (Anomaly) and report
// them with these (Report). A History is safe for concurrent producers and
// consumers while a run goes on; Check and Report run after it.
package jepsen

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Outcome is how a transaction ended as its client saw it.
type Outcome int

const (
	Committed Outcome = iota
	Aborted
	Unknown
)

func (o Outcome) String() string { return [...]string{"committed", "aborted", "unknown"}[o] }

// Txn is one transaction: its values, its outcome, and for a
// consume-transform-produce one the group and the input positions
// [From, To) it transformed.
type Txn struct {
	Values   []string
	Result   Outcome
	Group    string
	From, To int64
}

// Observation is one read of a value.
type Observation struct {
	Consumer  int // -1: the final read
	Partition int32
	Offset    int64
}

// Kinds are the anomalies Check looks for.
var Kinds = []string{"aborted read", "uncommitted read", "lost write", "torn transaction", "duplicate",
	"inconsistent offsets", "nonmonotonic poll", "unstable read"}

// History is what a run saw.
type History struct {
	mu        sync.Mutex
	txns      map[string]*Txn
	valueTxn  map[string]string
	reads     map[string][]Observation
	final     map[string][]Observation
	anomalies map[string][]string
}

// New returns an empty history.
func New() *History {
	return &History{txns: map[string]*Txn{}, valueTxn: map[string]string{}, reads: map[string][]Observation{},
		final: map[string][]Observation{}, anomalies: map[string][]string{}}
}

// Begin records a transaction before its first record is sent; its Result
// may be set when it ends (Unknown until then).
func (h *History) Begin(name string, tx *Txn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.txns[name] = tx
	for _, v := range tx.Values {
		h.valueTxn[v] = name
	}
}

// Txns are the recorded transactions by name; read them once the run is
// over.
func (h *History) Txns() map[string]*Txn { return h.txns }

// InFinal reports whether the final read holds value v.
func (h *History) InFinal(v string) bool { return len(h.final[v]) > 0 }

// Anomaly records one anomaly of kind.
func (h *History) Anomaly(kind, format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.anomalies[kind] = append(h.anomalies[kind], fmt.Sprintf(format, args...))
}

// Poll polls with cl, a read_committed consumer, until stop, recording
// every value it reads as consumer's.
func (h *History) Poll(ctx context.Context, cl *kgo.Client, consumer int, stop <-chan struct{}) {
	last := map[int32]int64{}
	for {
		select {
		case <-stop:
			return
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		h.observe(fs, consumer, last, h.reads)
	}
}

// observe records a poll's records and checks them against the fetch's own
// offsets.
func (h *History) observe(fs kgo.Fetches, c int, last map[int32]int64, into map[string][]Observation) {
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if p.LastStableOffset > p.HighWatermark && p.HighWatermark >= 0 {
			h.Anomaly("unstable read", "consumer %d partition %d: LSO %d above HW %d", c, p.Partition, p.LastStableOffset, p.HighWatermark)
		}
		for _, r := range p.Records {
			if r.Offset >= p.LastStableOffset && p.LastStableOffset >= 0 {
				h.Anomaly("unstable read", "consumer %d partition %d: offset %d at or above the LSO %d", c, p.Partition, r.Offset, p.LastStableOffset)
			}
			if prev, ok := last[p.Partition]; ok && r.Offset <= prev {
				h.Anomaly("nonmonotonic poll", "consumer %d partition %d: offset %d after %d", c, p.Partition, r.Offset, prev)
			}
			last[p.Partition] = r.Offset
			h.mu.Lock()
			into[string(r.Value)] = append(into[string(r.Value)], Observation{Consumer: c, Partition: p.Partition, Offset: r.Offset})
			h.mu.Unlock()
		}
	})
}

// Drain is the final read: it appends a plain end record to each of
// topic's partitions with producer (a manual partitioner) and reads with
// consumer (read_committed, from the start) until every end record, so
// everything decided before is in the final read.
func (h *History) Drain(ctx context.Context, t testing.TB, producer, consumer *kgo.Client, topic string, partitions int) {
	t.Helper()
	end := "end-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	for p := range partitions {
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(end)}).FirstErr(); err != nil {
			t.Fatalf("end record: %v", err)
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	seen := map[int32]bool{}
	last := map[int32]int64{}
	for len(seen) < partitions {
		fs := consumer.PollFetches(dctx)
		if dctx.Err() != nil {
			t.Fatalf("final read: end records of %d of %d partitions after 60s", len(seen), partitions)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == end {
				seen[r.Partition] = true
			}
		})
		h.observe(fs, -1, last, h.final)
	}
}

// Check looks for the anomalies of Kinds in the history.
func (h *History) Check() {
	h.checkReads()
	h.checkTxns()
}

// checkReads: what was polled and read at the end against the outcomes.
func (h *History) checkReads() {
	at := map[[2]int64]string{}
	for _, m := range []map[string][]Observation{h.reads, h.final} {
		for v, obs := range m {
			for _, o := range obs {
				k := [2]int64{int64(o.Partition), o.Offset}
				if prev, ok := at[k]; ok && prev != v {
					h.Anomaly("inconsistent offsets", "partition %d offset %d read as %s and %s", o.Partition, o.Offset, prev, v)
				}
				at[k] = v
			}
		}
	}
	for v, obs := range h.reads {
		name, ok := h.valueTxn[v]
		if !ok {
			continue
		}
		switch {
		case h.txns[name].Result == Aborted:
			h.Anomaly("aborted read", "%s (aborted) polled at partition %d offset %d", v, obs[0].Partition, obs[0].Offset)
		case len(h.final[v]) == 0:
			h.Anomaly("uncommitted read", "%s (%v) polled at partition %d offset %d, not in the final read",
				v, h.txns[name].Result, obs[0].Partition, obs[0].Offset)
		}
	}
	for v, obs := range h.final {
		name, ok := h.valueTxn[v]
		if !ok {
			continue // the end records
		}
		if h.txns[name].Result == Aborted {
			h.Anomaly("aborted read", "%s (aborted) in the final read", v)
		}
		offsets := map[[2]int64]bool{}
		for _, o := range obs {
			offsets[[2]int64{int64(o.Partition), o.Offset}] = true
		}
		if len(offsets) > 1 {
			h.Anomaly("duplicate", "%s at %v", v, offsets)
		}
	}
}

// checkTxns: each transaction whole or not at all, committed ones whole.
func (h *History) checkTxns() {
	for name, tx := range h.txns {
		present := 0
		for _, v := range tx.Values {
			if len(h.final[v]) > 0 {
				present++
			}
		}
		switch {
		case present > 0 && present < len(tx.Values):
			h.Anomaly("torn transaction", "%s: %d of %d values read (%v)", name, present, len(tx.Values), tx.Result)
		case tx.Result == Committed && present == 0:
			h.Anomaly("lost write", "%s: committed, none of its values read", name)
		}
	}
}

// Report logs the history's counts, kills (or other events) and the count
// of each anomaly of kinds, and fails t for every kind found, or if no
// transaction committed (the history would check nothing).
func (h *History) Report(t testing.TB, kinds []string, events ...string) {
	t.Helper()
	counts := map[Outcome]int{}
	records := 0
	for _, tx := range h.txns {
		counts[tx.Result]++
		records += len(tx.Values)
	}
	for _, e := range events {
		t.Logf("%s", e)
	}
	t.Logf("transactions: %d committed, %d aborted, %d unknown (%d records); %d values in the final read, %d distinct values polled",
		counts[Committed], counts[Aborted], counts[Unknown], records, len(h.final), len(h.reads))
	var found []string
	for _, k := range kinds {
		found = append(found, fmt.Sprintf("%s %d", k, len(h.anomalies[k])))
	}
	t.Logf("anomalies: %v", found)
	for _, k := range kinds {
		if a := h.anomalies[k]; len(a) > 0 {
			t.Errorf("%s: %d, e.g. %v", k, len(a), a[:min(len(a), 5)])
		}
	}
	if counts[Committed] == 0 {
		t.Error("no transaction committed: the history checks nothing")
	}
}
