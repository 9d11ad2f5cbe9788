package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/record"
)

// consumeAll appends a plain "end" record to every partition of topic,
// then reads the topic from the start (read_committed or
// read_uncommitted) until it has seen every partition's end record, and
// returns the values read before them.
func (f *logAPI) consumeAll(topic string, partitions int32, committed bool) []string {
	f.t.Helper()
	end := fmt.Sprintf("end-%d", time.Now().UnixNano())
	for p := range partitions {
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(end)}
		if err := f.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())).ProduceSync(f.ctx, r).FirstErr(); err != nil {
			f.t.Fatal(err)
		}
	}
	opts := []kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond)}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl := f.b.Client(opts...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	var out []string
	seen := map[int32]bool{}
	for int32(len(seen)) < partitions {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			f.t.Fatalf("consuming %s: end records of %d partitions seen: %v", topic, len(seen), ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			switch v := string(r.Value); {
			case v == end:
				seen[r.Partition] = true
			case strings.HasPrefix(v, "end-"): // an earlier call's
			case !seen[r.Partition]:
				out = append(out, string(r.Value))
			}
		})
	}
	return out
}

// A kgo transactional producer commits and aborts; read_committed sees only
// the committed records, read_uncommitted all of them.
func TestTransactionalProducer(t *testing.T) {
	for _, tv := range []string{"2", "1"} {
		t.Run("transaction.version="+tv, func(t *testing.T) {
			f := newLogAPIWith(t, map[string]string{"gregor.transaction.version": tv})
			f.createTopic("txn", 2, nil)
			cl := f.b.Client(kgo.TransactionalID("txn-a"), kgo.DefaultProduceTopic("txn"),
				kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
			defer cl.Close()
			for round, commit := range []bool{true, false, true} {
				if err := cl.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				for i := range 4 {
					if err := cl.ProduceSync(f.ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%d-%d", round, i))}).FirstErr(); err != nil {
						t.Fatalf("round %d: %v", round, err)
					}
				}
				if err := cl.EndTransaction(f.ctx, kgo.TransactionEndTry(commit)); err != nil {
					t.Fatalf("round %d end: %v", round, err)
				}
			}
			waitStable(t, f, "txn", 2)
			got := f.consumeAll("txn", 2, true)
			if len(got) != 8 {
				t.Fatalf("read_committed saw %d records %v, want the 8 committed", len(got), got)
			}
			for _, v := range got {
				if v[0] == '1' {
					t.Fatalf("read_committed saw aborted record %s", v)
				}
			}
			if all := f.consumeAll("txn", 2, false); len(all) != 12 {
				t.Fatalf("read_uncommitted saw %d records, want 12", len(all))
			}
		})
	}
}

// waitStable waits until no transaction holds any partition's LSO back.
func waitStable(t *testing.T, f *logAPI, topic string, partitions int32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p := range partitions {
		l := f.log(topic, p)
		for l.LastStableOffset() != l.LogEndOffset() {
			if time.Now().After(deadline) {
				t.Fatalf("%s-%d: LSO %d, HW %d, LEO %d: transactions still open %+v", topic, p,
					l.LastStableOffset(), l.HighWatermark(), l.LogEndOffset(), l.OpenTransactions())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// txnProduce sends one produce request: a transactional batch of producer
// pid to partition 0 and a plain one to partition 1 of topic.
func (f *logAPI) txnProduce(topic string, txnID *string, pid int64, epoch int16, version int16) *kmsg.ProduceResponse {
	f.t.Helper()
	now := time.Now().UnixMilli()
	txn, err := record.Build(&record.BatchSpec{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: 0, Transactional: true,
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
	return f.request(req, f.pinned(kmsg.Produce, version)).(*kmsg.ProduceResponse)
}

// initTxn runs FindCoordinator and InitProducerId for a transactional id.
func (f *logAPI) initTxn(id string) (int64, int16) {
	f.t.Helper()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKey, fc.CoordinatorKeys = 1, id, []string{id}
	f.request(fc)
	deadline := time.Now().Add(10 * time.Second)
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
		resp := f.request(req).(*kmsg.InitProducerIDResponse)
		err := kerr.ErrorForCode(resp.ErrorCode)
		if err == nil {
			return resp.ProducerID, resp.ProducerEpoch
		}
		if !kerr.IsRetriable(err) || time.Now().After(deadline) {
			f.t.Fatalf("InitProducerId %s: %v", id, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// KIP-890 part 1: a transactional batch to a partition that is not in the
// producer's transaction is refused (TRANSACTION_ABORTABLE from Produce v11,
// INVALID_TXN_STATE before), nothing is appended, and the plain batch
// beside it is; a request without a transactional id is refused whole.
func TestTransactionalProduceVerification(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("txn", 2, nil)
	resp := f.txnProduce("txn", nil, 5, 0, 11)
	for _, p := range resp.Topics[0].Partitions {
		f.wantCode("without a transactional id", p.ErrorCode, kerr.TransactionalIDAuthorizationFailed)
	}
	pid, epoch := f.initTxn("txn-a")
	for _, c := range []struct {
		version int16
		want    *kerr.Error
	}{{11, kerr.TransactionAbortable}, {10, kerr.InvalidTxnState}, {3, kerr.InvalidTxnState}} {
		resp = f.txnProduce("txn", kmsg.StringPtr("txn-a"), pid, epoch, c.version)
		ps := resp.Topics[0].Partitions
		f.wantCode(fmt.Sprintf("Produce v%d, partition not added", c.version), ps[0].ErrorCode, c.want)
		f.wantCode("plain batch beside it", ps[1].ErrorCode, nil)
	}
	// A fenced producer: INVALID_PRODUCER_EPOCH, never INVALID_TXN_STATE.
	newPID, newEpoch := f.initTxn("txn-a")
	if newPID != pid || newEpoch != epoch+1 {
		t.Fatalf("second InitProducerId: %d/%d, want %d/%d", newPID, newEpoch, pid, epoch+1)
	}
	resp = f.txnProduce("txn", kmsg.StringPtr("txn-a"), pid, epoch, 11)
	f.wantCode("fenced producer", resp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidProducerEpoch)
	if leo := f.log("txn", 0).LogEndOffset(); leo != 0 {
		t.Fatalf("a refused transactional batch was appended (log end offset %d)", leo)
	}
	// Produce v12 adds the partition itself (transactions v2).
	resp = f.txnProduce("txn", kmsg.StringPtr("txn-a"), newPID, newEpoch, 12)
	f.wantCode("Produce v12 adds the partition", resp.Topics[0].Partitions[0].ErrorCode, nil)
	if lso := f.log("txn", 0).LastStableOffset(); lso != 0 {
		t.Fatalf("LSO %d with a transaction open at 0", lso)
	}
}
