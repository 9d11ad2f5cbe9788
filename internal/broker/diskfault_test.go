package broker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func produce(t *testing.T, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(ctxFor(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// readyz returns /readyz's status and body.
func readyz(t *testing.T, b *brokertest.Broker) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + b.AdminAddr().String() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// pollUntil polls ok every few milliseconds for up to d.
func pollUntil(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for pause := time.Millisecond; !ok(); pause = min(2*pause, 100*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v", what, d)
		}
		time.Sleep(pause)
	}
}

// produceRaw sends one acks=all Produce request for one record to
// topic/partition and returns the partition's error code, bypassing the
// client's retries.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, partition int32) int16 {
	t.Helper()
	raw, err := record.Build(&record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Records: []record.BuildRecord{{Timestamp: time.Now().UnixMilli(), Value: []byte("v")}}})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID(t, cl, topic) // v13 names topics by id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxFor(t, 20*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// topicID looks a topic's id up in the metadata.
func topicID(t *testing.T, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, mt)
	resp, err := req.RequestWith(ctxFor(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].TopicID
}

// A failed fsync takes its log dir offline and only it: the dir's
// partitions answer KAFKA_STORAGE_ERROR to produce and fetch and have no
// leader in the metadata, DescribeLogDirs says the dir is offline, /readyz
// is 503 naming it, /metrics counts it; the other dir's partitions go on.
// When the last dir goes offline the broker stops by itself and Run says
// why (gregor serve exits non-zero with it).
func TestFailedFsyncTakesLogDirOfflineAndLastOneStopsBroker(t *testing.T) {
	mem := vfs.NewMem()
	var failUnder atomic.Pointer[string]
	fs := vfs.NewInjecting(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if p := failUnder.Load(); p != nil && op == vfs.OpSync && strings.HasPrefix(path, *p) {
			return vfs.ErrWritebackLost
		}
		return nil
	}))
	b := brokertest.StartOn(t, fs, "/data1,/data2", nil)
	adm := b.AdminClient()
	const topic = "t"
	brokertest.CreateTopic(t, adm, topic, 2, nil)
	cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce(t, cl, &kgo.Record{Partition: 0, Value: []byte("a")}, &kgo.Record{Partition: 1, Value: []byte("b")})
	dirOf := map[int32]string{}
	for p := int32(0); p < 2; p++ {
		dirOf[p] = b.Logs().DirOf(topicpart.TopicPartition{Topic: topic, Partition: p})
	}
	if dirOf[0] == dirOf[1] {
		t.Fatalf("both partitions in %s", dirOf[0])
	}
	bad := dirOf[0]
	prefix := bad + "/"
	failUnder.Store(&prefix)

	raw := b.Client()
	if code := produceRaw(t, raw, topic, 0); code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce whose fsync fails: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	if code := produceRaw(t, raw, topic, 0); code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce to the offline dir: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	if code := produceRaw(t, raw, topic, 1); code != 0 {
		t.Fatalf("produce to the online dir: %v", kerr.ErrorForCode(code))
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MaxBytes = 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topic, topicID(t, raw, topic)
	for p := int32(0); p < 2; p++ {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
	}
	fetch.Topics = append(fetch.Topics, ft)
	fresp, err := fetch.RequestWith(ctxFor(t, 10*time.Second), raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range fresp.Topics[0].Partitions {
		want := int16(0)
		if p.Partition == 0 {
			want = kerr.KafkaStorageError.Code
		}
		if p.ErrorCode != want {
			t.Fatalf("fetch of partition %d: %v, want %v", p.Partition, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(want))
		}
	}
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctxFor(t, 10*time.Second), raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range mresp.Topics[0].Partitions {
		if p.Partition == 0 && (p.Leader != -1 || p.ErrorCode != kerr.LeaderNotAvailable.Code || len(p.OfflineReplicas) != 1) {
			t.Fatalf("metadata of the offline partition: leader %d, %v, offline replicas %v", p.Leader,
				kerr.ErrorForCode(p.ErrorCode), p.OfflineReplicas)
		}
		if p.Partition == 1 && (p.Leader != 1 || p.ErrorCode != 0) {
			t.Fatalf("metadata of the online partition: leader %d, %v", p.Leader, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	dirs, err := adm.DescribeBrokerLogDirs(ctxFor(t, 10*time.Second), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for dir, d := range dirs {
		if want := dir == bad; errors.Is(d.Err, kerr.KafkaStorageError) != want {
			t.Fatalf("DescribeLogDirs %s: %v (offline: %v)", dir, d.Err, want)
		}
	}
	code, body := readyz(t, b)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "[-]log dir "+bad+" not ready") ||
		!strings.Contains(body, "offline after a failed write or fsync") || !strings.Contains(body, "[+]log dir "+dirOf[1]+" ready") {
		t.Fatalf("/readyz with an offline dir: %d\n%s", code, body)
	}
	fams := scrape(t, b)
	if v := mustValue(t, fams, "kafka_log_logmanager_offlinelogdirectorycount", nil); v != 1 {
		t.Fatalf("offline log dirs = %v, want 1", v)
	}
	if v := mustValue(t, fams, "kafka_log_logmanager_logdirectoryoffline", map[string]string{"logDirectory": bad}); v != 1 {
		t.Fatalf("%s offline = %v", bad, v)
	}
	if v := mustValue(t, fams, "kafka_controller_kafkacontroller_offlinepartitionscount", nil); v < 1 {
		t.Fatalf("offline partitions = %v", v)
	}
	select {
	case <-b.Exited():
		t.Fatalf("broker stopped with one log dir online: %v", b.RunErr())
	default:
	}

	// The last dir fails: the broker stops by itself.
	all := "/data"
	failUnder.Store(&all)
	if code := produceRaw(t, raw, topic, 1); code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce whose fsync fails in the last dir: %v", kerr.ErrorForCode(code))
	}
	select {
	case <-b.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("broker still running with every log dir offline")
	}
	if err := b.RunErr(); err == nil || !strings.Contains(err.Error(), "all log dirs are offline") {
		t.Fatalf("Run = %v, want the all-offline error", err)
	}
}

// A full disk is not a failed one (run against a broker on a MemFS volume
// of a few MiB with a 1 MiB reserve). Producing until it fills: produce is
// refused with KAFKA_STORAGE_ERROR, which kgo retries (no record fails),
// /readyz stays 200 with a warning, gregor_log_dir_full is 1, fetches are
// served. DeleteRecords on another topic frees space, and the pending
// records go through by themselves; every acknowledged record is readable.
func TestFullDiskRefusesProduceUntilSpaceIsFreed(t *testing.T) {
	mem := vfs.NewMem()
	b := brokertest.StartOn(t, mem, "/data", map[string]string{"gregor.log.dir.min.free.bytes": "1048576"})
	u, err := mem.DiskUsage("/data")
	if err != nil {
		t.Fatal(err)
	}
	mem.SetCapacity(u.Total - u.Usable + 6<<20) // 6 MiB of room: 5 MiB above the reserve
	adm := b.AdminClient()
	small := map[string]string{"internal.segment.bytes": "262144", "file.delete.delay.ms": "0"}
	brokertest.CreateTopic(t, adm, "old", 1, small)
	brokertest.CreateTopic(t, adm, "live", 1, small)
	// Incompressible values, different in every record: kgo compresses.
	rng := rand.NewChaCha8([32]byte{1})
	value := func(prefix string) []byte {
		v := make([]byte, 1000)
		rng.Read(v)
		return append([]byte(prefix), v...)
	}
	oldCl := b.Client(kgo.DefaultProduceTopic("old"), kgo.ProducerLinger(0))
	for i := 0; i < 3000; i++ { // ~3 MiB
		oldCl.Produce(ctxFor(t, 30*time.Second), &kgo.Record{Value: value("old")}, nil)
	}
	if err := oldCl.Flush(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}

	cl := b.Client(kgo.DefaultProduceTopic("live"), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	var (
		mu      sync.Mutex
		acked   = map[int64]string{}
		failed  []error
		pending atomic.Int64
	)
	const n = 4000 // ~4 MiB: does not fit beside "old"
	for i := 0; i < n; i++ {
		pending.Add(1)
		cl.Produce(ctxFor(t, 60*time.Second), &kgo.Record{Value: value(fmt.Sprintf("live-%05d-", i))}, func(r *kgo.Record, err error) {
			mu.Lock()
			if err != nil {
				failed = append(failed, err)
			} else {
				acked[r.Offset] = string(r.Value)
			}
			mu.Unlock()
			pending.Add(-1)
		})
	}
	pollUntil(t, 30*time.Second, "the dir filling up", func() bool {
		_, body := readyz(t, b)
		return strings.Contains(body, "[!]log dir /data")
	})
	code, body := readyz(t, b)
	if code != http.StatusOK || !strings.Contains(body, "full:") || !strings.Contains(body, "KAFKA_STORAGE_ERROR") {
		t.Fatalf("/readyz with a full dir: %d\n%s", code, body)
	}
	if v := mustValue(t, scrape(t, b), "gregor_log_dir_full", map[string]string{"logDirectory": "/data"}); v != 1 {
		t.Fatalf("gregor_log_dir_full = %v", v)
	}
	if code := produceRaw(t, b.Client(), "live", 0); code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce on a full dir: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	if pending.Load() == 0 {
		t.Fatal("every record went through: the disk never filled")
	}
	consumer := b.Client(kgo.ConsumeTopics("old"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if fs := consumer.PollRecords(ctxFor(t, 10*time.Second), 10); fs.Err() != nil || len(fs.Records()) == 0 {
		t.Fatalf("fetch on a full dir: %d records, %v", len(fs.Records()), fs.Err())
	}
	mu.Lock()
	if len(failed) > 0 {
		t.Fatalf("kgo failed a record refused for space instead of retrying it: %v", failed[0])
	}
	mu.Unlock()

	var to kadm.Offsets
	to.Add(kadm.Offset{Topic: "old", Partition: 0, At: -1})
	if _, err := adm.DeleteRecords(ctxFor(t, 10*time.Second), to); err != nil {
		t.Fatal(err)
	}
	if err := cl.Flush(ctxFor(t, 60*time.Second)); err != nil {
		t.Fatalf("pending records after space returned: %v (%d pending)", err, pending.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failed) > 0 || len(acked) != n {
		t.Fatalf("%d acknowledged, %d failed (first: %v), want all %d acknowledged", len(acked), len(failed), firstErr(failed), n)
	}
	code, body = readyz(t, b)
	if code != http.StatusOK || strings.Contains(body, "[!]") {
		t.Fatalf("/readyz after space returned: %d\n%s", code, body)
	}
	reader := b.Client(kgo.ConsumeTopics("live"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := 0
	for seen < n {
		fs := reader.PollFetches(ctxFor(t, 10*time.Second))
		if err := fs.Err(); err != nil {
			t.Fatalf("reading back after %d records: %v", seen, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if acked[r.Offset] != string(r.Value) {
				t.Fatalf("record at %d differs from the one acknowledged there", r.Offset)
			}
			seen++
		})
	}
}

func firstErr(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}
