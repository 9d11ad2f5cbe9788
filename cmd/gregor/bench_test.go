package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/machine"
)

// gregor bench produce with --server-metrics reads, over its measured
// window, how many requests each connection pipelined and where the
// broker's produce time went: Kafka's request stages, which add up to the
// total, and the fsyncs the acks waited for.
func TestBenchProduceReportsTheBrokersStages(t *testing.T) {
	c := startCLI(t)
	metrics := "http://" + c.b.AdminAddr().String() + "/metrics"
	var r benchResult
	// One record per request (linger 0 at a fixed rate), a second long.
	c.json(&r, "bench", "produce", "-t", "stages", "--duration", "1s", "--rate", "500", "--record-size", "100",
		"--server-metrics", metrics)
	if r.Records == 0 || r.Errors != 0 {
		t.Fatalf("bench produced %d records, %d errors", r.Records, r.Errors)
	}
	// At a fixed rate the generator reports its own send lag.
	if r.SendLagP99Ms <= 0 || r.SendLagP99Ms > r.LatencyMaxMs+1 {
		t.Errorf("send lag p99 %.3f ms (latency max %.3f ms)", r.SendLagP99Ms, r.LatencyMaxMs)
	}
	if r.InflightRequestsAvg < 1 {
		t.Errorf("requests in flight per connection %v, want at least 1", r.InflightRequestsAvg)
	}
	got := map[string]StageFigures{}
	for _, st := range r.ProduceStages {
		got[st.Stage] = st
	}
	var sum float64
	for _, name := range []string{"request_queue", "local", "response_queue", "remote", "response_send"} {
		st, ok := got[name]
		if !ok || st.Count == 0 {
			t.Fatalf("no %s stage in %+v", name, r.ProduceStages)
		}
		sum += st.MeanMs
	}
	// A request answered as the window closes may miss its last stages:
	// the sums are compared with room for that.
	total := got["total"]
	if total.Count == 0 || sum > 1.1*total.MeanMs+0.05 {
		t.Errorf("stage means add up to %.3f ms, the total's mean is %.3f ms", sum, total.MeanMs)
	}
	if got["fsync"].Count == 0 {
		t.Errorf("no fsync counted under acks=all with gregor.ack.fsync: %+v", r.ProduceStages)
	}
	// The machine's figures: the client's CPU and the busy cores (every
	// process) over the window.
	if r.MachineCores < 1 || r.MachineBusyCores <= 0 || r.MachineBusyCores > float64(r.MachineCores)+0.01 || r.ClientCPUSeconds <= 0 {
		t.Errorf("machine figures: %d cores, %.2f busy, client %.3f CPU-s", r.MachineCores, r.MachineBusyCores, r.ClientCPUSeconds)
	}
	if b, err := json.Marshal(r.ProduceStages); err == nil {
		t.Logf("stages: %s", b)
	}
}

// The machine's figures over a window are the differences of two samples:
// busy cores is the busy share of every core's ticks times the cores, and
// the block devices' bytes are sectors of 512 bytes whatever the device.
func TestMachineWindow(t *testing.T) {
	t0 := time.Unix(100, 0)
	from := machineSample{Sample: machine.Sample{At: t0, BusyTicks: 1000, Ticks: 2000, CPUOK: true, Cores: 2,
		Disks: map[string]machine.Disk{"vda": {SectorsWritten: 100, BusyMs: 0}}}, selfCPU: 1, selfOK: true}
	to := machineSample{Sample: machine.Sample{At: t0.Add(2 * time.Second), BusyTicks: 1300, Ticks: 2400, CPUOK: true, Cores: 2,
		Disks: map[string]machine.Disk{"vda": {SectorsWritten: 100 + 4*2048, BusyMs: 1500}}}, selfCPU: 2.5, selfOK: true}
	var r benchResult
	r.machineWindow(from, to, 2<<20, 2)
	if r.ClientCPUSeconds != 1.5 || r.MachineCores != 2 || r.MachineBusyCores != 1.5 ||
		r.DeviceWriteMiBPerS != 2 || r.DeviceWriteBytesPerByte != 2 || r.BusiestDevice != "vda" || r.DeviceBusy != 0.75 {
		t.Errorf("got client %v CPU-s, %v of %d cores busy, %v MiB/s, %v bytes per byte, %s busy %v; want 1.5, 1.5 of 2, 2, 2, vda 0.75",
			r.ClientCPUSeconds, r.MachineBusyCores, r.MachineCores, r.DeviceWriteMiBPerS, r.DeviceWriteBytesPerByte, r.BusiestDevice, r.DeviceBusy)
	}
	// A sample that could not be read leaves its figures out.
	var none benchResult
	none.machineWindow(machineSample{}, to, 2<<20, 2)
	if none.MachineCores != 0 || none.DeviceWriteMiBPerS != 0 || none.ClientCPUSeconds != 0 {
		t.Errorf("figures from an unread sample: %+v", none)
	}
}
