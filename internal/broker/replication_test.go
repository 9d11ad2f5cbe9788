package broker_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// replProps are fast replication settings for the in-process clusters.
var replProps = map[string]string{
	"replica.lag.time.max.ms":   "1500",
	"replica.fetch.wait.max.ms": "200",
	"replica.fetch.backoff.ms":  "100",
	"min.insync.replicas":       "2",
}

// leaderOf is the node the published metadata (of any running node) names
// leader of topic-p.
func leaderOf(c *brokertest.Cluster, topic string, p int32) int32 {
	for _, b := range c.Running() {
		if pi := b.Metadata().Partition(topic, p); pi != nil {
			return pi.Leader
		}
	}
	return -1
}

// isrOf is topic-p's ISR in node b's published metadata.
func isrOf(b *brokertest.Broker, topic string, p int32) []int32 {
	if pi := b.Metadata().Partition(topic, p); pi != nil {
		return slices.Sorted(slices.Values(pi.ISR))
	}
	return nil
}

// logEnd is node b's log end offset of topic-p, -1 if it has no log.
func logEnd(b *brokertest.Broker, topic string, p int32) int64 {
	if part, ok := b.Replicas().Get(topicpart.TopicPartition{Topic: topic, Partition: p}); ok {
		return part.Log.LogEndOffset()
	}
	return -1
}

// TestReplicationRF3 is the data plane on three nodes: an RF 3 topic with
// min.insync.replicas=2 takes acks=all writes, every replica holds them at
// the same offsets, a stopped follower leaves the ISR (acks=all still
// succeeds with 2), and it comes back, catches up and rejoins
// (NOT_ENOUGH_REPLICAS: TestReplicationMinISR).
func TestReplicationRF3(t *testing.T) {
	c := brokertest.StartCluster(t, 3, replProps, false)
	adm := c.Admin()
	ctx := brokertest.Context(t, 60*time.Second)
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "r"); err != nil {
		t.Fatal(err)
	}
	everywhere(t, c, "r")
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(5))
	var want []string
	produce := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			v := strconv.Itoa(len(want))
			want = append(want, v)
			brokertest.Produce(t, cl, &kgo.Record{Topic: "r", Value: []byte(v)})
		}
	}
	produce(20)
	for _, b := range c.Running() {
		eventually(t, "every replica holds the 20 records", func() error {
			if leo := logEnd(b, "r", 0); leo != 20 {
				return fmt.Errorf("node %d log end %d", b.Config().NodeID(), leo)
			}
			return nil
		})
	}
	leader := leaderOf(c, "r", 0)
	var followers []int32
	for id := int32(1); id <= 3; id++ {
		if id != leader {
			followers = append(followers, id)
		}
	}
	lb := c.Brokers[leader-1]

	c.Stop(followers[0])
	eventually(t, "the stopped follower leaves the ISR", func() error {
		if got := isrOf(lb, "r", 0); len(got) != 2 {
			return fmt.Errorf("ISR %v", got)
		}
		return nil
	})
	produce(10)
	// The leader says why the follower is out and what it waits for.
	eventually(t, "the leader explains the departure", func() error {
		part, _ := lb.Replicas().Get(topicpart.TopicPartition{Topic: "r", Partition: 0})
		for _, v := range lb.Replicas().ReplicaViews(part) {
			if v.ID != followers[0] {
				continue
			}
			if v.InISR || v.Departure == nil || len(v.Blockers) == 0 {
				return fmt.Errorf("view of the stopped follower: %+v", v)
			}
			return nil
		}
		return fmt.Errorf("no view of broker %d", followers[0])
	})

	c.Restart(followers[0])
	eventually(t, "the restarted follower rejoins the ISR", func() error {
		if got := isrOf(lb, "r", 0); len(got) != 3 {
			return fmt.Errorf("ISR %v", got)
		}
		return nil
	})
	if leo := logEnd(c.Brokers[followers[0]-1], "r", 0); leo != 30 {
		t.Fatalf("the restarted follower's log end is %d, want 30", leo)
	}
	eventually(t, "the follower reports its fetcher lag, 0 once caught up", func() error {
		reg := prometheus.NewRegistry()
		if err := reg.Register(c.Brokers[followers[1]-1].Replicas().Collector()); err != nil {
			return err
		}
		fams, err := reg.Gather()
		if err != nil {
			return err
		}
		for _, f := range fams {
			if f.GetName() == "kafka_server_fetcherlagmetrics_consumerlag" {
				for _, m := range f.GetMetric() {
					if m.GetGauge().GetValue() == 0 {
						return nil
					}
				}
			}
		}
		return fmt.Errorf("no consumerlag series at 0")
	})
	consumeIn(t, c, "r", want)
}

// consumeIn reads topic-0 from the start and checks it holds want, in order.
func consumeIn(t *testing.T, c *brokertest.Cluster, topic string, want []string) {
	t.Helper()
	cl := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	ctx := brokertest.Context(t, 30*time.Second)
	var got []string
	for len(got) < len(want) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", len(got), len(want), err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, want) {
		t.Fatalf("consumed %v, want %v", got, want)
	}
}

var _ = kadm.ErrEmpty

