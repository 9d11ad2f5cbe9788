package main

import (
	"encoding/json"
	"flag"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"
)

// appendLog is one file and its group commit.
type appendLog struct {
	f *os.File

	mu      sync.Mutex
	cond    sync.Cond
	end     int64 // bytes written
	durable int64 // bytes covered by a finished fdatasync
	syncs   int64
	// syncNs are the fdatasyncs' durations, from the first one started
	// at or after measureFrom.
	syncNs      []int64
	measureFrom time.Time
	stop        bool
	nosync      bool // written is durable: no fdatasync
	exited      chan struct{}
}

// syncLoop runs fdatasyncs while there is something to sync: each covers
// what was written before it began.
func (l *appendLog) syncLoop() {
	defer close(l.exited)
	l.mu.Lock()
	defer l.mu.Unlock()
	for !l.stop {
		for l.end == l.durable && !l.stop {
			l.cond.Wait()
		}
		if l.stop {
			return
		}
		target := l.end
		if l.nosync {
			l.durable = target
			l.cond.Broadcast()
			continue
		}
		l.mu.Unlock()
		began := time.Now()
		if err := syscall.Fdatasync(int(l.f.Fd())); err != nil {
			panic(err)
		}
		took := time.Since(began)
		l.mu.Lock()
		if !began.Before(l.measureFrom) {
			l.syncNs = append(l.syncNs, int64(took))
		}
		l.durable = target
		l.syncs++
		l.cond.Broadcast()
	}
}

type appendResult struct {
	Mode             string  `json:"mode"`
	Size             int     `json:"size"`
	Batch            int     `json:"batch"`
	Inflight         int     `json:"inflight"`
	Files            int     `json:"files"`
	Rate             int     `json:"rate"`
	NoSync           bool    `json:"nosync,omitempty"`
	Records          int64   `json:"records"`
	MiBPerS          float64 `json:"mib_per_sec"`
	SyncsPerS        float64 `json:"fdatasyncs_per_sec"`
	RecordsPerSync   float64 `json:"records_per_sync"`
	P50Ms            float64 `json:"latency_p50_ms"`
	P99Ms            float64 `json:"latency_p99_ms"`
	LagP99Ms         float64 `json:"send_lag_p99_ms,omitempty"`
	SyncP50Ms        float64 `json:"fdatasync_p50_ms"`
	SyncP99Ms        float64 `json:"fdatasync_p99_ms"`
	SyncMaxMs        float64 `json:"fdatasync_max_ms"`
	CPUSeconds       float64 `json:"cpu_s"`
	MiBPerCPUSecond  float64 `json:"mib_per_cpu_s"`
	DiskBytesPerByte float64 `json:"disk_bytes_per_byte"`
}

// appendSpec is one append run's shape, shared by its streams.
type appendSpec struct {
	dir                   string
	size, batch, inflight int
	rate                  int
	nosync                bool
	start, t0, t1         time.Time
}

// streamResult is what one stream measured in the window.
type streamResult struct {
	measured      int64
	lat, syncNs   []int64
	lag           []int64 // how late the writer woke for a due record, ns
	syncs0, syncs int64
	err           error
}

func appendCmd(args []string) error {
	fs := flag.NewFlagSet("append", flag.ExitOnError)
	dir := fs.String("dir", os.TempDir(), "directory for the files")
	size := fs.Int("size", 1024, "bytes per record")
	batch := fs.Int("batch", 1<<20, "most bytes per request (kgo's producer batch)")
	inflight := fs.Int("inflight", 5, "requests outstanding at most, per file")
	files := fs.Int("files", 1, "files written at once, each by its own client with its own group commit (partitions)")
	rate := fs.Int("rate", 0, "records per second per file (0: as fast as they are answered)")
	nosync := fs.Bool("nosync", false, "answer requests once written, without fdatasync (kfake's and Kafka's durability)")
	warmup := fs.Duration("warmup", 2*time.Second, "time before measuring")
	duration := fs.Duration("duration", 8*time.Second, "time measured")
	fs.Parse(args)

	start := time.Now()
	spec := appendSpec{dir: *dir, size: *size, batch: *batch, inflight: *inflight, rate: *rate, nosync: *nosync,
		start: start, t0: start.Add(*warmup), t1: start.Add(*warmup + *duration)}
	results := make([]streamResult, *files)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = spec.stream() }()
	}
	time.Sleep(time.Until(spec.t0))
	cpu0, wb0 := cpuSeconds(), writeBytes()
	time.Sleep(time.Until(spec.t1))
	cpu1, wb1 := cpuSeconds(), writeBytes()
	wg.Wait()

	var measured, syncs int64
	var lat, syncNs, lag []int64
	for _, r := range results {
		if r.err != nil {
			return r.err
		}
		measured += r.measured
		syncs += r.syncs - r.syncs0
		lat = append(lat, r.lat...)
		syncNs = append(syncNs, r.syncNs...)
		lag = append(lag, r.lag...)
	}
	secs := duration.Seconds()
	bytes := float64(measured) * float64(*size)
	res := appendResult{Mode: "append", Size: *size, Batch: *batch, Inflight: *inflight, Files: *files, Rate: *rate, NoSync: *nosync,
		Records: measured, MiBPerS: bytes / (1 << 20) / secs, SyncsPerS: float64(syncs) / secs, CPUSeconds: cpu1 - cpu0}
	if syncs > 0 {
		res.RecordsPerSync = float64(measured) / float64(syncs)
	}
	if res.CPUSeconds > 0 {
		res.MiBPerCPUSecond = bytes / (1 << 20) / res.CPUSeconds
	}
	if bytes > 0 {
		res.DiskBytesPerByte = float64(wb1-wb0) / bytes
	}
	res.P50Ms, res.P99Ms = percentilesMs(lat)
	res.SyncP50Ms, res.SyncP99Ms = percentilesMs(syncNs)
	if len(syncNs) > 0 {
		res.SyncMaxMs = float64(syncNs[len(syncNs)-1]) / 1e6 // sorted by percentilesMs
	}
	_, res.LagP99Ms = percentilesMs(lag)
	return json.NewEncoder(os.Stdout).Encode(res)
}

