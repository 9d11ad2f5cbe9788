package vfs

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

// newDir returns a MemFS holding a durable, empty directory dir.
func newDir(t *testing.T, dir string) *MemFS {
	t.Helper()
	fs := NewMem()
	must(t, fs.MkdirAll(dir, 0o755))
	must(t, fs.SyncDir("/"))
	return fs
}

func wantFile(t *testing.T, fs *MemFS, name, want string) {
	t.Helper()
	if got := readAll(t, fs, name); got != want {
		t.Fatalf("%s = %q, want %q\n%s", name, got, want, fs)
	}
}

func wantMissing(t *testing.T, fs *MemFS, name string) {
	t.Helper()
	if _, err := fs.Stat(name); !IsNotExist(err) {
		t.Fatalf("Stat(%s) = %v, want not-exist\n%s", name, err, fs)
	}
}

func TestCrashLosesUnsyncedData(t *testing.T) {
	fs := newDir(t, "/d")
	f := create(t, fs, "/d/f")
	must(t, fs.SyncDir("/d"))
	write(t, f, "abc")
	wantFile(t, fs.CrashClone(), "/d/f", "")

	must(t, f.Sync())
	wantFile(t, fs.CrashClone(), "/d/f", "abc")

	write(t, f, "def")
	wantFile(t, fs.CrashClone(), "/d/f", "abc")

	must(t, f.Truncate(1))
	wantFile(t, fs.CrashClone(), "/d/f", "abc")
	if _, err := f.WriteAt([]byte("XY"), 1); err != nil {
		t.Fatal(err)
	}
	wantFile(t, fs.CrashClone(), "/d/f", "abc")
	must(t, f.Sync())
	wantFile(t, fs.CrashClone(), "/d/f", "aXY")
}

func TestCrashLosesSyncedFileUnderUnsyncedEntry(t *testing.T) {
	fs := newDir(t, "/d")
	writeFile(t, fs, "/d/f", "data")
	wantMissing(t, fs.CrashClone(), "/d/f")
	must(t, fs.SyncDir("/d"))
	wantFile(t, fs.CrashClone(), "/d/f", "data")
}

func TestCrashMkdirAllDurableOncePerParentSync(t *testing.T) {
	fs := NewMem()
	must(t, fs.MkdirAll("/logs/topic-0", 0o755))
	writeFile(t, fs, "/logs/topic-0/f", "x")
	must(t, fs.SyncDir("/logs/topic-0"))
	must(t, fs.SyncDir("/logs"))
	wantMissing(t, fs.CrashClone(), "/logs")

	must(t, fs.SyncDir("/"))
	wantFile(t, fs.CrashClone(), "/logs/topic-0/f", "x")

	must(t, fs.MkdirAll("/logs/topic-1", 0o755))
	c := fs.CrashClone()
	wantMissing(t, c, "/logs/topic-1")
	wantList(t, c, "/logs", "topic-0")
}

func TestCrashUndoesUnsyncedRename(t *testing.T) {
	fs := newDir(t, "/d")
	writeFile(t, fs, "/d/00.log", "old")
	writeFile(t, fs, "/d/00.log.swap", "new")
	must(t, fs.SyncDir("/d"))

	must(t, fs.Rename("/d/00.log.swap", "/d/00.log"))
	c := fs.CrashClone()
	wantFile(t, c, "/d/00.log", "old")
	wantFile(t, c, "/d/00.log.swap", "new")

	must(t, fs.SyncDir("/d"))
	c = fs.CrashClone()
	wantFile(t, c, "/d/00.log", "new")
	wantMissing(t, c, "/d/00.log.swap")
}

func TestCrashRenamedFileKeepsSyncedData(t *testing.T) {
	fs := newDir(t, "/d")
	// Data synced before the rename travels with the file.
	writeFile(t, fs, "/d/a.tmp", "before")
	must(t, fs.Rename("/d/a.tmp", "/d/a"))
	must(t, fs.SyncDir("/d"))
	wantFile(t, fs.CrashClone(), "/d/a", "before")

	// Data synced after the rename shows under the durable name, whichever
	// it is.
	f := create(t, fs, "/d/b.tmp")
	must(t, fs.SyncDir("/d"))
	must(t, fs.Rename("/d/b.tmp", "/d/b"))
	write(t, f, "after")
	must(t, f.Sync())
	c := fs.CrashClone()
	wantFile(t, c, "/d/b.tmp", "after")
	wantMissing(t, c, "/d/b")
	must(t, fs.SyncDir("/d"))
	wantFile(t, fs.CrashClone(), "/d/b", "after")
}

