package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gregor-broker/gregor/internal/machine"
)

// replicateSpec is one replicate run's shape.
type replicateSpec struct {
	dir                       string
	rf, partitions            int
	batch, inflight, fetchMax int
	warmup, duration          time.Duration
	clientCPUPerMiB           time.Duration
	verify                    bool
}

type replicateResult struct {
	Mode              string    `json:"mode"`
	RF                int       `json:"rf"`
	Partitions        int       `json:"partitions"`
	Batch             int       `json:"batch"`
	Inflight          int       `json:"inflight"`
	ClientExtraMs     float64   `json:"client_extra_ms_per_mib,omitempty"`
	FetchMax          int       `json:"fetch_max"`
	Seconds           float64   `json:"duration_s"`
	MiB               float64   `json:"mib"`
	MiBPerS           float64   `json:"mib_per_sec"`
	Requests          int64     `json:"requests"`
	ClusterCPUSeconds float64   `json:"cluster_cpu_s"`
	ClusterSysSeconds float64   `json:"cluster_sys_s"`
	NodeCPUSeconds    []float64 `json:"node_cpu_s"`
	ClientCPUSeconds  float64   `json:"client_cpu_s"`
	MiBPerClusterCPU  float64   `json:"mib_per_cluster_cpu_s"`
	ClusterMsPerMiB   float64   `json:"cluster_ms_per_mib"`
	ClientMsPerMiB    float64   `json:"client_ms_per_mib"`
	MachineCores      int       `json:"machine_cores"`
	MachineBusyCores  float64   `json:"machine_busy_cores"`
	MachineMsPerMiB   float64   `json:"machine_ms_per_mib"`
	OthersBusyCores   float64   `json:"others_busy_cores"`
	MemFreeMiB        [2]int64  `json:"mem_free_mib"`
	// DiskBusy is the share of the window the busiest block device had
	// I/O in flight (near 1: the disk bounded the run).
	DiskBusy          float64 `json:"disk_busy"`
	PageCacheMsPerMiB float64 `json:"page_cache_ms_per_mib"`
	Verified          bool    `json:"verified,omitempty"`
}

func replicateCmd(args []string) error {
	fs := flag.NewFlagSet("replicate", flag.ExitOnError)
	dir := fs.String("dir", os.TempDir(), "directory for the nodes' files (removed at the end)")
	rf := fs.Int("rf", 3, "replication factor: this many node processes, each a replica of every partition")
	partitions := fs.Int("partitions", 3, "partitions; p is led by node p % rf")
	batch := fs.Int("batch", 1<<20, "bytes per produce request (one batch: kgo's 1 MiB of 1 KiB records)")
	inflight := fs.Int("inflight", 5, "produce requests in flight per connection (kgo's default)")
	fetchMax := fs.Int("fetch-max", 8<<20, "most bytes a follower's fetch response carries")
	warmup := fs.Duration("warmup", 2*time.Second, "time before measuring")
	duration := fs.Duration("duration", 5*time.Second, "time measured")
	clientCPU := fs.Duration("client-cpu-per-mib", 0, "extra CPU the client spends per MiB before sending it (kgo's record building costs ~1 ms/MiB here; the raw client ~0.3)")
	verify := fs.Bool("verify", false, "after the run, check every replica's file holds what its leader's did below the acknowledged end")
	fs.Parse(args)
	res, err := runReplicate(replicateSpec{dir: *dir, rf: *rf, partitions: *partitions, batch: *batch,
		inflight: *inflight, fetchMax: *fetchMax, warmup: *warmup, duration: *duration, clientCPUPerMiB: *clientCPU, verify: *verify})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// replicaRun is the processes of one run.
type replicaRun struct {
	sp     replicateSpec
	root   string
	addrs  []string
	nodes  []*exec.Cmd
	stdins []io.WriteCloser
}

// runReplicate starts the nodes and the client, samples their CPU time and
// the machine's at the start and the end of the window, and stops them.
func runReplicate(sp replicateSpec) (replicateResult, error) {
	if sp.rf < 1 || sp.partitions < 1 || sp.batch <= batchHeader || sp.inflight < 1 {
		return replicateResult{}, errors.New("replicate: -rf, -partitions and -inflight must be positive and -batch more than 8")
	}
	root, err := os.MkdirTemp(sp.dir, "rawlog-replicate-*")
	if err != nil {
		return replicateResult{}, err
	}
	defer os.RemoveAll(root)
	r := &replicaRun{sp: sp, root: root}
	if err := r.startNodes(); err != nil {
		r.stopNodes(true)
		return replicateResult{}, err
	}
	res, err := r.measure()
	if serr := r.stopNodes(err != nil); err == nil {
		err = serr
	}
	if err != nil {
		return replicateResult{}, err
	}
	if sp.verify {
		if err := r.verify(res.ackedEnd); err != nil {
			return replicateResult{}, err
		}
		res.Verified = true
	}
	res.PageCacheMsPerMiB = round3(pageCacheCost(root))
	return res.replicateResult, nil
}

// startNodes starts one process per replica, each handed its listener (so
// that every address is known, and bound, before any of them runs).
func (r *replicaRun) startNodes() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	lns := make([]net.Listener, r.sp.rf)
	defer func() {
		for _, ln := range lns {
			if ln != nil {
				ln.Close()
			}
		}
	}()
	for i := range lns {
		if lns[i], err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return err
		}
		r.addrs = append(r.addrs, lns[i].Addr().String())
	}
	for i, ln := range lns {
		dir := filepath.Join(r.root, "node"+strconv.Itoa(i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		lf, err := ln.(*net.TCPListener).File()
		if err != nil {
			return err
		}
		cmd := exec.Command(self, "replicate-node", "-id", strconv.Itoa(i), "-addrs", strings.Join(r.addrs, ","),
			"-partitions", strconv.Itoa(r.sp.partitions), "-dir", dir, "-fetch-max", strconv.Itoa(r.sp.fetchMax))
		cmd.ExtraFiles = []*os.File{lf}
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			lf.Close()
			return err
		}
		err = cmd.Start()
		lf.Close()
		if err != nil {
			return err
		}
		r.nodes, r.stdins = append(r.nodes, cmd), append(r.stdins, stdin)
	}
	return nil
}

