package main

import (
	"bufio"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// serverSample is what a benchmark reads about the broker process at the
// start and the end of its measured window, when it runs on the same
// machine (--server-pid) and, for Gregor, serves /metrics
// (--server-metrics).
type serverSample struct {
	at  time.Time
	cpu float64 // utime+stime, seconds
	// writeBytes is /proc/<pid>/io write_bytes: bytes the process caused
	// to be written to storage.
	writeBytes int64
	// inflightSum and inflightCount are gregor_network_inflight_requests'
	// sum and count, over every listener.
	inflightSum, inflightCount float64
	// hist holds the histograms a produce's time is explained by (see
	// stageHistograms), by name.
	hist              map[string]histogram
	procOK, metricsOK bool
	// machine is what the whole machine did: it tells a run bounded by
	// the machine (every core busy, or the disk at its bandwidth) from
	// one bounded by a server.
	machine machineSample
}

// histogram is a Prometheus histogram as scraped: cumulative bucket counts
// by upper bound, the sum and the count.
type histogram struct {
	bounds, counts []float64
	sum, count     float64
}

// stageHistograms are the series read from Gregor's /metrics for a produce
// run, with the unit each is kept in (seconds or milliseconds): the request
// stages of Produce and the fsyncs the produces waited for.
var stageHistograms = []struct {
	name, label, metric string
	ms                  bool
}{
	{"request_queue", "Produce", "kafka_network_requestmetrics_request_queue_time_seconds", false},
	{"local", "Produce", "kafka_network_requestmetrics_local_time_seconds", false},
	{"response_queue", "Produce", "kafka_network_requestmetrics_response_queue_time_seconds", false},
	{"remote", "Produce", "kafka_network_requestmetrics_remote_time_seconds", false},
	{"response_send", "Produce", "kafka_network_requestmetrics_response_send_time_seconds", false},
	{"total", "Produce", "kafka_network_requestmetrics_total_time_seconds", false},
	{"fsync", "", "kafka_log_logflushstats_logflushrateandtimems", true},
}

// StageFigures is one stage over a measured window: how many requests (or
// fsyncs) passed it, their mean time and the bucket bound their 99th
// percentile lies under.
type StageFigures struct {
	Stage  string  `json:"stage"`
	Count  int64   `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	P99Ms  float64 `json:"p99_le_ms"`
	// MaxMs is the bound of the highest bucket that grew: the slowest
	// one lies under it. Either is -1 when it lies above the highest
	// bound (JSON has no infinity).
	MaxMs float64 `json:"max_le_ms"`
}

// userHZ is the unit of /proc/<pid>/stat's times: USER_HZ, 100 on Linux
// whatever the kernel's own tick rate.
const userHZ = 100

// sampleServer reads the broker's CPU time and written bytes from /proc and
// its in-flight request histogram from /metrics; what cannot be read is
// left out (ok flags false).
func sampleServer(pid int, metricsURL string) serverSample {
	s := serverSample{at: time.Now(), machine: sampleMachine()}
	if pid > 0 {
		s.cpu, s.writeBytes, s.procOK = readProc(pid)
	}
	if metricsURL != "" {
		s.metricsOK = s.scrape(metricsURL)
	}
	return s
}

func readProc(pid int) (cpu float64, writeBytes int64, ok bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// The command name (field 2) may hold spaces; fields are counted after
	// its closing parenthesis.
	rest := string(stat)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, 0, false
	}
	utime, err1 := strconv.ParseFloat(f[11], 64) // field 14
	stime, err2 := strconv.ParseFloat(f[12], 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	io, err := os.Open(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return (utime + stime) / userHZ, 0, true
	}
	defer io.Close()
	sc := bufio.NewScanner(io)
	for sc.Scan() {
		if v, found := strings.CutPrefix(sc.Text(), "write_bytes: "); found {
			writeBytes, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return (utime + stime) / userHZ, writeBytes, true
}

// scrape reads the in-flight histogram and the stage histograms from a
// /metrics URL.
func (s *serverSample) scrape(url string) bool {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return false
	}
	found := false
	if f := fams["gregor_network_inflight_requests"]; f != nil {
		for _, m := range f.GetMetric() {
			s.inflightSum += m.GetHistogram().GetSampleSum()
			s.inflightCount += float64(m.GetHistogram().GetSampleCount())
			found = true
		}
	}
	s.hist = map[string]histogram{}
	for _, h := range stageHistograms {
		f := fams[h.metric]
		if f == nil {
			continue
		}
		for _, m := range f.GetMetric() {
			if h.label != "" && labelOf(m, "request") != h.label {
				continue
			}
			var g histogram
			for _, b := range m.GetHistogram().GetBucket() {
				g.bounds = append(g.bounds, b.GetUpperBound())
				g.counts = append(g.counts, float64(b.GetCumulativeCount()))
			}
			g.sum, g.count = m.GetHistogram().GetSampleSum(), float64(m.GetHistogram().GetSampleCount())
			s.hist[h.name] = g
		}
	}
	return found
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// stages turns the stage histograms' growth between two samples into
// figures: the mean and the bound of the bucket holding the 99th
// percentile, in milliseconds.
func stages(from, to serverSample) []StageFigures {
	var out []StageFigures
	for _, h := range stageHistograms {
		a, b := from.hist[h.name], to.hist[h.name]
		if a.bounds == nil { // no such request before the window
			a.counts = make([]float64, len(b.bounds))
			a.bounds = b.bounds
		}
		n := b.count - a.count
		if n <= 0 || len(a.bounds) != len(b.bounds) {
			continue
		}
		unit := 1000.0
		if h.ms {
			unit = 1
		}
		st := StageFigures{Stage: h.name, Count: int64(n), MeanMs: round3((b.sum - a.sum) / n * unit), P99Ms: -1, MaxMs: -1}
		st.P99Ms, st.MaxMs = bucketBound(a, b, 0.99*n, unit), bucketBound(a, b, n, unit)
		out = append(out, st)
	}
	return out
}

// bucketBound is the bound, times unit, of the lowest bucket whose growth
// from a to b reaches want, or -1 if only the +Inf bucket does.
func bucketBound(a, b histogram, want, unit float64) float64 {
	for i := range b.bounds {
		if b.counts[i]-a.counts[i] >= want {
			if math.IsInf(b.bounds[i], 1) {
				return -1
			}
			return b.bounds[i] * unit
		}
	}
	return -1
}

// window fills r's server figures from samples at the start and the end of
// its measured window; bytes is the payload measured.
func (r *benchResult) window(from, to serverSample, bytes int64) {
	if from.procOK && to.procOK {
		r.ServerCPUSeconds = round3(to.cpu - from.cpu)
		if r.ServerCPUSeconds > 0 {
			r.MiBPerServerCPUSecond = round3(float64(bytes) / (1 << 20) / r.ServerCPUSeconds)
		}
		r.ServerWriteBytes = to.writeBytes - from.writeBytes
		if bytes > 0 {
			r.DiskBytesPerByte = round3(float64(r.ServerWriteBytes) / float64(bytes))
		}
	}
	if from.metricsOK && to.metricsOK && to.inflightCount > from.inflightCount {
		r.InflightRequestsAvg = round3((to.inflightSum - from.inflightSum) / (to.inflightCount - from.inflightCount))
	}
	r.machineWindow(from.machine, to.machine, bytes, to.at.Sub(from.at).Seconds())
	if r.Mode == "produce" && from.metricsOK && to.metricsOK {
		r.ProduceStages = stages(from, to)
	}
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }
