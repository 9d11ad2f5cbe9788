package machine

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Sample is the machine's counters at one moment.
type Sample struct {
	At time.Time
	// BusyTicks and Ticks are /proc/stat's "cpu" line in USER_HZ ticks:
	// every field but idle and iowait, and all of them (a core waiting
	// for the disk is idle for anyone who could run).
	BusyTicks, Ticks float64
	CPUOK            bool
	// Cores is the number of cores the ticks are summed over.
	Cores int
	// Disks are the whole hardware block devices by name.
	Disks map[string]Disk
}

// Disk is one block device's counters (/proc/diskstats).
type Disk struct {
	// SectorsWritten counts 512-byte sectors, whatever the block size.
	SectorsWritten float64
	// BusyMs is io_ticks: the milliseconds the device had I/O in flight.
	BusyMs float64
}

// Take samples the machine now.
func Take() Sample {
	s := Sample{At: time.Now(), Cores: runtime.NumCPU()}
	s.BusyTicks, s.Ticks, s.CPUOK = cpuTicks()
	s.Disks = disks()
	return s
}

// Figures are what the machine did between two samples.
type Figures struct {
	// BusyCores is how many cores were busy on average (every process).
	BusyCores float64
	CPUOK     bool
	// WrittenBytes sums every device's writes that reached it (written
	// back or fsynced, not page-cache writes still dirty).
	WrittenBytes float64
	// BusiestDisk is the device busy the longest share of the window and
	// Busy that share (0 to 1): near 1, the disk bounded the run.
	BusiestDisk string
	Busy        float64
	DiskOK      bool
}

// Window gives the figures between from and to, taken in that order.
func Window(from, to Sample) Figures {
	var f Figures
	if from.CPUOK && to.CPUOK && to.Ticks > from.Ticks {
		f.BusyCores = (to.BusyTicks - from.BusyTicks) / (to.Ticks - from.Ticks) * float64(to.Cores)
		f.CPUOK = true
	}
	ms := float64(to.At.Sub(from.At).Milliseconds())
	for name, d1 := range to.Disks {
		d0, ok := from.Disks[name]
		if !ok {
			continue
		}
		f.DiskOK = true
		f.WrittenBytes += (d1.SectorsWritten - d0.SectorsWritten) * 512
		if ms > 0 {
			if busy := min((d1.BusyMs-d0.BusyMs)/ms, 1); busy > f.Busy || f.BusiestDisk == "" {
				f.BusiestDisk, f.Busy = name, busy
			}
		}
	}
	return f
}

func cpuTicks() (busy, total float64, ok bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, 0, false
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, 0, false
	}
	// user nice system idle iowait irq softirq steal [guest guest_nice]:
	// guest time is already counted in user, so only the first eight.
	for i, v := range fields[1:9] {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, 0, false
		}
		total += x
		if i != 3 && i != 4 {
			busy += x
		}
	}
	return busy, total, true
}

// disks reads /proc/diskstats: major minor name, then reads completed,
// merged, sectors read, ms reading, writes completed, merged, sectors
// written, ms writing, in flight, io_ticks, ...
func disks() map[string]Disk {
	f, err := os.Open("/proc/diskstats")
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]Disk{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 13 {
			continue
		}
		name := fields[2]
		if strings.HasPrefix(name, "zram") || strings.HasPrefix(name, "loop") || strings.HasPrefix(name, "ram") {
			continue
		}
		if _, err := os.Stat(filepath.Join("/sys/block", name, "device")); err != nil {
			continue
		}
		written, err1 := strconv.ParseFloat(fields[9], 64)
		busy, err2 := strconv.ParseFloat(fields[12], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out[name] = Disk{SectorsWritten: written, BusyMs: busy}
	}
	return out
}