// stopNodes ends the nodes by closing their stdin (or kills them) and
// waits for them.
func (r *replicaRun) stopNodes(kill bool) error {
	var errs []error
	for i, cmd := range r.nodes {
		r.stdins[i].Close()
		if kill {
			cmd.Process.Kill()
		}
	}
	for i, cmd := range r.nodes {
		if err := cmd.Wait(); err != nil && !kill {
			errs = append(errs, fmt.Errorf("node %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// measuredRun is a run's result and what the client acknowledged.
type measuredRun struct {
	replicateResult
	ackedEnd []int64
}

func (r *replicaRun) measure() (measuredRun, error) {
	sp := r.sp
	self, err := os.Executable()
	if err != nil {
		return measuredRun{}, err
	}
	t0 := time.Now().Add(sp.warmup)
	t1 := t0.Add(sp.duration)
	client := exec.Command(self, "replicate-client", "-addrs", strings.Join(r.addrs, ","),
		"-partitions", strconv.Itoa(sp.partitions), "-batch", strconv.Itoa(sp.batch), "-inflight", strconv.Itoa(sp.inflight),
		"-t0", strconv.FormatInt(t0.UnixNano(), 10), "-t1", strconv.FormatInt(t1.UnixNano(), 10),
		"-cpu-per-mib", sp.clientCPUPerMiB.String())
	var out bytes.Buffer
	client.Stdout, client.Stderr = &out, os.Stderr
	// Closed once the window's figures are read: the client waits for it
	// to exit, so that its /proc entry is there at the window's end.
	windowRead, err := client.StdinPipe()
	if err != nil {
		return measuredRun{}, err
	}
	defer windowRead.Close()
	if err := client.Start(); err != nil {
		return measuredRun{}, err
	}
	exited := make(chan error, 1)
	go func() { exited <- client.Wait() }()
	pids := []int{client.Process.Pid}
	for _, n := range r.nodes {
		pids = append(pids, n.Process.Pid)
	}
	time.Sleep(time.Until(t0))
	cpu0, err0 := procCPUSeconds(pids)
	m0 := machine.Take()
	free0 := memFreeMiB()
	time.Sleep(time.Until(t1))
	cpu1, err1 := procCPUSeconds(pids)
	m1 := machine.Take()
	free1 := memFreeMiB()
	windowRead.Close()
	select {
	case err = <-exited:
	case <-time.After(30 * time.Second):
		client.Process.Kill()
		<-exited
		err = errors.New("the client did not finish 30 s after the window")
	}
	if err != nil {
		return measuredRun{}, fmt.Errorf("client: %w", err)
	}
	if err := errors.Join(err0, err1); err != nil {
		return measuredRun{}, err
	}
	var cr clientResult
	if err := json.Unmarshal(out.Bytes(), &cr); err != nil {
		return measuredRun{}, fmt.Errorf("client said %q: %w", out.String(), err)
	}
	secs := sp.duration.Seconds()
	mib := float64(cr.AckedBytes) / (1 << 20)
	res := replicateResult{Mode: "replicate", RF: sp.rf, Partitions: sp.partitions, Batch: sp.batch, Inflight: sp.inflight,
		FetchMax: sp.fetchMax, ClientExtraMs: round3(sp.clientCPUPerMiB.Seconds() * 1000), Seconds: secs, MiB: round3(mib), MiBPerS: round3(mib / secs), Requests: cr.Requests,
		MachineCores: runtime.NumCPU(), MemFreeMiB: [2]int64{free0, free1}}
	var sys float64
	for i := range pids {
		u, s := cpu1[i].user-cpu0[i].user, cpu1[i].sys-cpu0[i].sys
		if i == 0 {
			res.ClientCPUSeconds = round3(u + s)
			continue
		}
		res.NodeCPUSeconds = append(res.NodeCPUSeconds, round3(u+s))
		res.ClusterCPUSeconds += u + s
		sys += s
	}
	res.ClusterCPUSeconds, res.ClusterSysSeconds = round3(res.ClusterCPUSeconds), round3(sys)
	fig := machine.Window(m0, m1)
	res.DiskBusy = round3(fig.Busy)
	if fig.CPUOK {
		res.MachineBusyCores = round3(fig.BusyCores)
		if mib > 0 {
			res.MachineMsPerMiB = round3(res.MachineBusyCores * secs * 1000 / mib)
		}
		res.OthersBusyCores = round3(res.MachineBusyCores - (res.ClusterCPUSeconds+res.ClientCPUSeconds)/secs)
	}
	if mib > 0 {
		res.ClusterMsPerMiB = round3(res.ClusterCPUSeconds * 1000 / mib)
		res.ClientMsPerMiB = round3(res.ClientCPUSeconds * 1000 / mib)
	}
	if res.ClusterCPUSeconds > 0 {
		res.MiBPerClusterCPU = round3(mib / res.ClusterCPUSeconds)
	}
	return measuredRun{replicateResult: res, ackedEnd: cr.AckedEnd}, nil
}

// verify checks that every replica of each partition holds the leader's
// bytes up to the furthest acknowledged offset: what acks=all promised.
func (r *replicaRun) verify(ackedEnd []int64) error {
	for p, end := range ackedEnd {
		if end == 0 {
			return fmt.Errorf("nothing acknowledged on partition %d", p)
		}
		name := fmt.Sprintf("p%d.log", p)
		want, err := readPrefix(filepath.Join(r.root, "node"+strconv.Itoa(p%r.sp.rf), name), end)
		if err != nil {
			return err
		}
		if err := checkBatches(want); err != nil {
			return fmt.Errorf("partition %d on its leader: %w", p, err)
		}
		for i := range r.sp.rf {
			got, err := readPrefix(filepath.Join(r.root, "node"+strconv.Itoa(i), name), end)
			if err != nil {
				return fmt.Errorf("partition %d on node %d: %w", p, i, err)
			}
			if !bytes.Equal(got, want) {
				return fmt.Errorf("partition %d on node %d differs from its leader below the acknowledged offset %d", p, i, end)
			}
		}
	}
	return nil
}

func readPrefix(name string, n int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	_, err = io.ReadFull(f, b)
	return b, err
}

// procCPU is a process's CPU time, seconds.
type procCPU struct{ user, sys float64 }

// procCPUSeconds is each process's user and system CPU time
// (/proc/PID/stat, in USER_HZ ticks, 100 a second on Linux).
func procCPUSeconds(pids []int) ([]procCPU, error) {
	out := make([]procCPU, len(pids))
	for i, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return nil, fmt.Errorf("a process ended within the window: %w", err)
		}
		// utime and stime are the 12th and 13th fields after the
		// command's closing parenthesis.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		out[i] = procCPU{user: ut / 100, sys: st / 100}
	}
	return out, nil
}

// memFreeMiB is /proc/meminfo's MemFree: on a VM whose host takes back the
// guest's free memory, writes that find free pages cost several times what
// writes that recycle the page cache do.
func memFreeMiB() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemFree:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
			return kb >> 10
		}
	}
	return -1
}

// pageCacheCost is the CPU this process's thread pays per MiB written to a
// new file in dir in 256 KiB writes with an fdatasync every MiB: what the
// machine's memory state charges every replica for each byte it appends
// (test/cluster's replication benchmark measures the same).
func pageCacheCost(dir string) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f, err := os.CreateTemp(dir, "pagecache-")
	if err != nil {
		return 0
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 256<<10)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	const mib = 64
	var r0, r1 syscall.Rusage
	syscall.Getrusage(1, &r0) // RUSAGE_THREAD
	for i := range mib * 4 {
		if _, err := f.Write(buf); err != nil {
			return 0
		}
		if i%4 == 3 {
			if err := syscall.Fdatasync(int(f.Fd())); err != nil {
				return 0
			}
		}
	}
	syscall.Getrusage(1, &r1)
	ns := r1.Utime.Nano() - r0.Utime.Nano() + r1.Stime.Nano() - r0.Stime.Nano()
	return float64(ns) / 1e6 / mib
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
