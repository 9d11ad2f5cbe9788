package vfs

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
)

// A MemFS with a capacity is a disk that fills up: the write that does not
// fit writes what does and fails with ENOSPC, a hole made by Truncate uses
// no space, and cutting a file back frees its blocks.
func TestMemFSFillsUp(t *testing.T) {
	fs := NewMem()
	fs.SetCapacity(1000)
	must(t, fs.MkdirAll("/d", 0o755))
	f, err := fs.Create("/d/seg")
	must(t, err)
	idx, err := fs.Create("/d/idx")
	must(t, err)
	must(t, idx.Truncate(10<<20)) // preallocated index: sparse
	if _, err := f.WriteAt(bytes.Repeat([]byte("a"), 600), 0); err != nil {
		t.Fatal(err)
	}
	n, err := f.WriteAt(bytes.Repeat([]byte("b"), 600), 600)
	if n != 400 || !errors.Is(err, syscall.ENOSPC) || !IsNoSpace(err) {
		t.Fatalf("write past capacity = %d, %v; want 400 bytes and ENOSPC", n, err)
	}
	if u, _ := fs.DiskUsage("/d"); u.Usable != 0 {
		t.Fatalf("usable = %d after filling the disk", u.Usable)
	}
	if _, err := f.WriteAt([]byte("c"), 10); err != nil {
		t.Fatalf("overwriting allocated bytes on a full disk: %v", err)
	}
	if _, err := f.WriteAt([]byte("x"), 1000); !IsNoSpace(err) {
		t.Fatalf("append to a full disk: %v", err)
	}
	must(t, f.Truncate(600))
	if u, _ := fs.DiskUsage("/d"); u.Usable != 400 {
		t.Fatalf("usable = %d after truncating back to 600 bytes, want 400", u.Usable)
	}
	if _, err := f.WriteAt([]byte("d"), 600); err != nil {
		t.Fatalf("write after space returned: %v", err)
	}
	// A crash clone is the same volume.
	must(t, f.Sync())
	must(t, fs.SyncDir("/d"))
	must(t, fs.SyncDir("/"))
	clone := fs.CrashClone()
	if u, _ := clone.DiskUsage("/d"); u.Total != 1000 || u.Usable != 399 {
		t.Fatalf("crash clone usage = %+v, want 1000 total, 399 usable", u)
	}
	g, err := clone.OpenReadWrite("/d/seg")
	must(t, err)
	if _, err := g.Write(make([]byte, 400)); !IsNoSpace(err) {
		t.Fatalf("crash clone does not keep the capacity limit: %v", err)
	}
}

// After a failed fsync with ErrWritebackLost no later fsync makes the lost
// bytes durable (Linux marked their pages clean); bytes written afterwards
// are synced as usual, and a write over the lost range dirties it again.
func TestWritebackLostIsNeverPersisted(t *testing.T) {
	mem := NewMem()
	inj := OnIndex(1, OpSync).WithErr(ErrWritebackLost)
	fs := NewInjecting(mem, inj)
	must(t, fs.MkdirAll("/d", 0o755))
	f, err := fs.Create("/d/f")
	must(t, err)
	must(t, fs.SyncDir("/d"))
	must(t, fs.SyncDir("/"))
	durable := func() string {
		t.Helper()
		b, err := ReadFile(mem.CrashClone(), "/d/f")
		must(t, err)
		return string(b)
	}
	write := func(s string) {
		t.Helper()
		if _, err := f.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	write("aaaa")
	must(t, f.Sync())
	write("bbbb")
	if err := f.Sync(); !errors.Is(err, ErrWritebackLost) || !errors.Is(err, syscall.EIO) || !errors.Is(err, ErrInjected) {
		t.Fatalf("second sync = %v, want the injected writeback loss", err)
	}
	must(t, f.Sync()) // "succeeds", as Linux's next fsync does
	if got := durable(); got != "aaaa\x00\x00\x00\x00" {
		t.Fatalf("durable after a lost writeback and a good sync = %q", got)
	}
	write("cccc")
	must(t, f.Sync())
	if got := durable(); got != "aaaa\x00\x00\x00\x00cccc" {
		t.Fatalf("durable after appending = %q", got)
	}
	torn := mem.CrashCloneTorn(rand.New(rand.NewPCG(1, 2)))
	if b, _ := ReadFile(torn, "/d/f"); !bytes.HasPrefix(b, []byte("aaaa\x00\x00\x00\x00")) {
		t.Fatalf("torn clone brought lost bytes back: %q", b)
	}
	if _, err := f.WriteAt([]byte("dddd"), 4); err != nil {
		t.Fatal(err)
	}
	must(t, f.Sync())
	if got := durable(); got != "aaaaddddcccc" {
		t.Fatalf("durable after rewriting the lost range = %q", got)
	}
}

func TestIsNoSpace(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&os.PathError{Op: "write", Path: "f", Err: syscall.ENOSPC}, true},
		{&os.PathError{Op: "write", Path: "f", Err: syscall.EDQUOT}, true},
		{&os.PathError{Op: "truncate", Path: "f", Err: syscall.ENOSPC}, true},
		{&os.PathError{Op: "open", Path: "f", Err: syscall.ENOSPC}, true},
		{&os.PathError{Op: "sync", Path: "f", Err: syscall.ENOSPC}, false},
		{&os.PathError{Op: "syncdir", Path: "d", Err: syscall.ENOSPC}, false},
		{&os.PathError{Op: "write", Path: "f", Err: syscall.EIO}, false},
		{ErrWritebackLost, false},
		{nil, false},
	} {
		if got := IsNoSpace(c.err); got != c.want {
			t.Errorf("IsNoSpace(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
