package api_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The transaction APIs answer with Kafka's codes for each request version
// (design note §1.14, §6): PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH for
// InitProducerId before v4 and EndTxn, AddPartitionsToTxn, AddOffsetsToTxn
// before v2.
func TestTransactionErrorsByVersion(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("t", 2, nil)
	pid, e0 := f.initTxn("v")
	_, e1 := f.initTxn("v") // bumps: e0 is fenced now
	if e1 != e0+1 {
		t.Fatalf("second InitProducerId: epoch %d after %d", e1, e0)
	}
	for _, c := range []struct {
		v    int16
		want *kerr.Error
	}{{3, kerr.InvalidProducerEpoch}, {4, kerr.ProducerFenced}, {5, kerr.ProducerFenced}} {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = kmsg.StringPtr("v"), 60000, pid, e1+5
		resp := f.request(req, f.pinned(kmsg.InitProducerID, c.v)).(*kmsg.InitProducerIDResponse)
		f.wantCode(fmt.Sprintf("InitProducerId v%d, fenced epoch", c.v), resp.ErrorCode, c.want)
	}
	for _, timeout := range []int32{0, -5, 900001} {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("v"), timeout
		resp := f.request(req).(*kmsg.InitProducerIDResponse)
		f.wantCode(fmt.Sprintf("InitProducerId timeout %d", timeout), resp.ErrorCode, kerr.InvalidTransactionTimeout)
	}
	for _, c := range []struct {
		v    int16
		want *kerr.Error
	}{{1, kerr.InvalidProducerEpoch}, {2, kerr.ProducerFenced}, {3, kerr.ProducerFenced}} {
		add := kmsg.NewPtrAddPartitionsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch = "v", pid, e0
		add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}}
		resp := f.request(add, f.pinned(kmsg.AddPartitionsToTxn, c.v)).(*kmsg.AddPartitionsToTxnResponse)
		f.wantCode(fmt.Sprintf("AddPartitionsToTxn v%d, fenced", c.v), resp.Topics[0].Partitions[0].ErrorCode, c.want)
		end := kmsg.NewPtrEndTxnRequest()
		end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "v", pid, e0, true
		eresp := f.request(end, f.pinned(kmsg.EndTxn, c.v)).(*kmsg.EndTxnResponse)
		f.wantCode(fmt.Sprintf("EndTxn v%d, fenced", c.v), eresp.ErrorCode, c.want)
		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "v", pid, e0, "g"
		aresp := f.request(ao, f.pinned(kmsg.AddOffsetsToTxn, c.v)).(*kmsg.AddOffsetsToTxnResponse)
		f.wantCode(fmt.Sprintf("AddOffsetsToTxn v%d, fenced", c.v), aresp.ErrorCode, c.want)
	}
	// Another producer id: INVALID_PRODUCER_ID_MAPPING.
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch = "v", pid+1, e1
	f.wantCode("EndTxn, another producer id", f.request(end).(*kmsg.EndTxnResponse).ErrorCode, kerr.InvalidProducerIDMapping)

	// An unknown topic: UNKNOWN_TOPIC_OR_PARTITION, and the others are not
	// attempted.
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "v", pid, e1
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}, {Topic: "nope", Partitions: []int32{0}}}
	resp := f.request(add, f.pinned(kmsg.AddPartitionsToTxn, 3)).(*kmsg.AddPartitionsToTxnResponse)
	f.wantCode("AddPartitionsToTxn beside an unknown topic", resp.Topics[0].Partitions[0].ErrorCode, kerr.OperationNotAttempted)
	f.wantCode("AddPartitionsToTxn of an unknown topic", resp.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)

	// EndTxn v5 (transactions v2) answers the next producer id and epoch.
	add.Topics = add.Topics[:1]
	resp = f.request(add, f.pinned(kmsg.AddPartitionsToTxn, 3)).(*kmsg.AddPartitionsToTxnResponse)
	f.wantCode("AddPartitionsToTxn", resp.Topics[0].Partitions[0].ErrorCode, nil)
	end.ProducerID, end.ProducerEpoch, end.Commit = pid, e1, false
	eresp := f.request(end, f.pinned(kmsg.EndTxn, 5)).(*kmsg.EndTxnResponse)
	if eresp.ErrorCode != 0 || eresp.ProducerID != pid || eresp.ProducerEpoch != e1+1 {
		t.Fatalf("EndTxn v5: %+v, want pid %d epoch %d", eresp, pid, e1+1)
	}
}

