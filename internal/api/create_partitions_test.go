package api_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCreatePartitionsGrowsTopic(t *testing.T) {
	a := newAdminAPI(t, nil)
	a.create("wide", 100, nil)
	rs, err := a.adm.UpdatePartitions(a.ctx, 150, "wide")
	if err != nil {
		t.Fatal(err)
	}
	expectKerr(t, "grow to 150", rs["wide"].Err, nil)
	md, err := a.adm.Metadata(a.ctx, "wide")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(md.Topics["wide"].Partitions); n != 150 {
		t.Fatalf("metadata shows %d partitions, want 150", n)
	}
	cl := a.b.Client(kgo.DefaultProduceTopic("wide"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(a.ctx, &kgo.Record{Value: []byte("v"), Partition: 149}).FirstErr(); err != nil {
		t.Fatalf("produce to a new partition: %v", err)
	}
	if leo := a.log("wide", 149).LogEndOffset(); leo != 1 {
		t.Fatalf("new partition log end offset %d", leo)
	}

	// kadm's CreatePartitions adds to the current count.
	rs, err = a.adm.CreatePartitions(a.ctx, 2, "wide")
	if err != nil {
		t.Fatal(err)
	}
	expectKerr(t, "add 2", rs["wide"].Err, nil)
	if n := len(a.b.Metadata().Topic("wide").Partitions); n != 152 {
		t.Fatalf("%d partitions, want 152", n)
	}
}

func TestCreatePartitionsValidateOnlyAndErrors(t *testing.T) {
	a := newAdminAPI(t, nil)
	a.create("t", 3, nil)
	rs, err := a.adm.ValidateUpdatePartitions(a.ctx, 5, "t")
	if err != nil {
		t.Fatal(err)
	}
	expectKerr(t, "validate-only", rs["wide"].Err, nil)
	if n := len(a.b.Metadata().Topic("t").Partitions); n != 3 {
		t.Fatalf("validate-only changed the count to %d", n)
	}

	send := func(topics ...kmsg.CreatePartitionsRequestTopic) []kmsg.CreatePartitionsResponseTopic {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Topics = topics
		return a.send(req).(*kmsg.CreatePartitionsResponse).Topics
	}
	topic := func(name string, count int32, assignment ...[]int32) kmsg.CreatePartitionsRequestTopic {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, count
		if assignment != nil {
			rt.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{}
		}
		for _, r := range assignment {
			ra := kmsg.NewCreatePartitionsRequestTopicAssignment()
			ra.Replicas = r
			rt.Assignment = append(rt.Assignment, ra)
		}
		return rt
	}
	for _, tc := range []struct {
		name string
		rt   kmsg.CreatePartitionsRequestTopic
		want *kerr.Error
		msg  string
	}{
		{"same count", topic("t", 3), kerr.InvalidPartitions, "Topic already has 3 partition(s)."},
		{"fewer", topic("t", 2), kerr.InvalidPartitions, "The topic t currently has 3 partition(s); 2 would not be an increase."},
		{"unknown", topic("nope", 4), kerr.UnknownTopicOrPartition, "This server does not host this topic-partition."},
		{"too few assignments", topic("t", 5, []int32{1}), kerr.InvalidReplicaAssignment,
			"Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."},
		{"empty assignment list", topic("t", 4, [][]int32{}...), kerr.InvalidReplicaAssignment,
			"Attempted to add 1 additional partition(s), but only 0 assignment(s) were specified."},
		{"unknown broker", topic("t", 4, []int32{7}), kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes broker 7, but no such broker is registered."},
		{"wrong replication factor", topic("t", 4, []int32{1, 1}), kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes the broker 1 more than once."},
	} {
		r := send(tc.rt)[0]
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		if r.ErrorCode != tc.want.Code || msg != tc.msg {
			t.Errorf("%s: got %v %q, want %s %q", tc.name, kerr.ErrorForCode(r.ErrorCode), msg, tc.want.Message, tc.msg)
		}
	}

	rs2 := send(topic("t", 4, []int32{1}), topic("dup", 2), topic("dup", 3))
	codes := map[string]int16{}
	for _, r := range rs2 {
		codes[r.Topic] = r.ErrorCode
	}
	if len(rs2) != 2 || codes["t"] != 0 || codes["dup"] != kerr.InvalidRequest.Code {
		t.Fatalf("manual assignment plus duplicate: %+v", rs2)
	}
	if n := len(a.b.Metadata().Topic("t").Partitions); n != 4 {
		t.Fatalf("%d partitions after manual assignment, want 4", n)
	}
}
