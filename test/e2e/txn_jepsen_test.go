package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A Jepsen-style checker for transactions (design note §3, §7.3): concurrent
// transactional producers commit and abort transactions of unique values
// over several partitions while read_committed consumers poll, and the
// broker is SIGKILLed and restarted on its data dir. The history (every
// transaction's values and outcome: committed, aborted, or unknown when the
// client lost its answer; every value each consumer read, with its offset)
// is checked for Jepsen's anomalies:
//
//   - aborted read: a read_committed consumer saw a value of an aborted
//     transaction;
//   - lost write: a value of an acknowledged commit is not in the final read;
//   - torn transaction: the final read holds some values of a transaction
//     and not others;
//   - duplicate: a value at two offsets;
//   - inconsistent offsets: one partition offset read with two values;
//   - nonmonotonic poll: a consumer's offsets of a partition went back;
//   - unstable read: a read_committed fetch returned a record at or above
//     the last stable offset it reported, or an LSO above its HW.
//
// go test runs a small history; GREGOR_LONG=1 a larger one with more kills,
// under transactions v2 and v1.
func TestTxnJepsen(t *testing.T) {
	t.Parallel()
	cfg := jepsenConfig{producers: 3, txns: 20, records: 4, partitions: 4, kills: 2}
	tvs := []string{"2"}
	if os.Getenv("GREGOR_LONG") != "" {
		cfg = jepsenConfig{producers: 6, txns: 150, records: 6, partitions: 6, kills: 6}
		tvs = []string{"2", "1"}
	}
	for _, tv := range tvs {
		t.Run("transaction.version="+tv, func(t *testing.T) {
			c := cfg
			c.tv = tv
			h := runJepsen(t, c)
			h.check(t)
		})
	}
}

type jepsenConfig struct {
	producers, txns, records, partitions, kills int
	tv                                          string
}

type outcome int

const (
	committed outcome = iota
	aborted
	unknown
)

type jepsenTxn struct {
	values []string
	result outcome
}

type observation struct {
	consumer  int
	partition int32
	offset    int64
}

// history is what the run saw.
type history struct {
	mu        sync.Mutex
	txns      map[string]*jepsenTxn // by transaction name
	valueTxn  map[string]string     // value -> transaction
	reads     map[string][]observation
	final     map[string][]observation // the final drain's reads
	anomalies map[string][]string
	kills     int
	ended     atomic.Int64 // transactions ended (any outcome)
}

func (h *history) anomaly(kind, format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.anomalies[kind] = append(h.anomalies[kind], fmt.Sprintf(format, args...))
}

func runJepsen(t *testing.T, cfg jepsenConfig) *history {
	dir := t.TempDir()
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	args := []string{"--listen", listen,
		"--set", "gregor.transaction.version=" + cfg.tv,
		"--set", "transaction.state.log.num.partitions=4",
		"--set", "transaction.abort.timed.out.transaction.cleanup.interval.ms=200"}
	p := startProc(t, dir, args...)
	topic := uniqueTopic(t)
	createTopic(t, p.addr, topic, int32(cfg.partitions), nil)
	h := &history{txns: map[string]*jepsenTxn{}, valueTxn: map[string]string{}, reads: map[string][]observation{},
		final: map[string][]observation{}, anomalies: map[string][]string{}}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	stopReading := make(chan struct{})
	var readers sync.WaitGroup
	for c := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			h.read(ctx, t, listen, topic, c, stopReading, h.reads)
		}()
	}
	var active atomic.Int32
	var workers sync.WaitGroup
	for w := range cfg.producers {
		workers.Add(1)
		active.Add(1)
		go func() {
			defer workers.Done()
			defer active.Add(-1)
			h.produce(ctx, t, listen, topic, w, cfg)
		}()
	}
	// Kill at even steps of the history, while transactions are in flight.
	total := int64(cfg.producers * cfg.txns)
	for k := 0; k < cfg.kills; k++ {
		at := int64(k+1) * total / int64(cfg.kills+1)
		for h.ended.Load() < at && active.Load() > 0 {
			time.Sleep(2 * time.Millisecond)
		}
		if active.Load() == 0 {
			break
		}
		p.sigkill()
		p = startProc(t, dir, args...)
		h.kills++
	}
	workers.Wait()
	close(stopReading)
	readers.Wait()
	// The final read: everything decided (open transactions of clients that
	// lost their answer are aborted at their timeout) up to an end record
	// appended to every partition.
	h.drain(ctx, t, listen, topic, cfg.partitions)
	return h
}

// produce runs one producer's transactions. A transaction whose end the
// client did not see answered is unknown; the client is then replaced (its
// InitProducerId fences the old one and aborts what it left open).
func (h *history) produce(ctx context.Context, t *testing.T, addr, topic string, w int, cfg jepsenConfig) {
	newClient := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(fmt.Sprintf("jepsen-%d", w)),
			kgo.TransactionTimeout(3*time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequestRetries(20), kgo.RetryTimeout(20*time.Second))
		if err != nil {
			t.Error(err)
		}
		return cl
	}
	cl := newClient()
	defer func() { cl.Close() }()
	rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
	for i := range cfg.txns {
		name := fmt.Sprintf("w%d-t%d", w, i)
		tx := &jepsenTxn{result: unknown}
		recs := make([]*kgo.Record, cfg.records)
		for r := range recs {
			v := fmt.Sprintf("%s-r%d", name, r)
			tx.values = append(tx.values, v)
			recs[r] = &kgo.Record{Topic: topic, Partition: int32(rng.IntN(cfg.partitions)), Value: []byte(v)}
		}
		h.mu.Lock()
		h.txns[name] = tx
		for _, v := range tx.values {
			h.valueTxn[v] = name
		}
		h.mu.Unlock()
		commit := rng.IntN(5) != 0
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := cl.BeginTransaction()
		if err == nil {
			err = cl.ProduceSync(tctx, recs...).FirstErr()
		}
		end := kgo.TransactionEndTry(commit && err == nil)
		if cl.EndTransaction(tctx, end) == nil {
			tx.result = aborted
			if end == kgo.TryCommit {
				tx.result = committed
			}
		}
		cancel()
		h.ended.Add(1)
		if tx.result == unknown {
			cl.Close()
			cl = newClient()
		}
	}
}

