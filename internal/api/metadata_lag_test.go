package api_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/api"
	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/server"
)

// laggingMetadata is a broker's metadata that has not yet published the
// images after stale, as a broker whose publisher trails another's does,
// until something waits for it to catch up.
type laggingMetadata struct {
	live     brokerMetadata
	stale    *metadata.Image
	caughtUp atomic.Bool
}

func (m *laggingMetadata) Image() *metadata.Image {
	if m.caughtUp.Load() {
		return m.live.Image()
	}
	return m.stale
}

func (m *laggingMetadata) WaitPublished(ctx context.Context, index uint64) error {
	if err := m.live.WaitPublished(ctx, index); err != nil {
		return err
	}
	m.caughtUp.Store(true)
	return nil
}

// A transaction coordinator whose metadata trails the cluster's (the CI
// failure: a group coordinator verified a TxnOffsetCommit's
// __consumer_offsets partition, created by a FindCoordinator and published
// on another broker first, with this coordinator) is asked about a
// partition it has not published yet: it catches up with the metadata log
// and answers from there, and a TxnOffsetCommit naming a topic it has not
// published commits. Without the catch-up both are
// UNKNOWN_TOPIC_OR_PARTITION, and kgo, which does not retry that code of a
// TxnOffsetCommit, aborts the transaction.
func TestTxnRequestsCatchUpWithMetadata(t *testing.T) {
	br := brokertest.Start(t, map[string]string{"gregor.ack.fsync": "false"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := br.Client(kgo.TransactionalID("lag"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	pid, epoch, err := cl.ProducerID(ctx) // creates __transaction_state
	if err != nil {
		t.Fatal(err)
	}
	if err := br.Groups().EnsureTopic(ctx); err != nil {
		t.Fatal(err)
	}
	stale := br.Metadata() // before the topic
	if err := br.CreateTopic(ctx, "late", 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "late", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	lagging := func() *api.Handler {
		return api.New(api.Deps{NodeID: br.Config().NodeID(), Metadata: &laggingMetadata{live: brokerMetadata{br.Broker}, stale: stale},
			Replicas: br.Replicas(), Logs: br.Logs(), Config: br.Config, Groups: br.Groups(), Txn: br.Transactions(),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}
	if stale.Topic("late") != nil {
		t.Fatal("the stale image already has the topic")
	}

	// A partition leader's verification (AddPartitionsToTxn v5, verify only).
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.SetVersion(5)
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "lag", pid, epoch, true
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = "late", []int32{0}
	tx.Topics = append(tx.Topics, tt)
	ap.Transactions = append(ap.Transactions, tx)
	resp := handle(t, ctx, lagging(), ap).(*kmsg.AddPartitionsToTxnResponse)
	if code := resp.Transactions[0].Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Errorf("verification of late-0 (in the transaction) by a lagging coordinator: error %d, want 0", code)
	}

	// A TxnOffsetCommit for a topic the group coordinator has not published.
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "lag", pid, epoch, "g"
	if r, err := ao.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v %+v", err, r)
	}
	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.SetVersion(3)
	tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch, tc.Generation = "lag", "g", pid, epoch, -1
	ct := kmsg.NewTxnOffsetCommitRequestTopic()
	ct.Topic = "late"
	cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset, cp.LeaderEpoch = 0, 1, -1
	ct.Partitions = append(ct.Partitions, cp)
	tc.Topics = append(tc.Topics, ct)
	tr := handle(t, ctx, lagging(), tc).(*kmsg.TxnOffsetCommitResponse)
	if code := tr.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Errorf("TxnOffsetCommit of late-0 by a lagging group coordinator: error %d, want 0", code)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	// A partition that does not exist is still unknown, after the catch-up.
	tt.Topic = "never"
	ap.Transactions[0].Topics[0] = tt
	resp = handle(t, ctx, lagging(), ap).(*kmsg.AddPartitionsToTxnResponse)
	if code := resp.Transactions[0].Topics[0].Partitions[0].ErrorCode; code != 3 {
		t.Errorf("verification of a partition that does not exist: error %d, want 3 (UNKNOWN_TOPIC_OR_PARTITION)", code)
	}
}

func handle(t *testing.T, ctx context.Context, h *api.Handler, req kmsg.Request) kmsg.Response {
	t.Helper()
	resp, err := h.Handle(ctx, &server.Request{Key: req.Key(), Version: req.GetVersion(), Body: req, Received: time.Now()})
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}
