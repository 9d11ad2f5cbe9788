package api_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/record"
)

// initProducerID asks for a producer id; opts pin the request version.
func (f *logAPI) initProducerID(txnID *string, id int64, epoch int16, opts ...kgo.Opt) *kmsg.InitProducerIDResponse {
	f.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = txnID, 60000
	req.ProducerID, req.ProducerEpoch = id, epoch
	return f.request(req, opts...).(*kmsg.InitProducerIDResponse)
}

// newProducerID returns a fresh idempotent producer id (epoch 0).
func (f *logAPI) newProducerID() int64 {
	f.t.Helper()
	resp := f.initProducerID(nil, -1, -1)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil || resp.ProducerEpoch != 0 {
		f.t.Fatalf("InitProducerId: id %d epoch %d err %v", resp.ProducerID, resp.ProducerEpoch, err)
	}
	return resp.ProducerID
}

// idempotentBatch is n records from producer pid at epoch, first sequence seq,
// stamped now: a producer whose last batch is older than
// producer.id.expiration.ms is forgotten when its partition reloads.
func idempotentBatch(pid int64, epoch int16, seq int32, n int) record.BatchSpec {
	spec := record.BatchSpec{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}
	now := time.Now().UnixMilli()
	for i := 0; i < n; i++ {
		spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: now,
			Value: []byte(fmt.Sprintf("seq %d", int(seq)+i))})
	}
	return spec
}

