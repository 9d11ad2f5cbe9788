package server

import (
	"context"
	"net"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConnInfo identifies the connection a request arrived on.
type ConnInfo struct {
	// ID is unique among the connections of one Server, never reused.
	ID uint64
	// Remote is the client's address.
	Remote net.Addr
	// Listener is the listener name (Kafka's listener names, e.g. "PLAINTEXT").
	Listener string
	// Session is the connection's security session made by Config.Secure
	// (an *auth.Session), nil without one.
	Session any
}

// PlainSocket is implemented by a connection wrapper (Config.Secure's) that
// writes through to a plaintext TCP socket unchanged, as a SASL_PLAINTEXT
// connection does once authenticated: its FileBodies go out with
// sendfile(2) on that socket, as on a bare TCP connection. A wrapper that
// transforms what it writes (TLS) must not implement it, or return nil.
type PlainSocket interface {
	PlainSocket() *net.TCPConn
}

// AuthGate is implemented by a Session that authenticates in-band (SASL).
// While it authenticates, or re-authenticates (KIP-368), the connection is
// not pipelined: the reader reads a request only once every request before
// it is answered, and only a frame of at most maxFrame bytes
// (sasl.server.max.receive.size), as Kafka's authenticator reads one
// request at a time under that limit. So a request read after a
// SaslAuthenticate is admitted against the state that request left, and an
// unauthenticated client holds one small frame, not a pipeline of large
// ones. Authenticating is called from the connection's reader goroutine,
// the one that calls Handle, between requests.
type AuthGate interface {
	Authenticating() (maxFrame int32, authenticating bool)
}

// Request is one decoded Kafka request.
//
// Body's byte slices (for example a Produce request's record batches) alias
// the connection's read buffer, which is reused for the next request on the
// same connection: they are valid only until Handle returns, also for a
// Deferred response's Finish. A handler that keeps such bytes beyond that
// must copy them. Strings are copies and may be kept.
type Request struct {
	Key, Version  int16
	CorrelationID int32
	// ClientID is nil when the client sent a null client id.
	ClientID *string
	// Body is the decoded request, with its version set.
	Body kmsg.Request
	Conn ConnInfo
	// Received is when the last byte of the request frame was read.
	Received time.Time
}

// Handler serves decoded requests. The Server calls Handle from each
// connection's reader goroutine, one request at a time per connection and in
// request order; calls for different connections run concurrently. A
// response that must wait (for an fsync, for data) is returned as a
// Deferred, finished on the connection's writer goroutine while Handle is
// called for the next requests.
type Handler interface {
	// Versions reports the version range served for key; ok=false for an
	// unknown or unimplemented key. It must be cheap and safe for
	// concurrent use: it is consulted for every request.
	Versions(key int16) (min, max int16, ok bool)
	// Handle answers req. A nil response with nil error means "send
	// nothing" (acks=0 produce). An error closes the connection after it
	// is logged. The response's version is set to req.Version by the
	// Server before encoding.
	Handle(ctx context.Context, req *Request) (kmsg.Response, error)
}

// BulkResponse is a response that carries large byte fields (a Fetch
// response's record batches) the Server writes from where they are, instead
// of copying them into its encode buffer: bytes from the response's own
// buffers, or a Body read while the response is written.
type BulkResponse interface {
	kmsg.Response
	// AppendBulk appends the encoded response body to dst, leaving out the
	// bulk fields' bytes, and says where they go: each Splice's Data
	// belongs at byte At of the returned slice (splices in increasing At).
	// Writing the returned bytes with every Data inserted at its At must
	// give exactly what AppendTo gives.
	AppendBulk(dst []byte) ([]byte, []Splice)
	// Release is called once, after the response has been written or
	// dropped; the Data buffers may be reused from then on.
	Release()
}

// Splice is bulk data inserted into an encoded response at byte At: Data,
// or, when Body is set, Body's bytes.
type Splice struct {
	At   int
	Data []byte
	Body Body
}

// Size is the number of bytes the splice inserts.
func (s Splice) Size() int {
	if s.Body != nil {
		return s.Body.Size()
	}
	return len(s.Data)
}

// Body is bulk data of a known size that the Server reads while it writes
// the response, a piece at a time through a bounded buffer, so the size of
// a response costs no memory (a fetch's record set, read from its segment
// file). A read that fails or comes short closes the connection: the frame's
// size has been sent by then.
type Body interface {
	Size() int
	// ReadAt reads len(p) bytes from byte off of the body (io.ReaderAt).
	ReadAt(p []byte, off int64) (int, error)
}

// FileBody is a Body whose bytes lie in an open file. On a plaintext TCP
// connection the Server sends them with sendfile(2), from the page cache to
// the socket without copying them through the broker; elsewhere (another
// kind of connection, or ok=false) it reads them with ReadAt.
type FileBody interface {
	Body
	// File returns the file and the offset in it of the body's first
	// byte; ok is false when the bytes are in no such file (an in-memory
	// filesystem). The file is only read, at explicit offsets, while the
	// response is written: its own offset is never moved, so it may be
	// shared.
	File() (f *os.File, off int64, ok bool)
}