func TestCrashUndoesUnsyncedRemove(t *testing.T) {
	fs := newDir(t, "/d")
	writeFile(t, fs, "/d/f", "x")
	must(t, fs.SyncDir("/d"))
	must(t, fs.Remove("/d/f"))
	wantFile(t, fs.CrashClone(), "/d/f", "x")
	must(t, fs.SyncDir("/d"))
	wantMissing(t, fs.CrashClone(), "/d/f")

	must(t, fs.MkdirAll("/d/sub", 0o755))
	writeFile(t, fs, "/d/sub/g", "y")
	must(t, fs.SyncDir("/d/sub"))
	must(t, fs.SyncDir("/d"))
	must(t, fs.RemoveAll("/d/sub"))
	wantFile(t, fs.CrashClone(), "/d/sub/g", "y")
	must(t, fs.SyncDir("/d"))
	wantMissing(t, fs.CrashClone(), "/d/sub")
}

func TestCrashUndoesUnsyncedTruncatingCreate(t *testing.T) {
	fs := newDir(t, "/d")
	writeFile(t, fs, "/d/f", "old")
	must(t, fs.SyncDir("/d"))
	f := create(t, fs, "/d/f")
	write(t, f, "new!")
	must(t, fs.SyncDir("/d"))
	wantFile(t, fs.CrashClone(), "/d/f", "old")
	must(t, f.Sync())
	wantFile(t, fs.CrashClone(), "/d/f", "new!")
}

func TestCrashCrossDirectoryRenameIsDurablePerDirectory(t *testing.T) {
	fs := NewMem()
	must(t, fs.MkdirAll("/a", 0o755))
	must(t, fs.MkdirAll("/b", 0o755))
	must(t, fs.SyncDir("/"))
	writeFile(t, fs, "/a/f", "x")
	must(t, fs.SyncDir("/a"))
	must(t, fs.Rename("/a/f", "/b/f"))

	must(t, fs.SyncDir("/b"))
	c := fs.CrashClone()
	wantFile(t, c, "/a/f", "x")
	wantFile(t, c, "/b/f", "x")
	// The two names are one file, as hard links are.
	g, err := c.OpenReadWrite("/a/f")
	must(t, err)
	write(t, g, "y")
	must(t, g.Close())
	wantFile(t, c, "/b/f", "xy")

	must(t, fs.SyncDir("/a"))
	c = fs.CrashClone()
	wantMissing(t, c, "/a/f")
	wantFile(t, c, "/b/f", "x")
}

func TestCrashCloneIsDurableAndIndependent(t *testing.T) {
	fs := newDir(t, "/d")
	writeFile(t, fs, "/d/f", "abc")
	must(t, fs.SyncDir("/d"))
	c := fs.CrashClone()
	if got, want := c.CrashClone().String(), c.String(); got != want {
		t.Fatalf("clone of a clone differs:\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(c.String(), "not synced") {
		t.Fatalf("clone has unsynced entries:\n%s", c)
	}

	f, err := c.OpenReadWrite("/d/f")
	must(t, err)
	write(t, f, "def")
	if _, err := f.WriteAt([]byte("X"), 0); err != nil {
		t.Fatal(err)
	}
	must(t, f.Close())
	writeFile(t, c, "/d/g", "g")
	wantFile(t, fs, "/d/f", "abc")
	wantMissing(t, fs, "/d/g")
	// The write at 0 went to the clone's live contents, not its durable ones.
	wantFile(t, c.CrashClone(), "/d/f", "abc")
}

func TestCrashCloneTornKeepsAPrefixOfAppends(t *testing.T) {
	fs := newDir(t, "/d")
	f := create(t, fs, "/d/f")
	must(t, fs.SyncDir("/d"))
	write(t, f, "abc")
	must(t, f.Sync())
	write(t, f, "defgh")

	seen := map[string]bool{}
	for seed := range uint64(200) {
		got := readAll(t, fs.CrashCloneTorn(rand.New(rand.NewPCG(seed, 0))), "/d/f")
		if !strings.HasPrefix("abcdefgh", got) || len(got) < 3 {
			t.Fatalf("seed %d: torn contents %q are not synced data plus a prefix of the appends", seed, got)
		}
		seen[got] = true
	}
	if len(seen) != 6 {
		t.Fatalf("over 200 seeds saw %d of the 6 possible lengths: %v", len(seen), seen)
	}

	a := fs.CrashCloneTorn(rand.New(rand.NewPCG(7, 7))).String()
	b := fs.CrashCloneTorn(rand.New(rand.NewPCG(7, 7))).String()
	if a != b {
		t.Fatalf("same seed, different clones:\n%s\n%s", a, b)
	}
}

func TestCrashCloneTornKeepsOnlySyncedDataAfterRewrite(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(f File) error
	}{
		{"overwrite below the synced size", func(f File) error {
			_, err := f.WriteAt([]byte("X"), 1)
			return err
		}},
		{"truncate below the synced size then append", func(f File) error {
			if err := f.Truncate(2); err != nil {
				return err
			}
			_, err := f.Write([]byte("zzzzzz"))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newDir(t, "/d")
			f := create(t, fs, "/d/f")
			must(t, fs.SyncDir("/d"))
			write(t, f, "abc")
			must(t, f.Sync())
			write(t, f, "def")
			must(t, tc.change(f))
			for seed := range uint64(20) {
				wantFile(t, fs.CrashCloneTorn(rand.New(rand.NewPCG(seed, 0))), "/d/f", "abc")
			}
		})
	}
}

