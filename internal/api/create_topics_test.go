package api_test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCreateTopicsRoundTrip(t *testing.T) {
	a := newAdminAPI(t, nil)
	resp := a.create("orders", 3, map[string]*string{"retention.ms": ptrTo("3600000"), "cleanup.policy": ptrTo("compact,delete")})
	if resp.ID == [16]byte{} || resp.NumPartitions != 3 || resp.ReplicationFactor != 1 {
		t.Fatalf("create response: id %v partitions %d rf %d", resp.ID, resp.NumPartitions, resp.ReplicationFactor)
	}
	// v5+ reports the created topic's effective configs and their sources.
	if c := resp.Configs["retention.ms"]; c.MaybeValue() != "3600000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms in create response: %+v", c)
	}
	if c := resp.Configs["segment.bytes"]; c.MaybeValue() != "1073741824" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("segment.bytes in create response: %+v", c)
	}
	md, err := a.adm.Metadata(a.ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	td := md.Topics["orders"]
	if td.Err != nil || len(td.Partitions) != 3 || td.ID != resp.ID || td.IsInternal {
		t.Fatalf("metadata after create: %+v", td)
	}
	if got := a.log("orders", 2).Config().RetentionMs; got != 3600000 {
		t.Fatalf("log retention %d, want the topic override", got)
	}
	if c := a.topicConfig("orders", "cleanup.policy"); c.MaybeValue() != "compact,delete" {
		t.Fatalf("cleanup.policy %+v", c)
	}

	// The new topic takes records at once.
	cl := a.b.Client(kgo.DefaultProduceTopic("orders"))
	if err := cl.ProduceSync(a.ctx, &kgo.Record{Key: []byte("k"), Value: []byte("v"), Partition: 2}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Default partitions and replication factor.
	resp = a.create("defaults", -1, nil)
	if resp.NumPartitions != 1 || resp.ReplicationFactor != 1 {
		t.Fatalf("defaults: %+v", resp)
	}
}

func TestCreateTopicsValidateOnly(t *testing.T) {
	a := newAdminAPI(t, nil)
	rs, err := a.adm.ValidateCreateTopics(a.ctx, 4, 1, map[string]*string{"max.message.bytes": ptrTo("2000")}, "dry")
	if err != nil {
		t.Fatal(err)
	}
	r := rs["dry"]
	mmb := r.Configs["max.message.bytes"]
	if r.Err != nil || r.NumPartitions != 4 || r.ID == [16]byte{} || mmb.MaybeValue() != "2000" {
		t.Fatalf("validate-only response: %+v", r)
	}
	if a.b.Metadata().Topic("dry") != nil {
		t.Fatal("validate-only request created the topic")
	}
	rs, err = a.adm.ValidateCreateTopics(a.ctx, 1, 3, nil, "dry")
	if err != nil {
		t.Fatal(err)
	}
	expectKerr(t, "validate-only rf 3", rs["dry"].Err, kerr.InvalidReplicationFactor)
}

func TestCreateTopicsErrors(t *testing.T) {
	a := newAdminAPI(t, nil)
	a.create("exists", 1, nil)
	a.create("a.b", 1, nil)
	for _, tc := range []struct {
		name    string
		topic   string
		parts   int32
		rf      int16
		configs map[string]*string
		want    *kerr.Error
		msg     string
	}{
		{"exists", "exists", 1, 1, nil, kerr.TopicAlreadyExists, "Topic 'exists' already exists."},
		{"rf 3", "t", 1, 3, nil, kerr.InvalidReplicationFactor,
			"Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be reached because only 1 broker(s) are registered."},
		{"rf 0", "t", 1, 0, nil, kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value."},
		{"rf -2", "t", 1, -2, nil, kerr.InvalidReplicationFactor, ""},
		{"0 partitions", "t", 0, 1, nil, kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value."},
		{"bad name", "bad/name", 1, 1, nil, kerr.InvalidTopicException, ""},
		{"empty name", "", 1, 1, nil, kerr.InvalidTopicException, "Topic name is invalid: the empty string is not allowed"},
		{"dot", ".", 1, 1, nil, kerr.InvalidTopicException, ""},
		{"too long", strings.Repeat("x", 250), 1, 1, nil, kerr.InvalidTopicException, ""},
		{"collision", "a_b", 1, 1, nil, kerr.InvalidTopicException, "Topic 'a_b' collides with existing topic: a.b"},
		{"bad config value", "t", 1, 1, map[string]*string{"retention.ms": ptrTo("-5")}, kerr.InvalidConfig, ""},
		{"unknown config", "t", 1, 1, map[string]*string{"no.such.config": ptrTo("1")}, kerr.InvalidConfig, "Unknown topic config name: no.such.config"},
		{"null config", "t", 1, 1, map[string]*string{"retention.ms": nil}, kerr.InvalidConfig, "Null value not supported for topic configs: retention.ms"},
		// Configs are checked before the replication factor, as in Kafka.
		{"config before rf", "t", 1, 3, map[string]*string{"segment.bytes": ptrTo("1")}, kerr.InvalidConfig, ""},
		{"cluster metadata", "__cluster_metadata", 1, 1, nil, kerr.InvalidRequest, "Creation of internal topic __cluster_metadata is prohibited."},
	} {
		rs, err := a.adm.CreateTopics(a.ctx, tc.parts, tc.rf, tc.configs, tc.topic)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r := rs[tc.topic]
		expectKerr(t, tc.name, r.Err, tc.want)
		if tc.msg != "" && r.ErrMessage != tc.msg {
			t.Errorf("%s: message %q, want %q", tc.name, r.ErrMessage, tc.msg)
		}
		if r.ErrMessage == "" {
			t.Errorf("%s: no error message", tc.name)
		}
		if r.NumPartitions != -1 || r.ReplicationFactor != -1 || len(r.Configs) != 0 {
			t.Errorf("%s: failed create reports %d partitions, rf %d, %d configs", tc.name, r.NumPartitions, r.ReplicationFactor, len(r.Configs))
		}
	}
	if names := a.b.Metadata().TopicNames(); len(names) != 2 {
		t.Fatalf("topics after failed creates: %v", names)
	}
}

func TestCreateTopicsDuplicateNames(t *testing.T) {
	a := newAdminAPI(t, nil)
	req := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{"dup", "ok", "dup", "dup"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		req.Topics = append(req.Topics, rt)
	}
	resp := a.send(req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 2 {
		t.Fatalf("got %d results, want one per name: %+v", len(resp.Topics), resp.Topics)
	}
	for _, rt := range resp.Topics {
		switch rt.Topic {
		case "ok":
			if rt.ErrorCode != 0 {
				t.Fatalf("ok: %v", kerr.ErrorForCode(rt.ErrorCode))
			}
		case "dup":
			if rt.ErrorCode != kerr.InvalidRequest.Code || rt.ErrorMessage == nil || *rt.ErrorMessage != "Duplicate topic name." {
				t.Fatalf("dup: code %d message %v", rt.ErrorCode, rt.ErrorMessage)
			}
		}
	}
	if a.b.Metadata().Topic("dup") != nil {
		t.Fatal("duplicated topic was created")
	}
}

func TestCreateTopicsManualAssignment(t *testing.T) {
	a := newAdminAPI(t, nil)
	create := func(topic string, parts int32, rf int16, assignment map[int32][]int32, order ...int32) kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, parts, rf
		for _, p := range order {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = p, assignment[p]
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
		req.Topics = append(req.Topics, rt)
		return a.send(req).(*kmsg.CreateTopicsResponse).Topics[0]
	}
	r := create("manual", -1, -1, map[int32][]int32{0: {1}, 1: {1}, 2: {1}}, 2, 0, 1)
	if r.ErrorCode != 0 || r.NumPartitions != 3 || r.ReplicationFactor != 1 {
		t.Fatalf("manual assignment: %v %+v", kerr.ErrorForCode(r.ErrorCode), r)
	}
	for _, tc := range []struct {
		name       string
		parts      int32
		rf         int16
		assignment map[int32][]int32
		order      []int32
		want       *kerr.Error
		msg        string
	}{
		{"rf set", -1, 1, map[int32][]int32{0: {1}}, []int32{0}, kerr.InvalidRequest,
			"A manual partition assignment was specified, but replication factor was not set to -1."},
		{"partitions set", 1, -1, map[int32][]int32{0: {1}}, []int32{0}, kerr.InvalidRequest,
			"A manual partition assignment was specified, but numPartitions was not set to -1."},
		{"unknown broker", -1, -1, map[int32][]int32{0: {2}}, []int32{0}, kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes broker 2, but no such broker is registered."},
		{"broker twice", -1, -1, map[int32][]int32{0: {1, 1}}, []int32{0}, kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes the broker 1 more than once."},
		{"empty replicas", -1, -1, map[int32][]int32{0: {}}, []int32{0}, kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes an empty replica list."},
		{"gap", -1, -1, map[int32][]int32{0: {1}, 2: {1}}, []int32{0, 2}, kerr.InvalidReplicaAssignment,
			"partitions should be a consecutive 0-based integer sequence"},
		{"partition twice", -1, -1, map[int32][]int32{0: {1}}, []int32{0, 0}, kerr.InvalidReplicaAssignment,
			"Found multiple manual partition assignments for partition 0"},
	} {
		r := create("bad", tc.parts, tc.rf, tc.assignment, tc.order...)
		if r.ErrorCode != tc.want.Code || r.ErrorMessage == nil || *r.ErrorMessage != tc.msg {
			t.Errorf("%s: got %v %v, want %s %q", tc.name, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, tc.want.Message, tc.msg)
		}
	}
}

// Kafka lets clients create its internal topics; they are internal whoever
// creates them, so clients cannot produce to them.
func TestCreateInternalTopic(t *testing.T) {
	a := newAdminAPI(t, nil)
	a.create("__consumer_offsets", 1, map[string]*string{"cleanup.policy": ptrTo("compact")})
	md, err := a.adm.Metadata(a.ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	if !md.Topics["__consumer_offsets"].IsInternal {
		t.Fatal("__consumer_offsets is not internal")
	}
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = "__consumer_offsets"
	req.Topics = append(req.Topics, rt)
	if resp := a.send(req).(*kmsg.DescribeTopicPartitionsResponse); !resp.Topics[0].IsInternal {
		t.Fatal("DescribeTopicPartitions: __consumer_offsets is not internal")
	}
	cl := a.b.Client(kgo.DefaultProduceTopic("__consumer_offsets"), kgo.RecordRetries(0))
	err = cl.ProduceSync(a.ctx, &kgo.Record{Key: []byte("k"), Value: []byte("v")}).FirstErr()
	expectKerr(t, "produce to __consumer_offsets", err, kerr.InvalidTopicException)
}
