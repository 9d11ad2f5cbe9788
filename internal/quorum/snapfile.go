package quorum

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"strconv"
	"strings"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// A snapshot file snap/<term>-<index>.snap (16 hex digits each) is
//
//	"GRSN" | u8 version (1) | u32 crc32c(body) | body
//
// where body is proto.Marshal(raftpb.Snapshot): metadata (index, term,
// ConfState) and the state machine's bytes.
var snapMagic = []byte("GRSN")

const snapVersion = 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func snapName(term, index uint64) string { return fmt.Sprintf("%016x-%016x.snap", term, index) }

func parseSnapName(name string) (term, index uint64, ok bool) {
	base, ok := strings.CutSuffix(name, ".snap")
	a, b, ok2 := strings.Cut(base, "-")
	if !ok || !ok2 || len(a) != 16 || len(b) != 16 {
		return 0, 0, false
	}
	t, err1 := strconv.ParseUint(a, 16, 64)
	i, err2 := strconv.ParseUint(b, 16, 64)
	return t, i, err1 == nil && err2 == nil
}

func encodeSnapshot(s *pb.Snapshot) ([]byte, error) {
	body, err := proto.Marshal(s)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 9+len(body))
	out = append(out, snapMagic...)
	out = append(out, snapVersion)
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(body, castagnoli))
	return append(out, body...), nil
}

// writeSnapshot makes s durable as dir/<term>-<index>.snap: tmp file, fsync,
// rename, directory fsync.
func writeSnapshot(fs vfs.FS, dir string, s *pb.Snapshot) error {
	b, err := encodeSnapshot(s)
	if err != nil {
		return err
	}
	md := s.GetMetadata()
	return vfs.WriteFileAtomic(fs, filepath.Join(dir, snapName(md.GetTerm(), md.GetIndex())), b)
}

// readSnapshot loads the snapshot at index/term, checking its CRC and that
// it says what its name says.
func readSnapshot(fs vfs.FS, dir string, term, index uint64) (*pb.Snapshot, error) {
	name := filepath.Join(dir, snapName(term, index))
	b, err := vfs.ReadFile(fs, name)
	if err != nil {
		return nil, err
	}
	if len(b) < 9 || !bytes.Equal(b[:4], snapMagic) || b[4] != snapVersion {
		return nil, fmt.Errorf("%w: %s: bad header", ErrCorrupt, name)
	}
	body := b[9:]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[5:9]) {
		return nil, fmt.Errorf("%w: %s: checksum mismatch", ErrCorrupt, name)
	}
	s := &pb.Snapshot{}
	if err := proto.Unmarshal(body, s); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	if md := s.GetMetadata(); md.GetIndex() != index || md.GetTerm() != term {
		return nil, fmt.Errorf("%w: %s holds snapshot %d@%d", ErrCorrupt, name, md.GetIndex(), md.GetTerm())
	}
	return s, nil
}

type snapFile struct {
	name        string
	term, index uint64
}

// listSnapshots returns the snapshot files of dir by ascending index, and
// the names of leftover temporary files.
func listSnapshots(fs vfs.FS, dir string) (snaps []snapFile, tmps []string, err error) {
	names, err := fs.List(dir)
	if err != nil {
		if vfs.IsNotExist(err) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".tmp") {
			tmps = append(tmps, n)
			continue
		}
		if t, i, ok := parseSnapName(n); ok {
			snaps = append(snaps, snapFile{name: n, term: t, index: i})
		}
	}
	// Terms never decrease as indexes grow, so name order (term, then
	// index) is index order for the snapshots one log produces.
	return snaps, tmps, nil
}

// pruneSnapshots keeps the snapshot at index keep and the one before it (for
// a human to inspect after trouble) and removes every other snapshot and
// temporary file. The WAL no longer refers to the removed ones.
func pruneSnapshots(fs vfs.FS, dir string, keep uint64) error {
	snaps, tmps, err := listSnapshots(fs, dir)
	if err != nil {
		return err
	}
	var doomed []string
	doomed = append(doomed, tmps...)
	prev := -1
	for i, s := range snaps {
		if s.index < keep {
			prev = i
		}
	}
	for i, s := range snaps {
		if s.index != keep && i != prev {
			doomed = append(doomed, s.name)
		}
	}
	if len(doomed) == 0 {
		return nil
	}
	for _, n := range doomed {
		if err := fs.Remove(filepath.Join(dir, n)); err != nil && !vfs.IsNotExist(err) {
			return err
		}
	}
	return fs.SyncDir(dir)
}
