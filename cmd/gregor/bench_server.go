package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
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
	procOK, metricsOK          bool
}

// userHZ is the unit of /proc/<pid>/stat's times: USER_HZ, 100 on Linux
// whatever the kernel's own tick rate.
const userHZ = 100

// sampleServer reads the broker's CPU time and written bytes from /proc and
// its in-flight request histogram from /metrics; what cannot be read is
// left out (ok flags false).
func sampleServer(pid int, metricsURL string) serverSample {
	s := serverSample{at: time.Now()}
	if pid > 0 {
		s.cpu, s.writeBytes, s.procOK = readProc(pid)
	}
	if metricsURL != "" {
		s.inflightSum, s.inflightCount, s.metricsOK = scrapeInflight(metricsURL)
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

func scrapeInflight(url string) (sum, count float64, ok bool) {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return 0, 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var into *float64
		switch {
		case strings.HasPrefix(line, "gregor_network_inflight_requests_sum"):
			into = &sum
		case strings.HasPrefix(line, "gregor_network_inflight_requests_count"):
			into = &count
		default:
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			*into += v
			ok = true
		}
	}
	return sum, count, ok
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
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }
