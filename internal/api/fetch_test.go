package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/record"
)

// produceSized appends batches of records with value bytes of the given
// sizes (one batch per size, 1 KiB records) to a partition.
func (f *logAPI) produceSized(topic string, partition int32, batchBytes ...int) {
	f.t.Helper()
	now := time.Now().UnixMilli()
	for _, size := range batchBytes {
		spec := record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
		for i := 0; i*1024 < size; i++ {
			v := bytes.Repeat([]byte{byte(partition), byte(i)}, 512)
			spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: now, Value: v})
		}
		sp := f.produceBatch(topic, partition, spec)
		if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
			f.t.Fatalf("produce to %s-%d: %v", topic, partition, err)
		}
	}
}

// fetchRequest asks for each partition from its offset in one sessionless
// fetch.
func (f *logAPI) fetchRequest(topic string, offsets []int64, partitionMax, maxBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, maxBytes
	req.SessionID, req.SessionEpoch = 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, f.topicID(topic)
	for p, off := range offsets {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(p), off, partitionMax
		rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// expectFetched is what a fetch of each partition from its offset returns,
// read from the logs themselves: up to partitionMax bytes of whole batches
// below the high watermark, and the first batch of the first partition that
// has one even if it is larger (KIP-74).
func (f *logAPI) expectFetched(topic string, offsets []int64, partitionMax int) ([][]byte, error) {
	out := make([][]byte, len(offsets))
	minOne := true
	for p, off := range offsets {
		l := f.log(topic, int32(p))
		want, err := l.Read(nil, off, partitionMax, l.HighWatermark(), minOne)
		if err != nil {
			return nil, err
		}
		out[p] = want
		minOne = minOne && len(want) == 0
	}
	return out, nil
}

// checkFetched compares each partition's records with expectFetched.
func (f *logAPI) checkFetched(topic string, offsets []int64, partitionMax int, resp *kmsg.FetchResponse) {
	f.t.Helper()
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != len(offsets) {
		f.t.Fatalf("fetch answered %d topics, want 1 with %d partitions", len(resp.Topics), len(offsets))
	}
	want, err := f.expectFetched(topic, offsets, partitionMax)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, p := range resp.Topics[0].Partitions {
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			f.t.Fatalf("partition %d: %v", p.Partition, err)
		}
		if !bytes.Equal(p.RecordBatches, want[p.Partition]) {
			f.t.Fatalf("partition %d from %d: fetched %d bytes that differ from the log's %d",
				p.Partition, offsets[p.Partition], len(p.RecordBatches), len(want[p.Partition]))
		}
	}
}

// Record sets large enough to be written from the broker's read buffers
// arrive intact next to small ones, at every Fetch version.
func TestFetchLargeAndSmallRecordSets(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("sizes", 3, nil)
	f.produceSized("sizes", 0, 200<<10, 300<<10, 100<<10) // read from pooled buffers
	f.produceSized("sizes", 1, 2<<10, 3<<10)              // encoded inline
	// partition 2 stays empty
	offsets := []int64{0, 0, 0}
	for _, v := range []int16{4, 7, 11, 12, 13, 18} {
		req := f.fetchRequest("sizes", offsets, 1<<20, 64<<20)
		resp := f.request(req, f.pinned(kmsg.Fetch, v)).(*kmsg.FetchResponse)
		if resp.Version != v {
			t.Fatalf("asked for v%d, got v%d", v, resp.Version)
		}
		f.checkFetched("sizes", offsets, 1<<20, resp)
	}

	// A partition limit in the middle of a batch stops before it; a first
	// batch larger than the limit still comes whole.
	for _, limit := range []int{250 << 10, 550 << 10, 1} {
		resp := f.request(f.fetchRequest("sizes", offsets, int32(limit), 64<<20)).(*kmsg.FetchResponse)
		f.checkFetched("sizes", offsets, limit, resp)
	}
}

// Concurrent fetches on separate connections each get their own bytes: a
// read buffer is reused only after the response it was sent in is written.
func TestConcurrentLargeFetchesGetTheirOwnRecords(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("many", 2, nil)
	for range 4 {
		f.produceSized("many", 0, 64<<10, 40<<10)
		f.produceSized("many", 1, 48<<10, 80<<10)
	}
	hw0, hw1 := f.log("many", 0).HighWatermark(), f.log("many", 1).HighWatermark()
	clients := make([]*kgo.Client, 4)
	for i := range clients {
		clients[i] = f.b.Client()
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(clients))
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for range 40 {
				offsets := []int64{rng.Int64N(hw0), rng.Int64N(hw1)}
				limit := 16<<10 + rng.IntN(200<<10)
				resp, err := cl.SeedBrokers()[0].Request(f.ctx, f.fetchRequest("many", offsets, int32(limit), 64<<20))
				if err != nil {
					errs <- err
					return
				}
				want, err := f.expectFetched("many", offsets, limit)
				if err != nil {
					errs <- err
					return
				}
				for _, p := range resp.(*kmsg.FetchResponse).Topics[0].Partitions {
					if !bytes.Equal(p.RecordBatches, want[p.Partition]) {
						errs <- fmt.Errorf("partition %d from %d, limit %d: got %d bytes differing from the log's %d",
							p.Partition, offsets[p.Partition], limit, len(p.RecordBatches), len(want[p.Partition]))
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A kgo consumer (incremental fetch sessions) reads every large record.
func TestConsumerReadsLargeRecordSets(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("consume", 3, nil)
	want := 0
	for p := range int32(3) {
		f.produceSized("consume", p, 300<<10, 500<<10, 20<<10)
		want += (300 + 500 + 20)
	}
	cons := f.b.Client(kgo.ConsumeTopics("consume"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.FetchMaxPartitionBytes(256<<10))
	ctx, cancel := context.WithTimeout(f.ctx, 15*time.Second)
	defer cancel()
	got := 0
	for got < want && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) {
			if ctx.Err() == nil {
				t.Fatalf("%s-%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) != 1024 || r.Value[0] != byte(r.Partition) || r.Value[1] != r.Value[1023] {
				t.Fatalf("%d-%d: unexpected value %x...", r.Partition, r.Offset, r.Value[:4])
			}
			got++
		})
	}
	if got != want {
		t.Fatalf("consumed %d records, want %d", got, want)
	}
}

// A long poll whose first read falls short of MinBytes reads again when
// data arrives, into fresh buffers, and answers with everything.
func TestLongPollRereadsLargeRecordSets(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("poll", 1, nil)
	f.produceSized("poll", 0, 100<<10)
	req := f.fetchRequest("poll", []int64{0}, 4<<20, 64<<20)
	req.MinBytes, req.MaxWaitMillis = 300<<10, 10_000
	type result struct {
		resp kmsg.Response
		err  error
	}
	done := make(chan result, 1)
	before := f.fetchRequestsServed()
	go func() {
		resp, err := f.cl.SeedBrokers()[0].Request(f.ctx, req)
		done <- result{resp, err}
	}()
	// Once the broker has taken the request, its first read (100 KiB, below
	// MinBytes) is done long before the next produce is acknowledged.
	deadline := time.Now().Add(5 * time.Second)
	for f.fetchRequestsServed() == before {
		if time.Now().After(deadline) {
			t.Fatal("the broker did not take the fetch request")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case r := <-done:
		t.Fatalf("fetch answered before MinBytes were there: %v", r.err)
	default:
	}
	f.produceSized("poll", 0, 250<<10)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	resp := r.resp.(*kmsg.FetchResponse)
	f.checkFetched("poll", []int64{0}, 4<<20, resp)
	if n := len(resp.Topics[0].Partitions[0].RecordBatches); n < 300<<10 {
		t.Fatalf("long poll answered with %d bytes, below MinBytes", n)
	}
}

// fetchRequestsServed is the broker's count of consumer Fetch requests handed to the
// handler, from its metrics endpoint.
func (f *logAPI) fetchRequestsServed() float64 {
	f.t.Helper()
	resp, err := http.Get("http://" + f.b.AdminAddr().String() + "/metrics")
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, `kafka_network_requestmetrics_requests_total{request="FetchConsumer"`); ok {
			var n float64
			if _, err := fmt.Sscan(rest[strings.LastIndexByte(rest, ' ')+1:], &n); err == nil {
				total += n
			}
		}
	}
	return total
}

// A long poll on a busy and an idle partition, woken by every produce to
// the busy one, holds one registration per partition while it waits and
// none once answered (the Fetch purgatory gauges).
func TestLongPollHoldsOneRegistrationPerPartition(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("mixed", 2, nil)
	req := f.fetchRequest("mixed", []int64{0, 0}, 4<<20, 64<<20)
	req.MinBytes, req.MaxWaitMillis = 200<<10, 20_000
	done := make(chan error, 1)
	go func() {
		_, err := f.cl.SeedBrokers()[0].Request(f.ctx, req)
		done <- err
	}()
	waiters := func() (int, int) { return f.b.Replicas().FetchWaiters() }
	deadline := time.Now().Add(5 * time.Second)
	for fetches, _ := waiters(); fetches == 0; fetches, _ = waiters() {
		if time.Now().After(deadline) {
			t.Fatal("the fetch never started waiting")
		}
		time.Sleep(time.Millisecond)
	}
	for i := range 50 {
		f.produceSized("mixed", 0, 2<<10) // wakes the fetch, which waits again
		if fetches, regs := waiters(); fetches > 1 || regs > 2 {
			t.Fatalf("after %d wake-ups: %d fetches waiting with %d partition registrations, want 1 with 2",
				i+1, fetches, regs)
		}
	}
	f.produceSized("mixed", 0, 200<<10)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if fetches, regs := waiters(); fetches != 0 || regs != 0 {
		t.Fatalf("answered fetch left %d fetches and %d registrations waiting", fetches, regs)
	}
}

// A partition the metadata does not hold (its topic deleted, or never
// created) does not end a long poll that has a live partition to wait for,
// as in Kafka: the fetch waits for data on the live one and then answers
// UNKNOWN_TOPIC_OR_PARTITION for the other. A fetch of nothing but unknown
// partitions is answered at once.
func TestUnknownPartitionDoesNotEndLongPoll(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("live", 1, nil)
	req := f.fetchRequest("live", []int64{0}, 1<<20, 1<<20)
	req.MaxWaitMillis = 10_000
	gone := kmsg.NewFetchRequestTopic()
	gone.Topic = "gone"
	gp := kmsg.NewFetchRequestTopicPartition()
	gp.CurrentLeaderEpoch, gp.LogStartOffset, gp.PartitionMaxBytes = -1, -1, 1<<20
	gone.Partitions = append(gone.Partitions, gp)
	req.Topics = append(req.Topics, gone)
	type result struct {
		resp kmsg.Response
		err  error
	}
	done := make(chan result, 1)
	before := f.fetchRequestsServed()
	go func() {
		resp, err := f.cl.SeedBrokers()[0].Request(f.ctx, req)
		done <- result{resp, err}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for f.fetchRequestsServed() == before {
		if time.Now().After(deadline) {
			t.Fatal("the broker did not take the fetch request")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case r := <-done:
		t.Fatalf("fetch answered before the live partition had data: %v", r.err)
	case <-time.After(200 * time.Millisecond):
	}
	f.produceSized("live", 0, 1024)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	resp := r.resp.(*kmsg.FetchResponse)
	unknown := kerr.UnknownTopicOrPartition // v13+ names topics by id
	if resp.Version >= 13 {
		unknown = kerr.UnknownTopicID
	}
	if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions[0].RecordBatches) == 0 ||
		resp.Topics[1].Partitions[0].ErrorCode != unknown.Code {
		t.Fatalf("fetch (v%d) answered %d topics; live records %d bytes, unknown partition %v", resp.Version,
			len(resp.Topics), len(resp.Topics[0].Partitions[0].RecordBatches), kerr.ErrorForCode(resp.Topics[1].Partitions[0].ErrorCode))
	}

	only := kmsg.NewPtrFetchRequest()
	only.ReplicaID, only.MaxWaitMillis, only.MinBytes, only.MaxBytes = -1, 10_000, 1, 1<<20
	only.SessionID, only.SessionEpoch = 0, -1
	only.Topics = []kmsg.FetchRequestTopic{gone}
	start := time.Now()
	resp2, err := f.cl.SeedBrokers()[0].Request(f.ctx, only)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("a fetch of only unknown partitions waited %v", took)
	}
	if c := resp2.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; c != unknown.Code {
		t.Fatalf("unknown partition answered %v", kerr.ErrorForCode(c))
	}
}
