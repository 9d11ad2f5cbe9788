package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/record"
)

// TestClusterHangingTransactionView: on three nodes, the leader of each
// partition classifies what holds its last stable offset by asking the
// transaction coordinators of the other brokers when its own does not know
// the producer id: a transaction left open by a live producer is open (with
// its transactional id) on every leader, not an orphan on the leaders that
// are not its coordinator; a transactional batch no coordinator knows is an
// orphan.
func TestClusterHangingTransactionView(t *testing.T) {
	c := brokertest.StartCluster(t, 3, map[string]string{"gregor.ack.fsync": "false",
		"transaction.state.log.num.partitions": "3", "transaction.partition.verification.enable": "false"}, false)
	ctx := brokertest.Context(t, 60*time.Second)
	const parts = 3
	if _, err := c.Admin().CreateTopic(ctx, parts, -1, nil, "held"); err != nil {
		t.Fatal(err)
	}
	everywhere(t, c, "held")
	cl := c.Client(kgo.TransactionalID("held-open"), kgo.TransactionTimeout(10*time.Minute),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceEach(t, cl, "held", parts, "open")

	// An orphan on partition 0, sent to its leader.
	leader0 := c.Brokers[0].Metadata().Partition("held", 0).Leader
	batch, err := record.Build(&record.BatchSpec{ProducerID: 987657, ProducerEpoch: 1, BaseSequence: 0, Transactional: true,
		Records: []record.BuildRecord{{Timestamp: time.Now().UnixMilli(), Value: []byte("orphan")}}})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 5000, kmsg.StringPtr("not-a-real-one")
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: "held", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batch}}}}
	v11 := kversion.V4_2_0()
	v11.SetMaxKeyVersion(int16(kmsg.Produce), 11)
	raw := c.Client(kgo.MaxVersions(v11))
	resp, err := raw.Broker(int(leader0)).Request(ctx, req)
	if err != nil || resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce the orphan to broker %d: %v %+v", leader0, err, resp)
	}

	coordinators := map[int32]bool{}
	for p := range int32(parts) {
		leader := c.Brokers[0].Metadata().Partition("held", p).Leader
		coordinators[leader] = true
		eventually(t, fmt.Sprintf("held/%d classified on its leader %d", p, leader), func() error {
			pv, err := c.Brokers[leader-1].Source().Partition(ctx, "held", p)
			if err != nil {
				return err
			}
			classes := map[string]string{}
			for _, tv := range pv.Transactions {
				classes[tv.TransactionalID+fmt.Sprint(tv.ProducerID == 987657)] = tv.Class
			}
			want := map[string]string{"held-openfalse": "open"}
			if p == 0 {
				want["true"] = "orphan"
			}
			if fmt.Sprint(classes) != fmt.Sprint(want) {
				return fmt.Errorf("classes %v, want %v; %+v", classes, want, pv.Transactions)
			}
			return nil
		})
	}
	if len(coordinators) < 2 {
		t.Logf("held's partitions are led by %v only", coordinators)
	}
	// Every node lists the open transaction among the ongoing ones, with
	// its coordinator, whichever node that is.
	seen := map[int32]bool{}
	for _, b := range c.Running() {
		ov, err := b.Source().OngoingTransactions(ctx)
		if err != nil || len(ov.Errors) != 0 {
			t.Fatalf("node %d: ongoing transactions: %v %v", b.Config().NodeID(), err, ov.Errors)
		}
		var coordinator int32 = -1
		for _, o := range ov.Transactions {
			if o.TransactionalID == "held-open" && o.State == "Ongoing" && len(o.Partitions) == 1 && len(o.Partitions[0].Partitions) == parts {
				coordinator = o.Coordinator
			}
		}
		if coordinator < 1 {
			t.Errorf("node %d does not list held-open among %+v", b.Config().NodeID(), ov.Transactions)
		}
		seen[coordinator] = true
	}
	if len(seen) != 1 {
		t.Errorf("the nodes name different coordinators of held-open: %v", seen)
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
}
