package cluster

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ackedAt is where an acknowledged record went.
type ackedAt struct {
	partition int32
	offset    int64
}

// loadProducer produces acks=all records (franz-go's idempotent default)
// to topic until stop is closed, keeping every acknowledged one.
type loadProducer struct {
	mu     sync.Mutex
	acked  map[string]ackedAt
	failed int
	n      atomic.Int64
	done   chan struct{}
}

func startLoad(t *testing.T, c *cluster, topic string, stop <-chan struct{}) *loadProducer {
	return startLoadPaced(t, c, topic, stop, 200, 5*time.Millisecond, 0)
}

// startLoadPaced is startLoad pausing pause after every burst records,
// each record's value padded by pad random (incompressible) bytes, with
// extra client options.
func startLoadPaced(t *testing.T, c *cluster, topic string, stop <-chan struct{}, burst int, pause time.Duration, pad int, opts ...kgo.Opt) *loadProducer {
	base := []kgo.Opt{kgo.RecordRetries(1000), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProduceRequestTimeout(10 * time.Second), kgo.RecordDeliveryTimeout(60 * time.Second),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.MaxBufferedRecords(2000)}
	cl := c.client(append(base, opts...)...)
	lp := &loadProducer{acked: map[string]ackedAt{}, done: make(chan struct{})}
	rng := rand.New(rand.NewPCG(1, 2))
	go func() {
		defer close(lp.done)
		var wg sync.WaitGroup
		for i := 0; ; i++ {
			select {
			case <-stop:
				wg.Wait()
				return
			default:
			}
			v := fmt.Sprintf("r%07d", i)
			if pad > 0 {
				b := make([]byte, pad)
				for j := range b {
					b[j] = byte(rng.Uint32())
				}
				v += string(b)
			}
			wg.Add(1)
			cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: []byte(v)}, func(r *kgo.Record, err error) {
				defer wg.Done()
				lp.mu.Lock()
				defer lp.mu.Unlock()
				if err != nil {
					lp.failed++
					return
				}
				lp.acked[v] = ackedAt{r.Partition, r.Offset}
				lp.n.Add(1)
			})
			if i%burst == burst-1 {
				time.Sleep(pause) // a steady load, not a flood
			}
		}
	}()
	return lp
}

// leaderOf asks the cluster which node leads topic's partition p, with its
// ISR.
func leaderOf(t *testing.T, c *cluster, topic string, p int32) (int32, []int32) {
	t.Helper()
	adm := kadm.NewClient(c.client())
	var leader int32 = -1
	var isr []int32
	poll(20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false
		}
		pd, ok := m.Topics[topic].Partitions[p]
		if !ok || pd.Leader < 0 {
			return false
		}
		leader, isr = pd.Leader, pd.ISR
		return true
	})
	return leader, isr
}

