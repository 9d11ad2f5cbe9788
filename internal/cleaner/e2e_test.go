package cleaner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/cleaner"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// End-to-end: the real broker on loopback, driven by franz-go.

func longTests() bool { return os.Getenv("GREGOR_LONG") != "" }

// fastCleaner makes the cleaner look for work every 20 ms.
var fastCleaner = map[string]string{"log.cleaner.backoff.ms": "20"}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// status reads a partition's cleaner status from the admin listener.
func status(t *testing.T, b *brokertest.Broker, topic string, p int32) cleaner.PartitionStatus {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://%s/v1/partitions/%s/%d/cleaner", b.AdminAddr(), topic, p))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("status of %s-%d: %s: %s", topic, p, resp.Status, body)
	}
	var st cleaner.PartitionStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, detail)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitCleaned waits until the cleaner has cleaned everything below the
// active segment of topic-p.
func waitCleaned(t *testing.T, b *brokertest.Broker, topic string, p int32) cleaner.PartitionStatus {
	t.Helper()
	var st cleaner.PartitionStatus
	waitFor(t, 60*time.Second, fmt.Sprintf("%s-%d cleaned", topic, p), func() (bool, string) {
		st = status(t, b, topic, p)
		done := st.Runs > 0 && st.DirtyBytes == 0 && !st.InProgress && st.UncleanableReason == cleaner.ReasonActiveSegment &&
			st.CleanerPoint == st.FirstUncleanableOffset
		return done, fmt.Sprintf("%+v", st)
	})
	return st
}

