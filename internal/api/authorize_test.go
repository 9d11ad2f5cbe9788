package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/record"
)

// authzRow is one API's authorization: the ACL that allows the request
// (resource type, name, pattern, operation), ACLs the request needs besides
// (present in every scenario), the request, and where its error code is.
type authzRow struct {
	api       string
	acl       *kadm.ACLBuilder // what alice is given to be allowed; nil: only the super user passes
	needs     *kadm.ACLBuilder
	denied    *kerr.Error
	req       func() kmsg.Request
	code      func(kmsg.Response) int16
	allowedOK func(int16) bool // what the allowed request may answer; nil: anything but denied
}

// authzFixture is a broker with a SASL/PLAIN listener, the
// StandardAuthorizer and super user admin, and clients of admin and alice.
type authzFixture struct {
	t            *testing.T
	ctx          context.Context
	addr         string // the SASL_PLAINTEXT listener
	adm          *kadm.Client
	admin, alice *kgo.Client
}

func newAuthzFixture(t *testing.T) *authzFixture {
	b := brokertest.Start(t, map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":        "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required
			user_admin="admin-pw" user_alice="alice-pw";`,
		"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":           "User:admin",
	})
	addr := b.ListenerAddr("SASL_PLAINTEXT").String()
	client := func(user string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: user, Pass: user + "-pw"}.AsMechanism()),
			kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	f := &authzFixture{t: t, ctx: ctx, addr: addr, admin: client("admin"), alice: client("alice")}
	f.adm = kadm.NewClient(f.admin)
	return f
}

func (f *authzFixture) send(cl *kgo.Client, req kmsg.Request) kmsg.Response {
	f.t.Helper()
	resp, err := cl.SeedBrokers()[0].Request(f.ctx, req)
	if err != nil {
		f.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

func (f *authzFixture) createACLs(b *kadm.ACLBuilder) {
	f.t.Helper()
	res, err := f.adm.CreateACLs(f.ctx, b)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			f.t.Fatalf("CreateACLs: %v", r.Err)
		}
	}
}

func (f *authzFixture) deleteAll() {
	f.t.Helper()
	if _, err := f.adm.DeleteACLs(f.ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().
		Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)); err != nil {
		f.t.Fatal(err)
	}
}

// TestForwardedAuthorization: a request the controller answers is
// authorized item by item on the broker that received it; only what the
// principal may do is forwarded, and the answer shows no more than the
// principal may see.
func TestForwardedAuthorization(t *testing.T) {
	f := newAuthzFixture(t)
	f.createACLs(allow(kadm.NewACLs().Topics("a-").ResourcePatternType(kadm.ACLPatternPrefixed), kadm.OpCreate))
	f.createACLs(allow(kadm.NewACLs().Topics("keep"), kadm.OpDescribe))
	keep, err := f.adm.CreateTopic(f.ctx, 1, 1, nil, "keep")
	if err != nil {
		t.Fatal(err)
	}
	hidden, err := f.adm.CreateTopic(f.ctx, 1, 1, nil, "hidden")
	if err != nil {
		t.Fatal(err)
	}

	// CreateTopics: the allowed topic is created, without its configs
	// (no DESCRIBE_CONFIGS); the denied one is not.
	ct := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{"a-1", "b-1"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		ct.Topics = append(ct.Topics, rt)
	}
	got := map[string]kmsg.CreateTopicsResponseTopic{}
	for _, rt := range f.send(f.alice, ct).(*kmsg.CreateTopicsResponse).Topics {
		got[rt.Topic] = rt
	}
	if a := got["a-1"]; a.ErrorCode != 0 || a.ConfigErrorCode != kerr.TopicAuthorizationFailed.Code || len(a.Configs) != 0 {
		t.Errorf("a-1: %+v", a)
	}
	if b := got["b-1"]; b.ErrorCode != kerr.TopicAuthorizationFailed.Code || b.ErrorMessage == nil || *b.ErrorMessage != "Authorization failed." {
		t.Errorf("b-1: %+v", b)
	}
	topics, err := f.adm.ListTopics(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !topics.Has("a-1") || topics.Has("b-1") {
		t.Errorf("topics after CreateTopics: %v", topics.Names())
	}

	// DeleteTopics by id: a topic alice may describe is named in the
	// denial, one she may not is not; neither is deleted.
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: keep.ID}, {TopicID: hidden.ID}}
	for _, rt := range f.send(f.alice, dt).(*kmsg.DeleteTopicsResponse).Topics {
		switch rt.TopicID {
		case keep.ID:
			if rt.ErrorCode != kerr.TopicAuthorizationFailed.Code || rt.Topic == nil || *rt.Topic != "keep" {
				t.Errorf("delete keep by id: %+v", rt)
			}
		case hidden.ID:
			if rt.ErrorCode != kerr.TopicAuthorizationFailed.Code || rt.Topic != nil {
				t.Errorf("delete hidden by id: %+v", rt)
			}
		default:
			t.Errorf("unexpected result %+v", rt)
		}
	}
	// By name: a topic alice may describe but not delete that does not
	// exist is UNKNOWN_TOPIC_OR_PARTITION, as the controller answers.
	f.createACLs(allow(kadm.NewACLs().Topics("ghost"), kadm.OpDescribe))
	dt = kmsg.NewPtrDeleteTopicsRequest()
	dt.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("ghost")}, {Topic: kmsg.StringPtr("hidden")}}
	for _, rt := range f.send(f.alice, dt).(*kmsg.DeleteTopicsResponse).Topics {
		want := kerr.TopicAuthorizationFailed.Code
		if *rt.Topic == "ghost" {
			want = kerr.UnknownTopicOrPartition.Code
		}
		if rt.ErrorCode != want {
			t.Errorf("delete %s by name: %v, want %v", *rt.Topic, kerr.ErrorForCode(rt.ErrorCode), kerr.ErrorForCode(want))
		}
	}
	topics, err = f.adm.ListTopics(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !topics.Has("keep") || !topics.Has("hidden") {
		t.Errorf("topics after DeleteTopics: %v", topics.Names())
	}
}

// TestAuthorizationTable sends every API that Kafka authorizes, as a
// principal with no ACL, with an ALLOW ACL, with the ALLOW and a DENY ACL,
// and as the super user, and checks Kafka's error code: the authorization
// error without ACL and with DENY (DENY wins over ALLOW), anything else
// with ALLOW or as super user. Resources are named literally, by prefix or
// by the wildcard as the row says.
func TestAuthorizationTable(t *testing.T) {
	f := newAuthzFixture(t)
	ctx, adm, admin, alice := f.ctx, f.adm, f.admin, f.alice
	created, err := adm.CreateTopic(ctx, 1, 1, nil, "t")
	if err != nil {
		t.Fatal(err)
	}
	send, createACLs, deleteAll := f.send, f.createACLs, f.deleteAll
	// Requests go at the newest version both sides know, as clients send
	// them: topics by id where that version names them so.
	for _, row := range authzRows(t, created.ID) {
		deleteAll()
		if row.needs != nil {
			createACLs(row.needs)
		}
		check := func(scenario string, cl *kgo.Client, wantDenied bool) {
			t.Helper()
			code := row.code(send(cl, row.req()))
			switch {
			case wantDenied && code != row.denied.Code:
				t.Errorf("%s %s: %v, want %v", row.api, scenario, kerr.ErrorForCode(code), row.denied)
			case !wantDenied && code == row.denied.Code:
				t.Errorf("%s %s: %v", row.api, scenario, row.denied)
			case !wantDenied && row.allowedOK != nil && !row.allowedOK(code):
				t.Errorf("%s %s: unexpected %v", row.api, scenario, kerr.ErrorForCode(code))
			}
		}
		check("without an ACL", alice, true)
		check("as the super user", admin, false)
		if row.acl == nil {
			continue
		}
		createACLs(row.acl)
		check("with an ALLOW ACL", alice, false)
		// DENY ALL wins over any ALLOW (a DENY of the allowing operation
		// would not deny what it implies: DENY READ leaves DESCRIBE).
		createACLs(row.acl.Deny("User:alice").Operations(kadm.OpAll))
		check("with ALLOW and DENY ACLs", alice, true)
	}
}

func allow(b *kadm.ACLBuilder, ops ...kadm.ACLOperation) *kadm.ACLBuilder {
	return b.Allow("User:alice").Operations(ops...)
}

func authzRows(t *testing.T, tid [16]byte) []authzRow {
	batch, err := record.Build(&record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Records: []record.BuildRecord{{Timestamp: time.Now().UnixMilli(), Value: []byte("v")}}})
	if err != nil {
		t.Fatal(err)
	}
	none := func(c int16) bool { return c == 0 }
	topic := func() *kadm.ACLBuilder { return kadm.NewACLs().Topics("t") }
	group := func() *kadm.ACLBuilder { return kadm.NewACLs().Groups("g") }
	cluster := func() *kadm.ACLBuilder { return kadm.NewACLs().Clusters() }
	str := func(s string) *string { return &s }
	n := 0
	fresh := func(prefix string) string { n++; return fmt.Sprintf("%s%d", prefix, n) }
	return []authzRow{
		{api: "Produce", acl: allow(topic(), kadm.OpWrite), denied: kerr.TopicAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrProduceRequest()
				r.Acks, r.TimeoutMillis = 1, 5000
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic, rt.TopicID = "t", tid
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Records = batch
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode }},
		{api: "Fetch", acl: allow(kadm.NewACLs().Topics("*"), kadm.OpRead), denied: kerr.TopicAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrFetchRequest()
				r.ReplicaID, r.MaxBytes = -1, 1<<20
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic, rt.TopicID = "t", tid
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.PartitionMaxBytes = 1 << 20
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode }},
		{api: "ListOffsets", acl: allow(topic(), kadm.OpDescribe), denied: kerr.TopicAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrListOffsetsRequest()
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = "t"
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Timestamp = -1
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode }},
		// READ implies DESCRIBE.
		{api: "Metadata", acl: allow(topic(), kadm.OpRead), denied: kerr.TopicAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrMetadataRequest()
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = str("t")
				r.Topics = append(r.Topics, rt)
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.MetadataResponse).Topics[0].ErrorCode }},
		// Prefixed topic ACL; a topic that does not exist is still denied,
		// not UNKNOWN_TOPIC_OR_PARTITION.
		{api: "Metadata (unknown topic)", acl: allow(kadm.NewACLs().Topics("nope").ResourcePatternType(kadm.ACLPatternPrefixed), kadm.OpDescribe),
			denied: kerr.TopicAuthorizationFailed, allowedOK: func(c int16) bool { return c == kerr.UnknownTopicOrPartition.Code },
			req: func() kmsg.Request {
				r := kmsg.NewPtrMetadataRequest()
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = str("nope-1")
				r.Topics = append(r.Topics, rt)
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.MetadataResponse).Topics[0].ErrorCode }},
		{api: "OffsetCommit", acl: allow(group(), kadm.OpRead), needs: allow(topic(), kadm.OpRead), denied: kerr.GroupAuthorizationFailed,
			req: func() kmsg.Request {
				r := kmsg.NewPtrOffsetCommitRequest()
				r.Group, r.Generation = "g", -1
				rt := kmsg.NewOffsetCommitRequestTopic()
				rt.Topic, rt.TopicID = "t", tid
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode }},
		{api: "OffsetCommit (topic)", acl: allow(topic(), kadm.OpRead), needs: allow(group(), kadm.OpRead), denied: kerr.TopicAuthorizationFailed,
			req: func() kmsg.Request {
				r := kmsg.NewPtrOffsetCommitRequest()
				r.Group, r.Generation = "g", -1
				rt := kmsg.NewOffsetCommitRequestTopic()
				rt.Topic, rt.TopicID = "t", tid
				rt.Partitions = append(rt.Partitions, kmsg.NewOffsetCommitRequestTopicPartition())
				r.Topics = append(r.Topics, rt)
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode }},
		{api: "OffsetFetch", acl: allow(group(), kadm.OpDescribe), denied: kerr.GroupAuthorizationFailed,
			req: func() kmsg.Request {
				r := kmsg.NewPtrOffsetFetchRequest()
				r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}}
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode }},
		{api: "FindCoordinator", acl: allow(group(), kadm.OpDescribe), denied: kerr.GroupAuthorizationFailed,
			req: func() kmsg.Request {
				r := kmsg.NewPtrFindCoordinatorRequest()
				r.CoordinatorKeys = []string{"g"}
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode }},
		{api: "FindCoordinator (transaction)", acl: allow(kadm.NewACLs().TransactionalIDs("x"), kadm.OpDescribe),
			denied: kerr.TransactionalIDAuthorizationFailed,
			req: func() kmsg.Request {
				r := kmsg.NewPtrFindCoordinatorRequest()
				r.CoordinatorKeys, r.CoordinatorType = []string{"x"}, 1
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode }},
		{api: "JoinGroup", acl: allow(group(), kadm.OpRead), denied: kerr.GroupAuthorizationFailed,
			req: func() kmsg.Request {
				r := kmsg.NewPtrJoinGroupRequest()
				r.Version, r.Group, r.ProtocolType, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 5, "g", "consumer", 10000, 100
				r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode }},
		{api: "Heartbeat", acl: allow(group(), kadm.OpRead), denied: kerr.GroupAuthorizationFailed,
			req:  func() kmsg.Request { r := kmsg.NewPtrHeartbeatRequest(); r.Group, r.MemberID = "g", "m"; return r },
			code: func(r kmsg.Response) int16 { return r.(*kmsg.HeartbeatResponse).ErrorCode }},
		{api: "LeaveGroup", acl: allow(group(), kadm.OpRead), denied: kerr.GroupAuthorizationFailed,
			req:  func() kmsg.Request { r := kmsg.NewPtrLeaveGroupRequest(); r.Group, r.MemberID = "g", "m"; return r },
			code: func(r kmsg.Response) int16 { return r.(*kmsg.LeaveGroupResponse).ErrorCode }},
		{api: "SyncGroup", acl: allow(group(), kadm.OpRead), denied: kerr.GroupAuthorizationFailed,
			req:  func() kmsg.Request { r := kmsg.NewPtrSyncGroupRequest(); r.Group, r.MemberID = "g", "m"; return r },
			code: func(r kmsg.Response) int16 { return r.(*kmsg.SyncGroupResponse).ErrorCode }},
		{api: "DescribeGroups", acl: allow(group(), kadm.OpDescribe), denied: kerr.GroupAuthorizationFailed,
			req:  func() kmsg.Request { r := kmsg.NewPtrDescribeGroupsRequest(); r.Groups = []string{"g"}; return r },
			code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode }},
		{api: "CreateTopics", acl: allow(kadm.NewACLs().Topics("new-").ResourcePatternType(kadm.ACLPatternPrefixed), kadm.OpCreate),
			denied: kerr.TopicAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrCreateTopicsRequest()
				rt := kmsg.NewCreateTopicsRequestTopic()
				rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fresh("new-"), 1, 1
				r.Topics = append(r.Topics, rt)
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode }},
		{api: "CreateTopics (cluster)", acl: allow(cluster(), kadm.OpCreate), denied: kerr.TopicAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrCreateTopicsRequest()
				rt := kmsg.NewCreateTopicsRequestTopic()
				rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fresh("other-"), 1, 1
				r.Topics = append(r.Topics, rt)
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode }},
		{api: "DeleteTopics", acl: allow(kadm.NewACLs().Topics("gone"), kadm.OpDelete), denied: kerr.TopicAuthorizationFailed,
			allowedOK: func(c int16) bool { return c == kerr.UnknownTopicOrPartition.Code },
			req: func() kmsg.Request {
				r := kmsg.NewPtrDeleteTopicsRequest()
				r.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: str("gone")}}
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode }},
		{api: "DeleteRecords", acl: allow(topic(), kadm.OpDelete), denied: kerr.TopicAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrDeleteRecordsRequest()
				rt := kmsg.NewDeleteRecordsRequestTopic()
				rt.Topic = "t"
				rt.Partitions = []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 0}}
				r.Topics = append(r.Topics, rt)
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode }},
		{api: "InitProducerId (idempotent)", acl: allow(cluster(), kadm.OpIdempotentWrite), denied: kerr.ClusterAuthorizationFailed, allowedOK: none,
			req:  func() kmsg.Request { return kmsg.NewPtrInitProducerIDRequest() },
			code: func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }},
		{api: "InitProducerId (WRITE on some topic)", acl: allow(kadm.NewACLs().Topics("any-").ResourcePatternType(kadm.ACLPatternPrefixed), kadm.OpWrite),
			denied: kerr.ClusterAuthorizationFailed, allowedOK: none,
			req:  func() kmsg.Request { return kmsg.NewPtrInitProducerIDRequest() },
			code: func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }},
		{api: "InitProducerId (transactional)", acl: allow(kadm.NewACLs().TransactionalIDs("x"), kadm.OpWrite),
			denied: kerr.TransactionalIDAuthorizationFailed,
			req: func() kmsg.Request {
				r := kmsg.NewPtrInitProducerIDRequest()
				r.TransactionalID, r.TransactionTimeoutMillis = str("x"), 10000
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }},
		{api: "OffsetForLeaderEpoch", acl: allow(topic(), kadm.OpDescribe), denied: kerr.TopicAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrOffsetForLeaderEpochRequest()
				r.ReplicaID = -1
				rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
				rt.Topic = "t"
				rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
				rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
				return r
			},
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode
			}},
		{api: "OffsetForLeaderEpoch (replica)", acl: allow(cluster(), kadm.OpClusterAction), denied: kerr.ClusterAuthorizationFailed,
			req: func() kmsg.Request {
				r := kmsg.NewPtrOffsetForLeaderEpochRequest()
				r.ReplicaID = 7
				rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
				rt.Topic = "t"
				rt.Partitions = append(rt.Partitions, kmsg.NewOffsetForLeaderEpochRequestTopicPartition())
				r.Topics = append(r.Topics, rt)
				return r
			},
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode
			}},
		{api: "DescribeAcls", acl: allow(cluster(), kadm.OpDescribe), denied: kerr.ClusterAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrDescribeACLsRequest()
				r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = 1, 1, 1, 1
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeACLsResponse).ErrorCode }},
		{api: "CreateAcls", acl: allow(cluster(), kadm.OpAlter), denied: kerr.ClusterAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrCreateACLsRequest()
				c := kmsg.NewCreateACLsRequestCreation()
				c.ResourceType, c.ResourceName, c.ResourcePatternType = 2, "other", 3
				c.Principal, c.Host, c.Operation, c.PermissionType = "User:carol", "*", 3, 3
				r.Creations = append(r.Creations, c)
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.CreateACLsResponse).Results[0].ErrorCode }},
		{api: "DeleteAcls", acl: allow(cluster(), kadm.OpAlter), denied: kerr.ClusterAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrDeleteACLsRequest()
				f := kmsg.NewDeleteACLsRequestFilter()
				f.ResourceType, f.ResourceName, f.ResourcePatternType, f.Operation, f.PermissionType = 2, str("nothing"), 3, 1, 1
				r.Filters = append(r.Filters, f)
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.DeleteACLsResponse).Results[0].ErrorCode }},
		// ALTER_CONFIGS implies DESCRIBE_CONFIGS.
		{api: "DescribeConfigs", acl: allow(topic(), kadm.OpAlterConfigs), denied: kerr.TopicAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrDescribeConfigsRequest()
				rr := kmsg.NewDescribeConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
				r.Resources = append(r.Resources, rr)
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode }},
		{api: "DescribeConfigs (broker)", acl: allow(cluster(), kadm.OpDescribeConfigs), denied: kerr.ClusterAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrDescribeConfigsRequest()
				rr := kmsg.NewDescribeConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
				r.Resources = append(r.Resources, rr)
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode }},
		{api: "AlterConfigs", acl: allow(topic(), kadm.OpAlterConfigs), denied: kerr.TopicAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrAlterConfigsRequest()
				rr := kmsg.NewAlterConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
				rr.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: str("100000")}}
				r.Resources = append(r.Resources, rr)
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode }},
		{api: "IncrementalAlterConfigs (broker)", acl: allow(cluster(), kadm.OpAlterConfigs), denied: kerr.ClusterAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrIncrementalAlterConfigsRequest()
				rr := kmsg.NewIncrementalAlterConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, ""
				rr.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "log.retention.bytes", Value: str("-1")}}
				r.Resources = append(r.Resources, rr)
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode }},
		{api: "DescribeLogDirs", acl: allow(cluster(), kadm.OpDescribe), denied: kerr.ClusterAuthorizationFailed, allowedOK: none,
			req:  func() kmsg.Request { r := kmsg.NewPtrDescribeLogDirsRequest(); r.Version = 4; return r },
			code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeLogDirsResponse).ErrorCode }},
		{api: "CreatePartitions", acl: allow(topic(), kadm.OpAlter), denied: kerr.TopicAuthorizationFailed,
			req: func() kmsg.Request {
				r := kmsg.NewPtrCreatePartitionsRequest()
				rt := kmsg.NewCreatePartitionsRequestTopic()
				rt.Topic, rt.Count = "t", 1
				r.Topics, r.ValidateOnly = append(r.Topics, rt), true
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode }},
		{api: "DeleteGroups", acl: allow(group(), kadm.OpDelete), denied: kerr.GroupAuthorizationFailed,
			req:  func() kmsg.Request { r := kmsg.NewPtrDeleteGroupsRequest(); r.Groups = []string{"g"}; return r },
			code: func(r kmsg.Response) int16 { return r.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode }},
		{api: "OffsetDelete", acl: allow(group(), kadm.OpDelete), denied: kerr.GroupAuthorizationFailed,
			req:  func() kmsg.Request { r := kmsg.NewPtrOffsetDeleteRequest(); r.Group = "g"; return r },
			code: func(r kmsg.Response) int16 { return r.(*kmsg.OffsetDeleteResponse).ErrorCode }},
		{api: "DescribeUserScramCredentials", acl: allow(cluster(), kadm.OpDescribe), denied: kerr.ClusterAuthorizationFailed, allowedOK: none,
			req:  func() kmsg.Request { return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest() },
			code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode }},
		{api: "AlterUserScramCredentials", acl: allow(cluster(), kadm.OpAlter), denied: kerr.ClusterAuthorizationFailed,
			req: func() kmsg.Request {
				r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
				r.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "nobody", Mechanism: 1}}
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0].ErrorCode }},
		{api: "ElectLeaders", acl: allow(cluster(), kadm.OpAlter), denied: kerr.ClusterAuthorizationFailed,
			req: func() kmsg.Request {
				r := kmsg.NewPtrElectLeadersRequest()
				r.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0}}}
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.ElectLeadersResponse).ErrorCode }},
		{api: "AlterPartitionReassignments", acl: allow(cluster(), kadm.OpAlter), denied: kerr.ClusterAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
				r.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "t",
					Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0}}}}
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode }},
		{api: "ListPartitionReassignments", acl: allow(cluster(), kadm.OpDescribe), denied: kerr.ClusterAuthorizationFailed, allowedOK: none,
			req:  func() kmsg.Request { return kmsg.NewPtrListPartitionReassignmentsRequest() },
			code: func(r kmsg.Response) int16 { return r.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode }},
		{api: "DescribeQuorum", acl: allow(cluster(), kadm.OpDescribe), denied: kerr.ClusterAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrDescribeQuorumRequest()
				r.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata",
					Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeQuorumResponse).ErrorCode }},
		{api: "DescribeTopicPartitions", acl: allow(topic(), kadm.OpDescribe), denied: kerr.TopicAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrDescribeTopicPartitionsRequest()
				r.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "t"}}
				r.ResponsePartitionLimit = 100
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeTopicPartitionsResponse).Topics[0].ErrorCode }},
		// The transaction APIs: WRITE on the transactional id (and READ on
		// the group), CLUSTER_ACTION for what brokers send each other.
		{api: "EndTxn", acl: allow(kadm.NewACLs().TransactionalIDs("tx"), kadm.OpWrite), denied: kerr.TransactionalIDAuthorizationFailed,
			req: func() kmsg.Request {
				r := kmsg.NewPtrEndTxnRequest()
				r.TransactionalID, r.ProducerID, r.ProducerEpoch = "tx", 1, 0
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode }},
		{api: "AddOffsetsToTxn", acl: allow(kadm.NewACLs().TransactionalIDs("tx").Groups("g"), kadm.OpWrite, kadm.OpRead),
			denied: kerr.TransactionalIDAuthorizationFailed,
			req: func() kmsg.Request {
				r := kmsg.NewPtrAddOffsetsToTxnRequest()
				r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = "tx", 1, 0, "g"
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode }},
		{api: "TxnOffsetCommit", acl: allow(kadm.NewACLs().TransactionalIDs("tx").Groups("g"), kadm.OpWrite, kadm.OpRead),
			denied: kerr.TransactionalIDAuthorizationFailed,
			req: func() kmsg.Request {
				r := kmsg.NewPtrTxnOffsetCommitRequest()
				r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch, r.Generation = "tx", "g", 1, 0, -1
				rt := kmsg.NewTxnOffsetCommitRequestTopic()
				rt.Topic = "t"
				rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				rp.Offset, rp.LeaderEpoch = 1, -1
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
				return r
			},
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
			}},
		{api: "DescribeTransactions", acl: allow(kadm.NewACLs().TransactionalIDs("tx"), kadm.OpDescribe),
			denied: kerr.TransactionalIDAuthorizationFailed, allowedOK: func(c int16) bool { return c == kerr.TransactionalIDNotFound.Code },
			req: func() kmsg.Request {
				r := kmsg.NewPtrDescribeTransactionsRequest()
				r.TransactionalIDs = []string{"tx"}
				return r
			},
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode
			}},
		{api: "DescribeProducers", acl: allow(topic(), kadm.OpRead), denied: kerr.TopicAuthorizationFailed, allowedOK: none,
			req: func() kmsg.Request {
				r := kmsg.NewPtrDescribeProducersRequest()
				r.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "t", Partitions: []int32{0}}}
				return r
			},
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode
			}},
		{api: "AddPartitionsToTxn (broker batch)", acl: allow(cluster(), kadm.OpClusterAction), denied: kerr.ClusterAuthorizationFailed,
			req: func() kmsg.Request {
				r := kmsg.NewPtrAddPartitionsToTxnRequest()
				tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
				tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "tx", 1, 0, true
				tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
				tt.Topic, tt.Partitions = "t", []int32{0}
				tx.Topics = append(tx.Topics, tt)
				r.Transactions = append(r.Transactions, tx)
				return r
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.AddPartitionsToTxnResponse).ErrorCode }},
		{api: "WriteTxnMarkers", acl: allow(cluster(), kadm.OpClusterAction), denied: kerr.ClusterAuthorizationFailed,
			req: func() kmsg.Request {
				r := kmsg.NewPtrWriteTxnMarkersRequest()
				m := kmsg.NewWriteTxnMarkersRequestMarker()
				m.ProducerID, m.ProducerEpoch = 1, 0
				mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				mt.Topic, mt.Partitions = "t", []int32{0}
				m.Topics = append(m.Topics, mt)
				r.Markers = append(r.Markers, m)
				return r
			},
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
			}},
	}
}