// The acceptance for replication, on real processes: RF 3, min ISR
// 2, a franz-go producer with acks=all under steady load, the leader of a
// partition SIGKILLed (twice; five times under GREGOR_LONG=1) and started
// again each time, then a follower SIGKILLed and the leader stopped by
// SIGTERM (controlled shutdown), each started again. Every acknowledged record is read back once, at the
// offset it was acknowledged at; the ISR grows back to three; every
// replica's log ends equal, byte for byte.
func TestReplicationLeaderKill(t *testing.T) {
	c := newCluster(t, 3)
	const topic = "repl"
	adm := kadm.NewClient(c.client())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	resp, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	cancel()
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v / %v", topic, err, resp.Err)
	}
	stop := make(chan struct{})
	lp := startLoad(t, c, topic, stop)
	kills := 2
	if os.Getenv("GREGOR_LONG") != "" {
		kills = 5
	}
	for k := range kills {
		waitAcks(t, lp, 300)
		leader, isr := leaderOf(t, c, topic, 0)
		if leader < 1 {
			t.Fatalf("kill %d: partition 0 has no leader", k)
		}
		before := lp.n.Load()
		start := time.Now()
		c.sigkill(leader)
		// The load goes on without the node: acknowledged through the
		// new leader and the remaining ISR member.
		waitAcks(t, lp, 300)
		t.Logf("kill %d: node %d (leader of %s-0, ISR %v) SIGKILLed at %d acknowledged; 300 more acknowledged %v later",
			k, leader, topic, isr, before, time.Since(start).Round(time.Millisecond))
		c.start(leader)
		c.waitReady(leader, 60*time.Second)
	}
	// A follower SIGKILLed, then the leader stopped cleanly (SIGTERM:
	// controlled shutdown moves its leaderships first).
	waitAcks(t, lp, 300)
	leader, isr := leaderOf(t, c, topic, 0)
	for _, id := range isr {
		if id != leader {
			c.sigkill(id)
			waitAcks(t, lp, 300)
			c.start(id)
			c.waitReady(id, 60*time.Second)
			break
		}
	}
	waitFullISR(t, c, topic, 3)
	leader, _ = leaderOf(t, c, topic, 0)
	start := time.Now()
	if err := c.sigterm(leader); err != nil {
		t.Fatalf("SIGTERM of node %d: %v", leader, err)
	}
	waitAcks(t, lp, 300)
	t.Logf("node %d (leader of %s-0) stopped by SIGTERM; 300 more acknowledged %v after the signal", leader, topic,
		time.Since(start).Round(time.Millisecond))
	c.start(leader)
	c.waitReady(leader, 60*time.Second)
	waitAcks(t, lp, 300)
	close(stop)
	select {
	case <-lp.done:
	case <-time.After(90 * time.Second):
		t.Fatal("the producer did not finish within 90s")
	}
	lp.mu.Lock()
	acked, failed := lp.acked, lp.failed
	lp.mu.Unlock()
	t.Logf("%d records acknowledged, %d failed (indeterminate), %d leader kills", len(acked), failed, kills)

	waitFullISR(t, c, topic, 3)
	checkReadBack(t, c, topic, acked)
	checkReplicasEqual(t, c, topic, 3)
}

// waitAcks waits until n more records are acknowledged.
func waitAcks(t *testing.T, lp *loadProducer, n int64) {
	t.Helper()
	want := lp.n.Load() + n
	if !poll(60*time.Second, func() bool { return lp.n.Load() >= want }) {
		lp.mu.Lock()
		defer lp.mu.Unlock()
		t.Fatalf("acknowledgements stopped at %d (want %d; %d failed)", lp.n.Load(), want, lp.failed)
	}
}

// waitFullISR waits until every partition's ISR has all three replicas.
func waitFullISR(t *testing.T, c *cluster, topic string, parts int32) {
	t.Helper()
	// kgo answers a metadata request from its cache for up to
	// MetadataMinAge (5 s by default): each poll must ask a broker.
	adm := kadm.NewClient(c.client(kgo.MetadataMinAge(10 * time.Millisecond)))
	var last string
	if !poll(60*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m, err := adm.Metadata(ctx, topic)
		if err != nil {
			last = err.Error()
			return false
		}
		for p := range parts {
			pd := m.Topics[topic].Partitions[p]
			if len(pd.ISR) != 3 || pd.Leader < 0 {
				last = fmt.Sprintf("partition %d leader %d ISR %v", p, pd.Leader, pd.ISR)
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the ISR did not grow back to three replicas: %s", last)
	}
}

// checkReadBack reads every partition from the start and checks each
// acknowledged record is there once, at its acknowledged offset.
func checkReadBack(t *testing.T, c *cluster, topic string, acked map[string]ackedAt) {
	t.Helper()
	adm := kadm.NewClient(c.client())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	cl := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string][]ackedAt{}
	need := int64(0)
	ends.Each(func(o kadm.ListedOffset) { need += o.Offset })
	got := int64(0)
	for got < need {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records back: %v", got, need, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			seen[string(r.Value)] = append(seen[string(r.Value)], ackedAt{r.Partition, r.Offset})
		})
	}
	lost, moved, dup := 0, 0, 0
	for v, at := range acked {
		s := seen[v]
		switch {
		case len(s) == 0:
			lost++
			if lost < 5 {
				t.Errorf("acknowledged %s (partition %d offset %d) is lost", v, at.partition, at.offset)
			}
		case len(s) > 1:
			dup++
			if dup < 5 {
				t.Errorf("acknowledged %s is in the log %d times: %v", v, len(s), s)
			}
		case s[0] != at:
			moved++
			if moved < 5 {
				t.Errorf("acknowledged %s at %v is read back at %v", v, at, s[0])
			}
		}
	}
	if lost+moved+dup > 0 {
		t.Fatalf("%d acknowledged records lost, %d at another offset, %d duplicated (of %d)", lost, moved, dup, len(acked))
	}
}

