package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// devRun is one `gregor dev` process with its output.
type devRun struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer
	exited chan struct{}
	err    error
}

func (d *devRun) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.out.Write(p)
}

func (d *devRun) output() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.out.String()
}

func startDev(t *testing.T, args ...string) *devRun {
	t.Helper()
	d := &devRun{exited: make(chan struct{})}
	d.cmd = exec.Command(gregorBin, append([]string{"dev"}, args...)...)
	d.cmd.Stdout, d.cmd.Stderr = d, d
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.err = d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() {
		select {
		case <-d.exited:
		default:
			_ = d.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-d.exited:
			case <-time.After(60 * time.Second):
				_ = d.cmd.Process.Kill()
			}
		}
	})
	if !poll(2*time.Minute, func() bool {
		select {
		case <-d.exited:
			return true
		default:
		}
		return strings.Contains(d.output(), "nodes ready")
	}) || !strings.Contains(d.output(), "all 3 nodes ready") {
		t.Fatalf("gregor dev did not get ready:\n%s", d.output())
	}
	return d
}

var devNodeLine = regexp.MustCompile(`node (\d) +pid (\d+) +bootstrap (\S+) +controller (\S+) +admin (\S+) +data (\S+)`)

// nodes are the pid, bootstrap address and data dir of each node the run
// printed.
func (d *devRun) nodes(t *testing.T) (pids []int, bootstrap []string, dirs []string) {
	t.Helper()
	for _, m := range devNodeLine.FindAllStringSubmatch(d.output(), -1) {
		pid, _ := strconv.Atoi(m[2])
		pids, bootstrap, dirs = append(pids, pid), append(bootstrap, m[3]), append(dirs, m[6])
	}
	if len(pids) != 3 {
		t.Fatalf("gregor dev printed %d nodes:\n%s", len(pids), d.output())
	}
	return pids, bootstrap, dirs
}

// interrupt sends SIGINT (Ctrl-C) and waits for gregor dev to exit; every
// node it started must be gone.
func (d *devRun) interrupt(t *testing.T, pids []int) time.Duration {
	t.Helper()
	start := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("gregor dev still runs 60s after SIGINT:\n%s", d.output())
	}
	took := time.Since(start)
	if d.err != nil {
		t.Fatalf("gregor dev exited with %v:\n%s", d.err, d.output())
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Fatalf("node pid %d still runs after gregor dev exited", pid)
		}
	}
	return took
}

// `gregor dev --nodes 3` starts a cluster in one command: three child
// `gregor serve` processes with their data under DIR/node-N; records go
// in and out through the printed bootstrap servers; Ctrl-C stops every
// node; a second run starts the same cluster, on the same ports, with the
// data of the first.
func TestDev(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gregor-dev")
	d := startDev(t, "--nodes", "3", "--dir", dir, "--port-base", "0", "--admin-port-base", "0",
		"--set", "controller.quorum.election.timeout.ms=500", "--set", "broker.heartbeat.interval.ms=200",
		"--set", "broker.session.timeout.ms=2000")
	pids, bootstrap, dirs := d.nodes(t)
	for i, dd := range dirs {
		if want := filepath.Join(dir, fmt.Sprintf("node-%d", i+1)); dd != want {
			t.Fatalf("node %d's data in %s, want %s", i+1, dd, want)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produceN(t, cl, "dev", 100)
	cl.Close()
	took := d.interrupt(t, pids)
	t.Logf("gregor dev stopped 3 nodes %v after SIGINT", took.Round(time.Millisecond))
	for _, dd := range dirs {
		if _, err := os.Stat(filepath.Join(dd, "meta.properties")); err != nil {
			t.Fatalf("no data left in %s: %v", dd, err)
		}
	}

	d2 := startDev(t, "--dir", dir)
	pids2, bootstrap2, _ := d2.nodes(t)
	if !strings.Contains(d2.output(), "starting the 3-node cluster") || strings.Join(bootstrap2, ",") != strings.Join(bootstrap, ",") {
		t.Fatalf("the second run is not the same cluster:\n%s", d2.output())
	}
	seen := consumeFrom(t, bootstrap2, "dev", 100)
	for i := range 100 {
		if !seen[fmt.Sprintf("v%d", i)] {
			t.Fatalf("record v%d of the first run is missing", i)
		}
	}
	d2.interrupt(t, pids2)
}

// consumeFrom reads topic from the start through seeds until it has n
// records.
func consumeFrom(t *testing.T, seeds []string, topic string, n int) map[string]bool {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]bool{}
	deadline := time.Now().Add(30 * time.Second)
	for len(seen) < n && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	if len(seen) < n {
		t.Fatalf("consumed %d distinct records of %d from %s", len(seen), n, topic)
	}
	return seen
}
