package broker_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/group"
)

// The group coordinator follows the leadership of the group's
// __consumer_offsets partition: every node names that partition's leader
// in FindCoordinator, and only the leader has the partition's groups
// loaded; while the leader is down the group has no coordinator
// (COORDINATOR_NOT_AVAILABLE, which clients retry), and once it leads
// again it has loaded the group with its committed offsets. DeleteRecords
// sent through the cluster (kadm sends each partition's part to its
// leader) moves the log start of partitions led by every node.
func TestGroupCoordinatorFollowsLeadership(t *testing.T) {
	c := brokertest.StartCluster(t, 3, map[string]string{"offsets.topic.num.partitions": "6"}, false)
	ctx := brokertest.Context(t, 60*time.Second)
	adm := c.Admin()
	brokertest.CreateTopic(t, adm, "t", 6, nil)
	everywhere(t, c, "t")
	cl := c.Client(kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 12 {
		brokertest.Produce(t, cl, &kgo.Record{Partition: int32(i % 6), Value: []byte("v")})
	}

	checkDeleteRecordsFanOut(t, c, adm, "t", 6)

	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: "t", Partition: 0, At: 2, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, "g", commit); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	leader := coordinatorEverywhere(t, c, "g")
	checkLoadedAreLed(t, c)

	c.Stop(leader)
	for _, b := range c.Running() {
		eventually(t, "no coordinator while its node is down", func() error {
			if code, id := findCoordinator(t, b, "g"); code != kerr.CoordinatorNotAvailable.Code {
				return fmt.Errorf("node %d answers error %d, coordinator %d", b.Config().NodeID(), code, id)
			}
			return nil
		})
	}
	checkLoadedAreLed(t, c)

	c.Restart(leader)
	if again := coordinatorEverywhere(t, c, "g"); again != leader {
		t.Fatalf("coordinator %d after node %d came back", again, leader)
	}
	checkLoadedAreLed(t, c)
	// A new client: the harness's restarted node listens on a new port.
	offs, err := c.Admin().FetchOffsets(ctx, "g")
	if err != nil || offs.Error() != nil {
		t.Fatalf("fetch offsets after the coordinator came back: %v %v", err, offs.Error())
	}
	if o, ok := offs.Lookup("t", 0); !ok || o.At != 2 {
		t.Fatalf("committed offset of t-0 after the coordinator came back: %+v %v, want 2", o, ok)
	}
}

// findCoordinator asks b alone for group's coordinator.
func findCoordinator(t *testing.T, b *brokertest.Broker, group string) (code int16, node int32) {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKeys = []string{group}
	resp, err := b.Client().SeedBrokers()[0].Request(brokertest.Context(t, 10*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	fc := resp.(*kmsg.FindCoordinatorResponse).Coordinators[0]
	return fc.ErrorCode, fc.NodeID
}

// coordinatorEverywhere waits until every running node names the leader
// of groupID's __consumer_offsets partition as its coordinator, and
// returns it.
func coordinatorEverywhere(t *testing.T, c *brokertest.Cluster, groupID string) int32 {
	t.Helper()
	var leader int32
	eventually(t, "every node names the offsets partition's leader", func() error {
		for _, b := range c.Running() {
			im := b.Metadata()
			ot := im.Topic(group.OffsetsTopic)
			if ot == nil {
				return errors.New("no __consumer_offsets")
			}
			p := group.PartitionFor(groupID, int32(len(ot.Partitions)))
			leader = ot.Partitions[p].Leader
			code, id := findCoordinator(t, b, groupID)
			if code != 0 || id != leader || leader < 0 {
				return fmt.Errorf("node %d: error %d, coordinator %d, leader of %s-%d %d", b.Config().NodeID(), code, id,
					group.OffsetsTopic, p, leader)
			}
		}
		return nil
	})
	return leader
}

// checkLoadedAreLed waits until every running node has loaded exactly the
// __consumer_offsets partitions it leads.
func checkLoadedAreLed(t *testing.T, c *brokertest.Cluster) {
	t.Helper()
	for _, b := range c.Running() {
		self := b.Config().NodeID()
		eventually(t, "loaded offsets partitions are the led ones", func() error {
			var led []int32
			if ot := b.Metadata().Topic(group.OffsetsTopic); ot != nil {
				for p, pi := range ot.Partitions {
					if pi.Leader == self {
						led = append(led, int32(p))
					}
				}
			}
			loaded := slices.Clone(b.Groups().Loaded())
			slices.Sort(loaded)
			if !slices.Equal(loaded, led) {
				return fmt.Errorf("node %d leads %v, has loaded %v", self, led, loaded)
			}
			return nil
		})
	}
}

// checkDeleteRecordsFanOut deletes the first record of each of topic's
// partitions (two records each, spread over every node) through the
// cluster, and expects every partition's log start offset at 1.
func checkDeleteRecordsFanOut(t *testing.T, c *brokertest.Cluster, adm *kadm.Client, topic string, parts int32) {
	t.Helper()
	ctx := brokertest.Context(t, 30*time.Second)
	del := kadm.Offsets{}
	for p := range parts {
		del.Add(kadm.Offset{Topic: topic, Partition: p, At: 1, LeaderEpoch: -1})
	}
	rs, err := adm.DeleteRecords(ctx, del)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs[topic] {
		if r.Err != nil || r.LowWatermark != 1 {
			t.Errorf("DeleteRecords %s-%d: %v, low watermark %d", r.Topic, r.Partition, r.Err, r.LowWatermark)
		}
	}
	leaders := map[int32]bool{}
	for _, pi := range c.Running()[0].Metadata().Topic(topic).Partitions {
		leaders[pi.Leader] = true
	}
	if len(rs[topic]) != int(parts) || len(leaders) != len(c.Running()) {
		t.Fatalf("DeleteRecords answered %d partitions; the topic's leaders are %v", len(rs[topic]), leaders)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil || starts.Error() != nil {
		t.Fatalf("list start offsets: %v %v", err, starts.Error())
	}
	starts.Each(func(o kadm.ListedOffset) {
		if o.Offset != 1 {
			t.Errorf("%s-%d starts at %d after DeleteRecords, want 1", o.Topic, o.Partition, o.Offset)
		}
	})
}
