package machine

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	t0 := time.Unix(100, 0)
	from := Sample{At: t0, BusyTicks: 100, Ticks: 1000, CPUOK: true, Cores: 2,
		Disks: map[string]Disk{"vda": {SectorsWritten: 2048, BusyMs: 100}, "vdb": {SectorsWritten: 0, BusyMs: 0}}}
	to := Sample{At: t0.Add(2 * time.Second), BusyTicks: 300, Ticks: 1400, CPUOK: true, Cores: 2,
		Disks: map[string]Disk{"vda": {SectorsWritten: 4096, BusyMs: 1100}, "vdb": {SectorsWritten: 2048, BusyMs: 1900},
			"new": {SectorsWritten: 1 << 30, BusyMs: 5000}}}
	f := Window(from, to)
	if !f.CPUOK || f.BusyCores != 1 {
		t.Errorf("busy cores %v (ok %v), want 1: 200 of 400 ticks on 2 cores", f.BusyCores, f.CPUOK)
	}
	if !f.DiskOK || f.WrittenBytes != 2*2048*512 {
		t.Errorf("written %v bytes, want %v (a device absent from the first sample is left out)", f.WrittenBytes, 2*2048*512)
	}
	if f.BusiestDisk != "vdb" || f.Busy != 0.95 {
		t.Errorf("busiest %q at %v, want vdb at 0.95", f.BusiestDisk, f.Busy)
	}
	if f := Window(Sample{At: t0}, to); f.CPUOK || f.DiskOK {
		t.Errorf("figures from an empty sample: %+v", f)
	}
}

// TestTakeSeesWrites: an fsynced write shows up on some device of this
// machine (skipped where there is none, as in a container without
// /sys/block).
func TestTakeSeesWrites(t *testing.T) {
	from := Take()
	if !from.CPUOK {
		t.Skip("no /proc/stat")
	}
	if len(from.Disks) == 0 {
		t.Skip("no hardware block device in /proc/diskstats")
	}
	path := filepath.Join(t.TempDir(), "x")
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var st syscall.Statfs_t
	if syscall.Statfs(path, &st) == nil && st.Type == 0x01021994 { // TMPFS_MAGIC
		t.Skip("the temporary directory is on tmpfs")
	}
	if _, err := fh.Write(make([]byte, 4<<20)); err != nil {
		t.Fatal(err)
	}
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	f := Window(from, Take())
	if !f.DiskOK || f.WrittenBytes < 4<<20 {
		t.Errorf("after a 4 MiB fsynced write: %+v", f)
	}
}
