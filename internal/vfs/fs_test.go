package vfs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The shared suite runs every case against each implementation through the
// FS interface, so MemFS is held to what the real filesystem does.
var impls = []struct {
	name string
	new  func(t *testing.T) (FS, string) // filesystem and an empty directory in it
}{
	{"os", func(t *testing.T) (FS, string) { return OS(), t.TempDir() }},
	{"mem", func(t *testing.T) (FS, string) {
		fs := NewMem()
		must(t, fs.MkdirAll("/tmp/test", 0o755))
		return fs, "/tmp/test"
	}},
	{"injecting-mem", func(t *testing.T) (FS, string) {
		fs := NewInjecting(NewMem(), NewCountingInjector())
		must(t, fs.MkdirAll("tmp/test", 0o755))
		return fs, "tmp/test"
	}},
}

var suite = []struct {
	name string
	run  func(t *testing.T, fs FS, dir string)
}{
	{"write then read back", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		f := create(t, fs, name)
		write(t, f, "hello ")
		write(t, f, "world")
		must(t, f.Sync())
		wantSize(t, f, 11)
		must(t, f.Close())
		if got := readAll(t, fs, name); got != "hello world" {
			t.Fatalf("contents = %q, want %q", got, "hello world")
		}
	}},
	{"WriteAt does not move the write position", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		f := create(t, fs, name)
		write(t, f, "abc")
		if _, err := f.WriteAt([]byte("xyz"), 6); err != nil {
			t.Fatal(err)
		}
		write(t, f, "d")
		must(t, f.Close())
		if got, want := readAll(t, fs, name), "abcd\x00\x00xyz"; got != want {
			t.Fatalf("contents = %q, want %q", got, want)
		}
	}},
	{"OpenReadWrite creates then appends at the end", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		f, err := fs.OpenReadWrite(name)
		must(t, err)
		write(t, f, "one")
		must(t, f.Close())
		f, err = fs.OpenReadWrite(name)
		must(t, err)
		write(t, f, "two")
		buf := make([]byte, 3)
		if _, err := f.ReadAt(buf, 0); err != nil {
			t.Fatal(err)
		}
		if string(buf) != "one" {
			t.Fatalf("ReadAt(0) = %q, want one", buf)
		}
		must(t, f.Close())
		if got := readAll(t, fs, name); got != "onetwo" {
			t.Fatalf("contents = %q, want onetwo", got)
		}
	}},
	{"Create truncates an existing file", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		f := create(t, fs, name)
		write(t, f, "old contents")
		must(t, f.Close())
		f = create(t, fs, name)
		wantSize(t, f, 0)
		write(t, f, "new")
		must(t, f.Close())
		if got := readAll(t, fs, name); got != "new" {
			t.Fatalf("contents = %q, want new", got)
		}
	}},
	{"Read advances a shared position to io.EOF", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		f := create(t, fs, name)
		write(t, f, "abcde")
		must(t, f.Close())
		r, err := fs.Open(name)
		must(t, err)
		defer r.Close()
		buf := make([]byte, 3)
		if n, err := r.Read(buf); n != 3 || err != nil || string(buf) != "abc" {
			t.Fatalf("Read = %d, %v, %q", n, err, buf)
		}
		if n, err := r.Read(buf); n != 2 || err != nil || string(buf[:n]) != "de" {
			t.Fatalf("Read = %d, %v, %q", n, err, buf[:n])
		}
		if n, err := r.Read(buf); n != 0 || err != io.EOF {
			t.Fatalf("Read at end = %d, %v; want 0, io.EOF", n, err)
		}
	}},
	{"ReadAt reports io.EOF like os.File", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		f := create(t, fs, name)
		defer f.Close()
		write(t, f, "abcde")
		buf := make([]byte, 4)
		if n, err := f.ReadAt(buf, 1); n != 4 || err != nil || string(buf) != "bcde" {
			t.Fatalf("ReadAt(1) = %d, %v, %q", n, err, buf)
		}
		if n, err := f.ReadAt(buf, 3); n != 2 || err != io.EOF || string(buf[:n]) != "de" {
			t.Fatalf("ReadAt(3) = %d, %v, %q; want 2, io.EOF, de", n, err, buf[:n])
		}
		if n, err := f.ReadAt(buf, 5); n != 0 || err != io.EOF {
			t.Fatalf("ReadAt(5) = %d, %v; want 0, io.EOF", n, err)
		}
		if n, err := f.ReadAt(buf, 100); n != 0 || err != io.EOF {
			t.Fatalf("ReadAt(100) = %d, %v; want 0, io.EOF", n, err)
		}
		if _, err := f.ReadAt(buf, -1); err == nil {
			t.Fatal("ReadAt(-1) succeeded")
		}
	}},
	{"Truncate shrinking moves the write position", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		f := create(t, fs, name)
		write(t, f, "abcdefgh")
		must(t, f.Truncate(3))
		wantSize(t, f, 3)
		write(t, f, "XY")
		must(t, f.Close())
		if got := readAll(t, fs, name); got != "abcXY" {
			t.Fatalf("contents = %q, want abcXY", got)
		}
	}},
	{"Truncate growing zero-fills and leaves the position", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		f := create(t, fs, name)
		write(t, f, "abcdefgh")
		must(t, f.Truncate(2))
		must(t, f.Truncate(5))
		wantSize(t, f, 5)
		write(t, f, "Z")
		must(t, f.Close())
		// The position moved to 2 with the shrink and stays there.
		if got, want := readAll(t, fs, name), "abZ\x00\x00"; got != want {
			t.Fatalf("contents = %q, want %q", got, want)
		}
	}},
	{"read-only handles refuse writes", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		must(t, create(t, fs, name).Close())
		f, err := fs.Open(name)
		must(t, err)
		defer f.Close()
		if _, err := f.Write([]byte("x")); err == nil {
			t.Error("Write on read-only file succeeded")
		}
		if _, err := f.WriteAt([]byte("x"), 0); err == nil {
			t.Error("WriteAt on read-only file succeeded")
		}
		if err := f.Truncate(0); err == nil {
			t.Error("Truncate on read-only file succeeded")
		}
	}},
	{"closed handles fail with os.ErrClosed", func(t *testing.T, fs FS, dir string) {
		f := create(t, fs, filepath.Join(dir, "f"))
		must(t, f.Close())
		if _, err := f.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
			t.Errorf("Write after Close: %v", err)
		}
		if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, os.ErrClosed) {
			t.Errorf("ReadAt after Close: %v", err)
		}
		if err := f.Sync(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("Sync after Close: %v", err)
		}
		if err := f.Close(); err == nil {
			t.Error("second Close succeeded")
		}
	}},
	{"missing paths satisfy IsNotExist", func(t *testing.T, fs FS, dir string) {
		missing := filepath.Join(dir, "missing")
		checks := map[string]error{}
		_, checks["Open"] = fs.Open(missing)
		_, checks["Stat"] = fs.Stat(missing)
		_, checks["List"] = fs.List(missing)
		checks["Remove"] = fs.Remove(missing)
		checks["Rename"] = fs.Rename(missing, filepath.Join(dir, "x"))
		checks["SyncDir"] = fs.SyncDir(missing)
		_, checks["Create in missing dir"] = fs.Create(filepath.Join(missing, "f"))
		_, checks["OpenReadWrite in missing dir"] = fs.OpenReadWrite(filepath.Join(missing, "f"))
		for op, err := range checks {
			if !IsNotExist(err) {
				t.Errorf("%s: err = %v, want not-exist", op, err)
			}
		}
		must(t, fs.RemoveAll(missing))
	}},
	{"Rename replaces an existing file", func(t *testing.T, fs FS, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		writeFile(t, fs, a, "new")
		writeFile(t, fs, b, "old")
		must(t, fs.Rename(a, b))
		if got := readAll(t, fs, b); got != "new" {
			t.Fatalf("b = %q, want new", got)
		}
		if _, err := fs.Stat(a); !IsNotExist(err) {
			t.Fatalf("Stat(a) after rename: %v", err)
		}
		wantList(t, fs, dir, "b")
	}},
	{"Rename onto a directory fails with os.ErrExist", func(t *testing.T, fs FS, dir string) {
		a, d := filepath.Join(dir, "a"), filepath.Join(dir, "d")
		writeFile(t, fs, a, "x")
		must(t, fs.MkdirAll(d, 0o755))
		if err := fs.Rename(a, d); !errors.Is(err, os.ErrExist) {
			t.Fatalf("Rename onto dir: %v, want os.ErrExist", err)
		}
	}},
	{"Rename moves a directory with its contents", func(t *testing.T, fs FS, dir string) {
		src, dst := filepath.Join(dir, "topic-0"), filepath.Join(dir, "topic-0.abc-delete")
		must(t, fs.MkdirAll(src, 0o755))
		writeFile(t, fs, filepath.Join(src, "00000000000000000000.log"), "batch")
		must(t, fs.Rename(src, dst))
		if got := readAll(t, fs, filepath.Join(dst, "00000000000000000000.log")); got != "batch" {
			t.Fatalf("moved file = %q", got)
		}
		wantList(t, fs, dir, "topic-0.abc-delete")
		if err := fs.Rename(dst, filepath.Join(dst, "inner")); err == nil {
			t.Fatal("renaming a directory into itself succeeded")
		}
	}},
	{"Remove refuses a non-empty directory", func(t *testing.T, fs FS, dir string) {
		d := filepath.Join(dir, "d")
		must(t, fs.MkdirAll(d, 0o755))
		writeFile(t, fs, filepath.Join(d, "f"), "x")
		if err := fs.Remove(d); err == nil {
			t.Fatal("Remove of non-empty directory succeeded")
		}
		must(t, fs.Remove(filepath.Join(d, "f")))
		must(t, fs.Remove(d))
		wantList(t, fs, dir)
	}},
	{"RemoveAll removes a tree", func(t *testing.T, fs FS, dir string) {
		d := filepath.Join(dir, "d")
		must(t, fs.MkdirAll(filepath.Join(d, "e", "f"), 0o755))
		writeFile(t, fs, filepath.Join(d, "e", "x"), "x")
		must(t, fs.RemoveAll(d))
		if _, err := fs.Stat(d); !IsNotExist(err) {
			t.Fatalf("Stat after RemoveAll: %v", err)
		}
		must(t, fs.RemoveAll(d))
	}},
	{"MkdirAll is idempotent and refuses to pass through a file", func(t *testing.T, fs FS, dir string) {
		d := filepath.Join(dir, "a", "b", "c")
		must(t, fs.MkdirAll(d, 0o755))
		must(t, fs.MkdirAll(d, 0o755))
		fi, err := fs.Stat(d)
		must(t, err)
		if !fi.IsDir() {
			t.Fatal("MkdirAll made a non-directory")
		}
		f := filepath.Join(dir, "file")
		writeFile(t, fs, f, "x")
		if err := fs.MkdirAll(filepath.Join(f, "sub"), 0o755); err == nil {
			t.Fatal("MkdirAll through a file succeeded")
		}
		if err := fs.MkdirAll(f, 0o755); err == nil {
			t.Fatal("MkdirAll on a file succeeded")
		}
	}},
	{"List returns sorted names", func(t *testing.T, fs FS, dir string) {
		wantList(t, fs, dir)
		for _, n := range []string{"b.log", "a.index", "c", "00000000000000000010.log"} {
			writeFile(t, fs, filepath.Join(dir, n), "")
		}
		must(t, fs.MkdirAll(filepath.Join(dir, "sub"), 0o755))
		wantList(t, fs, dir, "00000000000000000010.log", "a.index", "b.log", "c", "sub")
		if _, err := fs.List(filepath.Join(dir, "c")); err == nil {
			t.Fatal("List of a file succeeded")
		}
	}},
	{"Stat reports name, size, kind and time", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		writeFile(t, fs, name, "12345")
		fi, err := fs.Stat(name)
		must(t, err)
		if fi.Name() != "f" || fi.Size() != 5 || fi.IsDir() || !fi.Mode().IsRegular() || fi.ModTime().IsZero() {
			t.Fatalf("Stat = name %q size %d dir %v mode %v time %v", fi.Name(), fi.Size(), fi.IsDir(), fi.Mode(), fi.ModTime())
		}
		fi, err = fs.Stat(dir)
		must(t, err)
		if !fi.IsDir() || fi.Name() != filepath.Base(dir) {
			t.Fatalf("Stat(dir) = name %q dir %v", fi.Name(), fi.IsDir())
		}
	}},
	{"directories can be opened and synced", func(t *testing.T, fs FS, dir string) {
		must(t, fs.SyncDir(dir))
		d, err := fs.Open(dir)
		must(t, err)
		must(t, d.Sync())
		if _, err := d.ReadAt(make([]byte, 1), 0); err == nil {
			t.Error("ReadAt on a directory succeeded")
		}
		must(t, d.Close())
		f := filepath.Join(dir, "f")
		writeFile(t, fs, f, "x")
		if err := fs.SyncDir(f); err == nil {
			t.Error("SyncDir on a file succeeded")
		}
	}},
	{"Create refuses a directory and a file parent", func(t *testing.T, fs FS, dir string) {
		if _, err := fs.Create(dir); err == nil {
			t.Error("Create on a directory succeeded")
		}
		if _, err := fs.OpenReadWrite(dir); err == nil {
			t.Error("OpenReadWrite on a directory succeeded")
		}
		f := filepath.Join(dir, "f")
		writeFile(t, fs, f, "x")
		if _, err := fs.Create(filepath.Join(f, "g")); err == nil {
			t.Error("Create under a file succeeded")
		}
	}},
	{"an open file survives removal of its name", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		f := create(t, fs, name)
		defer f.Close()
		write(t, f, "abc")
		must(t, fs.Remove(name))
		write(t, f, "def")
		buf := make([]byte, 6)
		if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "abcdef" {
			t.Fatalf("ReadAt after Remove = %q, %v", buf, err)
		}
		must(t, f.Sync())
		wantList(t, fs, dir)
	}},
	{"Lock is exclusive until closed", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, ".lock")
		l, err := fs.Lock(name)
		must(t, err)
		if _, err := fs.Stat(name); err != nil {
			t.Fatalf("Lock did not create %s: %v", name, err)
		}
		if l2, err := fs.Lock(name); !errors.Is(err, ErrLocked) {
			if l2 != nil {
				l2.Close()
			}
			t.Fatalf("second Lock = %v, want ErrLocked", err)
		}
		// Another file in the same directory is a different lock.
		other, err := fs.Lock(filepath.Join(dir, "other.lock"))
		must(t, err)
		must(t, other.Close())
		must(t, l.Close())
		l, err = fs.Lock(name)
		must(t, err)
		must(t, l.Close())
		if _, err := fs.Lock(filepath.Join(dir, "missing", ".lock")); !IsNotExist(err) {
			t.Errorf("Lock in a missing directory = %v, want not-exist", err)
		}
	}},
}

