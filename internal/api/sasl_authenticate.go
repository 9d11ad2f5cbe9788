package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/server"
)

// SaslAuthenticate, versions 0-2 (v1 adds SessionLifetimeMs, KIP-368; v2
// is flexible). It steps the connection's SASL exchange: the server's bytes,
// and once authenticated the session lifetime; a failure is
// SASL_AUTHENTICATION_FAILED (or ILLEGAL_SASL_STATE) with Kafka's message,
// and the connection is closed after the answer. On a PLAINTEXT or SSL
// listener, or after authentication, it is ILLEGAL_SASL_STATE.
func init() { register(kmsg.SASLAuthenticate.Int16(), 0, 2, handleSaslAuthenticate) }

func handleSaslAuthenticate(_ context.Context, _ *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	s, ok := r.Conn.Session.(*auth.Session)
	if !ok {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = strp("SaslAuthenticate request received after successful authentication")
		return resp, nil
	}
	out, lifetime, se := s.Authenticate(r.Version, req.SASLAuthBytes)
	if se != nil {
		resp.ErrorCode = se.Err.Code
		resp.ErrorMessage = strp(se.Message)
		return resp, nil
	}
	resp.SASLAuthBytes = out
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	resp.SessionLifetimeMillis = lifetime
	return resp, nil
}
