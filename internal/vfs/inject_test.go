package vfs

import (
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

func TestInjectingReportsEachOperation(t *testing.T) {
	type call struct {
		op   Op
		path string
	}
	var calls []call
	fs := NewInjecting(NewMem(), InjectorFunc(func(op Op, path string) error {
		calls = append(calls, call{op, path})
		return nil
	}))
	steps := []struct {
		want call
		do   func(f File) error
	}{
		{call{OpMkdir, "/d"}, func(File) error { return fs.MkdirAll("/d", 0o755) }},
		{call{OpCreate, "/d/f"}, func(File) error { _, err := fs.Create("/d/f"); return err }},
		{call{OpOpen, "/d/f"}, func(File) error { _, err := fs.OpenReadWrite("/d/f"); return err }},
		{call{OpOpen, "/d/f"}, func(File) error { _, err := fs.Open("/d/f"); return err }},
		{call{OpWrite, "/d/f"}, func(f File) error { _, err := f.Write([]byte("ab")); return err }},
		{call{OpWrite, "/d/f"}, func(f File) error { _, err := f.WriteAt([]byte("c"), 2); return err }},
		{call{OpRead, "/d/f"}, func(f File) error { _, err := f.ReadAt(make([]byte, 1), 0); return err }},
		{call{OpRead, "/d/f"}, func(f File) error { _, err := f.Read(make([]byte, 1)); return err }},
		{call{OpSync, "/d/f"}, func(f File) error { return f.Sync() }},
		{call{OpTruncate, "/d/f"}, func(f File) error { return f.Truncate(1) }},
		{call{OpStat, "/d/f"}, func(f File) error { _, err := f.Size(); return err }},
		{call{OpStat, "/d/f"}, func(File) error { _, err := fs.Stat("/d/f"); return err }},
		{call{OpList, "/d"}, func(File) error { _, err := fs.List("/d"); return err }},
		{call{OpSyncDir, "/d"}, func(File) error { return fs.SyncDir("/d") }},
		{call{OpRename, "/d/f"}, func(File) error { return fs.Rename("/d/f", "/d/g") }},
		{call{OpRemove, "/d/g"}, func(File) error { return fs.Remove("/d/g") }},
		{call{OpRemove, "/d"}, func(File) error { return fs.RemoveAll("/d") }},
	}
	var f File
	for i, s := range steps {
		if i == 4 {
			var err error
			f, err = fs.OpenReadWrite("/d/f")
			must(t, err)
			calls = nil
		}
		must(t, s.do(f))
		if len(calls) != 1 || calls[0] != s.want {
			t.Fatalf("step %d: injector saw %v, want [%v]", i, calls, s.want)
		}
		calls = nil
	}
	must(t, f.Close())
	if len(calls) != 0 {
		t.Fatalf("Close was offered to the injector: %v", calls)
	}
}

func TestOnIndexFailsOnlyTheNthMatchingOperation(t *testing.T) {
	mem := NewMem()
	inj := OnIndex(1, OpWrite)
	fs := NewInjecting(mem, inj)
	f := create(t, fs, "/f")
	defer f.Close()
	write(t, f, "a")
	if inj.Fired() {
		t.Fatal("fired before its index")
	}
	n, err := f.Write([]byte("b"))
	if n != 0 || !errors.Is(err, ErrInjected) {
		t.Fatalf("second Write = %d, %v; want 0, ErrInjected", n, err)
	}
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Path != "/f" || pe.Op != "write" {
		t.Fatalf("injected error %#v does not name the operation and path", err)
	}
	if !inj.Fired() {
		t.Fatal("Fired() = false after failing")
	}
	must(t, f.Sync()) // not a write: untouched
	write(t, f, "c")
	if got := readAll(t, mem, "/f"); got != "ac" {
		t.Fatalf("contents = %q: the failed write must not happen", got)
	}
	if got := inj.Count(); got != 3 {
		t.Fatalf("Count = %d, want 3 writes", got)
	}
}

func TestFromIndexFailsEverythingAfter(t *testing.T) {
	inj := FromIndex(2)
	fs := NewInjecting(NewMem(), inj)
	must(t, fs.MkdirAll("/d", 0o755))
	must(t, fs.SyncDir("/d"))
	for i := range 3 {
		if err := fs.SyncDir("/d"); !errors.Is(err, ErrInjected) {
			t.Fatalf("op %d after the index: %v, want ErrInjected", i, err)
		}
	}
	err := fs.Rename("/d", "/e")
	var le *os.LinkError
	if !errors.As(err, &le) || !errors.Is(err, ErrInjected) {
		t.Fatalf("Rename: %v, want *os.LinkError wrapping ErrInjected", err)
	}
	if inj.Count() != 6 {
		t.Fatalf("Count = %d, want 6", inj.Count())
	}
}

func TestCountingInjectorCountsMatchingOperations(t *testing.T) {
	all, syncs := NewCountingInjector(), NewCountingInjector(OpSync, OpSyncDir)
	fs := NewInjecting(NewInjecting(NewMem(), all), syncs)
	writeFile(t, fs, "/f", "x") // create, write, sync
	must(t, fs.SyncDir("/"))
	if all.Count() != 4 || syncs.Count() != 2 {
		t.Fatalf("counts = %d all, %d syncs; want 4, 2", all.Count(), syncs.Count())
	}
}

func TestOpNames(t *testing.T) {
	seen := map[string]bool{}
	for op := range numOps {
		s := op.String()
		if s == "" || seen[s] || strings.HasPrefix(s, "Op(") {
			t.Fatalf("op %d has name %q", op, s)
		}
		seen[s] = true
	}
	if got := numOps.String(); got != "Op(12)" {
		t.Fatalf("unknown op prints %q", got)
	}
}

// replaceCheckpoint is the write-temp, sync, rename, sync-directory dance
// Kafka's checkpoint files use. With syncData false it skips the file sync,
// the classic bug the crash tests below must catch.
func replaceCheckpoint(fs FS, contents string, syncData bool) error {
	f, err := fs.Create("/d/checkpoint.tmp")
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte(contents)); err != nil {
		return errors.Join(err, f.Close())
	}
	if syncData {
		if err := f.Sync(); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fs.Rename("/d/checkpoint.tmp", "/d/checkpoint"); err != nil {
		return err
	}
	return fs.SyncDir("/d")
}

// crashAtEveryStep runs the checkpoint replacement, crashing before each of
// its operations and once after it finishes, and returns what the checkpoint
// read after recovery in each case.
func crashAtEveryStep(t *testing.T, syncData bool, torn bool) []string {
	t.Helper()
	setup := func() *MemFS {
		mem := newDir(t, "/d")
		writeFile(t, mem, "/d/checkpoint", "old")
		must(t, mem.SyncDir("/d"))
		return mem
	}
	counter := NewCountingInjector()
	must(t, replaceCheckpoint(NewInjecting(setup(), counter), "new", syncData))
	steps := counter.Count()
	if steps < 4 {
		t.Fatalf("workload took %d steps", steps)
	}

	var outcomes []string
	for k := range steps + 1 {
		mem := setup()
		inj := FromIndex(k)
		err := replaceCheckpoint(NewInjecting(mem, inj), "new", syncData)
		if (k < steps) != (err != nil) || (k < steps) != inj.Fired() {
			t.Fatalf("crash at step %d of %d: err %v, fired %v", k, steps, err, inj.Fired())
		}
		crashed := mem.CrashClone()
		if torn {
			crashed = mem.CrashCloneTorn(rand.New(rand.NewPCG(uint64(k), 0)))
		}
		outcomes = append(outcomes, readAll(t, crashed, "/d/checkpoint"))
	}
	return outcomes
}

func TestCrashAtEveryStepKeepsCheckpointAtomic(t *testing.T) {
	for _, torn := range []bool{false, true} {
		outcomes := crashAtEveryStep(t, true, torn)
		for k, got := range outcomes {
			if got != "old" && got != "new" {
				t.Fatalf("torn=%v: crash at step %d left checkpoint %q", torn, k, got)
			}
		}
		if last := outcomes[len(outcomes)-1]; last != "new" {
			t.Fatalf("torn=%v: completed replacement recovered to %q", torn, last)
		}
	}
}

func TestCrashAtEveryStepCatchesMissingSync(t *testing.T) {
	outcomes := crashAtEveryStep(t, false, false)
	for _, got := range outcomes {
		if got == "" {
			return
		}
	}
	t.Fatalf("no crash point exposed the missing file sync: %q", outcomes)
}
