package quorum

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/gregor-broker/gregor/internal/quorum/wal"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// testingSkipSync and testingSkipVoteSync break durability on purpose (set
// only by tests, to show that the simulator notices): the first ignores
// Ready.MustSync, the second only when no entries come with the HardState
// (a new term or vote is then forgotten by a crash).
var testingSkipSync, testingSkipVoteSync bool

// storage is the durable side of one raft node: the WAL, the snapshot files
// and raft's MemoryStorage, which mirrors exactly what is durable (it is
// updated only after the WAL write it mirrors succeeded).
type storage struct {
	fs   vfs.FS
	dir  string
	meta Meta
	wal  *wal.WAL
	ms   *raft.MemoryStorage
	hs   *pb.HardState // the last HardState written
}

func (s *storage) snapDir() string { return filepath.Join(s.dir, snapDirName) }

// openStorage recovers dir, refusing to start a voter whose state is partly
// missing. It returns the snapshot the log starts from, data included.
func openStorage(fs vfs.FS, dir string, nodeID int32, walOpts wal.Options) (*storage, *pb.Snapshot, error) {
	meta, err := checkFormatted(fs, dir, nodeID)
	if err != nil {
		return nil, nil, err
	}
	w, st, err := wal.Open(fs, filepath.Join(dir, walDirName), walOpts)
	if err != nil {
		if errors.Is(err, wal.ErrCorrupt) {
			err = fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return nil, nil, err
	}
	s := &storage{fs: fs, dir: dir, meta: meta, wal: w, ms: raft.NewMemoryStorage(), hs: st.HardState}
	md := st.Snapshot
	snap, err := readSnapshot(fs, s.snapDir(), md.GetTerm(), md.GetIndex())
	if err != nil {
		w.Close()
		if vfs.IsNotExist(err) {
			return nil, nil, fmt.Errorf("%w: the WAL starts from snapshot %d@%d but %s is missing",
				ErrCorrupt, md.GetIndex(), md.GetTerm(), snapName(md.GetTerm(), md.GetIndex()))
		}
		return nil, nil, err
	}
	if err := snap.GetMetadata().GetConfState().Equivalent(md.GetConfState()); err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("%w: snapshot %d and its WAL marker disagree on membership: %v", ErrCorrupt, md.GetIndex(), err)
	}
	// Order as raft's doc.go restarts a node: snapshot, HardState, entries.
	if err := s.ms.ApplySnapshot(snap); err != nil {
		w.Close()
		return nil, nil, err
	}
	s.ms.SetHardState(st.HardState)
	if err := s.ms.Append(st.Entries); err != nil {
		w.Close()
		return nil, nil, err
	}
	if err := pruneSnapshots(fs, s.snapDir(), md.GetIndex()); err != nil {
		w.Close()
		return nil, nil, err
	}
	return s, snap, nil
}

// checkFormatted classifies dir: not formatted, fully formatted for nodeID,
// or partly present (a voter that lost state: refuse).
func checkFormatted(fs vfs.FS, dir string, nodeID int32) (Meta, error) {
	meta, metaErr := ReadMeta(fs, dir)
	if metaErr != nil && !vfs.IsNotExist(metaErr) {
		return Meta{}, metaErr
	}
	hasWAL, err := wal.Exists(fs, filepath.Join(dir, walDirName))
	if err != nil {
		return Meta{}, err
	}
	snaps, _, err := listSnapshots(fs, filepath.Join(dir, snapDirName))
	if err != nil {
		return Meta{}, err
	}
	hasMeta := metaErr == nil
	switch {
	case !hasMeta && !hasWAL && len(snaps) == 0:
		return Meta{}, fmt.Errorf("%w: %s", ErrNotFormatted, dir)
	case !hasMeta:
		return Meta{}, fmt.Errorf("%w: %s has raft state but no %s, so which node it belongs to is unknown; "+
			"remove node %d from the quorum and re-add it, or re-format every node of a new cluster", ErrVoteAmnesia, dir, metaFile, nodeID)
	case !hasWAL:
		return Meta{}, fmt.Errorf("%w: node %d (raft id %d) of cluster %s has lost its WAL in %s: it may have voted in terms it "+
			"no longer remembers; remove it from the quorum and re-add it, or re-format every node of a new cluster",
			ErrVoteAmnesia, meta.NodeID, RaftID(meta.NodeID), meta.ClusterID, dir)
	case meta.NodeID != nodeID:
		return Meta{}, fmt.Errorf("%w: %s belongs to node %d, not %d", ErrCorrupt, dir, meta.NodeID, nodeID)
	}
	return meta, nil
}

