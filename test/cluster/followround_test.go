package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/admin"
)

// A follower fdatasyncs what each fetch brought before it fetches again,
// so the bytes one fetch may carry per partition (replica.fetch.max.bytes)
// bound how fast it replicates: one round, one fsync. With Kafka's 1 MiB a
// follower takes one full batch per fsync and falls behind any producer
// faster than that; Gregor's default lets one round take what
// replica.fetch.response.max.bytes allows. Node 2, the only follower of a
// partition, is stopped while about 24 MiB of ~1 MiB batches are written;
// once restarted it must catch up in a few fetches (counted at the leader,
// which no other replica fetches from), not one per batch.
func TestFollowerCatchesUpInFewRounds(t *testing.T) {
	c := newCluster(t, 3)
	const topic = "catchup"
	createAssigned(t, c, topic, map[string]string{"min.insync.replicas": "1"}, []int32{1, 2})
	var pv admin.PartitionView
	inISR := func() bool {
		return c.node(1).adminJSON(t, "/v1/partitions/"+topic+"/0", &pv) && len(pv.ReplicaState) == 2 &&
			pv.ReplicaState[0].InISR && pv.ReplicaState[1].InISR
	}
	if !poll(30*time.Second, inISR) {
		t.Fatalf("the ISR is not [1 2]: %+v", pv.ReplicaState)
	}
	if err := c.sigterm(2); err != nil {
		t.Fatal(err)
	}

	cl := c.nodeClient(1, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(50*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	value := make([]byte, 1024) // uncompressed: ~1 MiB batches
	const records = 24 * 1024
	errs := make(chan error, records)
	for range records {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) { errs <- err })
	}
	for range records {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	if !c.node(1).adminJSON(t, "/v1/partitions/"+topic+"/0", &pv) || pv.LEO != records {
		t.Fatalf("leader's log end offset %d, want %d", pv.LEO, records)
	}
	before := fetchRequests(t, c.node(1), "FetchFollower")
	c.start(2)
	caughtUp := func() bool {
		if !c.node(1).adminJSON(t, "/v1/partitions/"+topic+"/0", &pv) {
			return false
		}
		for _, r := range pv.ReplicaState {
			if r.BrokerID == 2 && r.LogEndOffset == records {
				return true
			}
		}
		return false
	}
	if !poll(60*time.Second, caughtUp) {
		t.Fatalf("follower 2 not caught up: %+v", pv.ReplicaState)
	}
	rounds := fetchRequests(t, c.node(1), "FetchFollower") - before
	t.Logf("follower 2 caught up %d records (~24 MiB) in %.0f fetches", records, rounds)
	if rounds < 1 || rounds > 12 {
		t.Fatalf("follower 2 took %.0f fetches to catch up ~24 MiB of ~1 MiB batches; want a few (at most 12)", rounds)
	}
}

// fetchRequests sums kafka_network_requestmetrics_requests_total of the
// named request over its versions on a node.
func fetchRequests(t *testing.T, nd *node, request string) float64 {
	t.Helper()
	prefix := fmt.Sprintf("kafka_network_requestmetrics_requests_total{request=%q,", request)
	total := 0.0
	eachMetric(nd, func(line string, v float64) {
		if strings.HasPrefix(line, prefix) {
			total += v
		}
	})
	return total
}
