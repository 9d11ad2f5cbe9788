package api_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDeleteTopicsByNameAndID(t *testing.T) {
	a := newAdminAPI(t, nil)
	a.create("by-name", 2, nil)
	byID := a.create("by-id", 1, nil)
	cl := a.b.Client(kgo.DefaultProduceTopic("by-name"))
	if err := cl.ProduceSync(a.ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(a.b.Dir, "by-name-0")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("partition dir before delete: %v", err)
	}

	rs, err := a.adm.DeleteTopics(a.ctx, "by-name")
	if err != nil {
		t.Fatal(err)
	}
	expectKerr(t, "delete by name", rs["by-name"].Err, nil)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("partition dir after delete: %v", err)
	}

	req := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.TopicID = byID.ID
	req.Topics = append(req.Topics, dt)
	resp := a.send(req).(*kmsg.DeleteTopicsResponse)
	if r := resp.Topics[0]; r.ErrorCode != 0 || r.Topic == nil || *r.Topic != "by-id" || r.TopicID != byID.ID {
		t.Fatalf("delete by id: %v %+v", kerr.ErrorForCode(r.ErrorCode), r)
	}
	if names := a.b.Metadata().TopicNames(); len(names) != 0 {
		t.Fatalf("topics left: %v", names)
	}
	md, err := a.adm.Metadata(a.ctx, "by-name")
	if err != nil {
		t.Fatal(err)
	}
	expectKerr(t, "metadata after delete", md.Topics["by-name"].Err, kerr.UnknownTopicOrPartition)

	// The name can be used again, by a new topic with a new id.
	again := a.create("by-id", 1, nil)
	if again.ID == byID.ID {
		t.Fatal("re-created topic kept the old id")
	}
}

func TestDeleteTopicsErrors(t *testing.T) {
	a := newAdminAPI(t, nil)
	a.create("keep", 1, nil)
	keep := a.b.Metadata().Topic("keep").ID
	a.create("gone", 1, nil)
	unknownID := [16]byte{1, 2, 3}

	req := kmsg.NewPtrDeleteTopicsRequest()
	add := func(name *string, id [16]byte) {
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic, dt.TopicID = name, id
		req.Topics = append(req.Topics, dt)
	}
	add(ptrTo("missing"), [16]byte{})
	add(nil, unknownID)
	add(ptrTo("twice"), [16]byte{})
	add(ptrTo("twice"), [16]byte{})
	add(nil, [16]byte{})
	add(ptrTo("keep"), keep)
	add(ptrTo("gone"), [16]byte{})
	resp := a.send(req).(*kmsg.DeleteTopicsResponse)

	type result struct {
		code int16
		msg  string
	}
	got := map[string]result{}
	for _, r := range resp.Topics {
		key := "<nil>"
		if r.Topic != nil {
			key = *r.Topic
		}
		if r.TopicID == unknownID {
			key = "unknown-id"
		}
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		got[key] = result{r.ErrorCode, msg}
	}
	want := map[string]result{
		"missing":    {kerr.UnknownTopicOrPartition.Code, "This server does not host this topic-partition."},
		"unknown-id": {kerr.UnknownTopicID.Code, "This server does not host this topic ID."},
		"twice":      {kerr.InvalidRequest.Code, "Duplicate topic name."},
		"<nil>":      {kerr.InvalidRequest.Code, "Neither topic name nor id were specified."},
		"keep":       {kerr.InvalidRequest.Code, "You may not specify both topic name and topic id."},
		"gone":       {0, ""},
	}
	if len(resp.Topics) != len(want) {
		t.Fatalf("got %d results, want %d: %+v", len(resp.Topics), len(want), got)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %+v, want %+v", k, got[k], w)
		}
	}
	if a.b.Metadata().Topic("keep") == nil || a.b.Metadata().Topic("gone") != nil {
		t.Fatalf("topics after delete: %v", a.b.Metadata().TopicNames())
	}

	// A name and the id it maps to in one request.
	req = kmsg.NewPtrDeleteTopicsRequest()
	add(ptrTo("keep"), [16]byte{})
	add(nil, keep)
	req.Topics = req.Topics[len(req.Topics)-2:]
	resp = a.send(req).(*kmsg.DeleteTopicsResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("name and its id: %+v", resp.Topics)
	}
	if a.b.Metadata().Topic("keep") == nil {
		t.Fatal("topic named twice was deleted")
	}

	// Before v6 topics are named only by name.
	rs, err := a.adm.DeleteTopics(a.ctx, "missing")
	if err != nil {
		t.Fatal(err)
	}
	expectKerr(t, "v6 unknown name", rs["missing"].Err, kerr.UnknownTopicOrPartition)
	old := kmsg.NewPtrDeleteTopicsRequest()
	old.TopicNames = []string{"keep", "missing"}
	oresp := a.send(old, a.pinned(kmsg.DeleteTopics, 5)).(*kmsg.DeleteTopicsResponse)
	codes := map[string]int16{}
	for _, r := range oresp.Topics {
		codes[*r.Topic] = r.ErrorCode
	}
	if codes["keep"] != 0 || codes["missing"] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("v5 delete: %v", codes)
	}
}

func TestDeleteTopicsDisabled(t *testing.T) {
	a := newAdminAPI(t, map[string]string{"delete.topic.enable": "false"})
	a.create("stays", 1, nil)
	rs, err := a.adm.DeleteTopics(a.ctx, "stays")
	if err != nil {
		t.Fatal(err)
	}
	expectKerr(t, "delete disabled", rs["stays"].Err, kerr.TopicDeletionDisabled)

	// Before v3 Kafka answered INVALID_REQUEST.
	old := kmsg.NewPtrDeleteTopicsRequest()
	old.TopicNames = []string{"stays"}
	oresp := a.send(old, a.pinned(kmsg.DeleteTopics, 2)).(*kmsg.DeleteTopicsResponse)
	if oresp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("v2 delete disabled: %v", kerr.ErrorForCode(oresp.Topics[0].ErrorCode))
	}
	if a.b.Metadata().Topic("stays") == nil {
		t.Fatal("topic deleted although delete.topic.enable=false")
	}
}