func TestFS(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			for _, tc := range suite {
				t.Run(tc.name, func(t *testing.T) {
					fs, dir := impl.new(t)
					tc.run(t, fs, dir)
				})
			}
		})
	}
}

func TestOSFileHotPathsDoNotAllocate(t *testing.T) {
	f := create(t, OS(), filepath.Join(t.TempDir(), "f"))
	defer f.Close()
	p := make([]byte, 64)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := f.Write(p); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Write allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := f.ReadAt(p, 0); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("ReadAt allocates %v times", n)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func create(t *testing.T, fs FS, name string) File {
	t.Helper()
	f, err := fs.Create(name)
	must(t, err)
	return f
}

func write(t *testing.T, f File, s string) {
	t.Helper()
	if n, err := f.Write([]byte(s)); err != nil || n != len(s) {
		t.Fatalf("Write(%q) = %d, %v", s, n, err)
	}
}

// writeFile creates name with contents s and syncs it (not its directory).
func writeFile(t *testing.T, fs FS, name, s string) {
	t.Helper()
	f := create(t, fs, name)
	write(t, f, s)
	must(t, f.Sync())
	must(t, f.Close())
}

func readAll(t *testing.T, fs FS, name string) string {
	t.Helper()
	f, err := fs.Open(name)
	must(t, err)
	defer f.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, f); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func wantSize(t *testing.T, f File, want int64) {
	t.Helper()
	got, err := f.Size()
	must(t, err)
	if got != want {
		t.Fatalf("Size = %d, want %d", got, want)
	}
}

func wantList(t *testing.T, fs FS, dir string, want ...string) {
	t.Helper()
	got, err := fs.List(dir)
	must(t, err)
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("List(%s) = %q, want %q", dir, got, want)
	}
}