// save makes one Ready's snapshot, entries and HardState durable (snapshot
// first; fsync iff rd.MustSync) and then mirrors them into MemoryStorage.
func (s *storage) save(rd *raft.Ready) error {
	hs := s.hs
	if !raft.IsEmptyHardState(rd.HardState) {
		hs = rd.HardState
	}
	if !raft.IsEmptySnap(rd.Snapshot) {
		return s.install(rd.Snapshot, hs, rd.Entries)
	}
	var newHS *pb.HardState
	if hs != s.hs {
		newHS = hs
	}
	if err := s.wal.Save(newHS, rd.Entries, rd.MustSync && !testingSkipSync && !(testingSkipVoteSync && len(rd.Entries) == 0)); err != nil {
		return err
	}
	if newHS != nil {
		s.hs = hs
		s.ms.SetHardState(hs)
	}
	return s.ms.Append(rd.Entries)
}

// install saves a snapshot received from the leader: the file, then a WAL
// marker that resets the log to it (with the Ready's HardState and entries,
// all in one synced record), then MemoryStorage.
func (s *storage) install(snap *pb.Snapshot, hs *pb.HardState, ents []*pb.Entry) error {
	md := snap.GetMetadata()
	if len(ents) > 0 && ents[0].GetIndex() != md.GetIndex()+1 {
		return fmt.Errorf("quorum: entries from %d follow snapshot %d", ents[0].GetIndex(), md.GetIndex())
	}
	if err := s.fs.MkdirAll(s.snapDir(), 0o755); err != nil {
		return err
	}
	if err := writeSnapshot(s.fs, s.snapDir(), snap); err != nil {
		return err
	}
	if err := s.wal.Rotate(md, hs, ents); err != nil {
		return err
	}
	if err := s.ms.ApplySnapshot(snap); err != nil {
		return err
	}
	s.hs = hs
	s.ms.SetHardState(hs)
	if err := s.ms.Append(ents); err != nil {
		return err
	}
	return pruneSnapshots(s.fs, s.snapDir(), md.GetIndex())
}

// snapshot records the state machine's data as of applied index i: the file
// (durable), a WAL marker carrying the entries after i (durable; older WAL
// segments are then released), MemoryStorage.CreateSnapshot, and Compact
// keeping the last keep entries for slow followers; then older snapshot
// files go.
func (s *storage) snapshot(i uint64, cs *pb.ConfState, data []byte, keep uint64) error {
	term, err := s.ms.Term(i)
	if err != nil {
		return err
	}
	snap := &pb.Snapshot{
		Metadata: &pb.SnapshotMetadata{Index: new(i), Term: new(term), ConfState: cs},
		Data:     data,
	}
	if err := writeSnapshot(s.fs, s.snapDir(), snap); err != nil {
		return err
	}
	last, _ := s.ms.LastIndex()
	var after []*pb.Entry
	if last > i {
		if after, err = s.ms.Entries(i+1, last+1, math.MaxUint64); err != nil {
			return err
		}
	}
	if err := s.wal.Rotate(snap.GetMetadata(), s.hs, after); err != nil {
		return err
	}
	if _, err := s.ms.CreateSnapshot(i, cs, data); err != nil {
		return err
	}
	if i > keep {
		if err := s.ms.Compact(i - keep); err != nil && !errors.Is(err, raft.ErrCompacted) {
			return err
		}
	}
	return pruneSnapshots(s.fs, s.snapDir(), i)
}

func (s *storage) close() error { return s.wal.Close() }

// voters returns the node ids of a ConfState's voters, sorted.
func voters(cs *pb.ConfState) []int32 {
	var out []int32
	for _, r := range cs.GetVoters() {
		out = append(out, NodeID(r))
	}
	slices.Sort(out)
	return out
}
