package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Many partitions on one node: create one topic of many partitions, produce
// to every partition with acks=all, SIGKILL the broker while more records
// are in flight, restart it, and find every acknowledged record at the
// offset it was acknowledged with; then a clean stop and a clean restart.
// The broker keeps one open file per segment (/proc/PID/fd): at most one per
// partition here, plus what an empty broker holds and a few.
//
// By default 200 partitions; GREGOR_LONG=1 runs the scale test, 4,000
// partitions (GREGOR_SCALE_PARTITIONS sets the count), and also times
// creating as many partitions as small topics, one request each. It prints
// the timings (create, ready after SIGKILL, clean stop, clean restart), the
// open files and the RSS. GREGOR_BIN runs another build (e.g. an older one,
// to compare on the same machine). Timings are printed, not asserted: the
// machine may be shared.
func TestManyPartitions(t *testing.T) {
	n, long := 200, os.Getenv("GREGOR_LONG") == "1"
	if long {
		n = 4000
	}
	if v := os.Getenv("GREGOR_SCALE_PARTITIONS"); v != "" && long {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			t.Fatalf("GREGOR_SCALE_PARTITIONS=%q", v)
		}
	}
	within := 30 * time.Second
	if long {
		within = 10 * time.Minute
	}
	const perPartition = 5
	dir := t.TempDir()
	p1 := startProcWithin(t, dir, within)
	base := openFiles(t, p1)
	t.Logf("empty broker ready in %v; %d open files", p1.ready.Round(time.Millisecond), base)
	// One .log per partition, and a few more files than the empty broker's
	// (the controller's, a client connection's). Files a background pass
	// holds for a moment (the one making new partitions durable syncs 32
	// at once) are waited out.
	fdBound := func(p *proc, what string) {
		t.Helper()
		var got int
		if !pollUntil(10*time.Second, func() bool { got = openFiles(t, p); return got <= base+n+16 }) {
			t.Errorf("%s: %d open files for %d partitions of one segment (an empty broker holds %d)", what, got, n, base)
		}
	}

	topic := "scale"
	created := createTopicTimed(t, p1.addr, topic, int32(n), within)
	t.Logf("created one topic of %d partitions in %v; %d open files", n, created.Round(time.Millisecond), openFiles(t, p1))
	if long {
		floor := createFloor(t, dir, n)
		t.Logf("the filesystem's floor for as many partitions (mkdir and three file creates each, no fsync) in %v: creation took %.1fx the floor",
			floor.Round(time.Millisecond), created.Seconds()/floor.Seconds())
	}
	fdBound(p1, "after creating")

	cl := newClient(t, p1.addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(4*n), kgo.RecordDeliveryTimeout(2*time.Minute))
	acks := &ackLog{}
	start := time.Now()
	produceWave(testCtx(t, 5*time.Minute), cl, n, perPartition, 0, acks)
	if err := cl.Flush(testCtx(t, 5*time.Minute)); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if got := acks.len(); got != n*perPartition {
		t.Fatalf("%d of %d records acknowledged (first error: %v)", got, n*perPartition, acks.firstErr())
	}
	t.Logf("produced %d records (acks=all) to %d partitions in %v; broker: %d open files, RSS %s",
		n*perPartition, n, time.Since(start).Round(time.Millisecond), openFiles(t, p1), rss(t, p1))
	fdBound(p1, "after producing")

	// A second wave is in flight when the broker is killed.
	ctx, cancel := context.WithCancel(context.Background())
	waveDone := make(chan struct{})
	go func() { defer close(waveDone); produceWave(ctx, cl, n, perPartition, perPartition, acks) }()
	before := acks.len()
	if !pollUntil(time.Minute, func() bool { return acks.len() >= before+n/4 }) {
		t.Fatalf("the second wave got no acknowledgements: %d", acks.len()-before)
	}
	p1.sigkill()
	cancel()
	<-waveDone
	cl.Close()
	final := acks.records()
	t.Logf("SIGKILL with %d records acknowledged", len(final))

	p2 := startProcWithin(t, dir, within)
	t.Logf("ready %v after SIGKILL (%d partitions); %d open files, RSS %s", p2.ready.Round(time.Millisecond), n,
		openFiles(t, p2), rss(t, p2))
	fdBound(p2, "after a SIGKILL and a restart")
	checkAcked(t, p2.addr, topic, final)

	stopped := stopTimed(t, p2)
	t.Logf("clean stop in %v", stopped.Round(time.Millisecond))
	p3 := startProcWithin(t, dir, within)
	t.Logf("clean restart ready in %v; %d open files, RSS %s", p3.ready.Round(time.Millisecond), openFiles(t, p3), rss(t, p3))
	fdBound(p3, "after a clean restart")
	checkAcked(t, p3.addr, topic, final)
	stopped = stopTimed(t, p3)
	t.Logf("clean stop after the clean restart in %v", stopped.Round(time.Millisecond))
	if !long {
		return
	}

	// As many partitions as small topics, one CreateTopics request each.
	p4 := startProcWithin(t, t.TempDir(), within)
	const perTopic = 10
	topics := max(n/perTopic, 1)
	start = time.Now()
	adm := kadm.NewClient(newClient(t, p4.addr))
	cctx := testCtx(t, within)
	for i := 0; i < topics; i++ {
		resp, err := adm.CreateTopic(cctx, perTopic, 1, nil, fmt.Sprintf("small-%05d", i))
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("create topic %d: %v", i, err)
		}
	}
	t.Logf("created %d topics of %d partitions (one request each) in %v; %d open files", topics, perTopic,
		time.Since(start).Round(time.Millisecond), openFiles(t, p4))
	if err := p4.stop(); err != nil {
		t.Errorf("clean stop: %v", err)
	}
}

