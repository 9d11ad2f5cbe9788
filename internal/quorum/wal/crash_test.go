package wal

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// Crash tests: a raft-like workload (appends, overwrites by a new leader,
// commit-only HardState changes without fsync, snapshots that rotate the WAL,
// segment rolls, clean reopens) runs on a MemFS whose operations all fail
// from the k-th on, for every k. The WAL recovered from the durable state
// (and from a torn variant of it) must be one the workload could have left:
// at least everything up to the last successful fsync, plus a prefix, record
// by record, of what came after.

// walModel is the logical log the workload believes it wrote.
type walModel struct {
	snapIndex, snapTerm uint64
	ents                []*pb.Entry
	hs                  *pb.HardState
}

func (m *walModel) last() uint64 {
	if n := len(m.ents); n > 0 {
		return m.ents[n-1].GetIndex()
	}
	return m.snapIndex
}

func (m *walModel) describe() string {
	return describe(&State{Snapshot: snapMeta(m.snapIndex, m.snapTerm), HardState: m.hs, Entries: m.ents})
}

func (m *walModel) putEntry(e *pb.Entry) {
	m.ents = append(m.ents[:e.GetIndex()-m.snapIndex-1:e.GetIndex()-m.snapIndex-1], e)
}

// crashRun records every state recovery may legitimately return.
type crashRun struct {
	m          walModel
	candidates []string
	durable    int // index into candidates of the last state known durable
}

func (r *crashRun) note()             { r.candidates = append(r.candidates, r.m.describe()) }
func (r *crashRun) synced()           { r.durable = len(r.candidates) - 1 }
func (r *crashRun) allowed() []string { return r.candidates[r.durable:] }

// save mirrors WAL.Save record by record into the model.
func (r *crashRun) save(w *WAL, hs *pb.HardState, ents []*pb.Entry, sync bool) error {
	err := w.Save(hs, ents, sync)
	for _, e := range ents {
		r.m.putEntry(e)
		r.note()
	}
	if hs != nil {
		r.m.hs = hs
		r.note()
	}
	if err == nil && sync {
		r.synced()
	}
	return err
}

func crashWorkload(fs vfs.FS, seed uint64, steps int, r *crashRun) error {
	rng := rand.New(rand.NewPCG(seed, 11))
	if err := fs.MkdirAll("/meta", 0o755); err != nil {
		return err
	}
	if err := fs.SyncDir("/"); err != nil {
		return err
	}
	r.m = walModel{snapIndex: 1, snapTerm: 1, hs: hard(1, 0, 1)}
	r.note()
	opts := Options{SegmentBytes: 300}
	w, err := Create(fs, dir, opts, snapMeta(1, 1, 1, 2, 3), r.m.hs)
	if err != nil {
		return err
	}
	r.synced()
	term := uint64(1)
	for step := 0; step < steps; step++ {
		hs := r.m.hs
		switch p := rng.IntN(100); {
		case p < 45: // append as the leader of term
			var ents []*pb.Entry
			for i := range 1 + rng.IntN(4) {
				ents = append(ents, ent(r.m.last()+1+uint64(i), term, fmt.Sprintf("s%d-%d", step, i)))
			}
			if err := r.save(w, nil, ents, true); err != nil {
				return err
			}
		case p < 55: // a new leader overwrites the uncommitted suffix
			term++
			from := hs.GetCommit() + 1 + uint64(rng.IntN(int(r.m.last()-hs.GetCommit()+1)))
			ents := []*pb.Entry{ent(from, term, fmt.Sprintf("o%d", step))}
			if err := r.save(w, hard(term, uint64(1+rng.IntN(3)), hs.GetCommit()), ents, true); err != nil {
				return err
			}
		case p < 80: // the commit index moves: no fsync needed
			if hs.GetCommit() < r.m.last() {
				c := hs.GetCommit() + 1 + uint64(rng.IntN(int(r.m.last()-hs.GetCommit())))
				if err := r.save(w, hard(hs.GetTerm(), hs.GetVote(), c), nil, false); err != nil {
					return err
				}
			}
		case p < 92: // snapshot at a committed index
			if c := hs.GetCommit(); c > r.m.snapIndex {
				s := r.m.snapIndex + 1 + uint64(rng.IntN(int(c-r.m.snapIndex)))
				sterm := r.m.ents[s-r.m.snapIndex-1].GetTerm()
				after := slices.Clone(r.m.ents[s-r.m.snapIndex:])
				err := w.Rotate(snapMeta(s, sterm, 1, 2, 3), hs, after)
				r.m.snapIndex, r.m.snapTerm, r.m.ents = s, sterm, after
				r.note()
				if err != nil {
					return err
				}
				r.synced()
			}
		default: // clean restart
			w.Close()
			var st *State
			if w, st, err = Open(fs, dir, opts); err != nil {
				return err
			}
			if got, want := describe(st), r.m.describe(); got != want {
				return fmt.Errorf("clean reopen at step %d: %q, want %q", step, got, want)
			}
			// Reading back is no fsync: what was unsynced stays so.
		}
	}
	return w.Close()
}

