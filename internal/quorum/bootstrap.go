package quorum

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/gregor-broker/gregor/internal/quorum/wal"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// BootstrapConfig describes a new cluster's metadata quorum.
type BootstrapConfig struct {
	ClusterID string
	NodeID    int32   // the node whose directory is being formatted
	Voters    []int32 // every initial voter (NodeID among them); the same on every node
	// Data is the state machine's initial state (its Snapshot bytes), the
	// same on every node: empty for a new cluster, or an existing single
	// node's metadata to carry it into the quorum.
	Data []byte
	// Rand draws the directory id; crypto/rand if nil.
	Rand io.Reader
}

// BootstrapIndex and BootstrapTerm are where every log starts: each initial
// voter holds the same snapshot at index 1, term 1, with the voters as its
// ConfState, and an empty log, as raft's doc.go recommends instead of
// raft.Bootstrap.
const (
	BootstrapIndex = 1
	BootstrapTerm  = 1
)

// Bootstrap formats dir for one initial voter, as `kafka-storage format`
// does: raft-meta, the bootstrap snapshot, and a WAL whose marker points at
// it. Everything is written into a temporary directory, synced, and renamed
// into place, so a crash leaves dir either unformatted or formatted. dir
// must not exist or be empty; its parent must exist durably.
func Bootstrap(fs vfs.FS, dir string, cfg BootstrapConfig) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	if names, err := fs.List(dir); err == nil {
		if len(names) > 0 {
			if _, err := checkFormatted(fs, dir, cfg.NodeID); err == nil || !isNotFormatted(err) {
				return fmt.Errorf("%w: %s", ErrAlreadyFormatted, dir)
			}
			return fmt.Errorf("quorum: %s is not empty", dir)
		}
		if err := fs.RemoveAll(dir); err != nil {
			return err
		}
	} else if !vfs.IsNotExist(err) {
		return err
	}
	dirID, err := newDirectoryID(cfg.Rand)
	if err != nil {
		return err
	}
	tmp := dir + ".format.tmp"
	if err := fs.RemoveAll(tmp); err != nil {
		return err
	}
	if err := writeBootstrap(fs, tmp, cfg, dirID); err != nil {
		return err
	}
	if err := fs.Rename(tmp, dir); err != nil {
		return err
	}
	return fs.SyncDir(filepath.Dir(dir))
}

func writeBootstrap(fs vfs.FS, tmp string, cfg BootstrapConfig, dirID string) error {
	snapDir := filepath.Join(tmp, snapDirName)
	if err := fs.MkdirAll(snapDir, 0o755); err != nil {
		return err
	}
	meta := Meta{ClusterID: cfg.ClusterID, NodeID: cfg.NodeID, DirectoryID: dirID}
	if err := vfs.WriteFileAtomic(fs, filepath.Join(tmp, metaFile), meta.encode()); err != nil {
		return err
	}
	snap := bootstrapSnapshot(cfg.Voters, cfg.Data)
	if err := writeSnapshot(fs, snapDir, snap); err != nil {
		return err
	}
	// Term 1 with commit 1: the snapshot is committed by definition, and the
	// first election is for term 2.
	hs := &pb.HardState{Term: new(uint64(BootstrapTerm)), Vote: new(uint64(0)), Commit: new(uint64(BootstrapIndex))}
	w, err := wal.Create(fs, filepath.Join(tmp, walDirName), wal.Options{}, snap.GetMetadata(), hs)
	if err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return fs.SyncDir(tmp)
}

func bootstrapSnapshot(nodes []int32, data []byte) *pb.Snapshot {
	ids := make([]uint64, 0, len(nodes))
	for _, n := range nodes {
		ids = append(ids, RaftID(n))
	}
	slices.Sort(ids)
	return &pb.Snapshot{
		Metadata: &pb.SnapshotMetadata{
			Index:     new(uint64(BootstrapIndex)),
			Term:      new(uint64(BootstrapTerm)),
			ConfState: &pb.ConfState{Voters: ids, AutoLeave: new(false)},
		},
		Data: data,
	}
}

func (cfg BootstrapConfig) validate() error {
	if cfg.ClusterID == "" {
		return fmt.Errorf("quorum: bootstrap needs a cluster id")
	}
	if cfg.NodeID < 0 {
		return fmt.Errorf("quorum: node id %d is negative", cfg.NodeID)
	}
	seen := map[int32]bool{}
	for _, v := range cfg.Voters {
		if v < 0 || seen[v] {
			return fmt.Errorf("quorum: bad voter list %v", cfg.Voters)
		}
		seen[v] = true
	}
	if !seen[cfg.NodeID] {
		return fmt.Errorf("quorum: node %d is not among the voters %v", cfg.NodeID, cfg.Voters)
	}
	return nil
}

func newDirectoryID(r io.Reader) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