// stream is one client appending to its own file until the window ends:
// up to inflight requests outstanding, each answered, in order, when an
// fdatasync that began after its write has returned.
func (sp appendSpec) stream() (res streamResult) {
	f, err := os.CreateTemp(sp.dir, "rawlog-*.log")
	if err != nil {
		return streamResult{err: err}
	}
	defer os.Remove(f.Name())
	defer f.Close()
	l := &appendLog{f: f, exited: make(chan struct{}), nosync: sp.nosync, measureFrom: sp.t0}
	l.cond.L = &l.mu
	go l.syncLoop()

	perReq := max(sp.batch/sp.size, 1)
	buf := make([]byte, perReq*sp.size)
	for i := range buf {
		buf[i] = byte('a' + i%26)
	}
	var interval time.Duration
	if sp.rate > 0 {
		interval = time.Second / time.Duration(sp.rate)
	}
	due := func(i int64) time.Time { return sp.start.Add(time.Duration(i) * interval) }
	// A request carries the records first..first+n-1, as kgo's linger=0
	// producer sends everything buffered whenever a request slot frees.
	type req struct {
		first, n int64
		sent     time.Time
		end      int64
	}
	var (
		pending []req // written, not yet answered, oldest first
		done    bool
	)
	// The responder answers requests in order as fdatasyncs cover them,
	// as a connection's writer does.
	var answered sync.WaitGroup
	answered.Add(1)
	go func() {
		defer answered.Done()
		l.mu.Lock()
		defer l.mu.Unlock()
		for {
			for len(pending) == 0 || l.durable < pending[0].end {
				if done && len(pending) == 0 {
					return
				}
				l.cond.Wait()
			}
			now := time.Now()
			r := pending[0]
			for i := r.first; i < r.first+r.n; i++ {
				d := r.sent
				if interval > 0 {
					d = due(i)
				}
				if !d.Before(sp.t0) && d.Before(sp.t1) {
					res.lat = append(res.lat, int64(now.Sub(d)))
					res.measured++
				}
			}
			pending = pending[1:]
			l.cond.Broadcast()
		}
	}()
	sampled := false
	for next := int64(0); ; {
		if interval > 0 {
			d := due(next)
			time.Sleep(time.Until(d))
			if !d.Before(sp.t0) && d.Before(sp.t1) {
				res.lag = append(res.lag, int64(time.Since(d)))
			}
		}
		l.mu.Lock()
		for len(pending) == sp.inflight {
			l.cond.Wait()
		}
		l.mu.Unlock()
		now := time.Now()
		if !sampled && !now.Before(sp.t0) {
			l.mu.Lock()
			res.syncs0, sampled = l.syncs, true
			l.mu.Unlock()
		}
		if !now.Before(sp.t1) {
			break
		}
		n := int64(perReq)
		if interval > 0 {
			n = min(n, int64(now.Sub(sp.start)/interval)+1-next)
		}
		l.mu.Lock()
		off := l.end
		l.mu.Unlock()
		if _, err := f.WriteAt(buf[:n*int64(sp.size)], off); err != nil {
			res.err = err
			break
		}
		l.mu.Lock()
		l.end = off + n*int64(sp.size)
		pending = append(pending, req{first: next, n: n, sent: now, end: l.end})
		l.cond.Broadcast()
		l.mu.Unlock()
		next += n
	}
	l.mu.Lock()
	res.syncs = l.syncs
	res.syncNs = l.syncNs
	done = true
	l.cond.Broadcast()
	l.mu.Unlock()
	answered.Wait()
	l.mu.Lock()
	l.stop = true
	l.cond.Broadcast()
	l.mu.Unlock()
	<-l.exited
	return res
}

// percentilesMs is the 50th and 99th percentiles of durations in
// nanoseconds, in milliseconds (zero for none).
func percentilesMs(ns []int64) (p50, p99 float64) {
	if len(ns) == 0 {
		return 0, 0
	}
	slices.Sort(ns)
	return float64(ns[len(ns)/2]) / 1e6, float64(ns[min(len(ns)-1, len(ns)*99/100)]) / 1e6
}