func TestCrashAtEveryStep(t *testing.T) {
	seeds, steps := 4, 50
	if raceEnabled {
		seeds, steps = 1, 30 // no concurrency here; the race detector only slows it
	}
	if os.Getenv("GREGOR_LONG") != "" {
		seeds, steps = 40, 120
	}
	for s := range seeds {
		seed := uint64(s + 1)
		counter := vfs.NewCountingInjector()
		if err := crashWorkload(vfs.NewInjecting(vfs.NewMem(), counter), seed, steps, &crashRun{}); err != nil {
			t.Fatalf("seed %d: workload without faults: %v", seed, err)
		}
		n := counter.Count()
		for k := range n {
			mem := vfs.NewMem()
			r := &crashRun{}
			err := crashWorkload(vfs.NewInjecting(mem, vfs.FromIndex(k)), seed, steps, r)
			if err != nil && !isInjected(err) {
				t.Fatalf("seed %d k %d: %v", seed, k, err)
			}
			torn := rand.New(rand.NewPCG(seed, uint64(k)))
			for name, fs := range map[string]*vfs.MemFS{"clean": mem.CrashClone(), "torn": mem.CrashCloneTorn(torn)} {
				checkRecovered(t, fmt.Sprintf("seed %d k %d/%d %s", seed, k, n, name), fs, r)
			}
		}
	}
}

func isInjected(err error) bool { return err != nil && errorsIs(err, vfs.ErrInjected) }

func checkRecovered(t *testing.T, what string, fs vfs.FS, r *crashRun) {
	t.Helper()
	w, st, err := Open(fs, dir, Options{SegmentBytes: 300})
	if err == ErrNotExist && r.durable == 0 && len(r.candidates) <= 1 {
		return // crashed while creating the WAL
	}
	if err != nil {
		t.Fatalf("%s: recovery failed: %v", what, err)
	}
	defer w.Close()
	got := describe(st)
	if !slices.Contains(r.allowed(), got) {
		t.Fatalf("%s: recovered\n  %s\nnot one of the states from the last fsync on:\n  %v", what, got, r.allowed())
	}
	// The recovered WAL must accept appends and read them back.
	next := ent(st.LastIndex()+1, st.HardState.GetTerm()+1, "after")
	if err := w.Save(hard(st.HardState.GetTerm()+1, 0, st.HardState.GetCommit()), []*pb.Entry{next}, true); err != nil {
		t.Fatalf("%s: append after recovery: %v", what, err)
	}
	if _, st2, err := Open(fs, dir, Options{SegmentBytes: 300}); err != nil || st2.LastIndex() != next.GetIndex() {
		t.Fatalf("%s: reopen after append: %v", what, err)
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
