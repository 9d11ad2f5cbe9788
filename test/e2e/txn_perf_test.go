package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// TestTxnPerformance (GREGOR_LONG=1) measures, paired in one run on one
// in-process broker with gregor.ack.fsync=true:
//   - transactional produce committing every 100 ms against idempotent
//     produce, 1 KiB records (target ≥ 0.8×), in alternating rounds and in
//     concurrent ones (both at once on their own partitions: the pairing
//     that survives a shared machine's swings);
//   - a read_committed catch-up read of a log with 10% aborted transactions
//     against a read_uncommitted one (target ≥ 0.9×);
//   - how long after EndTxn's answer the last stable offset passes the
//     commit's marker (its markers are written after the answer).
//
// Values are incompressible and sent uncompressed. The test reports the
// figures and asserts only that everything it reads is there: the machine is
// shared with other work, so read the ratios, not the rates.
func TestTxnPerformance(t *testing.T) {
	if os.Getenv("GREGOR_LONG") == "" {
		t.Skip("GREGOR_LONG=1 runs the transaction benchmarks")
	}
	b := brokertest.Start(t, nil)
	addr := b.Addr().String()
	// Incompressible values, sent uncompressed: the bytes on the wire and
	// on disk are the records'.
	value := make([]byte, 1024)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range value {
		value[i] = byte(rng.Uint32())
	}
	const dur = 3 * time.Second

	// produce runs one side for dur and returns its MiB/s; a
	// transactional side also returns the time its EndTxn round trips
	// took (nothing is in flight meanwhile: the records were flushed
	// before, as Kafka's clients flush before committing too).
	type side struct {
		mibs    float64
		ending  time.Duration
		commits int
		err     error
	}
	produce := func(topic string, txn bool) (r side) {
		opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression())}
		if txn {
			opts = append(opts, kgo.TransactionalID("perf-"+topic))
		}
		cl := newClient(t, addr, opts...)
		ctx := testCtx(t, 4*dur)
		var n atomic.Int64
		start := time.Now()
		lastCommit := start
		commit := func() error {
			if err := cl.Flush(ctx); err != nil {
				return err
			}
			flushed := time.Now()
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				return err
			}
			r.ending += time.Since(flushed)
			r.commits++
			return nil
		}
		if txn {
			if r.err = cl.BeginTransaction(); r.err != nil {
				return r
			}
		}
		for time.Since(start) < dur {
			for range 64 {
				cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
					if err == nil {
						n.Add(1)
					}
				})
			}
			if txn && time.Since(lastCommit) >= 100*time.Millisecond {
				if r.err = commit(); r.err != nil {
					return r
				}
				if r.err = cl.BeginTransaction(); r.err != nil {
					return r
				}
				lastCommit = time.Now()
			}
		}
		if txn {
			r.err = commit()
		} else {
			r.err = cl.Flush(ctx)
		}
		r.mibs = float64(n.Load()) * 1024 / (1 << 20) / time.Since(start).Seconds()
		return r
	}
	// Two pairings: alternating (each side alone on the broker, one after
	// the other) and concurrent (both at once on their own partitions, so
	// the machine's swings hit both alike; the shared 2-core machine makes
	// the alternating rounds swing by 2× either way).
	const rounds = 5
	report := func(mode string, pair func(i int) (side, side)) {
		var idem, txn, ratios []float64
		var ending time.Duration
		var commits int
		for i := range rounds {
			si, st := pair(i)
			if si.err != nil || st.err != nil {
				t.Fatalf("%s round %d: idempotent %v, transactional %v", mode, i, si.err, st.err)
			}
			idem, txn, ratios = append(idem, si.mibs), append(txn, st.mibs), append(ratios, st.mibs/si.mibs)
			ending, commits = ending+st.ending, commits+st.commits
		}
		t.Logf("produce, 1 KiB records, acks=all, fsync, %d %s rounds of %v: idempotent %.1f MiB/s, transactional (commit every 100 ms) %.1f MiB/s "+
			"(medians); paired ratio %.2f× (median; rounds %.2f); %d commits, EndTxn answered in %.2f ms on average (%.1f%% of the transactional time)",
			rounds, mode, dur, median(idem), median(txn), median(ratios), ratios, commits, float64(ending.Microseconds())/1000/float64(commits),
			100*ending.Seconds()/(rounds*dur.Seconds()))
	}
	topics := func(kind string, i int) (string, string) {
		ti, tt := fmt.Sprintf("perf-%s-idem-%d", kind, i), fmt.Sprintf("perf-%s-txn-%d", kind, i)
		createTopic(t, addr, ti, 1, nil)
		createTopic(t, addr, tt, 1, nil)
		return ti, tt
	}
	report("alternating", func(i int) (side, side) {
		ti, tt := topics("alt", i)
		return produce(ti, false), produce(tt, true)
	})
	report("concurrent", func(i int) (side, side) {
		ti, tt := topics("con", i)
		var si side
		done := make(chan struct{})
		go func() { defer close(done); si = produce(ti, false) }()
		st := produce(tt, true)
		<-done
		return si, st
	})

	// A log of 200 transactions of 500 records, every tenth aborted (not
	// the last: the reads below end at its last record).
	topic := "perf-read"
	createTopic(t, addr, topic, 1, nil)
	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.TransactionalID("perf-read"), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := testCtx(t, 5*time.Minute)
	wroteFrom := time.Now()
	for i := range 200 {
		txStart := time.Now()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for range 500 {
			cl.Produce(ctx, &kgo.Record{Value: value}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(i%10 != 4)); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(txStart); d > 500*time.Millisecond {
			t.Logf("transaction %d took %v", i, d)
		}
	}
	part, _ := b.Replicas().Get(topicpart.TopicPartition{Topic: topic, Partition: 0})
	t.Logf("wrote the read log in %v: LEO %d, LSO %d, HW %d", time.Since(wroteFrom), part.Log.LogEndOffset(), part.Log.LastStableOffset(), part.Log.HighWatermark())
	for waited := time.Now(); part.Log.LastStableOffset() != part.Log.LogEndOffset(); time.Sleep(time.Millisecond) {
		if time.Since(waited) > 10*time.Second {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("LSO %d LEO %d HW %d RP %d open %+v markers %+v\n%s", part.Log.LastStableOffset(), part.Log.LogEndOffset(),
				part.Log.HighWatermark(), part.Log.RecoveryPoint(), part.Log.OpenTransactions(), b.Transactions().PendingMarkers(), buf[:n])
		}
	}
	read := func(committed bool) (int, time.Duration) {
		opts := []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
			kgo.FetchMaxBytes(8 << 20)}
		if committed {
			opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		}
		c := newClient(t, addr, opts...)
		defer c.Close()
		end := part.Log.LogEndOffset() - 1 // the last marker
		start := time.Now()
		n := 0
		for {
			fs := c.PollFetches(ctx)
			done := false
			fs.EachPartition(func(p kgo.FetchTopicPartition) {
				n += len(p.Records)
				if len(p.Records) > 0 && p.Records[len(p.Records)-1].Offset >= end-1 {
					done = true
				}
			})
			if done || ctx.Err() != nil {
				return n, time.Since(start)
			}
		}
	}
	var ru, rc []float64
	var nu, nc int
	const readRounds = 7
	for range readRounds {
		n, d := read(false)
		nu, ru = n, append(ru, d.Seconds())
		n, d = read(true)
		nc, rc = n, append(rc, d.Seconds())
	}
	if nu != 200*500 || nc != 180*500 {
		t.Errorf("read %d records read_uncommitted and %d read_committed, want %d and %d", nu, nc, 200*500, 180*500)
	}
	size := float64(part.Log.Size()) / (1 << 20)
	t.Logf("catch-up read of %.0f MiB with 10%% aborted transactions: read_uncommitted %d records in %.3fs (%.0f MiB/s), "+
		"read_committed %d records in %.3fs (%.0f MiB/s): %.2f× (medians of %d alternating reads)",
		size, nu, median(ru), size/median(ru), nc, median(rc), size/median(rc), median(ru)/median(rc), readRounds)

	// The LSO after a commit: EndTxn is answered once PrepareCommit is
	// durable; the marker follows.
	var lags []time.Duration
	for range 50 {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		cl.Produce(ctx, &kgo.Record{Value: value}, nil)
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
		answered := time.Now()
		for part.Log.LastStableOffset() != part.Log.LogEndOffset() || part.Log.OpenTransactions() != nil {
			if time.Since(answered) > 10*time.Second {
				t.Fatalf("LSO %d still below LEO %d 10 s after a commit", part.Log.LastStableOffset(), part.Log.LogEndOffset())
			}
			time.Sleep(50 * time.Microsecond)
		}
		lags = append(lags, time.Since(answered))
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	t.Logf("LSO past the commit marker after EndTxn's answer: median %v, p90 %v, max %v (50 commits; includes the marker's fsync)",
		lags[len(lags)/2], lags[len(lags)*9/10], lags[len(lags)-1])
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
