package api_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// rawConn is one connection to the broker that writes requests without
// waiting for answers, as Kafka clients pipeline them.
type rawConn struct {
	t    *testing.T
	nc   net.Conn
	corr int32
	f    *kmsg.RequestFormatter
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("pipeline-test"))}
}

// frame encodes req (its version set) with the next correlation id.
func (c *rawConn) frame(req kmsg.Request) ([]byte, int32) {
	c.corr++
	return c.f.AppendRequest(nil, req, c.corr), c.corr
}

func (c *rawConn) write(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// recv reads the next response into resp (its version set) and checks that
// it answers the request with correlation id want.
func (c *rawConn) recv(resp kmsg.Response, want int32) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		c.t.Fatalf("reading the answer to %d: %v", want, err)
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.nc, b); err != nil {
		c.t.Fatalf("reading the answer to %d: %v", want, err)
	}
	r := kbin.Reader{Src: b}
	if corr := r.Int32(); corr != want {
		c.t.Fatalf("answer to request %d, want %d: out of order", corr, want)
	}
	if resp.IsFlexible() {
		kmsg.SkipTags(&r)
	}
	if err := resp.ReadFrom(r.Src); err != nil {
		c.t.Fatalf("decoding %T: %v", resp, err)
	}
}

// produceReq is a v11 Produce (topics by name) of one batch to partition 0.
func produceReq(topic string, acks int16, spec record.BatchSpec) *kmsg.ProduceRequest {
	batch, err := record.Build(&spec)
	if err != nil {
		panic(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(11)
	req.Acks, req.TimeoutMillis = acks, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func produceAnswer() *kmsg.ProduceResponse {
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(11)
	return resp
}

// answer is what a client sees of one partition's produce answer.
type answer struct {
	code       int16
	baseOffset int64
	records    int // error records (v8+)
}

func answerOf(resp *kmsg.ProduceResponse) answer {
	p := resp.Topics[0].Partitions[0]
	return answer{p.ErrorCode, p.BaseOffset, len(p.ErrorRecords)}
}

// Pipelined produce requests get exactly the answers serial ones get:
// appends keep request order, so the idempotent sequence checks of request
// N+1 see the batches of request N (out-of-order sequences, duplicates of a
// batch still in flight, gaps) while N waits for its fsync.
func TestPipelinedProduceAnswersAsSerial(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("serial", 1, nil)
	f.createTopic("piped", 1, nil)
	pid := f.newProducerID()
	type step struct {
		seq int32
		n   int
	}
	// 0-1, 2-4, a gap, 5, a duplicate of 2-4, another gap, 6-9, a
	// duplicate of the newest batch, 10.
	steps := []step{{0, 2}, {2, 3}, {9, 1}, {5, 1}, {2, 3}, {8, 1}, {6, 4}, {6, 4}, {10, 1}}
	reqs := func(topic string) []*kmsg.ProduceRequest {
		var out []*kmsg.ProduceRequest
		for _, s := range steps {
			out = append(out, produceReq(topic, -1, idempotentBatch(pid, 0, s.seq, s.n)))
		}
		return out
	}

	c := dialRaw(t, f.b.Addr().String())
	var serial []answer
	for _, req := range reqs("serial") {
		b, corr := c.frame(req)
		c.write(b)
		resp := produceAnswer()
		c.recv(resp, corr)
		serial = append(serial, answerOf(resp))
	}
	var all []byte
	var corrs []int32
	for _, req := range reqs("piped") {
		b, corr := c.frame(req)
		all = append(all, b...)
		corrs = append(corrs, corr)
	}
	c.write(all) // every request before any answer is read
	for i, corr := range corrs {
		resp := produceAnswer()
		c.recv(resp, corr)
		if got := answerOf(resp); got != serial[i] {
			t.Errorf("request %d (seq %d): pipelined %+v (%v), serial %+v (%v)", i, steps[i].seq,
				got, kerr.ErrorForCode(got.code), serial[i], kerr.ErrorForCode(serial[i].code))
		}
	}
	var codes []string
	for _, a := range serial {
		codes = append(codes, fmt.Sprint(kerr.ErrorForCode(a.code)))
	}
	t.Logf("answers: %s", strings.Join(codes, ", "))
	// The steps do hit both kinds of refusal and a duplicate.
	if serial[2].code != kerr.OutOfOrderSequenceNumber.Code || serial[4].code != 0 || serial[4].baseOffset != serial[1].baseOffset {
		t.Fatalf("the steps no longer cover a gap and a duplicate: %+v", serial)
	}
}

// A long-polling Fetch does not stop its connection from reading the next
// request: a Produce behind it on the same connection is appended while the
// fetch waits, wakes it, and the two answers go out in request order.
// Answered one at a time, the fetch would wait out its MaxWait and return
// nothing.
func TestLongPollDoesNotBlockTheRequestsBehindIt(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("lp", 1, nil)
	end := f.produceValues("lp", 0, nil, 3) + 3
	fetch := f.fetchRequest("lp", []int64{end}, 1<<20, 1<<20)
	fetch.SetVersion(12)
	fetch.MaxWaitMillis, fetch.MinBytes = 15000, 1
	produce := produceReq("lp", 1, record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Records: []record.BuildRecord{{Timestamp: time.Now().UnixMilli(), Value: []byte("wake up")}}})
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)

	c := dialRaw(t, f.b.Addr().String())
	fb, fcorr := c.frame(fetch)
	pb, pcorr := c.frame(produce)
	mb, mcorr := c.frame(meta)
	start := time.Now()
	c.write(append(append(fb, pb...), mb...))

	fr := kmsg.NewPtrFetchResponse()
	fr.SetVersion(12)
	c.recv(fr, fcorr)
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("the fetch waited %v: the produce behind it was not read", waited)
	}
	p := fr.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("fetch answered error %v with %d record bytes, want the produced record", kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
	}
	pr := produceAnswer()
	c.recv(pr, pcorr)
	if a := answerOf(pr); a.code != 0 || a.baseOffset != end {
		t.Fatalf("produce answered %+v, want offset %d", a, end)
	}
	mr := kmsg.NewPtrMetadataResponse()
	mr.SetVersion(12)
	c.recv(mr, mcorr)
}

