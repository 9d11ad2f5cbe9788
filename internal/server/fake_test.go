package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client ids that make fakeHandler misbehave.
const (
	idPanic     = "panic"
	idError     = "error"
	idNil       = "nil"
	idSlow      = "slow"
	idWrongType = "wrong-type"
	// idBulk answers with a BulkResponse; idBulkWrongType with one of the
	// wrong type.
	idBulk          = "bulk"
	idBulkWrongType = "bulk-wrong-type"
	// idBulkBody answers with a BulkResponse whose bulk pieces alternate
	// between Data and Body; idBulkLarge does so with pieces of 1.1 MiB;
	// idBulkFailing's Bodies fail after their first piece.
	idBulkBody    = "bulk-body"
	idBulkLarge   = "bulk-large"
	idBulkFailing = "bulk-failing"
	// idBulkFile's Bodies are FileBodies; idBulkFileShort's files hold
	// less than their Bodies' sizes.
	idBulkFile      = "bulk-file"
	idBulkFileShort = "bulk-file-short"
)

// fakeHandler serves ApiVersions 0-3, Metadata 0-12 and ListGroups 0-5
// minimally; the client id selects misbehaviour.
type fakeHandler struct {
	// slowStarted receives once per "slow" request when Handle begins.
	slowStarted chan struct{}
	// release lets "slow" requests finish.
	release chan struct{}
	// slowCtxErr receives ctx.Err() when a "slow" request is cancelled.
	slowCtxErr chan error
	// addr is the listener's address, advertised as broker 0 in Metadata.
	addr string
	// bulkReleased counts BulkResponse.Release calls.
	bulkReleased atomic.Int32
	// fileReads counts ReadAt calls on FileBodies.
	fileReads atomic.Int32
}

func newFakeHandler() *fakeHandler {
	return &fakeHandler{
		slowStarted: make(chan struct{}, 16),
		release:     make(chan struct{}),
		slowCtxErr:  make(chan error, 16),
	}
}

var fakeVersions = map[int16][2]int16{
	18: {0, 3},  // ApiVersions
	3:  {0, 12}, // Metadata
	16: {0, 5},  // ListGroups
}

func (h *fakeHandler) Versions(key int16) (int16, int16, bool) {
	v, ok := fakeVersions[key]
	return v[0], v[1], ok
}

func (h *fakeHandler) Handle(ctx context.Context, req *Request) (kmsg.Response, error) {
	id := ""
	if req.ClientID != nil {
		id = *req.ClientID
	}
	switch id {
	case idPanic:
		panic("fake handler told to panic")
	case idError:
		return nil, errors.New("fake handler told to fail")
	case idNil:
		return nil, nil
	case idWrongType:
		return kmsg.NewPtrListGroupsResponse(), nil
	case idBulkWrongType:
		return &testBulk{Response: kmsg.NewPtrListGroupsResponse(), released: &h.bulkReleased}, nil
	case idSlow:
		h.slowStarted <- struct{}{}
		select {
		case <-h.release:
		case <-ctx.Done():
			h.slowCtxErr <- ctx.Err()
			return nil, ctx.Err()
		}
	}
	resp, err := h.answer(req)
	if err == nil {
		switch id {
		case idBulk:
			resp = &testBulk{Response: resp, released: &h.bulkReleased}
		case idBulkBody:
			resp = &testBulk{Response: resp, released: &h.bulkReleased, bodies: true}
		case idBulkLarge:
			resp = &testBulk{Response: resp, released: &h.bulkReleased, bodies: true, run: 1100 << 10}
		case idBulkFailing:
			resp = &testBulk{Response: resp, released: &h.bulkReleased, bodies: true, run: 1100 << 10, failing: true}
		case idBulkFile, idBulkFileShort:
			b := &testBulk{Response: resp, released: &h.bulkReleased, bodies: true, run: 1100 << 10, inFile: true, fileReads: &h.fileReads}
			if id == idBulkFileShort {
				b.shortFile = 1000
			}
			resp = b
		}
	}
	return resp, err
}

