package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
)

func groupBroker(t *testing.T, overrides map[string]string) *brokertest.Broker {
	props := map[string]string{
		"offsets.topic.replication.factor": "1",
		"offsets.topic.num.partitions":     "3",
		"group.initial.rebalance.delay.ms": "0",
	}
	for k, v := range overrides {
		props[k] = v
	}
	return brokertest.Start(t, props)
}

// groupReq sends req at exactly version v (kgo routes group requests to
// the coordinator itself).
func groupReq[R kmsg.Response](t *testing.T, b *brokertest.Broker, req kmsg.Request, v int16) R {
	t.Helper()
	vs := kversion.V4_2_0()
	vs.SetMaxKeyVersion(req.Key(), v)
	cl := b.Client(kgo.MaxVersions(vs))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), v, err)
	}
	if got := resp.GetVersion(); got != v {
		t.Fatalf("%s answered at v%d, want v%d", kmsg.NameForKey(req.Key()), got, v)
	}
	return resp.(R)
}

// commitLoaded sends an OffsetCommit at version v again while any of its
// partitions is answered COORDINATOR_LOAD_IN_PROGRESS (the group's
// __consumer_offsets partition loads in the background after the
// FindCoordinator that created it; kgo does not retry partition errors).
func commitLoaded(t *testing.T, b *brokertest.Broker, req *kmsg.OffsetCommitRequest, v int16) *kmsg.OffsetCommitResponse {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := groupReq[*kmsg.OffsetCommitResponse](t, b, req, v)
		loading := false
		for _, rt := range r.Topics {
			for _, p := range rt.Partitions {
				loading = loading || p.ErrorCode == kerr.CoordinatorLoadInProgress.Code
			}
		}
		if !loading || time.Now().After(deadline) {
			return r
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	w := int16(0)
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

func TestGroupRequestsBeforeTheOffsetsTopicExist(t *testing.T) {
	b := groupBroker(t, nil)
	cl := b.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = "g", 10000, 10000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	resp, err := join.RequestWith(ctx, cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "JoinGroup without __consumer_offsets", resp.ErrorCode, kerr.NotCoordinator)
	if b.Metadata().Topic("__consumer_offsets") != nil {
		t.Fatal("__consumer_offsets created before any FindCoordinator")
	}

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"a", "b"}
	fr := groupReq[*kmsg.FindCoordinatorResponse](t, b, fc, 6)
	if len(fr.Coordinators) != 2 || fr.Coordinators[0].NodeID != 1 || fr.Coordinators[1].ErrorCode != 0 {
		t.Fatalf("FindCoordinator v6 %+v", fr.Coordinators)
	}
	im := b.Metadata()
	topic, cfgs := im.Topic("__consumer_offsets"), im.TopicConfigs("__consumer_offsets")
	if topic == nil || len(topic.Partitions) != 3 || cfgs["cleanup.policy"] != "compact" || cfgs["segment.bytes"] != "104857600" {
		t.Fatalf("__consumer_offsets %+v %v", topic, cfgs)
	}

	// A transaction key creates __transaction_state likewise.
	fc = kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorType = "txn", 1
	fr = groupReq[*kmsg.FindCoordinatorResponse](t, b, fc, 3)
	wantCode(t, "FindCoordinator for a transaction", fr.ErrorCode, nil)
	im = b.Metadata()
	if topic, cfgs := im.Topic("__transaction_state"), im.TopicConfigs("__transaction_state"); topic == nil ||
		cfgs["cleanup.policy"] != "compact" || cfgs["compression.type"] != "uncompressed" ||
		cfgs["unclean.leader.election.enable"] != "false" {
		t.Fatalf("__transaction_state %+v %v", topic, cfgs)
	}

	// Clients cannot write to the internal topic.
	p := b.Client(kgo.DefaultProduceTopic("__consumer_offsets"))
	if err := p.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("v")}).FirstErr(); err == nil {
		t.Fatal("produce to __consumer_offsets accepted")
	}
}