// WriteTxnMarkers at the partition leader: a marker from an older
// coordinator epoch is TRANSACTION_COORDINATOR_FENCED, a TV2 marker at an
// old epoch INVALID_PRODUCER_EPOCH, an unknown partition
// UNKNOWN_TOPIC_OR_PARTITION.
func TestWriteTxnMarkersErrors(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("t", 1, nil)
	marker := func(epoch int16, coordEpoch int32, tv int8, topic string) int16 {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.TransactionVersion = 5, epoch, coordEpoch, tv
		m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: topic, Partitions: []int32{0}}}
		req.Markers = append(req.Markers, m)
		return f.request(req).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	f.wantCode("first marker", marker(1, 4, 1, "t"), nil)
	f.wantCode("older coordinator epoch", marker(1, 3, 1, "t"), kerr.TransactionCoordinatorFenced)
	f.wantCode("TV2 marker with an older epoch", marker(0, 4, 2, "t"), kerr.InvalidProducerEpoch)
	f.wantCode("unknown topic", marker(1, 4, 1, "nope"), kerr.UnknownTopicOrPartition)
	if leo := f.log("t", 0).LogEndOffset(); leo != 1 {
		t.Fatalf("log end offset %d: refused markers were written", leo)
	}
}

// DescribeTransactions, ListTransactions and DescribeProducers show an open
// transaction; unknown ids and states get Kafka's answers.
func TestDescribeAndListTransactions(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("t", 2, nil)
	pid, epoch := f.initTxn("d")
	f.txnProduce("t", kmsg.StringPtr("d"), pid, epoch, 12) // adds t-0 (transactions v2)

	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"d", "unknown", ""}
	dresp := f.request(dt).(*kmsg.DescribeTransactionsResponse)
	st := dresp.TransactionStates[0]
	if st.ErrorCode != 0 || st.State != "Ongoing" || st.ProducerID != pid || len(st.Topics) != 1 || st.Topics[0].Topic != "t" {
		t.Fatalf("DescribeTransactions d: %+v", st)
	}
	f.wantCode("DescribeTransactions unknown", dresp.TransactionStates[1].ErrorCode, kerr.TransactionalIDNotFound)
	f.wantCode("DescribeTransactions empty", dresp.TransactionStates[2].ErrorCode, kerr.InvalidRequest)

	lt := kmsg.NewPtrListTransactionsRequest()
	lt.StateFilters, lt.ProducerIDFilters = []string{"Ongoing", "Bogus"}, []int64{pid}
	lresp := f.request(lt).(*kmsg.ListTransactionsResponse)
	if lresp.ErrorCode != 0 || len(lresp.TransactionStates) != 1 || lresp.TransactionStates[0].TransactionalID != "d" ||
		len(lresp.UnknownStateFilters) != 1 || lresp.UnknownStateFilters[0] != "Bogus" {
		t.Fatalf("ListTransactions: %+v", lresp)
	}
	lt.StateFilters, lt.DurationFilterMillis = nil, time.Hour.Milliseconds()
	if l := f.request(lt).(*kmsg.ListTransactionsResponse); len(l.TransactionStates) != 0 {
		t.Fatalf("ListTransactions running longer than an hour: %+v", l.TransactionStates)
	}
	bad := "(unclosed"
	lt.DurationFilterMillis, lt.TransactionalIDPattern = -1, &bad
	f.wantCode("ListTransactions bad pattern", f.request(lt).(*kmsg.ListTransactionsResponse).ErrorCode, kerr.InvalidRegularExpression)

	dp := kmsg.NewPtrDescribeProducersRequest()
	dp.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "t", Partitions: []int32{0, 7}}}
	presp := f.request(dp).(*kmsg.DescribeProducersResponse)
	p0 := presp.Topics[0].Partitions[0]
	if p0.ErrorCode != 0 || len(p0.ActiveProducers) != 1 || p0.ActiveProducers[0].ProducerID != pid ||
		p0.ActiveProducers[0].CurrentTxnStartOffset != 0 || p0.ActiveProducers[0].LastSequence != 0 {
		t.Fatalf("DescribeProducers t-0: %+v", p0)
	}
	f.wantCode("DescribeProducers t-7", presp.Topics[0].Partitions[1].ErrorCode, kerr.UnknownTopicOrPartition)
}

