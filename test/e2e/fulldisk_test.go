package e2e

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/record"
)

// fullDiskEnv names the mount point of a small, empty, real filesystem for
// TestFullDiskOnRealFilesystem (scripts/fulldisk.sh mounts a 40 MiB tmpfs).
const fullDiskEnv = "GREGOR_FULLDISK_DIR"

// The gregor binary on a real filesystem of a few tens of MiB, filled by an
// acks=all kgo producer: once the disk is full (below the reserve, or, with
// no reserve, a write failing with ENOSPC) produce is answered
// KAFKA_STORAGE_ERROR, which kgo retries (no record fails), /readyz stays
// 200 with a warning, gregor_log_dir_full is 1, the dir stays online and
// fetches are served; DeleteRecords on another topic frees space and the
// pending records go through by themselves; every acknowledged record reads
// back; the broker stops cleanly. Figures are logged.
//
// It runs only when $GREGOR_FULLDISK_DIR names such a filesystem, and
// removes what it writes there.
func TestFullDiskOnRealFilesystem(t *testing.T) {
	root := os.Getenv(fullDiskEnv)
	if root == "" {
		t.Skipf("set %s to the mount point of a small empty filesystem (scripts/fulldisk.sh)", fullDiskEnv)
	}
	for _, reserve := range []string{"-1", "0"} {
		t.Run("min.free.bytes="+reserve, func(t *testing.T) { fullDiskRun(t, root, reserve) })
	}
}

func statfs(t *testing.T, path string) (total, avail int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Blocks) * st.Frsize, int64(st.Bavail) * st.Frsize
}

