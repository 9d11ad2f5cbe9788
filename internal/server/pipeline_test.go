package server

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pipeHandler answers Metadata requests as the client id says, so a test
// drives what each pipelined request does:
//
//	"now"      an answer at once
//	"nil"      no answer (as an acks=0 produce)
//	"wait:K"   a Deferred answered when the test releases K
//	"fail:K"   a Deferred that fails (closing the connection) when K is released
//	"big"      an answer of about 1 MiB, given as bulk data
//
// Answers carry the correlation id in ClusterID, so the client can tell
// which request each belongs to.
type pipeHandler struct {
	mu      sync.Mutex
	gates   map[string]chan struct{}
	handled atomic.Int32 // Handle calls
	// pending counts Deferreds returned and not yet finished; maxPending
	// is its highest value seen.
	pending, maxPending atomic.Int32
	finished            atomic.Int32
	cancelledFinish     atomic.Int32 // Finish calls whose context was done
	// live counts "big" responses not yet released; maxLive its highest.
	live, maxLive atomic.Int32
}

func newPipeHandler() *pipeHandler { return &pipeHandler{gates: map[string]chan struct{}{}} }

func (h *pipeHandler) Versions(key int16) (int16, int16, bool) {
	v, ok := fakeVersions[key]
	return v[0], v[1], ok
}

func (h *pipeHandler) gate(k string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.gates[k]
	if g == nil {
		g = make(chan struct{})
		h.gates[k] = g
	}
	return g
}

func (h *pipeHandler) release(k string) { close(h.gate(k)) }

func raise(max *atomic.Int32, v int32) {
	for {
		m := max.Load()
		if v <= m || max.CompareAndSwap(m, v) {
			return
		}
	}
}

func (h *pipeHandler) Handle(_ context.Context, req *Request) (kmsg.Response, error) {
	h.handled.Add(1)
	id := *req.ClientID
	if _, ok := req.Body.(*kmsg.MetadataRequest); !ok {
		return nil, fmt.Errorf("pipeHandler serves Metadata only, got %T", req.Body)
	}
	answer := kmsg.NewPtrMetadataResponse()
	answer.ClusterID = kmsg.StringPtr(strconv.Itoa(int(req.CorrelationID)))
	kind, key, _ := strings.Cut(id, ":")
	switch kind {
	case "now":
		return answer, nil
	case "nil":
		return nil, nil
	case "big":
		raise(&h.maxLive, h.live.Add(1))
		return &liveBulk{MetadataResponse: answer, h: h}, nil
	case "wait", "fail":
		raise(&h.maxPending, h.pending.Add(1))
		return &gatedAnswer{MetadataResponse: answer, h: h, gate: h.gate(key), fail: kind == "fail"}, nil
	}
	return nil, fmt.Errorf("unknown client id %q", id)
}

// gatedAnswer is a Deferred answered when its gate is closed.
type gatedAnswer struct {
	*kmsg.MetadataResponse
	h    *pipeHandler
	gate chan struct{}
	fail bool
}

func (g *gatedAnswer) Finish(ctx context.Context) (kmsg.Response, error) {
	defer g.h.finished.Add(1)
	defer g.h.pending.Add(-1)
	select {
	case <-g.gate:
	case <-ctx.Done():
		g.h.cancelledFinish.Add(1)
		return nil, ctx.Err()
	}
	if g.fail {
		return nil, errors.New("deferred answer told to fail")
	}
	return g.MetadataResponse, nil
}

// liveBulk is a response of about 1 MiB of bulk data that counts itself
// live until released.
type liveBulk struct {
	*kmsg.MetadataResponse
	h        *pipeHandler
	released atomic.Bool
}

var megabyte = make([]byte, 1<<20)

func (b *liveBulk) AppendBulk(dst []byte) ([]byte, []Splice) {
	// The bulk bytes are the tail of a topic's name: the response decodes.
	r := *b.MetadataResponse
	t := kmsg.NewMetadataResponseTopic()
	t.Topic = kmsg.StringPtr(string(megabyte))
	r.Topics = []kmsg.MetadataResponseTopic{t}
	enc := r.AppendTo(dst)
	at := strings.Index(string(enc[len(dst):]), string(megabyte[:64])) + len(dst)
	out := append(enc[:at:at], enc[at+len(megabyte):]...)
	return out, []Splice{{At: at, Data: megabyte}}
}

