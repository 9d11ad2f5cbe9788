package main

import (
	"encoding/json"
	"testing"
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
	if b, err := json.Marshal(r.ProduceStages); err == nil {
		t.Logf("stages: %s", b)
	}
}
