package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// ErrNotExist is returned by Open when the directory holds no segment.
var ErrNotExist = errors.New("wal: no segments")

// DefaultSegmentBytes is the size past which the active segment is rolled.
const DefaultSegmentBytes = 64 << 20

// Options tune a WAL.
type Options struct {
	// SegmentBytes: roll to a new segment once the active one is at least
	// this large (DefaultSegmentBytes if 0).
	SegmentBytes int64
}

func (o Options) segmentBytes() int64 {
	if o.SegmentBytes <= 0 {
		return DefaultSegmentBytes
	}
	return o.SegmentBytes
}

// State is what replay recovered: the snapshot the log starts from, the last
// HardState, and the entries after the snapshot (contiguous, ascending).
type State struct {
	Snapshot  *pb.SnapshotMetadata
	HardState *pb.HardState
	Entries   []*pb.Entry
}

// LastIndex is the index of the last entry, or the snapshot index.
func (s *State) LastIndex() uint64 {
	if n := len(s.Entries); n > 0 {
		return s.Entries[n-1].GetIndex()
	}
	return s.Snapshot.GetIndex()
}

// WAL appends records to the active segment. After any error it refuses
// further work: an fsync that failed cannot be retried safely.
type WAL struct {
	fs   vfs.FS
	dir  string
	opts Options

	f    vfs.File
	seq  uint64
	size int64
	buf  []byte
	err  error
}

type segment struct {
	seq   uint64
	index uint64
	name  string
}

func segmentName(seq, index uint64) string { return fmt.Sprintf("%016x-%016x.wal", seq, index) }

func parseSegmentName(name string) (segment, bool) {
	base, ok := strings.CutSuffix(name, ".wal")
	if !ok {
		return segment{}, false
	}
	a, b, ok := strings.Cut(base, "-")
	if !ok || len(a) != 16 || len(b) != 16 {
		return segment{}, false
	}
	seq, err1 := strconv.ParseUint(a, 16, 64)
	index, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil {
		return segment{}, false
	}
	return segment{seq: seq, index: index, name: name}, true
}

func listSegments(fs vfs.FS, dir string) ([]segment, error) {
	names, err := fs.List(dir)
	if err != nil {
		if vfs.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var segs []segment
	for _, n := range names {
		if s, ok := parseSegmentName(n); ok {
			segs = append(segs, s)
		}
	}
	// Names sort by seq (fixed-width hex), and List returns sorted names.
	return segs, nil
}

// Exists reports whether dir holds at least one segment.
func Exists(fs vfs.FS, dir string) (bool, error) {
	segs, err := listSegments(fs, dir)
	return len(segs) > 0, err
}

// Create makes a new WAL in dir (created if need be; it must hold no
// segment) whose first segment starts with a marker for snap and hs.
func Create(fs vfs.FS, dir string, opts Options, snap *pb.SnapshotMetadata, hs *pb.HardState) (*WAL, error) {
	if segs, err := listSegments(fs, dir); err != nil {
		return nil, err
	} else if len(segs) > 0 {
		return nil, fmt.Errorf("wal: %s already holds segments", dir)
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := fs.SyncDir(filepath.Dir(dir)); err != nil {
		return nil, err
	}
	w := &WAL{fs: fs, dir: dir, opts: opts}
	if err := w.startSegment(0, snap.GetIndex(), appendMarker(nil, marker{snap: snap, hs: hs})); err != nil {
		return nil, err
	}
	return w, nil
}

// startSegment creates segment seq holding first (which may be empty), syncs
// it and the directory, and makes it the active segment.
func (w *WAL) startSegment(seq, index uint64, first []byte) error {
	f, err := w.fs.Create(filepath.Join(w.dir, segmentName(seq, index)))
	if err != nil {
		return err
	}
	if len(first) > 0 {
		if _, err := f.Write(first); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := w.fs.SyncDir(w.dir); err != nil {
		f.Close()
		return err
	}
	if w.f != nil {
		w.f.Close()
	}
	w.f, w.seq, w.size = f, seq, int64(len(first))
	return nil
}

// Save appends ents and then hs (either may be empty) in one write, and
// fsyncs if sync is set. An entry at index i supersedes every entry ≥ i
// written before it.
func (w *WAL) Save(hs *pb.HardState, ents []*pb.Entry, sync bool) error {
	if w.err != nil {
		return w.err
	}
	if hs == nil && len(ents) == 0 {
		if sync {
			return w.fail(w.f.Sync())
		}
		return nil
	}
	if len(ents) > 0 && w.size >= w.opts.segmentBytes() {
		if err := w.roll(ents[0].GetIndex()); err != nil {
			return w.fail(err)
		}
	}
	buf := appendEntries(w.buf[:0], ents)
	if hs != nil {
		buf = appendHardState(buf, hs)
	}
	w.buf = buf[:0]
	if _, err := w.f.Write(buf); err != nil {
		return w.fail(err)
	}
	w.size += int64(len(buf))
	if sync {
		return w.fail(w.f.Sync())
	}
	return nil
}

// roll syncs the active segment and starts an empty one, so that only the
// last segment can ever have a torn tail.
func (w *WAL) roll(nextIndex uint64) error {
	if err := w.f.Sync(); err != nil {
		return err
	}
	return w.startSegment(w.seq+1, nextIndex, nil)
}

// Rotate starts a new segment with a marker saying the log is now snap, hs
// and ents (the entries after snap's index), makes it durable, then removes
// every older segment. The snapshot named by snap must already be durable.
func (w *WAL) Rotate(snap *pb.SnapshotMetadata, hs *pb.HardState, ents []*pb.Entry) error {
	if w.err != nil {
		return w.err
	}
	rec := appendMarker(nil, marker{snap: snap, hs: hs, entries: ents})
	if err := w.startSegment(w.seq+1, snap.GetIndex(), rec); err != nil {
		return w.fail(err)
	}
	return w.fail(w.removeBefore(w.seq))
}

// removeBefore deletes the segments older than seq and syncs the directory.
func (w *WAL) removeBefore(seq uint64) error {
	segs, err := listSegments(w.fs, w.dir)
	if err != nil {
		return err
	}
	removed := false
	for _, s := range segs {
		if s.seq >= seq {
			break
		}
		if err := w.fs.Remove(filepath.Join(w.dir, s.name)); err != nil && !vfs.IsNotExist(err) {
			return err
		}
		removed = true
	}
	if !removed {
		return nil
	}
	return w.fs.SyncDir(w.dir)
}

func (w *WAL) fail(err error) error {
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("wal: %w", err)
	}
	return err
}

// Segments is the number of segment files, for tests and status.
func (w *WAL) Segments() (int, error) {
	segs, err := listSegments(w.fs, w.dir)
	return len(segs), err
}

// Close closes the active segment. It does not sync: everything that had to
// be durable was synced when it was saved.
func (w *WAL) Close() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	if w.err == nil {
		w.err = os.ErrClosed
	}
	return err
}