// read polls every partition from the start with read_committed until stop,
// recording each value with its offset into into.
func (h *history) read(ctx context.Context, t *testing.T, addr, topic string, c int, stop <-chan struct{}, into map[string][]observation) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Error(err)
		return
	}
	defer cl.Close()
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
		h.observe(fs, c, last, into)
	}
}

// observe records a poll's records and checks them against the fetch's own
// offsets.
func (h *history) observe(fs kgo.Fetches, c int, last map[int32]int64, into map[string][]observation) {
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if p.LastStableOffset > p.HighWatermark && p.HighWatermark >= 0 {
			h.anomaly("unstable read", "consumer %d partition %d: LSO %d above HW %d", c, p.Partition, p.LastStableOffset, p.HighWatermark)
		}
		for _, r := range p.Records {
			if r.Offset >= p.LastStableOffset && p.LastStableOffset >= 0 {
				h.anomaly("unstable read", "consumer %d partition %d: offset %d at or above the LSO %d", c, p.Partition, r.Offset, p.LastStableOffset)
			}
			if prev, ok := last[p.Partition]; ok && r.Offset <= prev {
				h.anomaly("nonmonotonic poll", "consumer %d partition %d: offset %d after %d", c, p.Partition, r.Offset, prev)
			}
			last[p.Partition] = r.Offset
			h.mu.Lock()
			into[string(r.Value)] = append(into[string(r.Value)], observation{consumer: c, partition: p.Partition, offset: r.Offset})
			h.mu.Unlock()
		}
	})
}

// drain appends a plain end record to every partition and reads
// read_committed until each one's end record, into h.final.
func (h *history) drain(ctx context.Context, t *testing.T, addr, topic string, partitions int) {
	end := "end-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	pcl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range partitions {
		if err := pcl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(end)}).FirstErr(); err != nil {
			t.Fatalf("end record: %v", err)
		}
	}
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	seen := map[int32]bool{}
	last := map[int32]int64{}
	for len(seen) < partitions {
		fs := cl.PollFetches(dctx)
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

func (h *history) check(t *testing.T) {
	counts := map[outcome]int{}
	for _, tx := range h.txns {
		counts[tx.result]++
	}
	for v, obs := range h.reads {
		if name, ok := h.valueTxn[v]; ok && h.txns[name].result == aborted {
			h.anomaly("aborted read", "%s (aborted) read at partition %d offset %d", v, obs[0].partition, obs[0].offset)
		}
	}
	at := map[[2]int64]string{}
	for v, obs := range h.final {
		name, ok := h.valueTxn[v]
		if !ok {
			continue // the end records, one per partition
		}
		if h.txns[name].result == aborted {
			h.anomaly("aborted read", "%s (aborted) in the final read", v)
		}
		offsets := map[[2]int64]bool{}
		for _, o := range obs {
			offsets[[2]int64{int64(o.partition), o.offset}] = true
		}
		if len(offsets) > 1 {
			h.anomaly("duplicate", "%s at %v", v, offsets)
		}
	}
	for v, obs := range h.reads {
		for _, o := range obs {
			k := [2]int64{int64(o.partition), o.offset}
			if prev, ok := at[k]; ok && prev != v {
				h.anomaly("inconsistent offsets", "partition %d offset %d read as %s and %s", o.partition, o.offset, prev, v)
			}
			at[k] = v
		}
	}
	for name, tx := range h.txns {
		present := 0
		for _, v := range tx.values {
			if len(h.final[v]) > 0 {
				present++
			}
		}
		switch {
		case present > 0 && present < len(tx.values):
			h.anomaly("torn transaction", "%s: %d of %d values read (%v)", name, present, len(tx.values), tx.result)
		case tx.result == committed && present == 0:
			h.anomaly("lost write", "%s: committed, none of its values read", name)
		}
	}
	readValues := 0
	for range h.final {
		readValues++
	}
	t.Logf("transactions: %d committed, %d aborted, %d unknown; %d broker kills; %d values in the final read, %d distinct values polled",
		counts[committed], counts[aborted], counts[unknown], h.kills, readValues, len(h.reads))
	kinds := []string{"aborted read", "lost write", "torn transaction", "duplicate", "inconsistent offsets", "nonmonotonic poll", "unstable read"}
	for _, k := range kinds {
		t.Logf("%s: %d", k, len(h.anomalies[k]))
	}
	for _, k := range kinds {
		if a := h.anomalies[k]; len(a) > 0 {
			t.Errorf("%s: %d, e.g. %v", k, len(a), a[:min(len(a), 5)])
		}
	}
	if counts[committed] == 0 {
		t.Error("no transaction committed: the history checks nothing")
	}
}