func (h *fakeHandler) answer(req *Request) (kmsg.Response, error) {
	switch body := req.Body.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := kmsg.NewPtrApiVersionsResponse()
		for _, k := range []int16{3, 16, 18} {
			v := fakeVersions[k]
			ak := kmsg.NewApiVersionsResponseApiKey()
			ak.ApiKey, ak.MinVersion, ak.MaxVersion = k, v[0], v[1]
			resp.ApiKeys = append(resp.ApiKeys, ak)
		}
		return resp, nil
	case *kmsg.MetadataRequest:
		resp := kmsg.NewPtrMetadataResponse()
		host, port, _ := net.SplitHostPort(h.addr)
		p, _ := strconv.Atoi(port)
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = 0, host, int32(p)
		resp.Brokers = append(resp.Brokers, b)
		resp.ControllerID = 0
		for _, t := range body.Topics {
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic = t.Topic
			rt.ErrorCode = 3 // UNKNOWN_TOPIC_OR_PARTITION
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.ListGroupsRequest:
		return kmsg.NewPtrListGroupsResponse(), nil
	}
	return nil, fmt.Errorf("fake handler cannot answer %T", req.Body)
}

// logBuffer collects log output for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) requireContains(t testing.TB, subs ...string) {
	t.Helper()
	out := l.String()
	for _, s := range subs {
		if !bytes.Contains([]byte(out), []byte(s)) {
			t.Fatalf("log lacks %q; log:\n%s", s, out)
		}
	}
}

type testServer struct {
	*Server
	addr    string
	logs    *logBuffer
	reg     *prometheus.Registry
	h       *fakeHandler
	serveCh chan error
}

// startServer listens on 127.0.0.1:0 and serves until the test ends.
func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	ts := &testServer{logs: new(logBuffer), reg: prometheus.NewRegistry(), h: newFakeHandler(), serveCh: make(chan error, 1)}
	cfg.Addr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.NewTextHandler(ts.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Metrics = NewMetrics(ts.reg)
	ts.Server = New(cfg, ts.h)
	if err := ts.Listen(); err != nil {
		t.Fatal(err)
	}
	ts.addr = ts.Addr().String()
	ts.h.addr = ts.addr
	go func() { ts.serveCh <- ts.Serve(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := ts.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		select {
		case err := <-ts.serveCh:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Serve did not return after Shutdown")
		}
	})
	return ts
}

// metric returns the value of the series of family name whose labels
// include want, or 0 if there is none.
func (ts *testServer) metric(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	fams, err := ts.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for k, v := range want {
				if labelValue(m, k) != v {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// client is a raw Kafka protocol client.
type client struct {
	t    testing.TB
	nc   net.Conn
	corr int32
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc}
}

// frame encodes req with the next correlation id.
func (c *client) frame(req kmsg.Request, clientID string) ([]byte, int32) {
	c.corr++
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	return f.AppendRequest(nil, req, c.corr), c.corr
}

func (c *client) write(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// send writes req and returns its correlation id.
func (c *client) send(req kmsg.Request, clientID string) int32 {
	c.t.Helper()
	b, corr := c.frame(req, clientID)
	c.write(b)
	return corr
}

// readFrame reads one response frame within d.
func (c *client) readFrame(d time.Duration) ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(d))
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, err
	}
	n := int32(uint32(size[0])<<24 | uint32(size[1])<<16 | uint32(size[2])<<8 | uint32(size[3]))
	if n < 4 || n > 1<<24 {
		return nil, fmt.Errorf("bad response size %d", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(c.nc, b)
	return b, err
}

// recv reads one response into resp (whose version must be set) and
// returns its correlation id.
func (c *client) recv(resp kmsg.Response) int32 {
	c.t.Helper()
	b, err := c.readFrame(5 * time.Second)
	if err != nil {
		c.t.Fatalf("reading response: %v", err)
	}
	r := kbin.Reader{Src: b}
	corr := r.Int32()
	if resp.IsFlexible() && resp.Key() != 18 {
		kmsg.SkipTags(&r)
	}
	if err := r.Complete(); err != nil {
		c.t.Fatalf("response header: %v", err)
	}
	if err := resp.ReadFrom(r.Src); err != nil {
		c.t.Fatalf("decoding %T v%d: %v", resp, resp.GetVersion(), err)
	}
	return corr
}

// roundTrip sends an ApiVersions v3 request and checks the answer.
func (c *client) roundTrip() {
	c.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	corr := c.send(req, "ok")
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	if got := c.recv(resp); got != corr {
		c.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	if resp.ErrorCode != 0 || len(resp.ApiKeys) != 3 {
		c.t.Fatalf("unexpected ApiVersions response: %+v", resp)
	}
}

// expectClosed waits for the server to close the connection.
func (c *client) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	n, err := c.nc.Read(b[:])
	switch {
	case n > 0:
		c.t.Fatalf("expected the connection to be closed, read a byte")
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
	default:
		c.t.Fatalf("expected the connection to be closed, got %v", err)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
