package server

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestFranzGoNegotiatesAndRoundTrips(t *testing.T) {
	ts := startServer(t, Config{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// kgo opens with ApiVersions v5; we serve 0-3, so it must get the v0
	// UNSUPPORTED_VERSION answer and retry with v3.
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	if av.ErrorCode != 0 || av.Version != 3 {
		t.Fatalf("ApiVersions: error %d version %d, want 0 and 3", av.ErrorCode, av.Version)
	}
	got := map[int16][2]int16{}
	for _, k := range av.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	if got[18] != fakeVersions[18] || got[3] != fakeVersions[3] {
		t.Fatalf("ApiKeys = %v", got)
	}
	if n := ts.metric(t, "gregor_network_request_errors_total", map[string]string{"reason": reasonUnsupportedVersion}); n < 1 {
		t.Fatalf("kgo did not go through the UNSUPPORTED_VERSION downgrade (count %v)", n)
	}

	// Metadata v12 is flexible: request header v2, response header v1.
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if md.Version != 12 || len(md.Brokers) != 1 {
		t.Fatalf("Metadata v%d brokers %+v", md.Version, md.Brokers)
	}
	if n := ts.metric(t, "kafka_network_requestmetrics_requests_total", map[string]string{"request": "Metadata", "version": "12"}); n < 1 {
		t.Fatalf("Metadata v12 requests counted %v", n)
	}
	if n := ts.metric(t, "kafka_network_requestmetrics_total_time_seconds", map[string]string{"request": "ApiVersions"}); n < 1 {
		t.Fatalf("ApiVersions latency observations %v", n)
	}
}

func TestApiVersionsTooNewGetsV0UnsupportedVersion(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	for _, v := range []int16{4, 9, -1} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		corr := c.send(req, "ok")
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(0)
		if got := c.recv(resp); got != corr {
			t.Fatalf("v%d: correlation id %d, want %d", v, got, corr)
		}
		if resp.ErrorCode != 35 {
			t.Fatalf("v%d: error code %d, want 35 (UNSUPPORTED_VERSION)", v, resp.ErrorCode)
		}
		if len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 ||
			resp.ApiKeys[0].MinVersion != 0 || resp.ApiKeys[0].MaxVersion != 3 {
			t.Fatalf("v%d: ApiKeys %+v, want only ApiVersions 0-3", v, resp.ApiKeys)
		}
	}
	// The connection stays usable at a served version.
	c.roundTrip()
}

func TestUnsupportedVersionClosesConnection(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(13)
	c.send(req, "ok")
	c.expectClosed()
	ts.logs.requireContains(t, "unsupported api version", "api=Metadata", "api_version=13")
}

func TestUnknownAPIKeyClosesConnection(t *testing.T) {
	ts := startServer(t, Config{})
	for _, key := range []int16{9999, -3, 32 /* DescribeConfigs: known to kmsg, not served */} {
		c := dial(t, ts.addr)
		frame := []byte{0, 0, 0, 10, byte(uint16(key) >> 8), byte(key), 0, 0, 0, 0, 0, 7, 0xff, 0xff}
		c.write(frame)
		c.expectClosed()
	}
	ts.logs.requireContains(t, "unknown or disabled api key", "api_key=9999", "api_key=32")
	if n := ts.metric(t, "gregor_network_request_errors_total", map[string]string{"reason": reasonUnknownAPIKey}); n != 3 {
		t.Fatalf("unknown_api_key errors = %v, want 3", n)
	}
}

func TestOversizedFrameClosesOnlyThatConnection(t *testing.T) {
	ts := startServer(t, Config{SocketRequestMaxBytes: 1024})
	good := dial(t, ts.addr)
	good.roundTrip()

	for _, size := range []uint32{1025, 1 << 31, 0xffffffff} {
		bad := dial(t, ts.addr)
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], size)
		bad.write(b[:])
		bad.expectClosed()
		good.roundTrip()
	}
	ts.logs.requireContains(t, "invalid request frame size", "size=1025 limit=1024", "size=-2147483648", "size=-1 ", "remote=127.0.0.1:")
	if n := ts.metric(t, "gregor_network_request_errors_total", map[string]string{"reason": reasonInvalidReceive}); n != 3 {
		t.Fatalf("invalid_receive errors = %v, want 3", n)
	}
}

func TestReadFrameChecksSizeBeforeAllocating(t *testing.T) {
	s := New(Config{SocketRequestMaxBytes: 1 << 20}, newFakeHandler())
	client, server := net.Pipe()
	defer client.Close()
	c := newConn(s, 1, server)
	defer server.Close()
	go client.Write([]byte{0x40, 0, 0, 0}) // claims 1 GiB
	_, err := c.readFrame(s.cfg.SocketRequestMaxBytes)
	var invalid *invalidReceiveError
	if !errors.As(err, &invalid) || invalid.size != 1<<30 {
		t.Fatalf("readFrame error %v, want invalid receive of 1 GiB", err)
	}
	if cap(c.frame) != 0 {
		t.Fatalf("frame buffer grew to %d before the size was rejected", cap(c.frame))
	}
}

