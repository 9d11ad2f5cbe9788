package cluster

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/quorum"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// MetadataDirName is the metadata log's directory in the metadata log dir
// (Kafka's name for the metadata partition's directory).
const MetadataDirName = "__cluster_metadata-0"

// MetadataDir is the metadata log's directory inside metadata log dir dir.
func MetadataDir(dir string) string { return filepath.Join(dir, MetadataDirName) }

// DeriveClusterID names a new cluster after its voters: a hash of the
// sorted "id@host:port" list, in Kafka's cluster id form (a base64url UUID).
// Every node of a cluster started with the same controller.quorum.voters
// and no `gregor storage format -t` therefore formats itself into the same
// cluster, and the bootstrap snapshots agree byte for byte, without a step
// that hands an id from one node to the others. Clusters on different
// addresses get different ids, so a node never joins another cluster's
// quorum by mistake (the raft transport refuses other cluster ids).
func DeriveClusterID(voters map[int32]string) string {
	ids := make([]int32, 0, len(voters))
	for id := range voters {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	b.WriteString("gregor cluster\n")
	for _, id := range ids {
		fmt.Fprintf(&b, "%d@%s\n", id, strings.ToLower(voters[id]))
	}
	sum := sha256.Sum256([]byte(b.String()))
	var u [16]byte
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0f | 0x80 // a version-8 (name-based, custom) UUID
	u[8] = u[8]&0x3f | 0x80
	// Never one of Kafka's reserved ids (high 64 bits zero), never a
	// leading '-' (it would read as a flag on a command line).
	if binary.BigEndian.Uint64(u[:8]) == 0 {
		u[0] = 1
	}
	u[0] &^= 0x80
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// BootstrapImage is a new cluster's first metadata: its id and the
// features a new Gregor cluster runs with.
func BootstrapImage(clusterID string) *metadata.Image {
	return imageOf(controller.BootstrapRecords(clusterID))
}

// imageOf applies recs, as the bootstrap entry, to the empty image.
func imageOf(recs []metadata.Record) *metadata.Image {
	im, _ := metadata.Apply(metadata.Empty(), quorum.BootstrapIndex, quorum.BootstrapTerm,
		&metadata.Entry{Proposer: -1, Term: quorum.BootstrapTerm, Records: recs})
	return im
}

// Format writes a new metadata log into metadata log dir dir for node: the
// bootstrap snapshot (BootstrapImage) with the voters. It is the
// logdirs.Bootstrap of a node whose dirs are formatted for a new cluster;
// every voter must format with the same cluster id and voters.
func Format(fs vfs.FS, nodeID int32, voters []int32) func(dir, clusterID string) error {
	return func(dir, clusterID string) error {
		return bootstrap(fs, dir, nodeID, voters, BootstrapImage(clusterID))
	}
}

func bootstrap(fs vfs.FS, dir string, nodeID int32, voters []int32, im *metadata.Image) error {
	err := quorum.Bootstrap(fs, MetadataDir(dir), quorum.BootstrapConfig{
		ClusterID: im.ClusterID, NodeID: nodeID, Voters: voters, Data: metadata.EncodeSnapshot(im)})
	if err != nil {
		return fmt.Errorf("formatting the metadata log in %s: %w", dir, err)
	}
	return nil
}

// brokerResource is the config resource of one broker's dynamic configs.
func brokerResource(id int32) metadata.ConfigResource {
	return metadata.ConfigResource{Type: metadata.ResourceBroker, Name: strconv.Itoa(int(id))}
}
