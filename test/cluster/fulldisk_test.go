package cluster

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mountTmpfs mounts a tmpfs of size at dir (root only) and unmounts it in
// t.Cleanup, after stopping the processes the cluster runs from it.
func mountTmpfs(t *testing.T, c *cluster, dir, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs at %s: %v %s", dir, err, out)
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			nd.kill() // a process with files open on it keeps it busy
		}
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
}

// freeBytes is what dir's volume has free for an unprivileged writer.
func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Frsize
}

// fillTo writes a ballast file under dir until leave bytes are free on its
// volume.
func fillTo(t *testing.T, dir string, leave int64) string {
	t.Helper()
	n := freeBytes(t, dir) - leave
	path := filepath.Join(dir, "ballast")
	if n > 0 {
		if err := os.WriteFile(path, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// metricValue reads one gauge from a node's /metrics (-1 when absent).
func metricValue(t *testing.T, nd *node, name string) float64 {
	t.Helper()
	v, found := -1.0, false
	eachMetric(nd, func(line string, value float64) {
		if !found && (strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ")) {
			v, found = value, true
		}
	})
	return v
}

// eachMetric calls f with every sample line of a node's /metrics and its
// value; nothing when the node does not answer.
func eachMetric(nd *node, f func(line string, value float64)) {
	cl := &http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get("http://" + nd.admin + "/metrics")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			f(line, v)
		}
	}
}

// One follower's disk fills up under acks=all load (RF 3, min ISR 2): node
// 3's log dir is a 48 MiB tmpfs (its metadata log elsewhere: a full
// metadata log dir is a different failure) filled with a ballast file to a
// few MiB. The follower's appends are refused for want of space: its log
// dir reports full, it stays up, it leaves the ISR after
// replica.lag.time.max.ms (3 s here) and produce goes on, acknowledged by
// the other two, while the follower keeps its volume's reserve
// (gregor.log.dir.min.free.bytes, here 1% of 48 MiB) free. Once the ballast is removed the follower fetches again by
// itself, catches up and rejoins the ISR. Every acknowledged record reads
// back at its offset and the three replicas end byte-identical. Root only
// (mount).
func TestReplicationFollowerDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting the follower's small tmpfs needs root")
	}
	start := time.Now()
	base := t.TempDir()
	mnt := filepath.Join(base, "tmpfs")
	c := newClusterWith(t, 3, func(c *cluster) {
		for _, nd := range c.nodes {
			nd.extra = append(nd.extra, "--set", "replica.lag.time.max.ms=3000")
		}
		mountTmpfs(t, c, mnt, "48m")
		nd := c.node(3)
		nd.dir = filepath.Join(mnt, "d3")
		nd.extra = append(nd.extra, "--set", "metadata.log.dir="+filepath.Join(base, "meta3"))
	})
	const topic = "fulldisk"
	createAssigned(t, c, topic, map[string]string{"min.insync.replicas": "2", "segment.bytes": "1048576"}, []int32{1, 2, 3}, []int32{2, 1, 3})
	waitFullISR(t, c, topic, 2)
	ballast := fillTo(t, mnt, 8<<20)
	stop := make(chan struct{})
	// ~1.3 MB/s offered: the 8 MiB left fill in a few seconds.
	loadStart := time.Now()
	lp := startLoadPaced(t, c, topic, stop, 20, 15*time.Millisecond, 1000)
	waitAcks(t, lp, 300)
	nd3 := c.node(3)
	if !poll(60*time.Second, func() bool { return metricValue(t, nd3, "gregor_log_dir_full") == 1 }) {
		t.Fatalf("node 3's log dir never reported full (gregor_log_dir_full %v)", metricValue(t, nd3, "gregor_log_dir_full"))
	}
	full, ackedAtFull := time.Now(), lp.n.Load()
	var shrunk time.Duration
	if !poll(30*time.Second, func() bool {
		for p := range int32(2) {
			if _, isr := leaderOf(t, c, topic, p); slices.Contains(isr, 3) {
				return false
			}
		}
		shrunk = time.Since(full)
		return true
	}) {
		t.Fatalf("node 3 still in an ISR 30s after its disk filled")
	}
	waitAcks(t, lp, 300) // acks=all goes on with two in sync
	if !nd3.running() {
		t.Fatalf("node 3 exited on a full disk: %v", nd3.waitErr)
	}
	ackedFull := lp.n.Load()
	free, reserve := freeBytes(t, mnt), metricValue(t, nd3, "gregor_log_dir_min_free_bytes")
	if reserve <= 0 || float64(free) < reserve/2 {
		t.Errorf("node 3's volume has %d bytes free, its reserve is %.0f: its follower appends used the reserve", free, reserve)
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	// Timed from a fresh client each poll: kgo answers a metadata
	// request from its cache for up to MetadataMinAge (5 s).
	rejoined := waitISRFrom(t, c, 1, topic, 2)
	waitAcks(t, lp, 300)
	close(stop)
	select {
	case <-lp.done:
	case <-time.After(90 * time.Second):
		t.Fatal("the producer did not finish within 90s")
	}
	lp.mu.Lock()
	acked, failed := lp.acked, lp.failed
	lp.mu.Unlock()
	checkReadBack(t, c, topic, acked)
	checkReplicasEqual(t, c, topic, 2)
	// The full state clears at the next free-space reading (every second),
	// which a fast catch-up can beat.
	if !poll(5*time.Second, func() bool { return metricValue(t, nd3, "gregor_log_dir_full") == 0 }) {
		t.Errorf("node 3's log dir still reports full (%v) 5 s after catching up", metricValue(t, nd3, "gregor_log_dir_full"))
	}
	t.Logf("node 3's 48 MiB log dir full %v after the load started (%d acknowledged); out of the ISR %v later; %d acknowledged when the space was freed, "+
		"%d bytes free (reserve %.0f); ISR whole %v after freeing space; %d records acknowledged, %d failed; test %v",
		full.Sub(loadStart).Round(time.Millisecond), ackedAtFull, shrunk.Round(time.Millisecond), ackedFull, free, reserve,
		rejoined.Round(time.Millisecond), len(acked), failed, time.Since(start).Round(time.Millisecond))
}