func TestMalformedFramesCloseConnection(t *testing.T) {
	ts := startServer(t, Config{})
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(1)
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr("orders")
	md.Topics = append(md.Topics, topic)

	tests := []struct {
		name  string
		frame func(c *client) []byte
	}{
		{"header shorter than fixed part", func(*client) []byte {
			return []byte{0, 0, 0, 6, 0, 3, 0, 1, 0, 0}
		}},
		{"client id longer than frame", func(*client) []byte {
			return []byte{0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0, 50}
		}},
		{"body cut short", func(c *client) []byte {
			b, _ := c.frame(md, "ok")
			b = b[:len(b)-2]
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			return b
		}},
		{"trailing byte after body", func(c *client) []byte {
			b, _ := c.frame(md, "ok")
			b = append(b, 0)
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			return b
		}},
		{"trailing byte after empty ApiVersions v0 body", func(c *client) []byte {
			req := kmsg.NewPtrApiVersionsRequest()
			req.SetVersion(0)
			b, _ := c.frame(req, "ok")
			b = append(b, 7)
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			return b
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			other := dial(t, ts.addr)
			c := dial(t, ts.addr)
			c.write(tt.frame(c))
			c.expectClosed()
			other.roundTrip()
		})
	}
	ts.logs.requireContains(t, "cannot decode request", "request has trailing bytes", "cannot parse request header", "request header truncated")
	if n := ts.metric(t, "gregor_network_request_errors_total", map[string]string{"reason": reasonDecode}); n != float64(len(tests)) {
		t.Fatalf("decode errors = %v, want %d", n, len(tests))
	}

	// The same Metadata request, intact, is served.
	c := dial(t, ts.addr)
	corr := c.send(md, "ok")
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(1)
	if got := c.recv(resp); got != corr || len(resp.Topics) != 1 || *resp.Topics[0].Topic != "orders" {
		t.Fatalf("corr %d (want %d), topics %+v", got, corr, resp.Topics)
	}
}

func TestTruncatedFrameAtEOF(t *testing.T) {
	ts := startServer(t, Config{})
	other := dial(t, ts.addr)
	c := dial(t, ts.addr)
	c.write([]byte{0, 0, 0, 100, 0, 18, 0, 0, 0, 0, 0, 1})
	if err := c.nc.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	c.expectClosed()
	ts.logs.requireContains(t, "reading 100-byte request frame (8 bytes read): unexpected EOF")
	other.roundTrip()
}

func TestHandlerPanicClosesOnlyThatConnection(t *testing.T) {
	ts := startServer(t, Config{})
	other := dial(t, ts.addr)
	other.roundTrip()
	c := dial(t, ts.addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(7)
	c.send(req, idPanic)
	c.expectClosed()
	ts.logs.requireContains(t, "panic in request handler", "api=Metadata", "api_key=3", "api_version=7",
		"fake handler told to panic", "stack=", "Handle")
	other.roundTrip()
	if n := ts.metric(t, "gregor_network_request_errors_total", map[string]string{"reason": reasonPanic}); n != 1 {
		t.Fatalf("panic errors = %v, want 1", n)
	}
}

func TestHandlerErrorAndWrongResponseCloseConnection(t *testing.T) {
	ts := startServer(t, Config{})
	for _, id := range []string{idError, idWrongType} {
		c := dial(t, ts.addr)
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(4)
		c.send(req, id)
		c.expectClosed()
	}
	ts.logs.requireContains(t, "request handler failed", "fake handler told to fail", "wrong response type")
}

func TestNilResponseSendsNothing(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	c.send(req, idNil)
	corr := c.send(req, "ok")
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(9)
	if got := c.recv(resp); got != corr {
		t.Fatalf("first response has correlation id %d, want %d (the unanswered request's must not appear)", got, corr)
	}
}

func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	type sent struct {
		corr int32
		resp kmsg.Response
	}
	var all []byte
	var want []sent
	for i := range 30 {
		var req kmsg.Request
		switch i % 3 {
		case 0:
			req = kmsg.NewPtrApiVersionsRequest()
			req.SetVersion(int16(i % 4))
		case 1:
			req = kmsg.NewPtrMetadataRequest()
			req.SetVersion(int16(i % 13))
		default:
			req = kmsg.NewPtrListGroupsRequest()
			req.SetVersion(int16(i % 6))
		}
		b, corr := c.frame(req, "ok")
		all = append(all, b...)
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		want = append(want, sent{corr, resp})
	}
	c.write(all) // every frame before reading any response
	for _, w := range want {
		if got := c.recv(w.resp); got != w.corr {
			t.Fatalf("response correlation id %d, want %d", got, w.corr)
		}
	}
}