func (b *liveBulk) Release() {
	if !b.released.Swap(true) {
		b.h.live.Add(-1)
	}
}

// startPipeServer serves a pipeHandler with cfg until the test ends.
func startPipeServer(t *testing.T, cfg Config) (*testServer, *pipeHandler) {
	t.Helper()
	h := newPipeHandler()
	ts := &testServer{logs: new(logBuffer), serveCh: make(chan error, 1)}
	cfg.Addr = "127.0.0.1:0"
	cfg.Logger = discardLogger()
	ts.Server = New(cfg, h)
	if err := ts.Listen(); err != nil {
		t.Fatal(err)
	}
	ts.addr = ts.Addr().String()
	go func() { ts.serveCh <- ts.Serve(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ts.Shutdown(ctx)
		<-ts.serveCh
	})
	return ts, h
}

func metadataReq() *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	return req
}

// recvMetadata reads one Metadata v12 response and returns the correlation
// id in its header and the one its ClusterID carries.
func (c *client) recvMetadata() (int32, int32) {
	c.t.Helper()
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(12)
	corr := c.recv(resp)
	inner, err := strconv.Atoi(*resp.ClusterID)
	if err != nil {
		c.t.Fatalf("ClusterID %q", *resp.ClusterID)
	}
	return corr, int32(inner)
}

// Property: whatever the mix of immediate, absent and deferred answers and
// the order the deferred ones become ready in, every answer is written in
// request order, none before it is ready, and the connection never holds
// more than its bound of requests in flight.
func TestPipelinedAnswersKeepRequestOrder(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	const maxInflight = 4
	ts, h := startPipeServer(t, Config{MaxInflightRequests: maxInflight})
	for round := range 20 {
		c := dial(t, ts.addr)
		n := 1 + rng.IntN(40)
		type sent struct {
			corr     int32
			answered bool // an answer is expected
			gate     string
		}
		var reqs []sent
		var frames []byte
		for i := range n {
			id, s := "now", sent{answered: true}
			switch rng.IntN(4) {
			case 0:
				id, s.answered = "nil", false
			case 1, 2:
				s.gate = fmt.Sprintf("r%d-%d", round, i)
				id = "wait:" + s.gate
			}
			b, corr := c.frame(metadataReq(), id)
			s.corr = corr
			frames = append(frames, b...)
			reqs = append(reqs, s)
		}
		go c.nc.Write(frames) // the server reads only as far as its bound lets it
		// Release the gates in a random order, checking as the answers come
		// that none is early and none out of order.
		var gates []int
		for i, s := range reqs {
			if s.gate != "" {
				gates = append(gates, i)
			}
		}
		rng.Shuffle(len(gates), func(i, j int) { gates[i], gates[j] = gates[j], gates[i] })
		released := map[int]bool{}
		next := 0 // the next request whose answer is due
		for _, g := range append(gates, -1) {
			if g >= 0 {
				h.release(reqs[g].gate)
				released[g] = true
			}
			// Every answer whose request and predecessors are ready is due.
			for next < len(reqs) && (reqs[next].gate == "" || released[next]) {
				if reqs[next].answered {
					corr, inner := c.recvMetadata()
					if corr != reqs[next].corr || inner != corr {
						t.Fatalf("round %d: answer for %d (inner %d), want %d", round, corr, inner, reqs[next].corr)
					}
				}
				next++
			}
		}
		if next != len(reqs) {
			t.Fatalf("round %d: %d of %d requests answered", round, next, len(reqs))
		}
		c.nc.Close()
	}
	if m := h.maxPending.Load(); m > maxInflight {
		t.Fatalf("%d deferred answers pending at once, bound %d", m, maxInflight)
	}
}

