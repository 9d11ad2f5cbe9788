package broker_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// armedInjector fails every filesystem operation from the k-th one after
// it is armed: the machine stops there.
type armedInjector struct {
	armed atomic.Bool
	n     atomic.Int64
	k     int64 // -1: count only
}

func (a *armedInjector) MaybeError(vfs.Op, string) error {
	if !a.armed.Load() {
		return nil
	}
	if n := a.n.Add(1) - 1; a.k >= 0 && n >= a.k {
		return vfs.ErrInjected
	}
	return nil
}

// txnCrashOverrides make a broker whose transactions time out fast, with one
// __transaction_state partition.
var txnCrashOverrides = map[string]string{
	"transaction.state.log.num.partitions":                        "1",
	"offsets.topic.num.partitions":                                "1",
	"transaction.abort.timed.out.transaction.cleanup.interval.ms": "100",
}

// TestTxnCommitCrashAtEveryStep commits a transaction over two partitions
// on a filesystem that stops at the k-th operation after EndTxn is sent,
// for two k (every k under GREGOR_LONG=1), then restarts the broker on the crash image: the coordinator
// replays __transaction_state and either completes the decision (re-sending
// the markers of a durable PrepareCommit) or, when the decision never
// became durable, aborts the transaction at its timeout. Either way both
// partitions end with the same outcome (never a torn transaction), and an
// acknowledged commit is a commit.
func TestTxnCommitCrashAtEveryStep(t *testing.T) {
	counter := &armedInjector{k: -1}
	if _, acked := runTxnCommitCrash(t, vfs.NewMem(), counter); !acked {
		t.Fatal("the commit was not acknowledged without faults")
	}
	n := counter.n.Load()
	t.Logf("%d filesystem operations from EndTxn to the transaction's completion", n)
	var ks []int64
	if os.Getenv("GREGOR_LONG") == "" {
		// Two crashes (each a broker start, a crash and a restart, ~7 s on
		// a loaded 2-core box): one early in the commit, one late; every
		// op under GREGOR_LONG=1.
		ks = []int64{n / 4, 3 * n / 4}
	} else {
		for k := range n {
			ks = append(ks, k)
		}
	}
	for _, k := range ks {
		t.Run(fmt.Sprintf("crash at op %d", k), func(t *testing.T) {
			img, acked := runTxnCommitCrash(t, vfs.NewMem(), &armedInjector{k: k})
			checkTxnOutcome(t, img, acked)
		})
	}
}

// runTxnCommitCrash opens a transaction with records on t-0 and t-1, arms
// the injector and commits; it returns the crash image (what mem holds
// durably once the coordinator went as far as it could) and whether EndTxn
// was acknowledged.
func runTxnCommitCrash(t *testing.T, mem *vfs.MemFS, inj *armedInjector) (*vfs.MemFS, bool) {
	b := brokertest.StartOn(t, vfs.NewInjecting(mem, inj), "/data", txnCrashOverrides)
	defer b.Crashed()
	brokertest.CreateTopic(t, b.AdminClient(), "t", 2, nil)
	cl := b.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pid, epoch := initTxnRaw(t, ctx, cl, "crash")
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "crash", pid, epoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
	if resp, err := add.RequestWith(ctx, cl); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AddPartitionsToTxn: %v %+v", err, resp)
	}
	v11 := kversion.V4_2_0()
	v11.SetMaxKeyVersion(int16(kmsg.Produce), 11) // names topics, adds no partition
	pcl := b.Client(kgo.MaxVersions(v11))
	for p := range int32(2) {
		produceTxnRaw(t, ctx, pcl, "crash", pid, epoch, p)
	}
	inj.armed.Store(true)
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "crash", pid, epoch, true
	resp, err := end.RequestWith(ctx, cl)
	acked := err == nil && resp.ErrorCode == 0
	if inj.k < 0 {
		// No fault: wait for the markers and the completion, so the count
		// covers them.
		waitTxnState(t, ctx, cl, "crash", "CompleteCommit")
		return nil, acked
	}
	// Let the coordinator go as far as the filesystem lets it (if it takes
	// longer, the image is that of an earlier crash: as valid a case).
	deadline := time.Now().Add(500 * time.Millisecond)
	for inj.n.Load() <= inj.k && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	return mem.CrashClone(), acked
}