func TestIdleConnectionIsClosed(t *testing.T) {
	ts := startServer(t, Config{ConnectionsMaxIdle: 50 * time.Millisecond})
	c := dial(t, ts.addr)
	c.roundTrip()
	c.expectClosed()
	ts.logs.requireContains(t, "closing idle connection")
}

func TestMaxConnectionsBlocksAccepting(t *testing.T) {
	ts := startServer(t, Config{MaxConnections: 1})
	first := dial(t, ts.addr)
	first.roundTrip()

	// The second connection completes its TCP handshake in the backlog,
	// but is not accepted, so its request is not answered...
	second := dial(t, ts.addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	corr := second.send(req, "ok")
	if _, err := second.readFrame(100 * time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("second connection answered or closed while at max.connections: %v", err)
	}
	ts.logs.requireContains(t, "max.connections reached")

	// ...until the first one closes.
	first.nc.Close()
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	if got := second.recv(resp); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
}

func TestShutdownFinishesInFlightRequest(t *testing.T) {
	ts := startServer(t, Config{})
	idle := dial(t, ts.addr)
	idle.roundTrip()

	busy := dial(t, ts.addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	corr := busy.send(req, idSlow)
	waitFor(t, ts.h.slowStarted)

	shutdownErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shutdownErr <- ts.Shutdown(ctx)
	}()

	idle.expectClosed()
	if nc, err := net.DialTimeout("tcp", ts.addr, time.Second); err == nil {
		nc.Close()
		t.Fatal("listener still accepting during shutdown")
	}
	select {
	case err := <-shutdownErr:
		t.Fatalf("Shutdown returned (%v) with a request in flight", err)
	default:
	}

	close(ts.h.release)
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(12)
	if got := busy.recv(resp); got != corr {
		t.Fatalf("in-flight response correlation id %d, want %d", got, corr)
	}
	busy.expectClosed()
	if err := waitFor(t, shutdownErr); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := waitFor(t, ts.serveCh); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	ts.serveCh <- nil // for the cleanup's Serve check
}

func TestShutdownDeadlineCancelsHandlers(t *testing.T) {
	ts := startServer(t, Config{})
	busy := dial(t, ts.addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	busy.send(req, idSlow)
	waitFor(t, ts.h.slowStarted)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := ts.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want deadline exceeded", err)
	}
	if err := waitFor(t, ts.h.slowCtxErr); !errors.Is(err, context.Canceled) {
		t.Fatalf("handler context error %v, want canceled", err)
	}
	busy.expectClosed()
	if err := waitFor(t, ts.serveCh); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	ts.serveCh <- nil
}

func TestServeStopsWhenContextEnds(t *testing.T) {
	s := New(Config{Addr: "127.0.0.1:0", Logger: discardLogger()}, newFakeHandler())
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	c := dial(t, s.Addr().String())
	c.roundTrip()
	cancel()
	c.expectClosed()
	if err := waitFor(t, served); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if err := s.Serve(context.Background()); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after stop = %v, want ErrServerClosed", err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown after Serve returned: %v", err)
	}
}

func TestConnectionAndByteMetrics(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	frame, _ := c.frame(req, "ok")
	c.write(frame)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	c.recv(resp)
	respFrame := len(resp.AppendTo(nil)) + 4 /* size */ + 4 /* correlation id */

	listener := map[string]string{"listener": "PLAINTEXT"}
	if got := ts.metric(t, "kafka_server_socket_server_metrics_incoming_byte_total", listener); got != float64(len(frame)) {
		t.Errorf("incoming bytes %v, want %d", got, len(frame))
	}
	// The server counts a response after its write returns, which may be
	// after the client has read it.
	ts.waitMetric(t, "kafka_server_socket_server_metrics_outgoing_byte_total", listener, float64(respFrame))
	if got := ts.metric(t, "kafka_server_socket_server_metrics_connection_count", listener); got != 1 {
		t.Errorf("connection count %v, want 1", got)
	}
	c.nc.Close()
	ts.waitMetric(t, "kafka_server_socket_server_metrics_connection_count", listener, 0)
	if got := ts.metric(t, "kafka_server_socket_server_metrics_connection_close_total", listener); got != 1 {
		t.Errorf("connections closed %v, want 1", got)
	}
}

// waitMetric polls until the series has value want, failing after 5 seconds.
func (ts *testServer) waitMetric(t *testing.T, name string, labels map[string]string, want float64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := ts.metric(t, name, labels)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v = %v, want %v", name, labels, got, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitFor receives from ch, failing the test after 5 seconds.
func waitFor[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting")
	}
	var zero T
	return zero
}