// produce writes records and waits for every acknowledgement.
func produce(t *testing.T, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	ctx := ctxFor(t, 60*time.Second)
	errs := make(chan error, 1)
	for _, r := range recs {
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// consumeAll reads topic-p from the beginning up to its high watermark.
// A cleaned log can end with offsets that hold no record: when a poll
// brings nothing, the log itself says whether records remain.
func consumeAll(t *testing.T, b *brokertest.Broker, topic string, p int32) []*kgo.Record {
	t.Helper()
	cl := b.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
	ctx := ctxFor(t, 30*time.Second)
	var out []*kgo.Record
	next := int64(0)
	for {
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := fs.Err0(); err != nil && !(errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil) {
			t.Fatalf("consume %s-%d at %d: %v", topic, p, next, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			next = r.Offset + 1
		})
		if fs.NumRecords() == 0 && recordsFrom(t, b, topic, p, next) == 0 {
			return out
		}
	}
}

// recordsFrom counts the records of topic-p at or above offset, below the
// high watermark, reading the log directly.
func recordsFrom(t *testing.T, b *brokertest.Broker, topic string, p int32, offset int64) int {
	t.Helper()
	l := b.Logs().Get(topicpart.TopicPartition{Topic: topic, Partition: p})
	n := 0
	for off := max(offset, l.LogStartOffset()); off < l.HighWatermark(); {
		buf, err := l.Read(nil, off, 1<<20, l.HighWatermark(), true)
		if err != nil {
			t.Fatal(err)
		}
		if len(buf) == 0 {
			break
		}
		for rest := buf; len(rest) > 0; {
			batch, tail, _ := record.Split(rest)
			rest = tail
			h, _ := record.ParseHeader(batch)
			record.Iterate(batch, 64<<20, func(r *record.Record) error {
				if h.BaseOffset+int64(r.OffsetDelta) >= offset && !h.Control() {
					n++
				}
				return nil
			})
			off = h.NextOffset()
		}
	}
	return n
}

// partitionSize is the partition's size as DescribeLogDirs reports it.
func partitionSize(t *testing.T, b *brokertest.Broker, topic string, p int32) int64 {
	t.Helper()
	dirs, err := b.AdminClient().DescribeAllLogDirs(ctxFor(t, 10*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	var size int64 = -1
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(pi kadm.DescribedLogDirPartition) {
			if pi.Topic == topic && pi.Partition == p {
				size = pi.Size
			}
		})
	})
	if size < 0 {
		t.Fatalf("%s-%d not in DescribeLogDirs", topic, p)
	}
	return size
}

func roll(t *testing.T, b *brokertest.Broker, topic string, p int32) {
	t.Helper()
	if err := b.Logs().Get(topicpart.TopicPartition{Topic: topic, Partition: p}).Roll(); err != nil {
		t.Fatal(err)
	}
}

// TestCompactedTopicKeepsTheLatestRecordPerKey: 100,000 updates over 1,000
// keys into a compacted topic with small segments; once cleaned, a consumer
// from the beginning sees exactly the 1,000 latest values, at their
// original offsets (with gaps), the log start offset has not moved, and the
// partition is within a small factor of 1,000 values.
func TestCompactedTopicKeepsTheLatestRecordPerKey(t *testing.T) {
	const keys, valueSize = 1000, 100
	updates := 100_000
	b := brokertest.Start(t, fastCleaner)
	adm := b.AdminClient()
	brokertest.CreateTopic(t, adm, "changelog", 1, map[string]string{"cleanup.policy": "compact", "internal.segment.bytes": "65536"})
	cl := b.Client(kgo.DefaultProduceTopic("changelog"), kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	rng := rand.New(rand.NewPCG(4, 2))
	latest := map[string]string{}
	var recs []*kgo.Record
	for i := 0; i < updates; i++ {
		k := fmt.Sprintf("key-%04d", rng.IntN(keys))
		if i < keys { // every key written at least once
			k = fmt.Sprintf("key-%04d", i)
		}
		v := []byte(fmt.Sprintf("%s-update-%06d-", k, i))
		for len(v) < valueSize { // letters lz4 cannot squeeze much
			v = append(v, 'a'+byte(rng.IntN(26)))
		}
		latest[k] = string(v)
		recs = append(recs, &kgo.Record{Key: []byte(k), Value: v})
	}
	produce(t, cl, recs)
	sizeBefore := partitionSize(t, b, "changelog", 0)
	roll(t, b, "changelog", 0)
	st := waitCleaned(t, b, "changelog", 0)

	got := consumeAll(t, b, "changelog", 0)
	if len(got) != keys {
		t.Fatalf("consumed %d records, want %d", len(got), keys)
	}
	gaps := 0
	for i, r := range got {
		if latest[string(r.Key)] != string(r.Value) {
			t.Fatalf("record at offset %d: key %s has %q, latest is %q", r.Offset, r.Key, r.Value, latest[string(r.Key)])
		}
		delete(latest, string(r.Key))
		if i > 0 && r.Offset > got[i-1].Offset+1 {
			gaps++
		}
	}
	if gaps == 0 {
		t.Fatalf("offsets: %d gaps, last %d", gaps, got[len(got)-1].Offset)
	}
	starts, err := adm.ListStartOffsets(ctxFor(t, 10*time.Second), "changelog")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := starts.Lookup("changelog", 0); s.Offset != 0 {
		t.Fatalf("log start offset moved to %d", s.Offset)
	}
	size := partitionSize(t, b, "changelog", 0)
	t.Logf("partition %d bytes before cleaning, %d after (%d × %d-byte values = %d); %d runs, last: %+v",
		sizeBefore, size, keys, valueSize, keys*valueSize, st.Runs, st.LastRun)
	if size > 3*keys*valueSize {
		t.Fatalf("partition holds %d bytes after cleaning, more than 3 × %d", size, keys*valueSize)
	}
}

// TestTombstonesDisappearAfterDeleteRetention: deleted keys are gone from
// the consumer's view once delete.retention.ms has passed since the cleaner
// first kept their tombstones.
func TestTombstonesDisappearAfterDeleteRetention(t *testing.T) {
	b := brokertest.Start(t, fastCleaner)
	adm := b.AdminClient()
	brokertest.CreateTopic(t, adm, "deletes", 1, map[string]string{"cleanup.policy": "compact", "internal.segment.bytes": "16384",
		"delete.retention.ms": "1500"})
	cl := b.Client(kgo.DefaultProduceTopic("deletes"))
	var recs []*kgo.Record
	for i := 0; i < 2000; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint("k", i%100)), Value: []byte(fmt.Sprint("v", i))})
	}
	for i := 0; i < 50; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint("k", i))}) // tombstones
	}
	produce(t, cl, recs)
	roll(t, b, "deletes", 0)
	kept := time.Now()
	waitCleaned(t, b, "deletes", 0)
	count := func() (values, tombs int) {
		for _, r := range consumeAll(t, b, "deletes", 0) {
			if r.Value == nil {
				tombs++
			} else {
				values++
			}
		}
		return values, tombs
	}
	if v, tb := count(); v != 50 || (tb != 50 && time.Since(kept) < 1500*time.Millisecond) {
		t.Fatalf("after the first cleaning: %d values, %d tombstones", v, tb)
	}
	// No new writes: the passed delete horizon alone brings a round.
	waitFor(t, 30*time.Second, "tombstones gone", func() (bool, string) {
		v, tb := count()
		return v == 50 && tb == 0, fmt.Sprintf("%d values, %d tombstones; %+v", v, tb, status(t, b, "deletes", 0))
	})
	if time.Since(kept) < 1500*time.Millisecond {
		t.Fatalf("tombstones went %v after they were kept, before delete.retention.ms", time.Since(kept))
	}
}

