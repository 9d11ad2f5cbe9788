package cluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/quorum"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// LegacyMetadataFile is the metadata file of a single-node Gregor from
// before the metadata quorum; RetiredMetadataFile is what it is renamed to
// once converted (kept for one release, for a downgrade by hand).
const (
	LegacyMetadataFile  = "gregor-metadata.json"
	RetiredMetadataFile = "gregor-metadata.json.migrated"
)

// legacyImage is the JSON the single-node metadata owner wrote.
type legacyImage struct {
	ClusterID string                  `json:"cluster_id"`
	NodeID    int32                   `json:"node_id"`
	Topics    map[string]*legacyTopic `json:"topics"`
	// BrokerConfigs are the cluster-wide dynamic broker configs,
	// NodeConfigs this node's own.
	BrokerConfigs       map[string]string `json:"broker_configs"`
	NodeConfigs         map[string]string `json:"node_configs"`
	NextProducerIDBlock int64             `json:"next_producer_id_block"`
}

type legacyTopic struct {
	Name       string            `json:"name"`
	ID         metadata.TopicID  `json:"id"`
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs"`
}

// UpgradeConfig describes the node whose legacy metadata is converted.
type UpgradeConfig struct {
	FS vfs.FS
	// Dir is the metadata log dir holding LegacyMetadataFile.
	Dir       string
	NodeID    int32
	ClusterID string // from meta.properties; the file must agree
	// Voters must be this node alone: the other voters have no copy of
	// the metadata to bootstrap from.
	Voters []int32
	// LogDirs are the directory ids of the node's log dirs, its broker
	// registration's.
	LogDirs [][16]byte
}

// Upgrade converts a single-node Gregor's metadata file into the first
// snapshot of the metadata log: the cluster id, the node registered as a
// (fenced) broker with broker epoch 1, every topic with its id and configs,
// each partition with this node as its only replica, leader and ISR (leader
// epoch 0, which the old broker wrote into every log), the dynamic broker
// configs and the producer id block. Then the file is renamed
// RetiredMetadataFile. A crash before the rename leaves both; the next
// start finds the metadata log and only renames the file. It returns the
// broker epoch the snapshot registers this node with.
func Upgrade(c UpgradeConfig) (int64, error) {
	path := filepath.Join(c.Dir, LegacyMetadataFile)
	if _, err := c.FS.Stat(MetadataDir(c.Dir)); err == nil {
		return 0, retire(c.FS, c.Dir)
	}
	if len(c.Voters) != 1 || c.Voters[0] != c.NodeID {
		return 0, fmt.Errorf("%s holds the metadata of a single-node Gregor; it can become a one-node cluster "+
			"(this node its only voter), not join the voters %v, which have no copy of it: start this node alone "+
			"(without controller.quorum.voters, or with itself as the only voter)", path, c.Voters)
	}
	data, err := vfs.ReadFile(c.FS, path)
	if err != nil {
		return 0, err
	}
	var old legacyImage
	if err := json.Unmarshal(data, &old); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if old.ClusterID != c.ClusterID {
		return 0, fmt.Errorf("%s belongs to cluster %s, but the log dirs' meta.properties name cluster %s", path, old.ClusterID, c.ClusterID)
	}
	if old.NodeID != c.NodeID {
		return 0, fmt.Errorf("%s belongs to node.id %d, this node is %d", path, old.NodeID, c.NodeID)
	}
	im := imageOf(upgradeRecords(&old, c.LogDirs))
	if im.Skipped != 0 {
		return 0, fmt.Errorf("%s: %d of its records do not make a valid metadata image", path, im.Skipped)
	}
	if err := bootstrap(c.FS, c.Dir, c.NodeID, c.Voters, im); err != nil {
		return 0, err
	}
	return upgradeEpoch, retire(c.FS, c.Dir)
}

// upgradeEpoch is the broker epoch the upgrade snapshot registers the node
// with: the bootstrap index, below every epoch a registration can get.
const upgradeEpoch = quorum.BootstrapIndex

func upgradeRecords(old *legacyImage, logDirs [][16]byte) []metadata.Record {
	node := old.NodeID
	recs := controller.BootstrapRecords(old.ClusterID)
	recs = append(recs, metadata.RegisterBroker{ID: node, Epoch: upgradeEpoch, Fenced: true, LogDirs: logDirs})
	for _, name := range slices.Sorted(maps.Keys(old.Topics)) {
		t := old.Topics[name]
		recs = append(recs, metadata.Topic{Name: name, ID: t.ID})
		res := metadata.ConfigResource{Type: metadata.ResourceTopic, Name: name}
		recs = appendConfigs(recs, res, t.Configs)
		for p := range t.Partitions {
			recs = append(recs, metadata.Partition{Topic: t.ID, Partition: p, Replicas: []int32{node}, ISR: []int32{node},
				ELR: []int32{}, LastKnownELR: []int32{}, Leader: node, LeaderRecoveryState: metadata.Recovered,
				Adding: []int32{}, Removing: []int32{}})
		}
	}
	recs = appendConfigs(recs, metadata.ConfigResource{Type: metadata.ResourceBroker}, old.BrokerConfigs)
	recs = appendConfigs(recs, brokerResource(node), old.NodeConfigs)
	if old.NextProducerIDBlock > 0 {
		recs = append(recs, metadata.ProducerIDs{BrokerID: node, BrokerEpoch: upgradeEpoch, NextBlockStart: old.NextProducerIDBlock})
	}
	return recs
}

func appendConfigs(recs []metadata.Record, res metadata.ConfigResource, m map[string]string) []metadata.Record {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		recs = append(recs, metadata.Config{Resource: res, Name: k, Value: &v})
	}
	return recs
}

// retire renames the legacy file, durably.
func retire(fs vfs.FS, dir string) error {
	if err := fs.Rename(filepath.Join(dir, LegacyMetadataFile), filepath.Join(dir, RetiredMetadataFile)); err != nil {
		return fmt.Errorf("retiring %s: %w", LegacyMetadataFile, err)
	}
	return fs.SyncDir(dir)
}
