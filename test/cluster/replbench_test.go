package cluster

import (
	"context"
	"crypto/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// cpuSeconds is the user+system CPU time of the cluster's processes so far.
func (c *cluster) cpuSeconds(t *testing.T) float64 {
	t.Helper()
	var total float64
	for _, nd := range c.nodes {
		if !nd.running() {
			continue
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(nd.cmd.Process.Pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		// Fields after the command's closing parenthesis: utime is the
		// 12th, stime the 13th (clock ticks, 100 a second on Linux).
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		total += (ut + st) / 100
	}
	return total
}

// produceFor produces 1 KiB records to topic with franz-go's defaults and
// the given acks for d, and returns the MiB acknowledged a second and per
// cluster CPU-second.
func produceFor(t *testing.T, c *cluster, topic string, acks kgo.Acks, d time.Duration) (mibps, mibPerCPU float64) {
	opts := []kgo.Opt{kgo.RequiredAcks(acks), kgo.RecordPartitioner(kgo.RoundRobinPartitioner())}
	if acks != kgo.AllISRAcks() {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl := c.client(opts...)
	// Distinct random values: kgo compresses batches (snappy by default),
	// and one value repeated would compress to nothing.
	pool := make([]byte, 4<<20)
	rand.Read(pool)
	var acked atomic.Int64
	cpu0, start := c.cpuSeconds(t), time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for i := 0; ctx.Err() == nil; i++ {
		off := (i * 1031) % (len(pool) - 1024)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: pool[off : off+1024]}, func(_ *kgo.Record, err error) {
			if err == nil {
				acked.Add(1)
			}
		})
	}
	n := acked.Load()
	secs, cpu := time.Since(start).Seconds(), c.cpuSeconds(t)-cpu0
	fctx, fcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer fcancel()
	_ = cl.Flush(fctx)
	mib := float64(n) / 1024
	return mib / secs, mib / cpu
}

// The throughput figures, as ratios measured in one run (the
// machine is shared): 3 nodes, 3 partitions, 1 KiB records, kgo defaults;
// RF 3 min ISR 2 with acks=all against acks=1 on the same topic and
// against RF 1 with acks=all, three rounds of 5 s each, alternating.
// GREGOR_LONG=1 only; it asserts nothing about timing, it logs.
func TestLongReplicationThroughput(t *testing.T) {
	longRun(t)
	c := newCluster(t, 3)
	adm := kadm.NewClient(c.client())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "rf3"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "rf1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // leaders settle (a measurement, not a wait for a condition)
	const d = 5 * time.Second
	for round := range 3 {
		all, allCPU := produceFor(t, c, "rf3", kgo.AllISRAcks(), d)
		one, oneCPU := produceFor(t, c, "rf3", kgo.LeaderAck(), d)
		rf1, rf1CPU := produceFor(t, c, "rf1", kgo.AllISRAcks(), d)
		t.Logf("round %d: RF3 acks=all %.1f MiB/s (%.0f MiB per cluster CPU-s); RF3 acks=1 %.1f MiB/s (%.0f); RF1 acks=all %.1f MiB/s (%.0f); "+
			"acks=all/acks=1 = %.2f, RF3/RF1 = %.2f", round, all, allCPU, one, oneCPU, rf1, rf1CPU, all/one, all/rf1)
	}
}

// The unavailability figure: how long partition 0 of an RF 3 topic
// takes acks=all writes again after its leader is SIGKILLed (bound:
// broker.session.timeout.ms + 1 s, 2 s here) and after it is stopped by
// SIGTERM (controlled shutdown; bound 1 s), over 20 of each, each node
// restarted after. GREGOR_LONG=1 only; it logs the figures, asserting
// nothing about timing.
func TestLongLeaderUnavailability(t *testing.T) {
	if os.Getenv("GREGOR_LONG") == "" {
		t.Skip("set GREGOR_LONG=1 to run")
	}
	c := newCluster(t, 3)
	const topic = "avail"
	adm := kadm.NewClient(c.client())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic); err != nil {
		t.Fatal(err)
	}
	cl := c.client(kgo.RecordRetries(1000), kgo.MetadataMinAge(50*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration {
		return 20 * time.Millisecond
	}))
	write := func() time.Duration {
		start := time.Now()
		wctx, wcancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer wcancel()
		if err := cl.ProduceSync(wctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		return time.Since(start)
	}
	for _, how := range []string{"SIGKILL", "SIGTERM"} {
		var took []time.Duration
		for range 20 {
			write()
			waitFullISR(t, c, topic, 1)
			leader, _ := leaderOf(t, c, topic, 0)
			start := time.Now()
			if how == "SIGKILL" {
				c.sigkill(leader)
			} else if err := c.sigterm(leader); err != nil {
				t.Fatal(err)
			}
			write()
			took = append(took, time.Since(start))
			c.start(leader)
			c.waitReady(leader, 60*time.Second)
		}
		slices.Sort(took)
		t.Logf("%s of the leader: an acks=all write succeeded after min %v, median %v, p95 %v, max %v (20 runs)", how,
			took[0].Round(time.Millisecond), took[10].Round(time.Millisecond), took[18].Round(time.Millisecond),
			took[19].Round(time.Millisecond))
	}
}