// TestDedupeBufferTooSmallForTheKeys: a dedupe buffer with room for about
// 180 keys still cleans 1,000 keys, over several rounds.
func TestDedupeBufferTooSmallForTheKeys(t *testing.T) {
	b := brokertest.Start(t, map[string]string{"log.cleaner.backoff.ms": "20", "log.cleaner.dedupe.buffer.size": fmt.Sprint(200 * 24)})
	adm := b.AdminClient()
	brokertest.CreateTopic(t, adm, "many-keys", 1, map[string]string{"cleanup.policy": "compact", "internal.segment.bytes": "32768"})
	cl := b.Client(kgo.DefaultProduceTopic("many-keys"))
	var recs []*kgo.Record
	for i := 0; i < 10_000; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("key-%04d", (i*7)%1000)), Value: []byte(fmt.Sprint("value-", i))})
	}
	produce(t, cl, recs)
	roll(t, b, "many-keys", 0)
	st := waitCleaned(t, b, "many-keys", 0)
	if st.Runs < 5 || st.Uncleanable != nil {
		t.Fatalf("%d runs for 1,000 keys with room for ~180: %+v", st.Runs, st)
	}
	if got := consumeAll(t, b, "many-keys", 0); len(got) != 1000 {
		t.Fatalf("consumed %d records, want 1000", len(got))
	}
}