// ApiVersions advertises transaction.version 0-2, finalized at
// gregor.transaction.version (left out at 0).
func TestTransactionVersionFeature(t *testing.T) {
	for _, tv := range []int16{2, 1, 0} {
		f := newLogAPIWith(t, map[string]string{"gregor.transaction.version": fmt.Sprint(tv)})
		resp := f.request(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
		resp.SupportedFeatures = slices.DeleteFunc(resp.SupportedFeatures, func(sf kmsg.ApiVersionsResponseSupportedFeature) bool {
			return sf.Name == "eligible.leader.replicas.version"
		})
		resp.FinalizedFeatures = slices.DeleteFunc(resp.FinalizedFeatures, func(ff kmsg.ApiVersionsResponseFinalizedFeature) bool {
			return ff.Name == "eligible.leader.replicas.version"
		})
		if len(resp.SupportedFeatures) != 1 || resp.SupportedFeatures[0].Name != "transaction.version" ||
			resp.SupportedFeatures[0].MaxVersion != 2 || resp.FinalizedFeaturesEpoch < 0 {
			t.Fatalf("transaction.version=%d: supported %+v, epoch %d", tv, resp.SupportedFeatures, resp.FinalizedFeaturesEpoch)
		}
		switch {
		case tv == 0 && len(resp.FinalizedFeatures) != 0,
			tv > 0 && (len(resp.FinalizedFeatures) != 1 || resp.FinalizedFeatures[0].MaxVersionLevel != tv):
			t.Fatalf("transaction.version=%d: finalized %+v", tv, resp.FinalizedFeatures)
		}
	}
}

// Transactional offset commits are pending until the transaction's marker:
// OffsetFetch does not return them (RequireStable answers
// UNSTABLE_OFFSET_COMMIT), a commit materialises them, an abort drops them,
// and a plain commit written after a transactional one wins over it. A
// restart replays the same result.
func TestTransactionalOffsetCommits(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("t", 1, nil)
	pid, epoch := f.initTxn("o")
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorKeys = "g", []string{"g"}
	f.request(fc)
	fetch := func(stable bool) (int64, int16) {
		f.t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Group, req.RequireStable = "g", stable
			req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
			resp := f.request(req, f.pinned(kmsg.OffsetFetch, 7)).(*kmsg.OffsetFetchResponse)
			if kerr.IsRetriable(kerr.ErrorForCode(resp.ErrorCode)) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			if resp.ErrorCode != 0 {
				return -1, resp.ErrorCode
			}
			p := resp.Topics[0].Partitions[0]
			return p.Offset, p.ErrorCode
		}
	}
	// send re-sends a request, for up to 10 s, while it is answered with a
	// retriable error or CONCURRENT_TRANSACTIONS, as Kafka's clients do
	// (kerr, like Java's exception hierarchy, does not call the latter
	// retriable; the clients retry it), then wants it answered without
	// error. The committed offsets show as soon as the marker reaches
	// __consumer_offsets, but the coordinator stays in PrepareCommit
	// (PrepareAbort) until that write is acknowledged and CompleteCommit is
	// durable: as in Kafka, the next transaction's AddOffsetsToTxn is
	// answered CONCURRENT_TRANSACTIONS meanwhile.
	send := func(what string, code func() int16) {
		f.t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			c := code()
			again := c == kerr.ConcurrentTransactions.Code || kerr.IsRetriable(kerr.ErrorForCode(c))
			if !again || time.Now().After(deadline) {
				f.wantCode(what, c, nil)
				return
			}
		}
	}
	addOffsets := func() {
		f.t.Helper()
		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "o", pid, epoch, "g"
		send("AddOffsetsToTxn", func() int16 { return f.request(ao).(*kmsg.AddOffsetsToTxnResponse).ErrorCode })
	}
	txnOffsetCommit := func(offset int64) {
		f.t.Helper()
		tc := kmsg.NewPtrTxnOffsetCommitRequest()
		tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch = "o", "g", pid, epoch
		tc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}
		send("TxnOffsetCommit", func() int16 {
			return f.request(tc, f.pinned(kmsg.TxnOffsetCommit, 3)).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
		})
	}
	endTxn := func(commit bool) {
		f.t.Helper()
		end := kmsg.NewPtrEndTxnRequest()
		end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "o", pid, epoch, commit
		send("EndTxn", func() int16 { return f.request(end, f.pinned(kmsg.EndTxn, 3)).(*kmsg.EndTxnResponse).ErrorCode })
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if _, code := fetch(true); code == 0 {
				return // the marker reached __consumer_offsets
			}
			if time.Now().After(deadline) {
				f.t.Fatal("the offsets stayed pending after EndTxn")
			}
		}
	}
	txnCommit := func(offset int64, commit bool) {
		f.t.Helper()
		addOffsets()
		txnOffsetCommit(offset)
		if off, code := fetch(true); code != kerr.UnstableOffsetCommit.Code {
			f.t.Fatalf("OffsetFetch RequireStable with a pending offset: %d %v, want UNSTABLE_OFFSET_COMMIT", off, kerr.ErrorForCode(code))
		}
		endTxn(commit)
	}
	want := func(what string, off int64) {
		f.t.Helper()
		if got, code := fetch(false); got != off || code != 0 {
			f.t.Fatalf("%s: committed offset %d (%v), want %d", what, got, kerr.ErrorForCode(code), off)
		}
	}
	txnCommit(42, true)
	want("after a committed transaction", 42)
	txnCommit(50, false)
	want("after an aborted transaction", 42)

	// A plain commit written after the transactional one wins.
	addOffsets()
	txnOffsetCommit(60)
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "g", -1
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 70, LeaderEpoch: -1}}}}
	send("plain OffsetCommit", func() int16 {
		return f.request(oc, f.pinned(kmsg.OffsetCommit, 8)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	})
	endTxn(true)
	want("a plain commit after the transactional one", 70)
	f.restart()
	want("after a restart", 70)
}
