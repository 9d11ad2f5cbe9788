package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/test/jepsen"
)

// A Jepsen-style checker for transactions (design note §3, §7.3): concurrent
// transactional producers commit and abort transactions of unique values
// over several partitions while read_committed consumers poll, and the
// broker is SIGKILLed and restarted on its data dir. The history (every
// transaction's values and outcome, every value each consumer read, with
// its offset, and a final read) is checked for Jepsen's anomalies by
// test/jepsen (aborted, uncommitted and unstable reads, lost writes, torn
// transactions, duplicates, inconsistent offsets, nonmonotonic polls).
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
			h.Check()
			h.Report(t, jepsen.Kinds, fmt.Sprintf("%d broker kills", h.kills))
		})
	}
}

type jepsenConfig struct {
	producers, txns, records, partitions, kills int
	tv                                          string
}

// history is the checker's history and what the run did to the broker.
type history struct {
	*jepsen.History
	kills int
	ended atomic.Int64 // transactions ended (any outcome)
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
	h := &history{History: jepsen.New()}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	stopReading := make(chan struct{})
	var readers sync.WaitGroup
	for c := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			cl := newClient(t, listen, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
			h.Poll(ctx, cl, c, stopReading)
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
	h.Drain(ctx, t, newClient(t, listen, kgo.RecordPartitioner(kgo.ManualPartitioner())),
		newClient(t, listen, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond)),
		topic, cfg.partitions)
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
		tx := &jepsen.Txn{Result: jepsen.Unknown}
		recs := make([]*kgo.Record, cfg.records)
		for r := range recs {
			v := fmt.Sprintf("%s-r%d", name, r)
			tx.Values = append(tx.Values, v)
			recs[r] = &kgo.Record{Topic: topic, Partition: int32(rng.IntN(cfg.partitions)), Value: []byte(v)}
		}
		h.Begin(name, tx)
		commit := rng.IntN(5) != 0
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := cl.BeginTransaction()
		if err == nil {
			err = cl.ProduceSync(tctx, recs...).FirstErr()
		}
		end := kgo.TransactionEndTry(commit && err == nil)
		if cl.EndTransaction(tctx, end) == nil {
			tx.Result = jepsen.Aborted
			if end == kgo.TryCommit {
				tx.Result = jepsen.Committed
			}
		}
		cancel()
		h.ended.Add(1)
		if tx.Result == jepsen.Unknown {
			cl.Close()
			cl = newClient()
		}
	}
}