func initTxnRaw(t *testing.T, ctx context.Context, cl *kgo.Client, id string) (int64, int16) {
	t.Helper()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKey, fc.CoordinatorKeys = 1, id, []string{id}
	if _, err := fc.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 1000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("InitProducerId: %v", err)
		}
		switch err := kerr.ErrorForCode(resp.ErrorCode); {
		case err == nil:
			return resp.ProducerID, resp.ProducerEpoch
		case !kerr.IsRetriable(err):
			t.Fatalf("InitProducerId: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func produceTxnRaw(t *testing.T, ctx context.Context, cl *kgo.Client, id string, pid int64, epoch int16, p int32) {
	t.Helper()
	b, err := record.Build(&record.BatchSpec{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: 0, Transactional: true,
		Records: []record.BuildRecord{{Timestamp: time.Now().UnixMilli(), Value: fmt.Appendf(nil, "p%d", p)}}})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 10000, &id
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: p, Records: b}}
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Broker(1).RetriableRequest(ctx, req)
	if err != nil || resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce to t-%d: %v %+v", p, err, resp)
	}
}

// waitTxnState polls DescribeTransactions until id is in state.
func waitTxnState(t *testing.T, ctx context.Context, cl *kgo.Client, id, state string) {
	t.Helper()
	for {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{id}
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.TransactionStates) == 1 && resp.TransactionStates[0].State == state {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never reached %s: %v %+v", id, state, err, resp)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkTxnOutcome restarts a broker on a crash image and waits until the
// transaction is complete; both partitions must carry the outcome the
// coordinator recorded, and an acknowledged commit must be a commit.
func checkTxnOutcome(t *testing.T, img *vfs.MemFS, acked bool) {
	b := brokertest.StartOn(t, img, "/data", txnCrashOverrides)
	defer b.Stop()
	cl := b.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var state string
	for {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{"crash"}
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.TransactionStates) == 1 {
			st := resp.TransactionStates[0]
			if st.ErrorCode == kerr.TransactionalIDNotFound.Code {
				state = "unknown" // InitProducerId itself never became durable: impossible here
			}
			if st.State == "CompleteCommit" || st.State == "CompleteAbort" {
				state = st.State
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("the transaction never completed after the restart (acked %v): %v %+v", acked, err, resp)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if acked && state != "CompleteCommit" {
		t.Fatalf("an acknowledged commit ended %s", state)
	}
	for p := range int32(2) {
		part, ok := b.Replicas().Get(topicpart.TopicPartition{Topic: "t", Partition: p})
		if !ok {
			t.Fatalf("t-%d not hosted", p)
		}
		pollUntil(t, 10*time.Second, "the markers under the high watermark", func() bool {
			return part.Log.LastStableOffset() == part.Log.LogEndOffset()
		})
		commit, found := lastMarker(t, part.Log)
		if !found {
			t.Fatalf("t-%d has no marker after the transaction completed %s", p, state)
		}
		if commit != (state == "CompleteCommit") {
			t.Fatalf("t-%d ended commit=%v, the coordinator recorded %s: a torn transaction", p, commit, state)
		}
	}
}

// lastMarker is the type of the last transaction marker in l.
func lastMarker(t *testing.T, l *log.Log) (commit, found bool) {
	t.Helper()
	data, err := l.Read(nil, l.LogStartOffset(), 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	for len(data) > 0 {
		b, rest, ok := record.Split(data)
		if !ok {
			break
		}
		data = rest
		if h, _ := record.ParseHeader(b); h.Control() {
			m, err := record.ParseControl(b, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			commit, found = m.Type == record.ControlCommit, true
		}
	}
	return commit, found
}
