package kclient

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/gregor-broker/gregor/internal/server"
)

// saslServer accepts PLAIN user "broker" with password "pw", announces
// lifetime as the session lifetime, and records the keys it was sent.
type saslServer struct {
	lifetime int64
	mu       sync.Mutex
	keys     []int16
}

func (s *saslServer) Versions(key int16) (int16, int16, bool) {
	switch key {
	case kmsg.Metadata.Int16():
		return 0, 13, true
	case kmsg.SASLHandshake.Int16():
		return 0, 1, true
	case kmsg.SASLAuthenticate.Int16():
		return 0, 2, true
	}
	return 0, 0, false
}

func (s *saslServer) Handle(_ context.Context, r *server.Request) (kmsg.Response, error) {
	s.mu.Lock()
	s.keys = append(s.keys, r.Body.Key())
	s.mu.Unlock()
	switch req := r.Body.(type) {
	case *kmsg.SASLHandshakeRequest:
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.SupportedMechanisms = []string{"PLAIN"}
		if req.Mechanism != "PLAIN" {
			resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		}
		return resp, nil
	case *kmsg.SASLAuthenticateRequest:
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		if string(req.SASLAuthBytes) != "\x00broker\x00pw" {
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			resp.ErrorMessage = kmsg.StringPtr("Authentication failed: Invalid username or password")
			return resp, nil
		}
		resp.SessionLifetimeMillis = s.lifetime
		return resp, nil
	case *kmsg.MetadataRequest:
		return req.ResponseKind(), nil
	}
	return nil, errors.New("unexpected")
}

func (s *saslServer) taken() []int16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.keys
	s.keys = nil
	return out
}

// TestSASL: a new connection authenticates before its first request and is
// then reused; a connection past 85% of its session lifetime is not reused
// (a new one authenticates); a refused authentication fails the request
// with the broker's error and message.
func TestSASL(t *testing.T) {
	srv := &saslServer{lifetime: 60_000}
	addr := startServer(t, srv)
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	p := NewPool(Config{SASL: plain.Auth{User: "broker", Pass: "pw"}.AsMechanism(),
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	meta := func() {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(12)
		if _, err := p.Request(ctx, addr, req); err != nil {
			t.Fatal(err)
		}
	}
	hs, auth, md := kmsg.SASLHandshake.Int16(), kmsg.SASLAuthenticate.Int16(), kmsg.Metadata.Int16()
	meta()
	meta()
	if got, want := srv.taken(), []int16{hs, auth, md, md}; !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	mu.Lock()
	now = now.Add(50 * time.Second) // below 85% of 60 s
	mu.Unlock()
	meta()
	if got, want := srv.taken(), []int16{md}; !slices.Equal(got, want) {
		t.Errorf("before 85%% of the lifetime: keys %v, want %v", got, want)
	}
	mu.Lock()
	now = now.Add(2 * time.Second) // 52 s > 51 s
	mu.Unlock()
	meta()
	if got, want := srv.taken(), []int16{hs, auth, md}; !slices.Equal(got, want) {
		t.Errorf("past 85%% of the lifetime: keys %v, want %v", got, want)
	}

	bad := NewPool(Config{SASL: plain.Auth{User: "broker", Pass: "nope"}.AsMechanism()})
	defer bad.Close()
	_, err := bad.Request(ctx, addr, kmsg.NewPtrMetadataRequest())
	if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "Invalid username or password") {
		t.Errorf("wrong password: %v", err)
	}
}