// ackLog collects acknowledged records from producer callbacks.
type ackLog struct {
	mu   sync.Mutex
	recs []ackedRecord
	errs []error
}

func (a *ackLog) add(r *kgo.Record, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.errs = append(a.errs, err)
		return
	}
	seq, _ := strconv.Atoi(strings.TrimPrefix(string(r.Value), "seq-"))
	a.recs = append(a.recs, ackedRecord{partition: r.Partition, offset: r.Offset, seq: seq})
}

func (a *ackLog) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.recs)
}

func (a *ackLog) records() []ackedRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]ackedRecord(nil), a.recs...)
}

func (a *ackLog) firstErr() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.errs) == 0 {
		return nil
	}
	return a.errs[0]
}

// produceWave produces per records to each of n partitions, valued
// "seq-<k>" with k counting from first, without waiting.
func produceWave(ctx context.Context, cl *kgo.Client, n, per, first int, acks *ackLog) {
	for k := first; k < first+per; k++ {
		for p := 0; p < n && ctx.Err() == nil; p++ {
			r := &kgo.Record{Partition: int32(p), Value: []byte("seq-" + strconv.Itoa(k))}
			cl.Produce(ctx, r, acks.add)
		}
	}
}

// createTopicTimed creates topic through CreateTopics and returns how long
// it took until Metadata showed every partition with a leader.
func createTopicTimed(t *testing.T, addr, topic string, partitions int32, within time.Duration) time.Duration {
	t.Helper()
	ctx := testCtx(t, within)
	cl := newClient(t, addr, kgo.RequestTimeoutOverhead(within))
	start := time.Now()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("create %s: %v", topic, err)
	}
	var got int
	if !pollUntil(within, func() bool { got = partitionsWithLeader(ctx, cl, topic); return got == int(partitions) }) {
		t.Fatalf("%s: %d of %d partitions have a leader", topic, got, partitions)
	}
	return time.Since(start)
}

// createFloor times the least a filesystem does for n new partitions: a
// directory and three empty files in each (a partition's .log,
// partition.metadata and leader-epoch-checkpoint), without fsync. On ext4
// that churns (other tests deleting files nearby) each create can scan
// recently deleted inodes, and the floor moves by more than 10x between
// runs, so creation is reported against it rather than alone.
func createFloor(t *testing.T, dir string, n int) time.Duration {
	t.Helper()
	root, err := os.MkdirTemp(dir, "floor")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	start := time.Now()
	for i := range n {
		d := fmt.Sprintf("%s/floor-%d", root, i)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"00000000000000000000.log", "partition.metadata", "leader-epoch-checkpoint"} {
			f, err := os.Create(d + "/" + name)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	return time.Since(start)
}

// checkAcked reads every partition of topic from its start and checks that
// each acknowledged record is at its offset with its value.
func checkAcked(t *testing.T, addr, topic string, acked []ackedRecord) {
	t.Helper()
	ctx := testCtx(t, 5*time.Minute)
	cl := newClient(t, addr)
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s[%d]: %v", o.Topic, o.Partition, o.Err)
		}
		total += int(o.Offset)
	})
	got := consumeN(ctx, t, addr, topic, total, kgo.FetchMaxPartitionBytes(1<<20))
	at := make(map[[2]int64]int, len(got))
	for _, r := range got {
		seq, _ := strconv.Atoi(strings.TrimPrefix(string(r.Value), "seq-"))
		at[[2]int64{int64(r.Partition), r.Offset}] = seq
	}
	lost := 0
	for _, a := range acked {
		seq, ok := at[[2]int64{int64(a.partition), a.offset}]
		if !ok || seq != a.seq {
			lost++
			if lost <= 10 {
				t.Errorf("acknowledged seq-%d at %d@%d: found=%v seq-%d", a.seq, a.partition, a.offset, ok, seq)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged records missing", lost, len(acked))
	}
	t.Logf("all %d acknowledged records present (%d records in the log)", len(acked), len(got))
}

// stopTimed sends SIGTERM and returns how long the broker took to exit.
func stopTimed(t *testing.T, p *proc) time.Duration {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(10 * time.Minute):
		t.Fatal("no exit within 10 minutes of SIGTERM")
	}
	if p.waitErr != nil {
		t.Errorf("clean stop: %v", p.waitErr)
	}
	return time.Since(start)
}

// openFiles counts the process's open file descriptors.
func openFiles(t *testing.T, p *proc) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid))
	if err != nil {
		t.Logf("open files: %v", err)
		return -1
	}
	return len(ents)
}

// rss reads the process's resident set size.
func rss(t *testing.T, p *proc) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
