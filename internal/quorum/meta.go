package quorum

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// metaFile is the raft-meta file next to the WAL: who this directory
// belongs to. It is written once, by Bootstrap.
const (
	metaFile    = "raft-meta"
	metaVersion = 1
	walDirName  = "wal"
	snapDirName = "snap"
)

// Meta identifies a formatted metadata directory.
type Meta struct {
	ClusterID string
	NodeID    int32
	// DirectoryID is random per format: a node whose directory was wiped
	// and re-formatted comes back with a new one, which peers that knew
	// the old one can refuse (see the transport).
	DirectoryID string
}

func (m Meta) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "version=%d\ncluster.id=%s\nnode.id=%d\nraft.id=%d\ndirectory.id=%s\n",
		metaVersion, m.ClusterID, m.NodeID, RaftID(m.NodeID), m.DirectoryID)
	return b.Bytes()
}

func decodeMeta(data []byte) (Meta, error) {
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return Meta{}, fmt.Errorf("%w: %s: line %q", ErrCorrupt, metaFile, line)
		}
		kv[k] = v
	}
	if kv["version"] != strconv.Itoa(metaVersion) {
		return Meta{}, fmt.Errorf("%w: %s: version %q, want %d", ErrCorrupt, metaFile, kv["version"], metaVersion)
	}
	node, err := strconv.ParseInt(kv["node.id"], 10, 32)
	if err != nil || node < 0 {
		return Meta{}, fmt.Errorf("%w: %s: node.id %q", ErrCorrupt, metaFile, kv["node.id"])
	}
	m := Meta{ClusterID: kv["cluster.id"], NodeID: int32(node), DirectoryID: kv["directory.id"]}
	if kv["raft.id"] != strconv.FormatUint(RaftID(m.NodeID), 10) {
		return Meta{}, fmt.Errorf("%w: %s: raft.id %q does not match node.id %d", ErrCorrupt, metaFile, kv["raft.id"], m.NodeID)
	}
	if m.ClusterID == "" || m.DirectoryID == "" {
		return Meta{}, fmt.Errorf("%w: %s: cluster.id and directory.id are required", ErrCorrupt, metaFile)
	}
	return m, nil
}

// ReadMeta reads dir's raft-meta file.
func ReadMeta(fs vfs.FS, dir string) (Meta, error) {
	data, err := vfs.ReadFile(fs, filepath.Join(dir, metaFile))
	if err != nil {
		return Meta{}, err
	}
	return decodeMeta(data)
}