// acks=0 keeps its meaning in a pipeline: the request is appended in its
// place and answered by nothing; the answers around it stay in order.
func TestAcksZeroInAPipeline(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("a0", 1, nil)
	one := func(v string) record.BatchSpec {
		return record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
			Records: []record.BuildRecord{{Timestamp: time.Now().UnixMilli(), Value: []byte(v)}}}
	}
	c := dialRaw(t, f.b.Addr().String())
	b1, c1 := c.frame(produceReq("a0", -1, one("first")))
	b2, _ := c.frame(produceReq("a0", 0, one("second")))
	b3, c3 := c.frame(produceReq("a0", -1, one("third")))
	c.write(append(append(b1, b2...), b3...))
	r1, r3 := produceAnswer(), produceAnswer()
	c.recv(r1, c1)
	c.recv(r3, c3)
	if a, b := answerOf(r1), answerOf(r3); a.code != 0 || b.code != 0 || a.baseOffset != 0 || b.baseOffset != 2 {
		t.Fatalf("answers %+v and %+v, want offsets 0 and 2 (the acks=0 record at 1)", a, b)
	}
}

// An fsync that fails in the middle of a pipeline fails every produce that
// needed it with KAFKA_STORAGE_ERROR, and nothing after it is acknowledged:
// the answers, in request order, are successes (each below the durable
// point) and then only failures.
func TestFsyncFailureInTheMiddleOfAPipeline(t *testing.T) {
	mem := vfs.NewMem()
	const inFlight = 5
	var (
		armed  atomic.Bool
		syncs  atomic.Int32
		leo    atomic.Pointer[func() int64]
		formed atomic.Bool  // the pipeline was full while the first sync ran
		base   atomic.Int64 // the log end offset before the pipeline
	)
	fs := vfs.NewInjecting(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if !armed.Load() || op != vfs.OpSync || !strings.Contains(path, "/fs-0/") || !strings.HasSuffix(path, ".log") {
			return nil
		}
		switch syncs.Add(1) {
		case 1:
			// Hold the first sync until the requests behind it are appended,
			// so the second covers them.
			deadline := time.Now().Add(10 * time.Second)
			for (*leo.Load())() < base.Load()+inFlight && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			formed.Store((*leo.Load())() >= base.Load()+inFlight)
			return nil
		case 2:
			return vfs.ErrWritebackLost
		}
		return nil
	}))
	// Two log dirs: the broker stops when its last one goes offline.
	b := brokertest.StartOn(t, fs, "/d1,/d2", nil)
	f := &logAPI{t: t, ctx: t.Context(), b: b, cl: b.Client()}
	f.createTopic("fs", 1, nil)
	f.produceValues("fs", 0, nil, 1) // the log is created and synced
	l := f.log("fs", 0)
	end := l.LogEndOffset
	leo.Store(&end)
	base.Store(end())

	c := dialRaw(t, b.Addr().String())
	var all []byte
	var corrs []int32
	for i := range 2 * inFlight {
		fb, corr := c.frame(produceReq("fs", -1, record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
			Records: []record.BuildRecord{{Timestamp: time.Now().UnixMilli(), Value: []byte(fmt.Sprint(i))}}}))
		all = append(all, fb...)
		corrs = append(corrs, corr)
	}
	armed.Store(true)
	c.write(all)
	var answers []answer
	for _, corr := range corrs {
		resp := produceAnswer()
		c.recv(resp, corr)
		answers = append(answers, answerOf(resp))
	}
	t.Logf("answers %+v", answers)
	if !formed.Load() {
		t.Fatalf("the requests were not appended while the first sync ran: no pipeline formed")
	}
	failed := 0
	for i, a := range answers {
		switch {
		case a.code == kerr.KafkaStorageError.Code:
			failed++
		case a.code != 0:
			t.Errorf("request %d: %v, want success or KAFKA_STORAGE_ERROR", i, kerr.ErrorForCode(a.code))
		case failed > 0:
			t.Errorf("request %d acknowledged after a failed fsync was answered (offset %d)", i, a.baseOffset)
		case a.baseOffset >= l.RecoveryPoint():
			t.Errorf("request %d acknowledged at offset %d, not durable (recovery point %d)", i, a.baseOffset, l.RecoveryPoint())
		}
	}
	// The failed sync covered at least the requests appended while the
	// first one was held.
	if failed < inFlight {
		t.Fatalf("%d requests failed, want at least the %d the failed fsync covered", failed, inFlight)
	}
	if err := l.Failed(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("log failure %v, want the injected fsync error", err)
	}
}

