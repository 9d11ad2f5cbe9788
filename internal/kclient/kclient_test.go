package kclient

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/server"
)

// echo answers Metadata with the request's version in the cluster id and
// blocks CreateTopics until release is closed.
type echo struct{ release chan struct{} }

func (echo) Versions(key int16) (int16, int16, bool) {
	switch key {
	case kmsg.Metadata.Int16():
		return 0, 13, true
	case kmsg.CreateTopics.Int16():
		return 2, 7, true
	}
	return 0, 0, false
}

func (e echo) Handle(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	switch req := r.Body.(type) {
	case *kmsg.MetadataRequest:
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		resp.ControllerID = int32(req.Version)
		resp.ClusterID = r.ClientID
		return resp, nil
	case *kmsg.CreateTopicsRequest:
		select {
		case <-e.release:
		case <-ctx.Done():
		}
		return req.ResponseKind(), nil
	}
	return nil, errors.New("unexpected")
}

func startServer(t *testing.T, h server.Handler) string {
	t.Helper()
	s := server.New(server.Config{Addr: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)}, h)
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		sctx, c2 := context.WithTimeout(context.Background(), 5*time.Second)
		defer c2()
		s.Shutdown(sctx)
		<-done
	})
	return s.Addr().String()
}

func TestRequestKeepsItsVersion(t *testing.T) {
	addr := startServer(t, echo{})
	p := NewPool(Config{ClientID: "node-7"})
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, v := range []int16{1, 8, 9, 12} { // 9+ are flexible
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		resp, err := p.Request(ctx, addr, req)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		m := resp.(*kmsg.MetadataResponse)
		if m.ControllerID != int32(v) || m.GetVersion() != v {
			t.Errorf("v%d request was served as v%d (response v%d)", v, m.ControllerID, m.GetVersion())
		}
		if v >= 2 && (m.ClusterID == nil || *m.ClusterID != "node-7") {
			t.Errorf("v%d: client id %v", v, m.ClusterID)
		}
	}
	// Sequential requests reuse one connection.
	p.mu.Lock()
	n := len(p.idle[addr])
	p.mu.Unlock()
	if n != 1 {
		t.Errorf("%d idle connections after sequential requests, want 1", n)
	}
}

func TestConcurrentRequestsAndCancel(t *testing.T) {
	e := echo{release: make(chan struct{})}
	addr := startServer(t, e)
	p := NewPool(Config{})
	defer p.Close()

	// A request whose context ends returns at once and its connection is
	// not reused.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	if _, err := p.Request(ctx, addr, req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("blocked request: %v, want a deadline error", err)
	}
	cancel()
	close(e.release)

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			req := kmsg.NewPtrMetadataRequest()
			req.SetVersion(12)
			if _, err := p.Request(ctx, addr, req); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestDialFailureAndClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	p := NewPool(Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := p.Request(ctx, addr, kmsg.NewPtrMetadataRequest()); err == nil {
		t.Fatal("request to a closed port succeeded")
	}
	p.Close()
	if _, err := p.Request(ctx, addr, kmsg.NewPtrMetadataRequest()); !errors.Is(err, ErrClosed) {
		t.Fatalf("request on a closed pool: %v", err)
	}
}

// A caller that reads answers one at a time can hand the same buffer to
// every request: each answer is decoded whole from it, and a buffer too
// small is replaced by one that fits.
func TestRequestReusingDecodesIntoTheGivenBuffer(t *testing.T) {
	addr := startServer(t, echo{})
	p := NewPool(Config{ClientID: "node-7"})
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	buf := make([]byte, 0, 4)
	for i, id := range []string{"first-client", "second"} {
		p.cfg.ClientID = id
		p.f = kmsg.NewRequestFormatter(kmsg.FormatterClientID(id))
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(12)
		resp, next, err := p.RequestReusing(ctx, addr, req, buf)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.(*kmsg.MetadataResponse).ClusterID; got == nil || *got != id {
			t.Fatalf("answer %d: cluster id %v, want %q", i, got, id)
		}
		if i == 0 && cap(next) <= 4 {
			t.Fatalf("a 4-byte buffer came back for a larger answer")
		}
		if i == 1 && &next[:1][0] != &buf[:1][0] {
			t.Fatalf("the second answer was not read into the buffer the first one left")
		}
		buf = next
	}
}

// A peer that restarts closes the connections a pool keeps idle to it; the
// next request goes over a new connection instead of failing with EOF on
// the old one (a follower would otherwise back off
// replica.fetch.backoff.ms after its leader's restart, and the partition
// would take no acks=all write for that long).
func TestRequestAfterThePeerRestartedUsesANewConnection(t *testing.T) {
	serve := func(addr string) func() {
		s := server.New(server.Config{Addr: addr, Logger: slog.New(slog.DiscardHandler)}, echo{})
		if err := s.Listen(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.Serve(ctx) }()
		return func() {
			cancel()
			sctx, c2 := context.WithTimeout(context.Background(), 5*time.Second)
			defer c2()
			s.Shutdown(sctx)
			<-done
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stop := serve(addr)
	p := NewPool(Config{ClientID: "node-7"})
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.Request(ctx, addr, kmsg.NewPtrMetadataRequest()); err != nil {
		t.Fatal(err)
	}
	stop()
	defer serve(addr)()
	if _, err := p.Request(ctx, addr, kmsg.NewPtrMetadataRequest()); err != nil {
		t.Fatalf("the first request after the peer restarted: %v", err)
	}
}
