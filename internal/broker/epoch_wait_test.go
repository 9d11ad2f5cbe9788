package broker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
)

// A follower whose metadata already names the next leader fetches from it
// before that broker has applied its leadership (a controlled shutdown
// moves it): the new leader holds the fetch until it leads in that epoch
// and serves it, instead of answering UNKNOWN_LEADER_EPOCH, after which the
// follower would back off replica.fetch.backoff.ms (1 s) and the partition
// would take no acks=all write for that long.
func TestFollowerFetchNamingTheNextEpochWaitsForIt(t *testing.T) {
	c := brokertest.StartCluster(t, 3, map[string]string{"gregor.ack.fsync": "false"}, false)
	ctx := brokertest.Context(t, 60*time.Second)
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "moving"); err != nil {
		t.Fatal(err)
	}
	cl := c.Client(kgo.DefaultProduceTopic("moving"))
	eventually(t, "a record is acknowledged by all three replicas", func() error {
		return cl.ProduceSync(ctx, kgo.StringRecord("one")).FirstErr()
	})
	im := c.Brokers[0].Metadata()
	pi := im.Partition("moving", 0)
	// The controller moves leadership to the first other ISR member in
	// replica order.
	leader, next, other := pi.Leader, int32(-1), int32(-1)
	for _, r := range pi.Replicas {
		switch {
		case r == leader:
		case next < 0 && slices.Contains(pi.ISR, r):
			next = r
		default:
			other = r
		}
	}
	if next < 0 || other < 0 || len(pi.ISR) != 3 {
		t.Fatalf("partition %+v", pi)
	}
	topicID := im.Topic("moving").ID

	// other's fetch, naming the epoch the move will give next.
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(18)
	req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = -1, other, im.Brokers[other].Epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = 20000, 1, 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = topicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.LogStartOffset, fp.LastFetchedEpoch = 0, 0, -1, -1
	fp.CurrentLeaderEpoch, fp.PartitionMaxBytes, fp.HighWatermark = pi.LeaderEpoch+1, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	nextBroker := c.Brokers[next-1]
	parked := nextBroker.Replicas()
	fetches0, _ := parked.FetchWaiters()
	type answer struct {
		resp kmsg.Response
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		resp, err := nextBroker.Client().SeedBrokers()[0].Request(rctx, req)
		answered <- answer{resp, err}
	}()
	eventually(t, "the fetch naming the next epoch waits on the next leader", func() error {
		select {
		case a := <-answered:
			answered <- a
			return nil // answered at once: checked below
		default:
		}
		if n, _ := parked.FetchWaiters(); n <= fetches0 {
			return context.DeadlineExceeded
		}
		return nil
	})
	c.Stop(leader)
	a := <-answered
	if a.err != nil {
		t.Fatal(a.err)
	}
	resp := a.resp.(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("answer %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil || len(p.RecordBatches) == 0 {
		t.Fatalf("the fetch naming epoch %d was answered %v with %d bytes; want the records once node %d leads in it",
			fp.CurrentLeaderEpoch, err, len(p.RecordBatches), next)
	}
	if got := nextBroker.Metadata().Partition("moving", 0); got.Leader != next || got.LeaderEpoch != fp.CurrentLeaderEpoch {
		t.Fatalf("after the move: leader %d epoch %d, want %d epoch %d", got.Leader, got.LeaderEpoch, next, fp.CurrentLeaderEpoch)
	}
}
