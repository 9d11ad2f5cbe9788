package wal

import (
	"errors"
	"fmt"
	"path/filepath"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// Open recovers the WAL in dir (see the package documentation for the
// rules), truncates a torn tail, removes superseded segments and returns
// the WAL positioned to append after the last good record, with the state
// it holds.
func Open(fs vfs.FS, dir string, opts Options) (*WAL, *State, error) {
	segs, err := listSegments(fs, dir)
	if err != nil {
		return nil, nil, err
	}
	if len(segs) == 0 {
		return nil, nil, ErrNotExist
	}
	data := make([][]byte, len(segs))
	start := -1
	for i := len(segs) - 1; i >= 0 && start < 0; i-- {
		if data[i], err = vfs.ReadFile(fs, filepath.Join(dir, segs[i].name)); err != nil {
			return nil, nil, err
		}
		if typ, _, _, err := readRecord(data[i]); err == nil && typ == recSnapshot {
			start = i
		}
	}
	if start < 0 {
		return nil, nil, fmt.Errorf("%w: %s: no segment starts with a snapshot marker", ErrCorrupt, dir)
	}
	st := &State{}
	var goodLen int
	for i := start; i < len(segs); i++ {
		last := i == len(segs)-1
		n, err := replaySegment(st, data[i], last)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", segs[i].name, err)
		}
		goodLen = n
	}
	if err := st.check(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dir, err)
	}
	w := &WAL{fs: fs, dir: dir, opts: opts}
	lastSeg := segs[len(segs)-1]
	f, err := fs.OpenReadWrite(filepath.Join(dir, lastSeg.name))
	if err != nil {
		return nil, nil, err
	}
	if goodLen < len(data[len(segs)-1]) {
		if err := f.Truncate(int64(goodLen)); err != nil {
			f.Close()
			return nil, nil, err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, nil, err
		}
	}
	w.f, w.seq, w.size = f, lastSeg.seq, int64(goodLen)
	if err := w.removeBefore(segs[start].seq); err != nil {
		w.Close()
		return nil, nil, err
	}
	return w, st, nil
}

// replaySegment applies the records of one segment to st and returns the
// length of its good prefix. A bad record ends the last segment (torn
// tail); anywhere else it is corruption.
func replaySegment(st *State, b []byte, last bool) (int, error) {
	off := 0
	for off < len(b) {
		typ, payload, n, err := readRecord(b[off:])
		if errors.Is(err, errTorn) {
			if last {
				return off, nil
			}
			return 0, fmt.Errorf("%w: bad record at offset %d of a sealed segment", ErrCorrupt, off)
		}
		if err != nil {
			return 0, fmt.Errorf("offset %d: %w", off, err)
		}
		if err := st.apply(typ, payload, off == 0); err != nil {
			return 0, fmt.Errorf("offset %d: %w", off, err)
		}
		off += n
	}
	return off, nil
}

func (st *State) apply(typ byte, payload []byte, first bool) error {
	switch typ {
	case recSnapshot:
		if !first {
			return fmt.Errorf("%w: snapshot marker inside a segment", ErrCorrupt)
		}
		m, err := decodeMarker(payload)
		if err != nil {
			return err
		}
		st.Snapshot, st.Entries = m.snap, nil
		if m.hs != nil {
			st.HardState = m.hs
		}
		for _, e := range m.entries {
			if err := st.appendEntry(e); err != nil {
				return err
			}
		}
	case recHardState:
		hs := &pb.HardState{}
		if err := proto.Unmarshal(payload, hs); err != nil {
			return fmt.Errorf("%w: hard state: %v", ErrCorrupt, err)
		}
		st.HardState = hs
	case recEntry:
		e := &pb.Entry{}
		if err := proto.Unmarshal(payload, e); err != nil {
			return fmt.Errorf("%w: entry: %v", ErrCorrupt, err)
		}
		return st.appendEntry(e)
	}
	return nil
}

// appendEntry applies raft's rule: an entry at index i replaces the log
// from i on.
func (st *State) appendEntry(e *pb.Entry) error {
	if st.Snapshot == nil {
		return fmt.Errorf("%w: entry before any snapshot marker", ErrCorrupt)
	}
	i, base := e.GetIndex(), st.Snapshot.GetIndex()
	if i <= base {
		return fmt.Errorf("%w: entry %d at or below snapshot index %d", ErrCorrupt, i, base)
	}
	if last := st.LastIndex(); i > last+1 {
		return fmt.Errorf("%w: entry %d after last index %d leaves a gap", ErrCorrupt, i, last)
	}
	st.Entries = append(st.Entries[:i-base-1], e)
	return nil
}

func (st *State) check() error {
	if st.HardState == nil {
		st.HardState = &pb.HardState{}
	}
	last := st.LastIndex()
	if c := st.HardState.GetCommit(); c > last {
		return fmt.Errorf("%w: commit index %d is past the last entry %d", ErrCorrupt, c, last)
	}
	if st.HardState.GetCommit() < st.Snapshot.GetIndex() {
		hs := proto.Clone(st.HardState).(*pb.HardState)
		hs.Commit = new(st.Snapshot.GetIndex())
		st.HardState = hs
	}
	return nil
}