func TestOldAndNewVersions(t *testing.T) {
	b := groupBroker(t, nil)
	brokertest.CreateTopic(t, b.AdminClient(), "t", 2, nil)
	join := func(v int16, member string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = "old", member, 10000, 10000
		req.ProtocolType = "consumer"
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}}
		return groupReq[*kmsg.JoinGroupResponse](t, b, req, v)
	}
	// v4+: a new member first learns its id.
	r := join(4, "")
	wantCode(t, "JoinGroup v4", r.ErrorCode, kerr.MemberIDRequired)
	// v0: joins at once (and its session timeout is its rebalance timeout).
	r = join(0, "")
	wantCode(t, "JoinGroup v0", r.ErrorCode, nil)
	if r.Generation != 1 || r.LeaderID != r.MemberID || len(r.Members) != 1 || *r.Protocol != "range" {
		t.Fatalf("JoinGroup v0 %+v", r)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = "old", r.Generation, r.MemberID
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: r.MemberID, MemberAssignment: []byte("x")}}
	sr := groupReq[*kmsg.SyncGroupResponse](t, b, sync, 0)
	if sr.ErrorCode != 0 || string(sr.MemberAssignment) != "x" {
		t.Fatalf("SyncGroup v0 %+v", sr)
	}

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation, commit.MemberID, commit.RetentionTimeMillis = "old", r.Generation, r.MemberID, -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 9}}}}
	cr := groupReq[*kmsg.OffsetCommitResponse](t, b, commit, 2)
	wantCode(t, "OffsetCommit v2", cr.Topics[0].Partitions[0].ErrorCode, nil)

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = "old"
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
	f1 := groupReq[*kmsg.OffsetFetchResponse](t, b, fetch, 1)
	if ps := f1.Topics[0].Partitions; ps[0].Offset != 9 || ps[1].Offset != -1 {
		t.Fatalf("OffsetFetch v1 %+v", ps)
	}
	fetch.Topics = nil // every topic
	f7 := groupReq[*kmsg.OffsetFetchResponse](t, b, fetch, 7)
	if len(f7.Topics) != 1 || f7.Topics[0].Partitions[0].Offset != 9 {
		t.Fatalf("OffsetFetch v7 all topics %+v", f7.Topics)
	}
	multi := kmsg.NewPtrOffsetFetchRequest()
	multi.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "old"}, {Group: "nobody", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}
	f8 := groupReq[*kmsg.OffsetFetchResponse](t, b, multi, 8)
	if len(f8.Groups) != 2 || f8.Groups[0].Topics[0].Partitions[0].Offset != 9 || f8.Groups[1].Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("OffsetFetch v8 %+v", f8.Groups)
	}

	list := kmsg.NewPtrListGroupsRequest()
	list.StatesFilter = []string{"stable"}
	lr := groupReq[*kmsg.ListGroupsResponse](t, b, list, 5)
	if len(lr.Groups) != 1 || lr.Groups[0].Group != "old" || lr.Groups[0].GroupType != "classic" || lr.Groups[0].ProtocolType != "consumer" {
		t.Fatalf("ListGroups v5 %+v", lr.Groups)
	}

	desc := kmsg.NewPtrDescribeGroupsRequest()
	desc.Groups = []string{"old", "missing"}
	d5 := groupReq[*kmsg.DescribeGroupsResponse](t, b, desc, 5)
	if g := d5.Groups[0]; g.State != "Stable" || len(g.Members) != 1 || string(g.Members[0].MemberAssignment) != "x" {
		t.Fatalf("DescribeGroups v5 %+v", g)
	}
	if g := d5.Groups[1]; g.ErrorCode != 0 || g.State != "Dead" {
		t.Fatalf("DescribeGroups v5 of a missing group %+v", g)
	}
	d6 := groupReq[*kmsg.DescribeGroupsResponse](t, b, desc, 6)
	wantCode(t, "DescribeGroups v6 of a missing group", d6.Groups[1].ErrorCode, kerr.GroupIDNotFound)

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.Generation, hb.MemberID = "old", r.Generation+1, r.MemberID
	wantCode(t, "Heartbeat with a wrong generation", groupReq[*kmsg.HeartbeatResponse](t, b, hb, 4).ErrorCode, kerr.IllegalGeneration)

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.MemberID = "old", "ghost"
	wantCode(t, "LeaveGroup v0 of an unknown member", groupReq[*kmsg.LeaveGroupResponse](t, b, leave, 0).ErrorCode, kerr.UnknownMemberID)
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: r.MemberID}, {MemberID: "ghost"}}
	lv := groupReq[*kmsg.LeaveGroupResponse](t, b, leave, 5)
	if lv.ErrorCode != 0 || lv.Members[0].ErrorCode != 0 || lv.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("LeaveGroup v5 %+v", lv)
	}

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"old"}
	wantCode(t, "DeleteGroups", groupReq[*kmsg.DeleteGroupsResponse](t, b, del, 2).Groups[0].ErrorCode, nil)
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "old"
	wantCode(t, "OffsetDelete of a deleted group", groupReq[*kmsg.OffsetDeleteResponse](t, b, od, 0).ErrorCode, kerr.GroupIDNotFound)
}

