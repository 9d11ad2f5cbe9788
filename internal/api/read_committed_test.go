package api_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
)

// A read_committed consumer reads up to the last stable offset and gets
// the aborted transactions of what it reads; read_uncommitted reads to the
// high watermark with a null list. ListOffsets(READ_COMMITTED, LATEST) is
// the last stable offset (librdkafka 0103 do_test_wmark_isolation_level).
// The partition's log is written directly (as WriteTxnMarkers and a verified
// produce would) so this tests the read side alone.
func TestReadCommittedFetch(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("rc", 1, nil)
	l := f.log("rc", 0)
	txn := func(pid int64, seq int32, n int) {
		spec := &record.BatchSpec{ProducerID: pid, ProducerEpoch: 0, BaseSequence: seq, Transactional: true}
		for i := range n {
			spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: time.Now().UnixMilli(),
				Value: fmt.Appendf(nil, "p%d-%d", pid, int(seq)+i)})
		}
		b, err := record.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		g := l.StartTransactionVerification(pid, seq, 0, false)
		if _, err := l.AppendVerified(b, 0, g); err != nil {
			t.Fatal(err)
		}
	}
	marker := func(pid int64, commit bool) {
		if _, err := l.AppendMarker(log.MarkerSpec{ProducerID: pid, Commit: commit, TransactionVersion: log.TV1}, 0); err != nil {
			t.Fatal(err)
		}
	}
	txn(1, 0, 3)     // 0-2: aborted
	txn(2, 0, 2)     // 3-4: committed
	marker(1, false) // 5
	marker(2, true)  // 6
	txn(3, 0, 2)     // 7-8: open
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if l.LastStableOffset() != 7 || l.HighWatermark() != 9 {
		t.Fatalf("LSO %d, HW %d", l.LastStableOffset(), l.HighWatermark())
	}

	fetch := func(isolation int8, from int64) kmsg.FetchResponseTopicPartition {
		req := f.fetchRequest("rc", []int64{from}, 1<<20, 1<<20)
		req.IsolationLevel = isolation
		resp := f.request(req).(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		return p
	}
	lastOffset := func(records []byte) int64 {
		return log.NextOffsetOf(records) - 1
	}
	p := fetch(1, 0)
	if p.LastStableOffset != 7 || p.HighWatermark != 9 || lastOffset(p.RecordBatches) != 6 {
		t.Fatalf("read_committed: LSO %d, HW %d, last offset returned %d; want 7, 9, 6",
			p.LastStableOffset, p.HighWatermark, lastOffset(p.RecordBatches))
	}
	if a := p.AbortedTransactions; len(a) != 1 || a[0].ProducerID != 1 || a[0].FirstOffset != 0 {
		t.Fatalf("aborted transactions %+v, want producer 1 from offset 0", a)
	}
	// From past the aborted transaction's marker: nothing to filter.
	if p := fetch(1, 6); len(p.AbortedTransactions) != 0 || p.AbortedTransactions == nil {
		t.Fatalf("read_committed from 6: aborted %+v, want an empty list", p.AbortedTransactions)
	}
	p = fetch(0, 0)
	if p.AbortedTransactions != nil || lastOffset(p.RecordBatches) != 8 {
		t.Fatalf("read_uncommitted: aborted %+v (want null), last offset %d (want 8)", p.AbortedTransactions, lastOffset(p.RecordBatches))
	}

	for isolation, want := range map[int8]int64{0: 9, 1: 7} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID, req.IsolationLevel = -1, isolation
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "rc"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := f.request(req).(*kmsg.ListOffsetsResponse)
		if got := resp.Topics[0].Partitions[0].Offset; got != want {
			t.Fatalf("ListOffsets latest, isolation %d: %d, want %d", isolation, got, want)
		}
	}
}
