package cluster

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/quorum"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// legacyJSON is the file the single-node metadata owner wrote (its
// MarshalIndent of controller.Image; topic ids in hex).
const legacyJSON = `{
  "cluster_id": "Lk3jAyxKQRGk0OlLdPuj6A",
  "node_id": 1,
  "topics": {
    "__consumer_offsets": {"name": "__consumer_offsets", "id": "0102030405060708090a0b0c0d0e0f10", "partitions": 2,
      "configs": {"cleanup.policy": "compact"}, "internal": true},
    "orders": {"name": "orders", "id": "a1a2a3a4a5a6a7a8a9aaabacadaeafb0", "partitions": 3,
      "configs": {"retention.ms": "3600000"}}
  },
  "broker_configs": {"log.retention.ms": "7200000"},
  "node_configs": {"log.segment.bytes": "2097152"},
  "epoch": 9,
  "next_producer_id_block": 2000
}`

func TestUpgradeConvertsTheSingleNodeMetadata(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileAtomic(fs, "/d/"+LegacyMetadataFile, []byte(legacyJSON)); err != nil {
		t.Fatal(err)
	}
	c := UpgradeConfig{FS: fs, Dir: "/d", NodeID: 1, ClusterID: "Lk3jAyxKQRGk0OlLdPuj6A", Voters: []int32{1},
		LogDirs: [][16]byte{{7}}}
	for _, bad := range []UpgradeConfig{
		{FS: fs, Dir: "/d", NodeID: 1, ClusterID: c.ClusterID, Voters: []int32{1, 2, 3}},
		{FS: fs, Dir: "/d", NodeID: 1, ClusterID: "other", Voters: []int32{1}},
		{FS: fs, Dir: "/d", NodeID: 2, ClusterID: c.ClusterID, Voters: []int32{2}},
	} {
		if _, err := Upgrade(bad); err == nil {
			t.Fatalf("upgrade %+v succeeded", bad)
		}
	}
	epoch, err := Upgrade(c)
	if err != nil || epoch != 1 {
		t.Fatalf("upgrade: epoch %d, %v", epoch, err)
	}
	if _, err := fs.Stat("/d/" + LegacyMetadataFile); !vfs.IsNotExist(err) {
		t.Fatal("the legacy file was not retired")
	}
	if _, err := fs.Stat("/d/" + RetiredMetadataFile); err != nil {
		t.Fatalf("retired file: %v", err)
	}
	im := snapshotImage(t, fs, "/d")
	if im.ClusterID != c.ClusterID || strings.Join(im.TopicNames(), ",") != "__consumer_offsets,orders" {
		t.Fatalf("image: cluster %s topics %v", im.ClusterID, im.TopicNames())
	}
	orders := im.Topic("orders")
	if orders.ID != (metadata.TopicID{0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0}) ||
		len(orders.Partitions) != 3 {
		t.Fatalf("orders: %+v", orders)
	}
	p := orders.Partitions[2]
	if p.Leader != 1 || p.LeaderEpoch != 0 || !cmp.Equal(p.Replicas, []int32{1}) || !cmp.Equal(p.ISR, []int32{1}) {
		t.Fatalf("orders-2: %+v", p)
	}
	if im.TopicConfigs("orders")["retention.ms"] != "3600000" || im.ClusterBrokerConfigs()["log.retention.ms"] != "7200000" ||
		im.NodeBrokerConfigs(1)["log.segment.bytes"] != "2097152" || im.NextProducerID != 2000 {
		t.Fatalf("configs %v %v %v, next producer id %d", im.TopicConfigs("orders"), im.ClusterBrokerConfigs(),
			im.NodeBrokerConfigs(1), im.NextProducerID)
	}
	if b := im.Brokers[1]; b == nil || b.Epoch != 1 || !b.Fenced || !cmp.Equal(b.LogDirs, [][16]byte{{7}}) {
		t.Fatalf("broker 1: %+v", b)
	}

	// A crash between the metadata log and the rename leaves both: the
	// next start only retires the file.
	if err := fs.Rename("/d/"+RetiredMetadataFile, "/d/"+LegacyMetadataFile); err != nil {
		t.Fatal(err)
	}
	if epoch, err := Upgrade(c); err != nil || epoch != 0 {
		t.Fatalf("second upgrade: %d, %v", epoch, err)
	}
	if _, err := fs.Stat("/d/" + LegacyMetadataFile); !vfs.IsNotExist(err) {
		t.Fatal("the legacy file was not retired the second time")
	}
}

// snapshotImage opens the metadata log of a one-node cluster in dir and
// returns its image.
func snapshotImage(t *testing.T, fs vfs.FS, dir string) *metadata.Image {
	t.Helper()
	meta, err := quorum.ReadMeta(fs, MetadataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	b, err := config.NewBroker(map[string]string{"node.id": "1", "process.roles": "broker,controller", "controller.listener.names": "CONTROLLER"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := OpenNode(NodeConfig{FS: fs, MetadataLogDir: dir, ClusterID: meta.ClusterID, Broker: b,
		Logger: slog.New(slog.DiscardHandler), Layout: &Layout{NodeID: 1, Voters: map[int32]string{1: "127.0.0.1:0"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	return n.Image()
}
