package main

import (
	"syscall"

	"github.com/gregor-broker/gregor/internal/machine"
)

// machineSample is what the whole machine had done by a moment
// (machine.Sample: every core's CPU ticks, each block device's writes and
// busy time) and the bench process's own CPU time; what cannot be read is
// left out (ok flags false).
type machineSample struct {
	machine.Sample
	selfCPU float64
	selfOK  bool
}

func sampleMachine() machineSample {
	m := machineSample{Sample: machine.Take()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		m.selfCPU = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
		m.selfOK = true
	}
	return m
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
	f := machine.Window(from.Sample, to.Sample)
	if f.CPUOK {
		r.MachineCores = to.Cores
		r.MachineBusyCores = round3(f.BusyCores)
	}
	if f.DiskOK {
		r.DeviceWriteMiBPerS = round3(f.WrittenBytes / (1 << 20) / seconds)
		if bytes > 0 {
			r.DeviceWriteBytesPerByte = round3(f.WrittenBytes / float64(bytes))
		}
		r.BusiestDevice, r.DeviceBusy = f.BusiestDisk, round3(f.Busy)
	}
}