// TestCorruptSegmentMakesOnlyItsPartitionUncleanable damages a segment on
// disk while the broker is down; after a restart that partition is
// reported uncleanable with the error, and the other is still cleaned.
func TestCorruptSegmentMakesOnlyItsPartitionUncleanable(t *testing.T) {
	dir := t.TempDir()
	off := map[string]string{"log.cleaner.enable": "false"}
	b := brokertest.StartIn(t, dir, off)
	brokertest.CreateTopic(t, b.AdminClient(), "fragile", 2, map[string]string{"cleanup.policy": "compact", "internal.segment.bytes": "16384"})
	cl := b.Client(kgo.DefaultProduceTopic("fragile"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := 0; i < 4000; i++ {
		recs = append(recs, &kgo.Record{Partition: int32(i % 2), Key: []byte(fmt.Sprint("k", i%50)), Value: []byte(strings.Repeat("v", 50))})
	}
	produce(t, cl, recs)
	roll(t, b, "fragile", 0)
	roll(t, b, "fragile", 1)
	b.Stop()
	// Flip bytes inside the first batch's records of partition 0's first
	// segment: its CRC no longer matches.
	seg := filepath.Join(dir, "fragile-0", "00000000000000000000.log")
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 100; i < 104; i++ {
		data[i] ^= 0xff
	}
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	b = brokertest.StartIn(t, dir, fastCleaner)
	waitCleaned(t, b, "fragile", 1)
	waitFor(t, 30*time.Second, "partition 0 reported uncleanable", func() (bool, string) {
		st := status(t, b, "fragile", 0)
		return st.Uncleanable != nil && strings.Contains(st.Uncleanable.Error, "corrupt"), fmt.Sprintf("%+v", st)
	})
	resp, err := http.Get(fmt.Sprintf("http://%s/metrics", b.AdminAddr()))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "kafka_log_logcleanermanager_uncleanable_partitions_count{logDirectory=") ||
		!strings.Contains(string(body), "kafka_log_logcleaner_deadthreadcount 0") {
		t.Fatalf("metrics:\n%s", body)
	}
}

// TestSwitchingCleanupPolicy: a delete topic is not compacted; switched to
// compact with IncrementalAlterConfigs it is, at the next round; switched to
// compact,delete, retention applies after compaction.
func TestSwitchingCleanupPolicy(t *testing.T) {
	b := brokertest.Start(t, fastCleaner)
	adm := b.AdminClient()
	brokertest.CreateTopic(t, adm, "switch", 1, map[string]string{"cleanup.policy": "delete", "internal.segment.bytes": "16384"})
	cl := b.Client(kgo.DefaultProduceTopic("switch"))
	var recs []*kgo.Record
	for i := 0; i < 3000; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint("k", i%10)), Value: []byte(fmt.Sprint("v", i))})
	}
	produce(t, cl, recs)
	roll(t, b, "switch", 0)
	if st := status(t, b, "switch", 0); st.Compacted || st.Eligible || !strings.Contains(st.Why, "does not include compact") {
		t.Fatalf("delete topic: %+v", st)
	}
	alter := func(set map[string]string) {
		var ops []kadm.AlterConfig
		for k, v := range set {
			ops = append(ops, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
		}
		resp, err := adm.AlterTopicConfigs(ctxFor(t, 10*time.Second), ops, "switch")
		if err == nil {
			_, err = resp.On("switch", nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	alter(map[string]string{"cleanup.policy": "compact"})
	waitCleaned(t, b, "switch", 0)
	if got := consumeAll(t, b, "switch", 0); len(got) != 10 {
		t.Fatalf("%d records after compaction, want 10", len(got))
	}
	alter(map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "1"})
	produce(t, cl, recs[:100])
	roll(t, b, "switch", 0)
	waitFor(t, 30*time.Second, "retention after compaction", func() (bool, string) {
		st := status(t, b, "switch", 0)
		return st.LogStartOffset > 0 && st.CleanupPolicy == "compact,delete", fmt.Sprintf("%+v", st)
	})
}

// TestConsumerOffsetsStayBounded is the __consumer_offsets story: a group
// commits the same 10 partitions over and over; after cleaning its
// __consumer_offsets partition holds about one commit's worth, and
// OffsetFetch (also after a restart, which replays the compacted log) still
// returns the latest offsets.
func TestConsumerOffsetsStayBounded(t *testing.T) {
	commits := 3000
	if longTests() {
		commits = 100_000
	}
	dir := t.TempDir()
	b := brokertest.StartIn(t, dir, fastCleaner)
	adm := b.AdminClient()
	brokertest.CreateTopic(t, adm, "orders", 10, nil)
	const group = "billing"
	commit := func(n int) {
		offs := kadm.Offsets{}
		for p := int32(0); p < 10; p++ {
			offs.Add(kadm.Offset{Topic: "orders", Partition: p, At: int64(n*10) + int64(p), LeaderEpoch: -1})
		}
		resp, err := adm.CommitOffsets(ctxFor(t, 10*time.Second), group, offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit %d: %v", n, err)
		}
	}
	commit(0)
	// Find the group's __consumer_offsets partition and shrink its segments.
	var gp int32 = -1
	for tp, l := range b.Logs().All() {
		if tp.Topic == "__consumer_offsets" && l.LogEndOffset() > 0 {
			gp = tp.Partition
		}
	}
	if gp < 0 {
		t.Fatal("no __consumer_offsets partition holds the commit")
	}
	oneCommit := partitionSize(t, b, "__consumer_offsets", gp)
	v := "16384"
	resp, err := adm.AlterTopicConfigs(ctxFor(t, 10*time.Second),
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "internal.segment.bytes", Value: &v}}, "__consumer_offsets")
	if err == nil {
		_, err = resp.On("__consumer_offsets", nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for n := 1; n < commits; n++ {
		commit(n)
	}
	elapsed := time.Since(start)
	roll(t, b, "__consumer_offsets", gp)
	st := waitCleaned(t, b, "__consumer_offsets", gp)
	size := partitionSize(t, b, "__consumer_offsets", gp)
	t.Logf("%d commits in %v; __consumer_offsets-%d: one commit %d bytes, %d bytes after cleaning; %d runs",
		commits, elapsed, gp, oneCommit, size, st.Runs)
	if size > 4*oneCommit {
		t.Fatalf("%d bytes after cleaning, more than 4 × one commit (%d)", size, oneCommit)
	}
	check := func(adm *kadm.Client, when string) {
		fetched, err := adm.FetchOffsets(ctxFor(t, 10*time.Second), group)
		if err != nil {
			t.Fatal(err)
		}
		for p := int32(0); p < 10; p++ {
			o, ok := fetched.Lookup("orders", p)
			if want := int64((commits-1)*10) + int64(p); !ok || o.Err != nil || o.At != want {
				t.Fatalf("%s: partition %d committed %d (%v), want %d", when, p, o.At, o.Err, want)
			}
		}
	}
	check(adm, "after cleaning")
	b.Stop()
	b = brokertest.StartIn(t, dir, fastCleaner)
	var adm2 *kadm.Client = b.AdminClient()
	waitFor(t, 30*time.Second, "group coordinator loaded", func() (bool, string) {
		_, err := adm2.FetchOffsets(ctxFor(t, 5*time.Second), group)
		return err == nil, fmt.Sprint(err)
	})
	check(adm2, "after a restart")
}
