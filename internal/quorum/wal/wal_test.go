package wal

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/gregor-broker/gregor/internal/vfs"
)

const dir = "/meta/wal"

func ent(index, term uint64, data string) *pb.Entry {
	return &pb.Entry{Index: new(index), Term: new(term), Type: pb.EntryNormal.Enum(), Data: []byte(data)}
}

func hard(term, vote, commit uint64) *pb.HardState {
	return &pb.HardState{Term: new(term), Vote: new(vote), Commit: new(commit)}
}

func snapMeta(index, term uint64, voters ...uint64) *pb.SnapshotMetadata {
	return &pb.SnapshotMetadata{Index: new(index), Term: new(term), ConfState: &pb.ConfState{Voters: voters}}
}

func mustCreate(t *testing.T, fs vfs.FS, opts Options) *WAL {
	t.Helper()
	mkParent(t, fs)
	w, err := Create(fs, dir, opts, snapMeta(1, 1, 1, 2, 3), hard(1, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// mkParent makes the WAL's parent directory durably, as the quorum's
// storage does before creating the WAL.
func mkParent(t *testing.T, fs vfs.FS) {
	t.Helper()
	if err := fs.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
}

func mustOpen(t *testing.T, fs vfs.FS) (*WAL, *State) {
	t.Helper()
	w, st, err := Open(fs, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return w, st
}

// describe renders a state for comparison.
func describe(st *State) string {
	s := fmt.Sprintf("snap=%d/%d hs=%d/%d/%d", st.Snapshot.GetIndex(), st.Snapshot.GetTerm(),
		st.HardState.GetTerm(), st.HardState.GetVote(), st.HardState.GetCommit())
	for _, e := range st.Entries {
		s += fmt.Sprintf(" %d:%d:%s", e.GetIndex(), e.GetTerm(), e.GetData())
	}
	return s
}

func TestSaveReopenOverwrite(t *testing.T) {
	fs := vfs.NewMem()
	w := mustCreate(t, fs, Options{})
	steps := []struct {
		hs   *pb.HardState
		ents []*pb.Entry
	}{
		{hard(2, 1, 1), []*pb.Entry{ent(2, 2, "a"), ent(3, 2, "b"), ent(4, 2, "c")}},
		{hard(2, 1, 2), nil},
		// A new leader overwrites index 3 on: 4 must go too.
		{hard(3, 2, 2), []*pb.Entry{ent(3, 3, "B")}},
		{nil, []*pb.Entry{ent(4, 3, "C")}},
	}
	for _, s := range steps {
		if err := w.Save(s.hs, s.ents, true); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	_, st := mustOpen(t, fs.CrashClone())
	if got, want := describe(st), "snap=1/1 hs=3/2/2 2:2:a 3:3:B 4:3:C"; got != want {
		t.Fatalf("recovered %q, want %q", got, want)
	}
}

func TestUnsyncedCommitOnlyMayBeLost(t *testing.T) {
	fs := vfs.NewMem()
	w := mustCreate(t, fs, Options{})
	if err := w.Save(hard(2, 1, 1), []*pb.Entry{ent(2, 2, "a")}, true); err != nil {
		t.Fatal(err)
	}
	if err := w.Save(hard(2, 1, 2), nil, false); err != nil {
		t.Fatal(err)
	}
	_, st := mustOpen(t, fs.CrashClone())
	if got, want := describe(st), "snap=1/1 hs=2/1/1 2:2:a"; got != want {
		t.Fatalf("after power loss: %q, want %q (the commit-only change was never synced)", got, want)
	}
}

func TestTornTailIsTruncatedAndAppendable(t *testing.T) {
	fs := vfs.NewMem()
	w := mustCreate(t, fs, Options{})
	if err := w.Save(hard(2, 1, 1), []*pb.Entry{ent(2, 2, "a")}, true); err != nil {
		t.Fatal(err)
	}
	if err := w.Save(nil, []*pb.Entry{ent(3, 2, "bbbbbbbb")}, true); err != nil {
		t.Fatal(err)
	}
	w.Close()
	seg := filepath.Join(dir, segmentName(0, 1))
	for cut := int64(1); cut < 12; cut++ {
		c := fs.CrashClone()
		f, err := c.OpenReadWrite(seg)
		if err != nil {
			t.Fatal(err)
		}
		size, _ := f.Size()
		f.Truncate(size - cut)
		f.Close()
		w2, st := mustOpen(t, c)
		if got, want := describe(st), "snap=1/1 hs=2/1/1 2:2:a"; got != want {
			t.Fatalf("cut %d: %q, want %q", cut, got, want)
		}
		if err := w2.Save(nil, []*pb.Entry{ent(3, 2, "x")}, true); err != nil {
			t.Fatal(err)
		}
		w2.Close()
		_, st = mustOpen(t, c)
		if got, want := describe(st), "snap=1/1 hs=2/1/1 2:2:a 3:2:x"; got != want {
			t.Fatalf("cut %d then append: %q, want %q", cut, got, want)
		}
	}
}

func TestFlippedByteInTailIsTorn(t *testing.T) {
	fs := vfs.NewMem()
	w := mustCreate(t, fs, Options{})
	w.Save(hard(2, 1, 1), []*pb.Entry{ent(2, 2, "a")}, true)
	w.Save(nil, []*pb.Entry{ent(3, 2, "b")}, true)
	w.Close()
	seg := filepath.Join(dir, segmentName(0, 1))
	f, _ := fs.OpenReadWrite(seg)
	size, _ := f.Size()
	f.WriteAt([]byte{0xff}, size-1)
	f.Close()
	_, st := mustOpen(t, fs)
	if got, want := describe(st), "snap=1/1 hs=2/1/1 2:2:a"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}

func TestCommitPastLastIndexRefused(t *testing.T) {
	fs := vfs.NewMem()
	w := mustCreate(t, fs, Options{})
	w.Save(hard(2, 1, 5), []*pb.Entry{ent(2, 2, "a")}, true)
	w.Close()
	if _, _, err := Open(fs, dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v, want ErrCorrupt for commit 5 with last index 2", err)
	}
}

func TestGapRefused(t *testing.T) {
	fs := vfs.NewMem()
	w := mustCreate(t, fs, Options{})
	w.Save(nil, []*pb.Entry{ent(2, 2, "a"), ent(4, 2, "c")}, true)
	w.Close()
	if _, _, err := Open(fs, dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v, want ErrCorrupt for a gap", err)
	}
}

func TestRollAndSealedCorruption(t *testing.T) {
	fs := vfs.NewMem()
	w := mustCreate(t, fs, Options{SegmentBytes: 200})
	for i := uint64(2); i < 40; i++ {
		if err := w.Save(hard(2, 1, i-1), []*pb.Entry{ent(i, 2, "payload")}, true); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	n, _ := w.Segments()
	if n < 3 {
		t.Fatalf("%d segments, want several at 200 bytes each", n)
	}
	_, st := mustOpen(t, fs)
	if st.LastIndex() != 39 || st.HardState.GetCommit() != 38 || len(st.Entries) != 38 {
		t.Fatalf("recovered %s", describe(st))
	}
	// Damage in a sealed (non-last) segment is not a torn tail.
	segs, _ := listSegments(fs, dir)
	f, _ := fs.OpenReadWrite(filepath.Join(dir, segs[1].name))
	f.WriteAt([]byte{0xff, 0xff}, 20)
	f.Close()
	if _, _, err := Open(fs, dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v, want ErrCorrupt", err)
	}
}

func TestRotateReleasesOldSegments(t *testing.T) {
	fs := vfs.NewMem()
	w := mustCreate(t, fs, Options{SegmentBytes: 200})
	for i := uint64(2); i < 30; i++ {
		w.Save(hard(2, 1, i-1), []*pb.Entry{ent(i, 2, "payload")}, true)
	}
	// Snapshot at 25: the marker carries 26..29.
	var after []*pb.Entry
	for i := uint64(26); i < 30; i++ {
		after = append(after, ent(i, 2, "payload"))
	}
	if err := w.Rotate(snapMeta(25, 2, 1, 2, 3), hard(2, 1, 28), after); err != nil {
		t.Fatal(err)
	}
	if n, _ := w.Segments(); n != 1 {
		t.Fatalf("%d segments after rotate, want 1", n)
	}
	w.Save(nil, []*pb.Entry{ent(30, 2, "z")}, true)
	w.Close()
	_, st := mustOpen(t, fs.CrashClone())
	if st.Snapshot.GetIndex() != 25 || st.LastIndex() != 30 || st.Entries[0].GetIndex() != 26 || st.HardState.GetCommit() != 28 {
		t.Fatalf("recovered %s", describe(st))
	}
}

func TestInterruptedRotateKeepsOldLog(t *testing.T) {
	fs := vfs.NewMem()
	w := mustCreate(t, fs, Options{})
	w.Save(hard(2, 1, 3), []*pb.Entry{ent(2, 2, "a"), ent(3, 2, "b"), ent(4, 2, "c")}, true)
	w.Close()
	// A rotation whose marker never fully reached the disk: a new segment
	// holding half a marker.
	rec := appendMarker(nil, marker{snap: snapMeta(3, 2), hs: hard(2, 1, 3), entries: []*pb.Entry{ent(4, 2, "c")}})
	f, _ := fs.Create(filepath.Join(dir, segmentName(1, 3)))
	f.Write(rec[:len(rec)/2])
	f.Close()
	w2, st := mustOpen(t, fs)
	if got, want := describe(st), "snap=1/1 hs=2/1/3 2:2:a 3:2:b 4:2:c"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	// The torn segment is now empty and is where appends go.
	w2.Save(nil, []*pb.Entry{ent(5, 2, "d")}, true)
	w2.Close()
	_, st = mustOpen(t, fs)
	if st.LastIndex() != 5 || st.Snapshot.GetIndex() != 1 {
		t.Fatalf("recovered %s", describe(st))
	}
}

func TestCommitBelowSnapshotIsRaised(t *testing.T) {
	fs := vfs.NewMem()
	mkParent(t, fs)
	w, err := Create(fs, dir, Options{}, snapMeta(10, 3, 1), hard(3, 1, 4))
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	_, st := mustOpen(t, fs)
	if st.HardState.GetCommit() != 10 {
		t.Fatalf("commit %d, want the snapshot index 10", st.HardState.GetCommit())
	}
}

func TestMarkerDecodeRejectsLies(t *testing.T) {
	good := appendMarker(nil, marker{snap: snapMeta(3, 2), hs: hard(2, 1, 3), entries: []*pb.Entry{ent(4, 2, "c")}})
	_, payload, _, err := readRecord(good)
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeMarker(payload)
	if err != nil || len(m.entries) != 1 || !proto.Equal(m.hs, hard(2, 1, 3)) {
		t.Fatalf("decode good marker: %v %+v", err, m)
	}
	for cut := 1; cut < len(payload); cut++ {
		if _, err := decodeMarker(payload[:cut]); err == nil {
			t.Fatalf("a marker cut to %d of %d bytes decoded", cut, len(payload))
		}
	}
}

func FuzzReplay(f *testing.F) {
	var seed []byte
	seed = appendMarker(seed, marker{snap: snapMeta(1, 1, 1), hs: hard(1, 0, 1)})
	seed = appendEntries(seed, []*pb.Entry{ent(2, 1, "x")})
	seed = appendHardState(seed, hard(1, 1, 2))
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		st := &State{}
		if _, err := replaySegment(st, b, true); err != nil {
			return
		}
		if st.Snapshot != nil {
			_ = st.check()
		}
	})
}
