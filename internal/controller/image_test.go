package controller

import (
	"testing"

	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/vfs"
)

func openTest(t *testing.T, fs vfs.FS) *Controller {
	t.Helper()
	bc, err := config.NewBroker(map[string]string{"node.id": "1", "log.dirs": "/data",
		"process.roles": "broker,controller", "controller.listener.names": "CONTROLLER",
		"listeners": "PLAINTEXT://127.0.0.1:9092", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat("/data/" + MetadataFile); vfs.IsNotExist(err) {
		if err := fs.MkdirAll("/data", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := Bootstrap(fs, 1)("/data", "cluster-a"); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Open(Options{FS: fs, MetadataDir: "/data", ClusterID: "cluster-a", NodeID: 1, Broker: func() *config.Broker { return bc }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Open refuses an image of another cluster or node: the log dirs' identity
// and the metadata's must agree.
func TestOpenChecksIdentity(t *testing.T) {
	fs := vfs.NewMem()
	openTest(t, fs)
	for _, o := range []Options{{ClusterID: "cluster-b", NodeID: 1}, {ClusterID: "cluster-a", NodeID: 2}} {
		o.FS, o.MetadataDir = fs, "/data"
		if _, err := Open(o); err == nil {
			t.Errorf("Open(cluster %s, node %d) of cluster-a's node 1 image succeeded", o.ClusterID, o.NodeID)
		}
	}
}

// TestTopicByID checks the id index of published images: every topic is
// found by its id after creation, a deleted topic is not, and an image
// loaded from disk is indexed too.
func TestTopicByID(t *testing.T) {
	fs := vfs.NewMem()
	c := openTest(t, fs)
	ids := map[string]TopicID{}
	for _, name := range []string{"orders", "payments", "audit"} {
		tp, err := c.CreateTopic(CreateTopicRequest{Name: name, NumPartitions: 2, ReplicationFactor: -1}, false)
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = tp.ID
	}
	check := func(im *Image, gone string) {
		t.Helper()
		for name, id := range ids {
			got := im.TopicByID(id)
			switch {
			case name == gone && got != nil:
				t.Errorf("deleted topic %s still found by id", name)
			case name != gone && (got == nil || got.Name != name):
				t.Errorf("TopicByID(%s's id) = %v", name, got)
			}
		}
		if im.TopicByID(TopicID{}) != nil {
			t.Error("the zero id names a topic")
		}
	}
	check(c.Image(), "")
	if _, err := c.DeleteTopic("payments", TopicID{}); err != nil {
		t.Fatal(err)
	}
	check(c.Image(), "payments")
	// A changed image is a clone: its index must not be the old image's.
	if err := c.SetTopicConfigs("orders", map[string]string{"retention.ms": "1000"}, false); err != nil {
		t.Fatal(err)
	}
	if got := c.Image().TopicByID(ids["orders"]); got == nil || got.Configs["retention.ms"] != "1000" {
		t.Fatalf("TopicByID after a config change = %+v", got)
	}
	check(openTest(t, fs).Image(), "payments")
}
