package server

import (
	"context"
	"encoding/binary"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeGate is a session that authenticates when a request with client id
// "login" is handled.
type fakeGate struct {
	authed   atomic.Bool
	maxFrame int32
}

func (g *fakeGate) Authenticating() (int32, bool) { return g.maxFrame, !g.authed.Load() }

// gateHandler is a pipeHandler that logs in on "login" and records, for
// each request, how many Deferreds were unfinished when it was handled.
type gateHandler struct {
	*pipeHandler
	pendingAtHandle []int32 // the reader goroutine's only
}

func (h *gateHandler) Handle(ctx context.Context, req *Request) (kmsg.Response, error) {
	h.pendingAtHandle = append(h.pendingAtHandle, h.pending.Load())
	if *req.ClientID == "login" {
		req.Conn.Session.(*fakeGate).authed.Store(true)
		r := *req
		r.ClientID = kmsg.StringPtr("now")
		return h.pipeHandler.Handle(ctx, &r)
	}
	return h.pipeHandler.Handle(ctx, req)
}

// While a session authenticates, its connection is not pipelined: a
// request is read only once the one before it is answered, so a request
// pipelined behind a SASL exchange is admitted against the state the
// exchange left, and a frame above the authentication limit closes the
// connection. Once authenticated, the connection pipelines and takes
// frames up to socket.request.max.bytes.
func TestAuthenticatingConnectionIsNotPipelined(t *testing.T) {
	h := &gateHandler{pipeHandler: newPipeHandler()}
	ts := &testServer{logs: new(logBuffer), serveCh: make(chan error, 1)}
	ts.Server = New(Config{
		Addr: "127.0.0.1:0", Logger: discardLogger(), SocketRequestMaxBytes: 1 << 20, MaxInflightRequests: 4,
		Secure: func(nc net.Conn) (net.Conn, any) { return nc, &fakeGate{maxFrame: 512} },
	}, h)
	if err := ts.Listen(); err != nil {
		t.Fatal(err)
	}
	go func() { ts.serveCh <- ts.Serve(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ts.Shutdown(ctx)
		<-ts.serveCh
	})
	addr := ts.Addr().String()

	// Unauthenticated: a deferred answer and a request behind it. The second
	// is not read while the first waits.
	c := dial(t, addr)
	first := c.send(metadataReq(), "wait:a")
	second := c.send(metadataReq(), "now")
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline) && h.handled.Load() < 2; {
		time.Sleep(time.Millisecond)
	}
	if n := h.handled.Load(); n != 1 {
		t.Fatalf("%d requests handled while the first of an authenticating connection waits, want 1", n)
	}
	h.release("a")
	for _, want := range []int32{first, second} {
		if corr, _ := c.recvMetadata(); corr != want {
			t.Fatalf("answer %d, want %d", corr, want)
		}
	}
	if h.pendingAtHandle[1] != 0 {
		t.Fatalf("the second request was handled with %d answers pending", h.pendingAtHandle[1])
	}

	// Logging in, and a request pipelined right behind the login, before
	// its answer: it is read after the login was handled, so it is
	// admitted as authenticated. After that the connection pipelines.
	login := c.send(metadataReq(), "login")
	wait := c.send(metadataReq(), "wait:b")
	now := c.send(metadataReq(), "now")
	for deadline := time.Now().Add(10 * time.Second); h.handled.Load() < 5; {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests handled, want 5: the authenticated connection does not pipeline", h.handled.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if h.pendingAtHandle[4] != 1 {
		t.Fatalf("after login, a request handled with %d answers pending, want 1 (pipelined)", h.pendingAtHandle[4])
	}
	h.release("b")
	for _, want := range []int32{login, wait, now} {
		if corr, _ := c.recvMetadata(); corr != want {
			t.Fatalf("answer %d, want %d", corr, want)
		}
	}
	// A frame above the authentication limit is accepted now.
	big := metadataReq()
	big.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(string(make([]byte, 2048)))}}
	if corr := c.send(big, "now"); func() int32 { corr, _ := c.recvMetadata(); return corr }() != corr {
		t.Fatal("wrong answer to the large request")
	}

	// Before authentication, the same frame closes the connection unread.
	handled := h.handled.Load()
	c2 := dial(t, addr)
	c2.send(big, "now")
	c2.expectClosed()
	if h.handled.Load() != handled {
		t.Fatal("a frame above the authentication limit was handled")
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], 513)
	c3 := dial(t, addr)
	c3.write(b[:])
	c3.expectClosed()
}