// franz-go's idempotent producer (the default) keeps up to five produce
// requests in flight per broker once the first is answered (kgo's sink.go
// firstRespCheck); Gregor reads them while earlier ones wait for their
// fsync, which gregor_network_inflight_requests shows.
func TestKgoPipelinesProduceRequests(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("kgo", 1, nil)
	cl := f.b.Client(kgo.DefaultProduceTopic("kgo"), kgo.ProducerBatchMaxBytes(16<<10))
	value := make([]byte, 1024)
	var recs []*kgo.Record
	for range 4000 {
		recs = append(recs, &kgo.Record{Value: value})
	}
	if err := cl.ProduceSync(f.ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	one, all := f.inflightObservations()
	t.Logf("%v of %v requests arrived with others of their connection in flight", all-one, all)
	if all-one < 1 {
		t.Fatalf("no request arrived while another of its connection was in flight (%v requests)", all)
	}
}

// inflightObservations reads gregor_network_inflight_requests: how many
// requests arrived alone on their connection (le="1") and in all.
func (f *logAPI) inflightObservations() (alone, all float64) {
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
	for _, line := range strings.Split(string(body), "\n") {
		var into *float64
		switch {
		case strings.HasPrefix(line, `gregor_network_inflight_requests_bucket{`) && strings.Contains(line, `le="1"`):
			into = &alone
		case strings.HasPrefix(line, `gregor_network_inflight_requests_count`):
			into = &all
		default:
			continue
		}
		var n float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &n); err == nil {
			*into += n
		}
	}
	return alone, all
}