// A Deferred that fails closes the connection after the answers before it
// are written; the requests after it are finished (not left holding what
// they hold) and get no answer.
func TestFailedDeferredClosesAfterEarlierAnswers(t *testing.T) {
	ts, h := startPipeServer(t, Config{})
	c := dial(t, ts.addr)
	var frames []byte
	var corrs []int32
	for _, id := range []string{"wait:a", "now", "fail:b", "wait:c", "now"} {
		b, corr := c.frame(metadataReq(), id)
		frames = append(frames, b...)
		corrs = append(corrs, corr)
	}
	c.write(frames)
	pollUntil(t, "five requests handled", func() bool { return h.handled.Load() == 5 })
	h.release("a")
	h.release("b")
	for _, want := range corrs[:2] {
		if corr, _ := c.recvMetadata(); corr != want {
			t.Fatalf("answer %d, want %d", corr, want)
		}
	}
	c.expectClosed()
	pollUntil(t, "every deferred finished", func() bool { return h.finished.Load() == 3 })
	if h.cancelledFinish.Load() != 1 {
		t.Fatalf("the request after the failure was finished %d times with a cancelled context, want 1", h.cancelledFinish.Load())
	}
}

// Shutdown with a full pipeline answers every request in flight, in order,
// then closes the connection; the requests it did not read get no answer.
func TestShutdownAnswersAFullPipeline(t *testing.T) {
	ts, h := startPipeServer(t, Config{MaxInflightRequests: 3})
	c := dial(t, ts.addr)
	var frames []byte
	var corrs []int32
	for i := range 6 {
		b, corr := c.frame(metadataReq(), fmt.Sprintf("wait:%d", i))
		frames = append(frames, b...)
		corrs = append(corrs, corr)
	}
	c.write(frames)
	pollUntil(t, "a full pipeline", func() bool { return h.pending.Load() == 3 })
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- ts.Shutdown(ctx)
	}()
	pollUntil(t, "the reader stopped", func() bool { return ts.connStopping() })
	for _, g := range []string{"2", "0", "1"} {
		h.release(g)
	}
	for _, want := range corrs[:3] {
		if corr, _ := c.recvMetadata(); corr != want {
			t.Fatalf("answer %d, want %d", corr, want)
		}
	}
	c.expectClosed()
	if err := waitFor(t, done); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := h.handled.Load(); n != 3 {
		t.Fatalf("%d requests handled, want the 3 in flight when shutdown began", n)
	}
}

// A Shutdown whose deadline passes cancels what is in flight: every
// Deferred is finished (with a cancelled context), none is left holding
// what it holds, and the connection is closed.
func TestShutdownDeadlineFinishesAFullPipeline(t *testing.T) {
	ts, h := startPipeServer(t, Config{})
	c := dial(t, ts.addr)
	var frames []byte
	for i := range 5 {
		b, _ := c.frame(metadataReq(), fmt.Sprintf("wait:%d", i))
		frames = append(frames, b...)
	}
	c.write(frames)
	pollUntil(t, "a full pipeline", func() bool { return h.pending.Load() == 5 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := ts.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want deadline exceeded", err)
	}
	c.expectClosed()
	pollUntil(t, "every deferred finished", func() bool { return h.finished.Load() == 5 })
	if n := h.cancelledFinish.Load(); n != 5 {
		t.Fatalf("%d of 5 finished with a cancelled context", n)
	}
}

// A client that sends requests and never reads the answers holds at most
// the connection's bound of answers in the broker: the connection stops
// reading, its writes stall, and connections.max.idle.ms later it is closed
// and everything it held is given back.
func TestClientThatNeverReadsHoldsBoundedMemory(t *testing.T) {
	const maxInflight = 3
	ts, h := startPipeServer(t, Config{MaxInflightRequests: maxInflight, ConnectionsMaxIdle: 300 * time.Millisecond})
	c := dial(t, ts.addr)
	// The first answer waits, so the ones after it queue behind it.
	frames, _ := c.frame(metadataReq(), "wait:hold")
	const sent = 200
	for range sent - 1 {
		b, _ := c.frame(metadataReq(), "big")
		frames = append(frames, b...)
	}
	go c.nc.Write(frames) // blocks once the server stops reading
	pollUntil(t, "a full pipeline", func() bool { return ts.inflight() == maxInflight })
	if n := h.handled.Load(); n != maxInflight {
		t.Fatalf("%d requests handled behind a waiting one, bound %d", n, maxInflight)
	}
	// Now the answers go out until the socket buffers (a few MiB on
	// loopback) are full; the stalled write then times out.
	h.release("hold")
	pollUntil(t, "the stalled connection closed", func() bool { return ts.inflight() == -1 })
	if n := h.handled.Load(); n >= sent {
		t.Fatalf("all %d requests handled though no answer was read", n)
	}
	// The broker held the answers in flight (one of them being written).
	if live := h.maxLive.Load(); live > maxInflight {
		t.Fatalf("%d answers of 1 MiB held at once, bound %d", live, maxInflight)
	}
	if live := h.live.Load(); live != 0 {
		t.Fatalf("%d answers still held after the connection closed", live)
	}
}

// connStopping reports whether every connection's reader has stopped.
func (ts *testServer) connStopping() bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, c := range ts.mu.conns {
		if !c.isStopping() {
			return false
		}
	}
	return true
}