func TestIdempotentProducerExactlyOnceInOrder(t *testing.T) {
	const (
		partitions = 3
		total      = 10000
	)
	f := newLogAPI(t)
	f.createTopic("idem", partitions, nil)
	// Small batches give each partition many sequences.
	cl := f.b.Client(kgo.DefaultProduceTopic("idem"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(2048))

	var (
		mu      sync.Mutex
		acked   = make([]int, total)
		offsets [partitions][]int64 // per partition, in the order produced
		errs    []error
		wg      sync.WaitGroup
	)
	for p := range offsets {
		offsets[p] = make([]int64, 0, total/partitions+1)
	}
	for i := 0; i < total; i++ {
		wg.Add(1)
		r := &kgo.Record{Partition: int32(i % partitions), Value: []byte(fmt.Sprintf("%05d", i))}
		cl.Produce(f.ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			var n int
			fmt.Sscanf(string(r.Value), "%d", &n)
			acked[n]++
			offsets[r.Partition] = append(offsets[r.Partition], r.Offset)
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d produce errors, first: %v", len(errs), errs[0])
	}
	for i, n := range acked {
		if n != 1 {
			t.Fatalf("record %d acknowledged %d times", i, n)
		}
	}
	// Acks of one partition come back in order, at consecutive offsets.
	for p, offs := range offsets {
		for i, o := range offs {
			if o != int64(i) {
				t.Fatalf("partition %d: ack %d at offset %d", p, i, o)
			}
		}
		if l := f.log("idem", int32(p)); l.LogEndOffset() != int64(len(offs)) {
			t.Fatalf("partition %d: log end offset %d, %d records acknowledged", p, l.LogEndOffset(), len(offs))
		}
	}
	// kgo produced idempotently: the batches carry a producer id.
	if h, err := record.ParseHeader(f.fetch("idem", 0, 0).RecordBatches); err != nil || h.ProducerID < 0 {
		t.Fatalf("first batch: producer id %d, err %v", h.ProducerID, err)
	}
	// The log holds each record once, in produce order.
	next := [partitions]int{0, 1, 2}
	for _, r := range f.consumeFrom("idem", total) {
		var n int
		fmt.Sscanf(string(r.Value), "%d", &n)
		if n != next[r.Partition] {
			t.Fatalf("partition %d offset %d holds record %d, want %d", r.Partition, r.Offset, n, next[r.Partition])
		}
		next[r.Partition] += partitions
	}
}

func TestIdempotentProduceSequences(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("seq", 1, nil)
	pid := f.newProducerID()
	produce := func(what string, spec record.BatchSpec, want *kerr.Error) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		sp := f.produceBatch("seq", 0, spec)
		f.wantCode(what, sp.ErrorCode, want)
		return sp
	}

	first := produce("first batch", idempotentBatch(pid, 0, 0, 3), nil)
	// A retry of the same request: the original offset, nothing appended.
	retry := produce("retried batch", idempotentBatch(pid, 0, 0, 3), nil)
	if retry.BaseOffset != first.BaseOffset {
		t.Fatalf("retry answered base offset %d, the original was %d", retry.BaseOffset, first.BaseOffset)
	}
	l := f.log("seq", 0)
	if l.LogEndOffset() != 3 {
		t.Fatalf("log end offset %d after a batch and its retry, want 3", l.LogEndOffset())
	}
	if sp := produce("next batch", idempotentBatch(pid, 0, 3, 2), nil); sp.BaseOffset != 3 {
		t.Fatalf("next batch at %d, want 3", sp.BaseOffset)
	}
	// An older batch that is still remembered is a duplicate too.
	if sp := produce("older retry", idempotentBatch(pid, 0, 0, 3), nil); sp.BaseOffset != 0 {
		t.Fatalf("older retry answered %d, want 0", sp.BaseOffset)
	}

	produce("sequence gap", idempotentBatch(pid, 0, 7, 1), kerr.OutOfOrderSequenceNumber)
	produce("new epoch not at sequence 0", idempotentBatch(pid, 1, 5, 1), kerr.OutOfOrderSequenceNumber)
	if l.LogEndOffset() != 5 {
		t.Fatalf("rejected batches were appended: log end offset %d, want 5", l.LogEndOffset())
	}
	produce("epoch bump", idempotentBatch(pid, 1, 0, 1), nil)
	produce("old epoch", idempotentBatch(pid, 0, 5, 1), kerr.InvalidProducerEpoch)
	produce("new epoch continues", idempotentBatch(pid, 1, 1, 1), nil)
	if l.LogEndOffset() != 7 {
		t.Fatalf("log end offset %d, want 7", l.LogEndOffset())
	}
}

func TestIdempotentProducerStateSurvivesRestart(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("restart", 1, nil)
	pid := f.newProducerID()
	f.produceValues("restart", 0, nil, 4) // a non-idempotent batch first: offsets 0-3
	orig := f.produceBatch("restart", 0, idempotentBatch(pid, 0, 0, 5))
	f.wantCode("first batch", orig.ErrorCode, nil)

	f.restart()
	retry := f.produceBatch("restart", 0, idempotentBatch(pid, 0, 0, 5))
	f.wantCode("retry after restart", retry.ErrorCode, nil)
	if retry.BaseOffset != orig.BaseOffset {
		t.Fatalf("retry after restart answered %d, the original was %d", retry.BaseOffset, orig.BaseOffset)
	}
	l := f.log("restart", 0)
	if l.LogEndOffset() != 9 {
		t.Fatalf("log end offset %d after the retry, want 9: the retry was appended again", l.LogEndOffset())
	}
	f.wantCode("gap after restart", f.produceBatch("restart", 0, idempotentBatch(pid, 0, 9, 1)).ErrorCode,
		kerr.OutOfOrderSequenceNumber)
	if sp := f.produceBatch("restart", 0, idempotentBatch(pid, 0, 5, 1)); sp.ErrorCode != 0 || sp.BaseOffset != 9 {
		t.Fatalf("next sequence after restart: offset %d, err %v", sp.BaseOffset, kerr.ErrorForCode(sp.ErrorCode))
	}
}

func TestInitProducerID(t *testing.T) {
	f := newLogAPI(t)
	seen := map[int64]bool{}
	fresh := func(what string, resp *kmsg.InitProducerIDResponse) int64 {
		t.Helper()
		f.wantCode(what, resp.ErrorCode, nil)
		if resp.ProducerEpoch != 0 || resp.ProducerID < 0 || seen[resp.ProducerID] {
			t.Fatalf("%s: producer id %d epoch %d (ids so far %v)", what, resp.ProducerID, resp.ProducerEpoch, seen)
		}
		seen[resp.ProducerID] = true
		return resp.ProducerID
	}
	var last int64
	for v := int16(0); v <= 5; v++ {
		last = fresh(fmt.Sprintf("v%d", v), f.initProducerID(nil, -1, -1, f.pinned(kmsg.InitProducerID, v)))
	}
	// KIP-360: an idempotent producer naming its id and epoch gets a new id,
	// as from Kafka's coordinator.
	fresh("v5 with the current id and epoch", f.initProducerID(nil, last, 3))

	for _, tc := range []struct {
		name      string
		txn       *string
		id        int64
		epoch     int16
		want      *kerr.Error
		versionAt int16
	}{
		{"id without epoch", nil, last, -1, kerr.InvalidRequest, 5},
		{"epoch without id", nil, -1, 2, kerr.InvalidRequest, 3},
		{"empty transactional id", kmsg.StringPtr(""), -1, -1, kerr.InvalidRequest, 5},
		{"transactional id", kmsg.StringPtr("txn-1"), -1, -1, kerr.NotCoordinator, 5},
		{"transactional id, v0", kmsg.StringPtr("txn-1"), -1, -1, kerr.NotCoordinator, 0},
	} {
		resp := f.initProducerID(tc.txn, tc.id, tc.epoch, f.pinned(kmsg.InitProducerID, tc.versionAt))
		f.wantCode(tc.name, resp.ErrorCode, tc.want)
		if resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
			t.Fatalf("%s: answered producer id %d epoch %d with an error", tc.name, resp.ProducerID, resp.ProducerEpoch)
		}
	}

	// Ids are never handed out twice, across restarts too.
	maxID := int64(-1)
	for id := range seen {
		maxID = max(maxID, id)
	}
	f.restart()
	if id := fresh("after restart", f.initProducerID(nil, -1, -1)); id <= maxID {
		t.Fatalf("after restart got producer id %d, not above %d", id, maxID)
	}
}
