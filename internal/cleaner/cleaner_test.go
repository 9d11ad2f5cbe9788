package cleaner

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// TestWorkersCleanInTheBackground runs real workers on the wall clock: they
// clean every compacted log, leave others alone, and stop without leaking.
func TestWorkersCleanInTheBackground(t *testing.T) {
	defer goleak.VerifyNone(t)
	fs := vfs.NewMem()
	clk := clock.Real{}
	logs := newFakeLogs()
	var ls []*log.Log
	for p := int32(0); p < 4; p++ {
		cfg := compactConfig()
		if p == 3 {
			cfg.Compact, cfg.Delete = false, true
		}
		l := openLog(t, fs, clk, fmt.Sprintf("/data/t-%d", p), cfg, false)
		defer l.Close()
		for i := 0; i < 200; i++ {
			appendBatch(t, l, record.CodecNone, time.Now().UnixMilli(), put(keyName(i%7), strings.Repeat("e", 40)))
		}
		l.Roll()
		logs.add("t", p, l)
		ls = append(ls, l)
	}
	c := New(Options{Logs: logs, Clock: clk, Logger: discard(), Config: func() Config {
		return Config{Enable: true, Threads: 2, DedupeBufferSize: 1 << 20, IOBufferSize: 1 << 20,
			IOBufferLoadFactor: 0.9, IOMaxBytesPerSecond: math.MaxFloat64, BackoffMs: 5}
	}})
	c.Start()
	deadline := time.Now().Add(10 * time.Second)
	for p := int32(0); p < 3; p++ {
		for {
			if st, _ := c.Status(topicpart.TopicPartition{Topic: "t", Partition: p}); st.Runs > 0 && st.DirtyBytes == 0 && !st.InProgress {
				break
			}
			if time.Now().After(deadline) {
				st, _ := c.Status(topicpart.TopicPartition{Topic: "t", Partition: p})
				t.Fatalf("partition %d not cleaned: %+v", p, st)
			}
			time.Sleep(time.Millisecond)
		}
		if n := len(readAll(t, ls[p])); n != 7 {
			t.Fatalf("partition %d holds %d records", p, n)
		}
	}
	if st, _ := c.Status(topicpart.TopicPartition{Topic: "t", Partition: 3}); st.Compacted || st.Runs != 0 || len(readAll(t, ls[3])) != 200 {
		t.Fatalf("a delete-only log was touched: %+v", st)
	}
	if got := gauges(t, c)["kafka_log_logcleaner_deadthreadcount"]; got != 0 {
		t.Fatalf("dead threads: %v", got)
	}
	c.Stop()
	if c.Running() {
		t.Fatal("still running")
	}
}

func TestDisabledCleanerRunsNothingButExplains(t *testing.T) {
	clk := clock.NewFake(t0)
	l := openLog(t, vfs.NewMem(), clk, "/data/t-0", compactConfig(), false)
	defer l.Close()
	for i := 0; i < 100; i++ {
		appendBatch(t, l, record.CodecNone, clk.Now().UnixMilli(), put("k", strings.Repeat("f", 60)))
	}
	l.Roll()
	logs := newFakeLogs()
	logs.add("t", 0, l)
	c := New(Options{Logs: logs, Clock: clk, Logger: discard(), Config: func() Config {
		return Config{Enable: false, Threads: 1, BackoffMs: 1}
	}})
	c.Start()
	defer c.Stop()
	st, _ := c.Status(topicpart.TopicPartition{Topic: "t", Partition: 0})
	if c.Running() || st.CleanerEnabled || st.Eligible || !strings.Contains(st.Why, "log.cleaner.enable=false") || st.DirtyRatio != 1 {
		t.Fatalf("status: %+v", st)
	}
}

// gauges gathers the cleaner's metrics: name{labels} → value.
func gauges(t *testing.T, c *Cleaner) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.Collector())
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			name := f.GetName()
			for _, lp := range m.GetLabel() {
				name += fmt.Sprintf("{%s=%q}", lp.GetName(), lp.GetValue())
			}
			out[name] = m.GetGauge().GetValue()
		}
	}
	return out
}

func TestStatusJSONAndMetrics(t *testing.T) {
	clk := clock.NewFake(t0)
	logs := newFakeLogs()
	for p := int32(0); p < 2; p++ {
		l := openLog(t, vfs.NewMem(), clk, "/data/t-0", compactConfig(), false)
		defer l.Close()
		for i := 0; i < 100; i++ {
			appendBatch(t, l, record.CodecNone, clk.Now().UnixMilli(), put(keyName(i%5), strings.Repeat("g", 60)))
		}
		l.Roll()
		logs.add("t", p, l)
	}
	tc := newTestCleaner(t, logs, clk, 1<<20)
	tc.testHook = func(tp topicpart.TopicPartition) {
		if tp.Partition == 1 {
			panic("partition 1 cannot be cleaned")
		}
	}
	tc.cleanUntilIdle(t)
	clk.Advance(3 * time.Second)

	mux := http.NewServeMux()
	mux.Handle("GET /v1/partitions/{topic}/{partition}/cleaner", tc.Handler())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(path string) (int, map[string]any) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	code, m := get("/v1/partitions/t/0/cleaner")
	if code != 200 || m["cleaner_point"].(float64) != 100 || m["dirty_bytes"].(float64) != 0 ||
		m["first_uncleanable_reason"] != string(ReasonActiveSegment) || m["last_run"] == nil || m["uncleanable"] != nil {
		t.Fatalf("partition 0: %d %v", code, m)
	}
	if lr := m["last_run"].(map[string]any); lr["records_removed"].(float64) != 95 {
		t.Fatalf("last run: %v", lr)
	}
	code, m = get("/v1/partitions/t/1/cleaner")
	u, _ := m["uncleanable"].(map[string]any)
	if code != 200 || u == nil || !strings.Contains(u["error"].(string), "partition 1 cannot be cleaned") || m["eligible"] != false {
		t.Fatalf("partition 1: %d %v", code, m)
	}
	if code, _ := get("/v1/partitions/t/7/cleaner"); code != 404 {
		t.Fatalf("unknown partition: %d", code)
	}
	if code, _ := get("/v1/partitions/t/x/cleaner"); code != 400 {
		t.Fatalf("bad partition: %d", code)
	}

	g := gauges(t, tc.Cleaner)
	want := map[string]float64{
		`kafka_log_logcleanermanager_uncleanable_partitions_count{logDirectory="/data"}`: 1,
		"kafka_log_logcleanermanager_time_since_last_run_ms":                             3000,
		"kafka_log_logcleaner_deadthreadcount":                                           0,
		"kafka_log_logcleanermanager_max_dirty_percent":                                  0,
	}
	for name, v := range want {
		if got, ok := g[name]; !ok || got != v {
			t.Fatalf("%s = %v (present %v), want %v; all: %v", name, got, ok, v, g)
		}
	}
	if len(g) != 9 {
		t.Fatalf("%d metrics, want 9: %v", len(g), g)
	}
	if v := g["kafka_log_logcleaner_cleaner_recopy_percent"]; v <= 0 || v >= 100 {
		t.Fatalf("recopy percent %v", v)
	}
}