func fullDiskRun(t *testing.T, root, reserve string) {
	dataDir := filepath.Join(root, "gregor-fulldisk")
	if err := os.RemoveAll(dataDir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dataDir) })
	total, _ := statfs(t, root)
	p := startProc(t, dataDir, "--set", "gregor.log.dir.min.free.bytes="+reserve)
	small := func(v string) *string { return &v }
	cfg := map[string]*string{"segment.bytes": small("1048576"), "file.delete.delay.ms": small("1000")}
	createTopic(t, p.addr, "old", 1, cfg)
	createTopic(t, p.addr, "live", 1, cfg)

	rng := rand.NewChaCha8([32]byte{7})
	value := func(prefix string) []byte { // incompressible: kgo compresses
		v := make([]byte, 1024)
		rng.Read(v)
		return append([]byte(prefix), v...)
	}
	oldCl := newClient(t, p.addr, kgo.DefaultProduceTopic("old"))
	for i := 0; i < int(total/2/1024); i++ { // half the disk
		oldCl.Produce(testCtx(t, time.Minute), &kgo.Record{Value: value("old")}, nil)
	}
	if err := oldCl.Flush(testCtx(t, time.Minute)); err != nil {
		t.Fatal(err)
	}

	// The live producer offers more than the rest of the disk holds, but
	// less than the disk holds without "old".
	cl := newClient(t, p.addr, kgo.DefaultProduceTopic("live"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(100_000))
	var (
		mu      sync.Mutex
		acked   = map[int64][32]byte{}
		failed  []error
		pending atomic.Int64
	)
	n := int(total * 6 / 10 / 1024)
	start := time.Now()
	for i := 0; i < n; i++ {
		pending.Add(1)
		cl.Produce(testCtx(t, 5*time.Minute), &kgo.Record{Value: value(fmt.Sprintf("live-%06d-", i))},
			func(r *kgo.Record, err error) {
				mu.Lock()
				if err != nil {
					failed = append(failed, err)
				} else {
					acked[r.Offset] = sha256.Sum256(r.Value)
				}
				mu.Unlock()
				pending.Add(-1)
			})
	}
	if !pollUntil(2*time.Minute, func() bool { return strings.Contains(getReadyz(t, p), "[!]log dir") }) {
		t.Fatalf("the disk never showed as full:\n%s", getReadyz(t, p))
	}
	fullAfter := time.Since(start)
	// Let the producer retry against the full disk for a while (kgo
	// retries after a metadata refresh, at most every 5 s by default).
	refusedBefore := metricSum(t, p.admin, "kafka_server_brokertopicmetrics_failedproducerequests_total", `topic="live"`)
	pollUntil(6*time.Second, func() bool { return false })
	refused := metricSum(t, p.admin, "kafka_server_brokertopicmetrics_failedproducerequests_total", `topic="live"`)
	_, avail := statfs(t, root)
	code, body := readyzStatus(t, p)
	if code != http.StatusOK || !strings.Contains(body, "full:") {
		t.Fatalf("/readyz on a full disk: %d\n%s", code, body)
	}
	if v := metricSum(t, p.admin, "gregor_log_dir_full", ""); v != 1 {
		t.Fatalf("gregor_log_dir_full = %v", v)
	}
	if v := metricSum(t, p.admin, "kafka_log_logmanager_offlinelogdirectorycount", ""); v != 0 {
		t.Fatalf("a full disk took %v log dirs offline", v)
	}
	if code := produceOne(t, p.addr, "live"); code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce on a full disk: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	mu.Lock()
	ackedAtFull, nFailed := len(acked), len(failed)
	mu.Unlock()
	if nFailed > 0 {
		t.Fatalf("kgo failed %d records instead of retrying; first: %v", nFailed, failed[0])
	}
	if pending.Load() == 0 {
		t.Fatal("every record went through: the disk never filled")
	}
	reader := newClient(t, p.addr, kgo.ConsumeTopics("old"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if fs := reader.PollRecords(testCtx(t, 30*time.Second), 10); fs.Err() != nil || len(fs.Records()) == 0 {
		t.Fatalf("fetch on a full disk: %d records, %v", len(fs.Records()), fs.Err())
	}
	reader.Close()

	adm := kadm.NewClient(newClient(t, p.addr))
	var to kadm.Offsets
	to.Add(kadm.Offset{Topic: "old", Partition: 0, At: -1})
	freed := time.Now()
	if _, err := adm.DeleteRecords(testCtx(t, 30*time.Second), to); err != nil {
		t.Fatal(err)
	}
	if err := cl.Flush(testCtx(t, time.Minute)); err != nil {
		t.Fatalf("pending records after DeleteRecords: %v (%d pending)", err, pending.Load())
	}
	resumed := time.Since(freed)
	mu.Lock()
	if len(failed) > 0 || len(acked) != n {
		t.Fatalf("%d of %d acknowledged, %d failed", len(acked), n, len(failed))
	}
	mu.Unlock()
	if code, body := readyzStatus(t, p); code != http.StatusOK || strings.Contains(body, "[!]") {
		t.Fatalf("/readyz after space returned: %d\n%s", code, body)
	}
	got := consumeN(testCtx(t, 2*time.Minute), t, p.addr, "live", n)
	for _, r := range got {
		if acked[r.Offset] != sha256.Sum256(r.Value) {
			t.Fatalf("record at offset %d differs from the one acknowledged there", r.Offset)
		}
	}
	logTail := readLog(t, p)
	if err := p.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	t.Logf("volume %d MiB, reserve %s: full after %v with %d of %d records (%.1f MiB) acknowledged, %d bytes usable then; "+
		"%v refused produce partitions in 6 s of retrying (%v in all before that); %v from DeleteRecords to every "+
		"pending record acknowledged; %d records read back; full/resume log lines: %d/%d",
		total>>20, reserve, fullAfter.Round(time.Millisecond), ackedAtFull, n, float64(ackedAtFull)*1.04/1024, avail,
		refused-refusedBefore, refusedBefore, resumed.Round(time.Millisecond), len(got),
		strings.Count(logTail, "log dir is full"), strings.Count(logTail, "log dir has free space again"))
}

func readyzStatus(t *testing.T, p *proc) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(p.admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func getReadyz(t *testing.T, p *proc) string {
	_, body := readyzStatus(t, p)
	return body
}

func readLog(t *testing.T, p *proc) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// metricSum sums the series of name whose labels contain match.
func metricSum(t *testing.T, admin, name, match string) float64 {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") || !strings.Contains(line, match) {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// produceOne sends one acks=all Produce request for one record, without the
// client's retries, and returns the partition's error code.
func produceOne(t *testing.T, addr, topic string) int16 {
	t.Helper()
	cl := newClient(t, addr)
	ctx := testCtx(t, 20*time.Second)
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := record.Build(&record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Records: []record.BuildRecord{{Timestamp: time.Now().UnixMilli(), Value: []byte("probe")}}})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, mresp.Topics[0].TopicID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}
