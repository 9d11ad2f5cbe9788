package main

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// machineSample is what the whole machine had done by a moment: the bench
// process's own CPU time, the busy and total CPU time of every core
// (/proc/stat, in USER_HZ ticks), and the sectors written to the machine's
// block devices (/proc/diskstats). Values that cannot be read stay zero
// and ok false.
type machineSample struct {
	selfCPU                float64
	busyTicks, ticks       float64
	sectorsWritten         float64
	cores                  int
	selfOK, statOK, diskOK bool
}

func sampleMachine() machineSample {
	m := machineSample{cores: runtime.NumCPU()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		m.selfCPU = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
		m.selfOK = true
	}
	m.busyTicks, m.ticks, m.statOK = readCPUTicks()
	m.sectorsWritten, m.diskOK = readSectorsWritten()
	return m
}

// readCPUTicks sums /proc/stat's "cpu" line: busy is every field but idle
// and iowait (a core waiting for the disk is idle for anyone who could run).
func readCPUTicks() (busy, total float64, ok bool) {
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
	if len(fields) < 8 || fields[0] != "cpu" {
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

// readSectorsWritten sums the sectors written (512 bytes each, whatever the
// device's block size) of every whole block device backed by hardware (a
// /sys/block entry with a device link: not loop, ram or zram), so a
// partition's writes are not counted twice.
func readSectorsWritten() (sectors float64, ok bool) {
	f, err := os.Open("/proc/diskstats")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		name := fields[2]
		if strings.HasPrefix(name, "zram") || strings.HasPrefix(name, "loop") || strings.HasPrefix(name, "ram") {
			continue
		}
		if _, err := os.Stat(filepath.Join("/sys/block", name, "device")); err != nil {
			continue
		}
		x, err := strconv.ParseFloat(fields[9], 64)
		if err != nil {
			continue
		}
		sectors += x
		ok = true
	}
	return sectors, ok
}

// machineWindow fills r's machine figures from samples at the start and
// the end of its measured window of seconds; bytes is the payload.
func (r *benchResult) machineWindow(from, to machineSample, bytes int64, seconds float64) {
	if seconds <= 0 {
		return
	}
	if from.selfOK && to.selfOK {
		r.ClientCPUSeconds = round3(to.selfCPU - from.selfCPU)
	}
	if from.statOK && to.statOK && to.ticks > from.ticks {
		r.MachineCores = to.cores
		r.MachineBusyCores = round3((to.busyTicks - from.busyTicks) / (to.ticks - from.ticks) * float64(to.cores))
	}
	if from.diskOK && to.diskOK {
		written := (to.sectorsWritten - from.sectorsWritten) * 512
		r.DeviceWriteMiBPerS = round3(written / (1 << 20) / seconds)
		if bytes > 0 {
			r.DeviceWriteBytesPerByte = round3(written / float64(bytes))
		}
	}
}