func TestCrashCloneTornNeverSyncedFile(t *testing.T) {
	fs := newDir(t, "/d")
	f := create(t, fs, "/d/f")
	must(t, fs.SyncDir("/d"))
	write(t, f, "xyz")
	seen := map[string]bool{}
	for seed := range uint64(100) {
		seen[readAll(t, fs.CrashCloneTorn(rand.New(rand.NewPCG(seed, 1))), "/d/f")] = true
	}
	for _, want := range []string{"", "x", "xy", "xyz"} {
		if !seen[want] {
			t.Errorf("torn clones never held %q; saw %v", want, seen)
		}
	}
	wantFile(t, fs.CrashClone(), "/d/f", "")
}

func TestMemFSConcurrentUseWithCrashClones(t *testing.T) {
	fs := newDir(t, "/d")
	const writers, writes = 4, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			name := fmt.Sprintf("/d/%d", w)
			f, err := fs.Create(name)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			for i := range writes {
				if _, err := f.Write([]byte{byte(i)}); err != nil {
					t.Error(err)
					return
				}
				if i%10 == 0 {
					if err := f.Sync(); err != nil {
						t.Error(err)
					}
					if err := fs.SyncDir("/d"); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		for range 50 {
			c := fs.CrashCloneTorn(rng)
			names, err := c.List("/d")
			if err != nil {
				t.Error(err)
				return
			}
			for _, n := range names {
				f, err := c.Open("/d/" + n)
				if err != nil {
					t.Error(err)
					return
				}
				size, _ := f.Size()
				buf := make([]byte, size)
				if _, err := f.ReadAt(buf, 0); err != nil && size > 0 {
					t.Error(err)
				}
				for i, b := range buf {
					if b != byte(i) {
						t.Errorf("%s[%d] = %d: a crash clone is not a prefix of what was written", n, i, b)
						break
					}
				}
				f.Close()
			}
		}
	})
	wg.Wait()
	for w := range writers {
		if fi, err := fs.Stat(fmt.Sprintf("/d/%d", w)); err != nil || fi.Size() != writes {
			t.Fatalf("file %d: %v, %v", w, fi, err)
		}
	}
}

func TestMemFSModTimeFollowsInjectedClock(t *testing.T) {
	fs := NewMem()
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	fs.SetNow(func() time.Time { return at })
	writeFile(t, fs, "/f", "x")
	fi, err := fs.Stat("/f")
	must(t, err)
	if !fi.ModTime().Equal(at) {
		t.Fatalf("ModTime = %v, want %v", fi.ModTime(), at)
	}
	at = at.Add(time.Hour)
	f, err := fs.OpenReadWrite("/f")
	must(t, err)
	write(t, f, "y")
	must(t, f.Close())
	fi, err = fs.Stat("/f")
	must(t, err)
	if !fi.ModTime().Equal(at) {
		t.Fatalf("ModTime after write = %v, want %v", fi.ModTime(), at)
	}
}

func TestMemFSPathsResolveFromOneRoot(t *testing.T) {
	fs := NewMem()
	must(t, fs.MkdirAll("a/b", 0o755))
	writeFile(t, fs, "/a/./b/../b/f", "x")
	wantFile(t, fs, "a/b/f", "x")
	wantList(t, fs, "/", "a")
	if _, err := fs.Open(""); !IsNotExist(err) {
		t.Fatalf("Open(\"\") = %v, want not-exist", err)
	}
}

// A crash releases every lock: the machine that comes back up runs no
// process that could hold one.
func TestCrashReleasesLocks(t *testing.T) {
	fs := newDir(t, "/d")
	l, err := fs.Lock("/d/.lock")
	must(t, err)
	defer l.Close()
	must(t, fs.SyncDir("/d"))
	clone := fs.CrashClone()
	l2, err := clone.Lock("/d/.lock")
	if err != nil {
		t.Fatalf("Lock on the crash clone = %v, want it free", err)
	}
	must(t, l2.Close())
	if _, err := fs.Lock("/d/.lock"); err == nil {
		t.Fatal("the original's lock was released by cloning it")
	}
}
