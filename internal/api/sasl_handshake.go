package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/server"
)

// SaslHandshake, versions 0-1. After a v0 handshake the SASL tokens follow
// as bare size-prefixed frames outside Kafka's framing (KIP-43), which the
// connection's session serves (auth's saslConn); v1 clients use
// SaslAuthenticate. It chooses
// the mechanism of a SASL listener's connection, or of its
// re-authentication (KIP-368), and answers the listener's mechanisms; an
// unsupported mechanism is UNSUPPORTED_SASL_MECHANISM and the connection is
// closed after the answer. On a PLAINTEXT or SSL listener, or out of turn,
// it is ILLEGAL_SASL_STATE.
func init() { register(kmsg.SASLHandshake.Int16(), 0, 1, handleSaslHandshake) }

func handleSaslHandshake(_ context.Context, _ *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	s, ok := r.Conn.Session.(*auth.Session)
	if !ok {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	e, mechanisms := s.Handshake(r.Version, req.Mechanism)
	if e != nil {
		resp.ErrorCode = e.Code
	}
	resp.SupportedMechanisms = mechanisms
	return resp, nil
}