func TestOversizedOffsetCommit(t *testing.T) {
	b := groupBroker(t, map[string]string{"offset.metadata.max.bytes": "65536"})
	brokertest.CreateTopic(t, b.AdminClient(), "t", 20, nil)
	md := string(make([]byte, 60000))
	big := kmsg.NewPtrOffsetCommitRequest()
	big.Group, big.Generation = "big", -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	for p := range int32(20) { // ~1.2 MB of records: above max.message.bytes
		rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitRequestTopicPartition{Partition: p, Offset: 1, LeaderEpoch: -1, Metadata: &md})
	}
	big.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	r := groupReq[*kmsg.OffsetCommitResponse](t, b, big, 9)
	wantCode(t, "oversized commit", r.Topics[0].Partitions[0].ErrorCode, kerr.InvalidCommitOffsetSize)

	small := kmsg.NewPtrOffsetCommitRequest()
	small.Group, small.Generation = "big", -1
	small.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 7, Offset: 5, LeaderEpoch: -1}}}}
	r = groupReq[*kmsg.OffsetCommitResponse](t, b, small, 9)
	wantCode(t, "small commit after the oversized one", r.Topics[0].Partitions[0].ErrorCode, nil)

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "big"}}
	f := groupReq[*kmsg.OffsetFetchResponse](t, b, fetch, 9)
	if ts := f.Groups[0].Topics; len(ts) != 1 || len(ts[0].Partitions) != 1 || ts[0].Partitions[0].Offset != 5 {
		t.Fatalf("offsets after an oversized commit: %+v", ts)
	}
}

// Kafka answers UNKNOWN_TOPIC_OR_PARTITION for the partitions of a commit
// that the metadata does not hold, commits the rest, and OffsetFetch then
// reports no offset for the refused ones.
func TestOffsetCommitForUnknownTopicOrPartition(t *testing.T) {
	b := groupBroker(t, nil)
	brokertest.CreateTopic(t, b.AdminClient(), "real", 2, nil)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "simple", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{
		{Topic: "ghost", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3, LeaderEpoch: -1}}},
		{Topic: "real", Partitions: []kmsg.OffsetCommitRequestTopicPartition{
			{Partition: 1, Offset: 7, LeaderEpoch: -1}, {Partition: 2, Offset: 8, LeaderEpoch: -1}, {Partition: -1, Offset: 9, LeaderEpoch: -1}}},
	}
	for _, v := range []int16{2, 9} {
		r := commitLoaded(t, b, commit, v)
		wantCode(t, "commit to a topic that does not exist", r.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
		wantCode(t, "commit to an existing partition", r.Topics[1].Partitions[0].ErrorCode, nil)
		wantCode(t, "commit beyond the partition count", r.Topics[1].Partitions[1].ErrorCode, kerr.UnknownTopicOrPartition)
		wantCode(t, "commit to a negative partition", r.Topics[1].Partitions[2].ErrorCode, kerr.UnknownTopicOrPartition)
	}
	// v10 names topics by id: a known id with a partition beyond the count.
	id := b.Metadata().Topic("real").ID
	byID := kmsg.NewPtrOffsetCommitRequest()
	byID.Group, byID.Generation = "simple", -1
	byID.Topics = []kmsg.OffsetCommitRequestTopic{{TopicID: id, Partitions: []kmsg.OffsetCommitRequestTopicPartition{
		{Partition: 0, Offset: 4, LeaderEpoch: -1}, {Partition: 5, Offset: 4, LeaderEpoch: -1}}}}
	r := groupReq[*kmsg.OffsetCommitResponse](t, b, byID, 10)
	wantCode(t, "v10 commit to an existing partition", r.Topics[0].Partitions[0].ErrorCode, nil)
	wantCode(t, "v10 commit beyond the partition count", r.Topics[0].Partitions[1].ErrorCode, kerr.UnknownTopicOrPartition)

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "simple"}}
	f := groupReq[*kmsg.OffsetFetchResponse](t, b, fetch, 9)
	got := map[string]map[int32]int64{}
	for _, ft := range f.Groups[0].Topics {
		for _, fp := range ft.Partitions {
			if got[ft.Topic] == nil {
				got[ft.Topic] = map[int32]int64{}
			}
			got[ft.Topic][fp.Partition] = fp.Offset
		}
	}
	if len(got) != 1 || len(got["real"]) != 2 || got["real"][0] != 4 || got["real"][1] != 7 {
		t.Fatalf("committed offsets %v, want only real/0=4 and real/1=7", got)
	}
	// Asking for a topic that does not exist is not an error (Kafka: offset -1).
	fetch.Groups[0].Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "ghost", Partitions: []int32{0}}}
	f = groupReq[*kmsg.OffsetFetchResponse](t, b, fetch, 9)
	if p := f.Groups[0].Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != -1 {
		t.Fatalf("OffsetFetch of a topic that does not exist: %+v", p)
	}
}