// TestReplicationLeaderFailover stops the leader of an RF 3 topic while a
// producer writes with acks=all: the controller moves leadership to an ISR
// member, every acknowledged record is there at its offset, and the old
// leader comes back as a follower holding the same log.
func TestReplicationLeaderFailover(t *testing.T) {
	c := brokertest.StartCluster(t, 3, replProps, false)
	ctx := brokertest.Context(t, 60*time.Second)
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, nil, "f"); err != nil {
		t.Fatal(err)
	}
	everywhere(t, c, "f")
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(20), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	acked := map[int64]string{}
	produce := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			v := strconv.Itoa(i)
			r := cl.ProduceSync(ctx, &kgo.Record{Topic: "f", Value: []byte(v)})
			if err := r.FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
			rec, _ := r.First()
			acked[rec.Offset] = v
		}
	}
	produce(0, 50)
	old := leaderOf(c, "f", 0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Stop(old)
	}()
	produce(50, 50)
	<-done
	eventually(t, "a new leader", func() error {
		if l := leaderOf(c, "f", 0); l < 0 || l == old {
			return fmt.Errorf("leader %d", l)
		}
		return nil
	})
	produce(100, 20)
	c.Restart(old)
	eventually(t, "every replica back in the ISR", func() error {
		if got := isrOf(c.Brokers[leaderOf(c, "f", 0)-1], "f", 0); len(got) != 3 {
			return fmt.Errorf("ISR %v", got)
		}
		return nil
	})
	want := make([]string, len(acked))
	for off, v := range acked {
		if off >= int64(len(want)) {
			t.Fatalf("acknowledged offset %d past %d records: a gap or a duplicate", off, len(want))
		}
		want[off] = v
	}
	consumeIn(t, c, "f", want)
	for _, b := range c.Running() {
		eventually(t, "every replica holds every record", func() error {
			if leo := logEnd(b, "f", 0); leo != int64(len(want)) {
				return fmt.Errorf("node %d log end %d", b.Config().NodeID(), leo)
			}
			return nil
		})
	}
}

// TestReplicationMinISR: with min.insync.replicas=3 on an RF 3 topic, a
// stopped follower leaves the ISR and acks=all produces are refused with
// NOT_ENOUGH_REPLICAS (nothing appended) while acks=1 ones still succeed;
// once the follower is back in the ISR acks=all succeeds again.
func TestReplicationMinISR(t *testing.T) {
	c := brokertest.StartCluster(t, 3, replProps, false)
	ctx := brokertest.Context(t, 60*time.Second)
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("3")}, "m"); err != nil {
		t.Fatal(err)
	}
	everywhere(t, c, "m")
	all := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(5*time.Second))
	brokertest.Produce(t, all, &kgo.Record{Topic: "m", Value: []byte("a")})
	leader := leaderOf(c, "m", 0)
	follower := int32(1 + leader%3)
	c.Stop(follower)
	lb := c.Brokers[leader-1]
	eventually(t, "the stopped follower leaves the ISR", func() error {
		if got := isrOf(lb, "m", 0); len(got) != 2 {
			return fmt.Errorf("ISR %v", got)
		}
		return nil
	})
	leo := logEnd(lb, "m", 0)
	err := all.ProduceSync(ctx, &kgo.Record{Topic: "m", Value: []byte("b")}).FirstErr()
	if !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all with ISR 2 < min.insync.replicas 3: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	if got := logEnd(lb, "m", 0); got != leo {
		t.Fatalf("a refused acks=all produce was appended: log end %d, was %d", got, leo)
	}
	one := c.Client(kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	brokertest.Produce(t, one, &kgo.Record{Topic: "m", Value: []byte("c")})

	c.Restart(follower)
	eventually(t, "the restarted follower rejoins the ISR", func() error {
		if got := isrOf(lb, "m", 0); len(got) != 3 {
			return fmt.Errorf("ISR %v", got)
		}
		return nil
	})
	brokertest.Produce(t, c.Client(kgo.RequiredAcks(kgo.AllISRAcks())), &kgo.Record{Topic: "m", Value: []byte("d")})
	consumeIn(t, c, "m", []string{"a", "c", "d"})
}

// TestReplicationReassign moves a partition's replicas as an operator
// would (AlterPartitionReassignments): an RF 1 partition with records is
// reassigned to all three nodes, the new replicas copy the log from its
// leader and join the ISR; then it is reassigned to one node that did not
// hold it at first, and its records are all still read back.
func TestReplicationReassign(t *testing.T) {
	c := brokertest.StartCluster(t, 3, replProps, false)
	adm := c.Admin()
	ctx := brokertest.Context(t, 60*time.Second)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"min.insync.replicas": kadm.StringPtr("1")}, "ra"); err != nil {
		t.Fatal(err)
	}
	everywhere(t, c, "ra")
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	var want []string
	for i := range 20 {
		want = append(want, strconv.Itoa(i))
		brokertest.Produce(t, cl, &kgo.Record{Topic: "ra", Value: []byte(want[i])})
	}
	first := leaderOf(c, "ra", 0)
	reassign := func(to []int32) {
		t.Helper()
		var req kadm.AlterPartitionAssignmentsReq
		req.Assign("ra", 0, to)
		resp, err := adm.AlterPartitionAssignments(ctx, req)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("reassigning ra-0 to %v: %v", to, err)
		}
	}
	reassign([]int32{1, 2, 3})
	for _, b := range c.Running() {
		eventually(t, "every node holds the 20 records and is in the ISR", func() error {
			if got := isrOf(b, "ra", 0); len(got) != 3 {
				return fmt.Errorf("ISR %v", got)
			}
			if leo := logEnd(b, "ra", 0); leo != 20 {
				return fmt.Errorf("node %d log end %d", b.Config().NodeID(), leo)
			}
			return nil
		})
	}
	other := int32(1 + first%3)
	reassign([]int32{other})
	eventually(t, "the partition lives on the new node alone", func() error {
		pi := c.Running()[0].Metadata().Partition("ra", 0)
		if pi == nil || !slices.Equal(pi.Replicas, []int32{other}) || pi.Leader != other {
			return fmt.Errorf("partition %+v", pi)
		}
		return nil
	})
	consumeIn(t, c, "ra", want)
}
