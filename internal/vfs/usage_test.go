package vfs

import (
	"errors"
	"runtime"
	"testing"
)

func TestMemDiskUsage(t *testing.T) {
	fs := NewMem()
	fs.SetCapacity(1000)
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(fs, "/d/a", make([]byte, 300)); err != nil {
		t.Fatal(err)
	}
	u, err := fs.DiskUsage("/d")
	if err != nil || u != (Usage{Total: 1000, Usable: 700}) {
		t.Fatalf("DiskUsage = %+v, %v; want 1000 total, 700 usable", u, err)
	}
	if _, err := fs.DiskUsage("/missing"); !IsNotExist(err) {
		t.Fatalf("DiskUsage of a missing path: %v", err)
	}
}

func TestOSDiskUsage(t *testing.T) {
	u, err := OS().DiskUsage(t.TempDir())
	if runtime.GOOS != "linux" {
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("off Linux: %v", err)
		}
		return
	}
	if err != nil || u.Total <= 0 || u.Usable < 0 || u.Usable > u.Total {
		t.Fatalf("DiskUsage = %+v, %v", u, err)
	}
}

func TestClampBytes(t *testing.T) {
	if got := clampBytes(1<<62, 4096); got != 1<<63-1 {
		t.Fatalf("clampBytes overflow = %d", got)
	}
	if got := clampBytes(10, 4096); got != 40960 {
		t.Fatalf("clampBytes = %d", got)
	}
}