// Deleting a topic deletes every group's committed offsets of it (Kafka's
// onPartitionsDeleted writes their tombstones): OffsetFetch no longer
// returns them, after a restart too, and a topic created again under the
// name starts without them.
func TestDeletedTopicOffsetsRemoved(t *testing.T) {
	b := groupBroker(t, nil)
	adm := b.AdminClient()
	brokertest.CreateTopic(t, adm, "gone", 2, nil)
	brokertest.CreateTopic(t, adm, "kept", 1, nil)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "reader", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{
		{Topic: "gone", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5, LeaderEpoch: -1}, {Partition: 1, Offset: 6, LeaderEpoch: -1}}},
		{Topic: "kept", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7, LeaderEpoch: -1}}},
	}
	r := commitLoaded(t, b, commit, 9)
	for _, rt := range r.Topics {
		for _, p := range rt.Partitions {
			wantCode(t, "commit "+rt.Topic, p.ErrorCode, nil)
		}
	}
	committed := func(b *brokertest.Broker) map[string]int {
		fetch := kmsg.NewPtrOffsetFetchRequest()
		fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "reader"}}
		f := groupReq[*kmsg.OffsetFetchResponse](t, b, fetch, 9)
		out := map[string]int{}
		for _, ft := range f.Groups[0].Topics {
			out[ft.Topic] = len(ft.Partitions)
		}
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := adm.DeleteTopics(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for committed(b)["gone"] != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("offsets of the deleted topic still committed: %v", committed(b))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := committed(b); got["kept"] != 1 {
		t.Fatalf("offsets of another topic gone too: %v", got)
	}
	b.Stop()
	b = brokertest.StartIn(t, b.Dir, b.Props)
	deadline = time.Now().Add(10 * time.Second)
	var got map[string]int
	for got = committed(b); got["kept"] != 1; got = committed(b) { // wait for the load
		if time.Now().After(deadline) {
			t.Fatalf("after restart: %v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got["gone"] != 0 {
		t.Fatalf("the deleted topic's offsets are back after a restart: %v", got)
	}
	brokertest.CreateTopic(t, b.AdminClient(), "gone", 2, nil)
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "reader", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "gone", Partitions: []int32{0, 1}}}}}
	for _, p := range groupReq[*kmsg.OffsetFetchResponse](t, b, fetch, 9).Groups[0].Topics[0].Partitions {
		if p.Offset != -1 {
			t.Fatalf("the topic created again starts at the old committed offset %d (partition %d)", p.Offset, p.Partition)
		}
	}
}
