package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/admin"
)

// elrOf is partition 0 of topic as DescribeTopicPartitions (KIP-966)
// answers it through node via.
func elrOf(c *cluster, via int32, topic string) (p kmsg.DescribeTopicPartitionsResponseTopicPartition, ok bool) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.node(via).client))
	if err != nil {
		return p, false
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = topic
	req.Topics = append(req.Topics, rt)
	req.ResponsePartitionLimit = 10
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 1 {
		return p, false
	}
	return resp.Topics[0].Partitions[0], true
}

// Eligible leader replicas (KIP-966; eligible.leader.replicas.version is
// finalized at 1 in every new cluster, as ApiVersions says) on five real
// processes (five so the metadata quorum outlives the kills): RF 3 on
// brokers 1, 2, 3 with min.insync.replicas=2. Broker 3 is killed; records
// are acknowledged by 1 and 2; broker 2 shuts down cleanly, so the ISR
// falls below min ISR and 2 moves to the ELR (DescribeTopicPartitions and
// gregor topic describe's ELR column show it) and acks=all is refused with
// NOT_ENOUGH_REPLICAS. Broker 1, the last ISR member, is killed; broker 2
// starts again (a clean shutdown keeps it in the ELR) and is elected from
// the ELR: no unclean election is recorded and every acknowledged record is
// read back from it.
func TestELRElection(t *testing.T) {
	start := time.Now()
	c := newCluster(t, 5)
	if f, ok := finalizedFeature(t, c, 4, "eligible.leader.replicas.version"); !ok || f < 1 {
		t.Fatalf("eligible.leader.replicas.version finalized at %d (%v); want ≥ 1", f, ok)
	}
	const topic = "elr"
	createAssigned(t, c, topic, map[string]string{"min.insync.replicas": "2"}, []int32{1, 2, 3})
	waitFullISR(t, c, topic, 1)
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(3))
	acked := 0
	produce := func(n int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("r%d", acked+i))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return err
		}
		acked += n
		return nil
	}
	if err := produce(20); err != nil {
		t.Fatal(err)
	}
	c.sigkill(3)
	if !poll(20*time.Second, func() bool {
		_, isr, ok := metadataOf(c, 1, topic)
		return ok && slices.Equal(sorted(isr), []int32{1, 2})
	}) {
		t.Fatal("broker 3 still in the ISR 20 s after SIGKILL")
	}
	if err := produce(30); err != nil {
		t.Fatal(err)
	}
	if err := c.sigterm(2); err != nil {
		t.Fatalf("SIGTERM of broker 2: %v", err)
	}
	var p kmsg.DescribeTopicPartitionsResponseTopicPartition
	if !poll(20*time.Second, func() bool {
		var ok bool
		p, ok = elrOf(c, 4, topic)
		return ok && slices.Equal(p.ISR, []int32{1}) && slices.Equal(p.EligibleLeaderReplicas, []int32{2})
	}) {
		t.Fatalf("after broker 2's clean shutdown: leader %d ISR %v ELR %v; want ISR [1], ELR [2]", p.LeaderID, p.ISR, p.EligibleLeaderReplicas)
	}
	out, err := c.gregor("topic", "describe", topic, "-b", c.node(4).client)
	if err != nil || !describeRowHas(out, "elr", "[2]") {
		t.Errorf("topic describe shows no ELR [2]: %v\n%s", err, out)
	}
	// Below min ISR, the leader refuses acks=all (kgo would retry it).
	m, err := kadm.NewClient(cl).Metadata(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	b1 := cl.Broker(1)
	var off int64
	if err := produceOne(b1, topic, m.Topics[topic].ID, 0, "refused", &off); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Errorf("acks=all with the ISR below min.insync.replicas: %v; want NOT_ENOUGH_REPLICAS", err)
	}
	cl.Close()

	c.sigkill(1)
	c.start(2)
	c.waitReady(2, 60*time.Second)
	if !poll(30*time.Second, func() bool {
		var ok bool
		p, ok = elrOf(c, 4, topic)
		return ok && p.LeaderID == 2
	}) {
		t.Fatalf("broker 2 not elected from the ELR: leader %d ISR %v ELR %v", p.LeaderID, p.ISR, p.EligibleLeaderReplicas)
	}
	if !slices.Equal(p.ISR, []int32{2}) || !slices.Equal(p.EligibleLeaderReplicas, []int32{1}) {
		t.Errorf("after the ELR election: ISR %v ELR %v; want [2] and [1]", p.ISR, p.EligibleLeaderReplicas)
	}
	var cv admin.ClusterView
	if !c.node(4).adminJSON(t, "/v1/cluster", &cv) || len(cv.UncleanElections) != 0 {
		t.Errorf("an election from the ELR recorded as unclean: %+v", cv.UncleanElections)
	}
	seen := consumeN(t, c, topic, acked)
	for i := range acked {
		if !seen[fmt.Sprintf("r%d", i)] {
			t.Errorf("acknowledged record r%d lost", i)
		}
	}
	t.Logf("%d acknowledged records read back from broker 2 after its election from the ELR; %.1f s", acked, time.Since(start).Seconds())
}

// finalizedFeature is a feature's finalized max level in node via's
// ApiVersions answer.
func finalizedFeature(t *testing.T, c *cluster, via int32, name string) (int16, bool) {
	t.Helper()
	cl := c.nodeClient(via)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == name {
			return f.MaxVersionLevel, true
		}
	}
	return 0, false
}

// describeRowHas reports whether topic describe's partition table has
// column col equal to want in its first row.
func describeRowHas(out, col, want string) bool {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		fields := strings.Fields(strings.ToLower(l))
		at := slices.Index(fields, col)
		if at < 0 || !slices.Contains(fields, "partition") || i+1 >= len(lines) {
			continue
		}
		row := strings.Fields(lines[i+1])
		return at < len(row) && row[at] == want
	}
	return false
}