// inflight is the requests in flight on the server's one connection.
func (ts *testServer) inflight() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, c := range ts.mu.conns {
		return c.pipe.inFlight()
	}
	return -1
}

// A request's stage times say where its total time went: a Deferred's wait
// is its remote time, and the answer pipelined behind it spends the same
// wait in the response queue. Every stage is recorded once per request.
func TestStageTimesSplitTheTotal(t *testing.T) {
	reg := prometheus.NewRegistry()
	ts, h := startPipeServer(t, Config{MaxInflightRequests: 5, Metrics: NewMetrics(reg)})
	ts.reg = reg
	c := dial(t, ts.addr)
	c.send(metadataReq(), "wait:stages")
	c.send(metadataReq(), "now")
	deadline := time.Now().Add(10 * time.Second)
	for h.handled.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if h.handled.Load() < 2 {
		t.Fatal("the pipelined requests were not both handled")
	}
	const wait = 50 * time.Millisecond
	time.Sleep(wait) // both wait for this long at least: the first in Finish, the second behind it
	h.release("stages")
	c.recvMetadata()
	c.recvMetadata()

	// The writer records a response's send and total times after its
	// write returns, which may be after the client read it.
	metadata := map[string]string{"request": "Metadata"}
	recorded := func() bool {
		return ts.metric(t, "kafka_network_requestmetrics_total_time_seconds", metadata) == 2
	}
	for deadline := time.Now().Add(10 * time.Second); !recorded() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	for _, stage := range stageNames {
		name := "kafka_network_requestmetrics_" + stage + "_time_seconds"
		if n := ts.metric(t, name, metadata); n != 2 {
			t.Errorf("%s counted %v requests, want 2", name, n)
		}
	}
	waited := histogramSum(t, reg, "kafka_network_requestmetrics_response_queue_time_seconds") +
		histogramSum(t, reg, "kafka_network_requestmetrics_remote_time_seconds")
	if waited < 2*wait.Seconds() {
		t.Errorf("response queue + remote time %.3fs, want at least %.3fs (each request waited %v)", waited, 2*wait.Seconds(), wait)
	}
	var stages float64
	for _, stage := range stageNames {
		stages += histogramSum(t, reg, "kafka_network_requestmetrics_"+stage+"_time_seconds")
	}
	if total := histogramSum(t, reg, "kafka_network_requestmetrics_total_time_seconds"); stages > total {
		t.Errorf("stages add up to %.6fs, more than the total %.6fs", stages, total)
	}
}

// histogramSum is the sum of the Metadata series of histogram name.
func histogramSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if f.GetName() == name && labelValue(m, "request") == "Metadata" {
				return m.GetHistogram().GetSampleSum()
			}
		}
	}
	t.Fatalf("no Metadata series of %s", name)
	return 0
}