// checkReplicasEqual waits until every node's copy of each partition holds
// the same bytes: the concatenation of its segment files.
func checkReplicasEqual(t *testing.T, c *cluster, topic string, parts int32) {
	t.Helper()
	for p := range parts {
		var last string
		if !poll(30*time.Second, func() bool {
			var first []byte
			for _, nd := range c.nodes {
				b, err := partitionBytes(nd.dir, fmt.Sprintf("%s-%d", topic, p))
				if err != nil {
					last = err.Error()
					return false
				}
				if first == nil {
					first = b
				} else if !bytes.Equal(first, b) {
					last = fmt.Sprintf("node %d holds %d bytes of %s-%d, node 1 %d", nd.id, len(b), topic, p, len(first))
					return false
				}
			}
			return len(first) > 0
		}) {
			t.Fatalf("replicas differ: %s", last)
		}
	}
}

// partitionBytes is the concatenation of a partition's segment files under
// a node's data dir.
func partitionBytes(dataDir, name string) ([]byte, error) {
	var dirs []string
	err := filepath.WalkDir(dataDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == name {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil || len(dirs) != 1 {
		return nil, fmt.Errorf("%s in %s: %v %v", name, dataDir, dirs, err)
	}
	segs, err := filepath.Glob(filepath.Join(dirs[0], "*.log"))
	if err != nil {
		return nil, err
	}
	sort.Strings(segs)
	var out []byte
	for _, s := range segs {
		b, err := os.ReadFile(s)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

// A zombie leader: the leader of a partition SIGSTOPped past
// broker.session.timeout.ms under acks=all load (the controller fences it
// and elects another leader), then SIGCONTed. Whatever it still answers
// after it lost the leadership, nothing it acknowledged is lost: every
// acknowledged record is read back at its offset and the replicas end
// equal.
func TestReplicationZombieLeader(t *testing.T) {
	c := newCluster(t, 3)
	const topic = "zombie"
	adm := kadm.NewClient(c.client())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	resp, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	cancel()
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v / %v", topic, err, resp.Err)
	}
	stop := make(chan struct{})
	lp := startLoad(t, c, topic, stop)
	waitAcks(t, lp, 300)
	leader, _ := leaderOf(t, c, topic, 0)
	nd := c.node(leader)
	if err := nd.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nd.cmd.Process.Signal(syscall.SIGCONT) })
	// Another node leads partition 0 once the session expired.
	if !poll(30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		m, err := kadm.NewClient(c.nodeClient(1+leader%3)).Metadata(ctx, topic)
		if err != nil {
			return false
		}
		l := m.Topics[topic].Partitions[0].Leader
		return l >= 0 && l != leader
	}) {
		t.Fatalf("no other leader of %s-0 while node %d is stopped", topic, leader)
	}
	waitAcks(t, lp, 300)
	if err := nd.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitAcks(t, lp, 300)
	close(stop)
	select {
	case <-lp.done:
	case <-time.After(90 * time.Second):
		t.Fatal("the producer did not finish within 90s")
	}
	lp.mu.Lock()
	acked, failed := lp.acked, lp.failed
	lp.mu.Unlock()
	t.Logf("%d records acknowledged, %d failed; node %d stopped past its session and resumed", len(acked), failed, leader)
	waitFullISR(t, c, topic, 3)
	checkReadBack(t, c, topic, acked)
	checkReplicasEqual(t, c, topic, 3)
}
