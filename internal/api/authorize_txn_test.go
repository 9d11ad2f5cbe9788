package api_test

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// TestTransactionAPIsAuthorization: what a principal sees of the
// transaction APIs with ACLs, as Kafka's KafkaApis answers. Two
// transactions are left open by the super user on topics t and u; alice
// lists only the ids she may DESCRIBE, describes a transaction without the
// partitions of topics she may not DESCRIBE, reads producers only of
// topics she may READ, and a transactional producer of hers (the v0-3
// AddPartitionsToTxn of older clients) adds only topics she may WRITE: a
// denied topic is TOPIC_AUTHORIZATION_FAILED and the rest of the request
// OPERATION_NOT_ATTEMPTED, never added.
func TestTransactionAPIsAuthorization(t *testing.T) {
	f := newAuthzFixture(t)
	for _, name := range []string{"t", "u"} {
		if _, err := f.adm.CreateTopic(f.ctx, 1, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"tx-a", "tx-b"} {
		p, err := kgo.NewClient(kgo.SeedBrokers(f.addr), kgo.SASL(plain.Auth{User: "admin", Pass: "admin-pw"}.AsMechanism()),
			kgo.TransactionalID(id), kgo.DefaultProduceTopic("t"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, topic := range []string{"t", "u"} {
			if err := p.ProduceSync(f.ctx, &kgo.Record{Topic: topic, Value: []byte(id)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}

	listed := func() []string {
		resp := f.send(f.alice, kmsg.NewPtrListTransactionsRequest()).(*kmsg.ListTransactionsResponse)
		var ids []string
		for _, st := range resp.TransactionStates {
			ids = append(ids, st.TransactionalID)
		}
		slices.Sort(ids)
		return ids
	}
	if ids := listed(); len(ids) != 0 {
		t.Errorf("ListTransactions without ACLs lists %v, want nothing", ids)
	}
	f.createACLs(allow(kadm.NewACLs().TransactionalIDs("tx-a"), kadm.OpDescribe))
	if ids := listed(); !slices.Equal(ids, []string{"tx-a"}) {
		t.Errorf("ListTransactions with DESCRIBE on tx-a lists %v", ids)
	}
	if ids := func() []string { // the super user sees both
		resp := f.send(f.admin, kmsg.NewPtrListTransactionsRequest()).(*kmsg.ListTransactionsResponse)
		var ids []string
		for _, st := range resp.TransactionStates {
			ids = append(ids, st.TransactionalID)
		}
		slices.Sort(ids)
		return ids
	}(); !slices.Equal(ids, []string{"tx-a", "tx-b"}) {
		t.Errorf("ListTransactions as the super user lists %v", ids)
	}

	f.createACLs(allow(kadm.NewACLs().Topics("t"), kadm.OpRead)) // READ implies DESCRIBE
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"tx-a", "tx-b"}
	dresp := f.send(f.alice, dt).(*kmsg.DescribeTransactionsResponse)
	a, b := dresp.TransactionStates[0], dresp.TransactionStates[1]
	if a.ErrorCode != 0 || a.State != "Ongoing" || len(a.Topics) != 1 || a.Topics[0].Topic != "t" {
		t.Errorf("DescribeTransactions tx-a: %v %s %+v, want Ongoing with topic t only (u is not describable)",
			kerr.ErrorForCode(a.ErrorCode), a.State, a.Topics)
	}
	if b.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("DescribeTransactions tx-b: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", kerr.ErrorForCode(b.ErrorCode))
	}

	dp := kmsg.NewPtrDescribeProducersRequest()
	dp.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "t", Partitions: []int32{0}}, {Topic: "u", Partitions: []int32{0}}}
	presp := f.send(f.alice, dp).(*kmsg.DescribeProducersResponse)
	if pt := presp.Topics[0].Partitions[0]; pt.ErrorCode != 0 || len(pt.ActiveProducers) != 2 {
		t.Errorf("DescribeProducers t: %v, %d producers, want 2", kerr.ErrorForCode(pt.ErrorCode), len(pt.ActiveProducers))
	}
	if pu := presp.Topics[1].Partitions[0]; pu.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(pu.ActiveProducers) != 0 {
		t.Errorf("DescribeProducers u: %v with %d producers, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(pu.ErrorCode), len(pu.ActiveProducers))
	}

	// Alice's producer speaks AddPartitionsToTxn v3 (Produce v11, EndTxn v4).
	f.createACLs(allow(kadm.NewACLs().TransactionalIDs("tx-alice"), kadm.OpWrite))
	f.createACLs(allow(kadm.NewACLs().Clusters(), kadm.OpIdempotentWrite))
	f.createACLs(allow(kadm.NewACLs().Topics("t"), kadm.OpWrite))
	old := kversion.V3_6_0()
	alice, err := kgo.NewClient(kgo.SeedBrokers(f.addr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism()),
		kgo.TransactionalID("tx-alice"), kgo.MaxVersions(old), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(alice.Close)
	if err := alice.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := alice.ProduceSync(f.ctx, &kgo.Record{Topic: "t", Value: []byte("mine")}).FirstErr(); err != nil {
		t.Fatalf("alice's transactional produce to t (WRITE allowed): %v", err)
	}
	if err := alice.EndTransaction(f.ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	// The request itself, with alice's producer id: t is allowed, u is
	// not, __consumer_offsets never is.
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr("tx-alice"), 60000
	var ip *kmsg.InitProducerIDResponse
	for deadline := time.Now().Add(10 * time.Second); ; { // CONCURRENT_TRANSACTIONS while the commit's markers go out
		ip = f.send(f.alice, init).(*kmsg.InitProducerIDResponse)
		if ip.ErrorCode != kerr.ConcurrentTransactions.Code || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ip.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(ip.ErrorCode))
	}
	f.createACLs(allow(kadm.NewACLs().Topics("__consumer_offsets"), kadm.OpWrite))
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version = 3
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "tx-alice", ip.ProducerID, ip.ProducerEpoch
	for _, topic := range []string{"t", "u", "__consumer_offsets"} {
		add.Topics = append(add.Topics, kmsg.AddPartitionsToTxnRequestTopic{Topic: topic, Partitions: []int32{0}})
	}
	v3 := kversion.V4_2_0()
	v3.SetMaxKeyVersion(int16(kmsg.AddPartitionsToTxn), 3)
	aliceV3, err := kgo.NewClient(kgo.SeedBrokers(f.addr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism()),
		kgo.MaxVersions(v3), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(aliceV3.Close)
	aresp := f.send(aliceV3, add).(*kmsg.AddPartitionsToTxnResponse)
	want := map[string]int16{"t": kerr.OperationNotAttempted.Code, "u": kerr.TopicAuthorizationFailed.Code,
		"__consumer_offsets": kerr.TopicAuthorizationFailed.Code}
	for _, rt := range aresp.Topics {
		if got := rt.Partitions[0].ErrorCode; got != want[rt.Topic] {
			t.Errorf("AddPartitionsToTxn v3 %s: %v, want %v", rt.Topic, kerr.ErrorForCode(got), kerr.ErrorForCode(want[rt.Topic]))
		}
		delete(want, rt.Topic)
	}
	if len(want) != 0 {
		t.Errorf("AddPartitionsToTxn v3 left out %v", want)
	}
	dt.TransactionalIDs = []string{"tx-alice"}
	f.createACLs(allow(kadm.NewACLs().TransactionalIDs("tx-alice"), kadm.OpDescribe))
	if st := f.send(f.alice, dt).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]; st.State != "Empty" && st.State != "CompleteCommit" || len(st.Topics) != 0 {
		t.Errorf("after the refused add, tx-alice is %s with %+v: the allowed partition must not have been added", st.State, st.Topics)
	}
}
