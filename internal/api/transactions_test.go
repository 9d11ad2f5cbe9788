package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/record"
)

// Gregor has no transaction coordinator yet; every transactional request
// gets what Kafka answers while none can be found.

func TestFindTransactionCoordinatorNotAvailable(t *testing.T) {
	f := newLogAPI(t)
	for _, v := range []int16{1, 3, 4, 6} { // v0 has no key type: it always names a group
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 1
		req.CoordinatorKey, req.CoordinatorKeys = "txn-a", []string{"txn-a", "txn-b"}
		resp := f.request(req, f.pinned(kmsg.FindCoordinator, v)).(*kmsg.FindCoordinatorResponse)
		if v < 4 {
			f.wantCode(fmt.Sprintf("FindCoordinator v%d", v), resp.ErrorCode, kerr.CoordinatorNotAvailable)
			continue
		}
		for _, c := range resp.Coordinators {
			f.wantCode(fmt.Sprintf("FindCoordinator v%d %s", v, c.Key), c.ErrorCode, kerr.CoordinatorNotAvailable)
			if c.NodeID != -1 {
				t.Errorf("key %s answered node %d", c.Key, c.NodeID)
			}
		}
	}
}

func TestInitProducerIDTransactional(t *testing.T) {
	f := newLogAPI(t)
	for _, tc := range []struct {
		name    string
		timeout int32
		want    *kerr.Error
	}{
		{"no coordinator here", 60000, kerr.NotCoordinator},
		{"zero timeout", 0, kerr.InvalidTransactionTimeout},
		{"timeout above transaction.max.timeout.ms", 900001, kerr.InvalidTransactionTimeout},
	} {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("txn-a"), tc.timeout
		resp := f.request(req).(*kmsg.InitProducerIDResponse)
		f.wantCode(tc.name, resp.ErrorCode, tc.want)
	}
}

// txnProduce sends one produce request: a transactional batch to partition
// 0 and a plain one to partition 1 of topic.
func (f *logAPI) txnProduce(topic string, txnID *string) *kmsg.ProduceResponse {
	f.t.Helper()
	now := time.Now().UnixMilli()
	txn, err := record.Build(&record.BatchSpec{ProducerID: 5, ProducerEpoch: 0, BaseSequence: 0, Transactional: true,
		Records: []record.BuildRecord{{Timestamp: now, Value: []byte("in a transaction")}}})
	if err != nil {
		f.t.Fatal(err)
	}
	plain, err := record.Build(&record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Records: []record.BuildRecord{{Timestamp: now, Value: []byte("plain")}}})
	if err != nil {
		f.t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 5000, txnID
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, f.topicID(topic)
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: txn}, {Partition: 1, Records: plain}}
	req.Topics = append(req.Topics, rt)
	return f.request(req).(*kmsg.ProduceResponse)
}

func TestTransactionalProduceWithoutCoordinator(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("txn", 2, nil)

	// No transactional id: Kafka refuses the whole request.
	resp := f.txnProduce("txn", nil)
	for _, p := range resp.Topics[0].Partitions {
		f.wantCode("without a transactional id", p.ErrorCode, kerr.TransactionalIDAuthorizationFailed)
	}
	if leo := f.log("txn", 1).LogEndOffset(); leo != 0 {
		t.Fatalf("the plain batch of a refused request was appended (log end offset %d)", leo)
	}

	// With one: the transactional partition cannot be verified, the plain one
	// is appended.
	resp = f.txnProduce("txn", kmsg.StringPtr("txn-a"))
	ps := resp.Topics[0].Partitions
	f.wantCode("transactional batch", ps[0].ErrorCode, kerr.NotEnoughReplicas)
	const msg = "Unable to verify the partition has been added to the transaction. Underlying error: COORDINATOR_NOT_AVAILABLE"
	if ps[0].ErrorMessage == nil || *ps[0].ErrorMessage != msg {
		t.Errorf("transactional batch message %v, want %q", ps[0].ErrorMessage, msg)
	}
	f.wantCode("plain batch beside it", ps[1].ErrorCode, nil)
	if leo := f.log("txn", 0).LogEndOffset(); leo != 0 {
		t.Fatalf("a transactional batch was appended (log end offset %d)", leo)
	}
	if lso := f.log("txn", 0).LastStableOffset(); lso != 0 {
		t.Fatalf("last stable offset %d", lso)
	}
}

// A kgo transactional producer is not served: its FindCoordinator is answered
// COORDINATOR_NOT_AVAILABLE, which it retries until it gives up.
func TestTransactionalProducerNotServed(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("txn", 1, nil)
	cl := f.b.Client(kgo.TransactionalID("txn-a"), kgo.DefaultProduceTopic("txn"), kgo.RetryTimeout(2*time.Second))
	ctx, cancel := context.WithTimeout(f.ctx, 3*time.Second)
	defer cancel()
	err := cl.BeginTransaction()
	if err == nil {
		err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr()
	}
	if err == nil {
		t.Fatal("a transactional producer was accepted")
	}
	if leo := f.log("txn", 0).LogEndOffset(); leo != 0 {
		t.Fatalf("log end offset %d after a refused transactional producer", leo)
	}
}
