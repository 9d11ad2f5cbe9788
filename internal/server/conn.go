package server

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/bufpool"
)

const (
	// readBufferSize sizes the bufio.Reader in front of the socket, so that
	// pipelined small requests cost one read syscall.
	readBufferSize = 32 << 10
	// retainBufferBytes is the largest frame or response buffer a
	// connection keeps for reuse; larger ones go back to shared pools after
	// use, so idle connections pin little.
	retainBufferBytes = 64 << 10
	// minFrameBuffer is the smallest frame buffer allocated.
	minFrameBuffer = 4 << 10
	// firstFrameStep is the most of a frame's memory taken before any of
	// its bytes arrive. A frame grows fourfold each time its buffer is full
	// (frameStep), so a client announcing a large frame holds at most four
	// times what it sent (and 64 KiB), and a large produce is copied about a
	// third of its size once.
	firstFrameStep = 64 << 10
)

// frameStep is the buffer size a frame of size bytes grows to from cur.
func frameStep(cur, size int) int { return min(size, 4*cur) }

// invalidReceiveError is Kafka's InvalidReceiveException: a frame size that
// is negative or above socket.request.max.bytes (sasl.server.max.receive.size
// while the connection authenticates).
type invalidReceiveError struct{ size, limit int32 }

func (e *invalidReceiveError) Error() string {
	if e.size < 0 {
		return fmt.Sprintf("invalid receive (size = %d)", e.size)
	}
	return fmt.Sprintf("invalid receive (size = %d larger than %d)", e.size, e.limit)
}

// errHandlerPanicked is returned by conn.handle after a recovered panic,
// which has already been logged.
var errHandlerPanicked = errors.New("request handler panicked")

// conn is one client connection. Its reader goroutine (serve) reads a
// frame, decodes it and hands it to the Handler, then reads the next while
// earlier requests wait (for an fsync, for data to fetch); its writer
// goroutine (writeLoop) writes the responses in request order. See
// pipeline.go.
type conn struct {
	s    *Server
	nc   net.Conn
	info ConnInfo
	log  *slog.Logger

	br   *bufio.Reader
	size [4]byte
	// frame holds the request being read or handled; decoded request
	// bodies alias it until Handle returns. It is small, the connection's
	// own buffer of at most retainBufferBytes kept between requests, or a
	// larger one from bigFrames for one request.
	frame, small []byte
	// res is the request memory (queued.max.request.bytes) the frame being
	// read or handled holds.
	res Reservation
	// probes are scratch requests, one per key, used to detect trailing
	// bytes. They are decoded with unsafe strings into frame, so they are
	// dropped whenever frame is replaced.
	probes [kmsg.MaxKey + 1]kmsg.Request

	// pipe holds the requests in flight; writerDone is closed when the
	// writer goroutine has ended.
	pipe       *pipeline
	writerDone chan struct{}

	// out is the reused response buffer and vec the reused list of pieces
	// of a BulkResponse's frame: the writer's, or the reader's while
	// nothing is in flight (pipeline.push).
	out []byte
	vec net.Buffers
	// sock is the socket's raw connection for sendfile(2), nil when the
	// connection is not a plaintext TCP one.
	sock syscall.RawConn
	// gate is the session's AuthGate, nil when it has none.
	gate AuthGate

	stopMu sync.Mutex
	// stopping is set by Shutdown: the reader reads no further request.
	stopping bool
}

func newConn(s *Server, id uint64, nc net.Conn) *conn {
	info := ConnInfo{ID: id, Remote: nc.RemoteAddr(), Listener: s.cfg.Listener}
	c := &conn{
		s:          s,
		nc:         nc,
		info:       info,
		log:        s.log.With("conn_id", id, "remote", info.Remote.String()),
		br:         bufio.NewReaderSize(nc, readBufferSize),
		res:        s.pool.Reserve(),
		pipe:       newPipeline(s.cfg.MaxInflightRequests),
		writerDone: make(chan struct{}),
	}
	tc, _ := nc.(*net.TCPConn)
	if p, ok := nc.(PlainSocket); ok {
		tc = p.PlainSocket()
	}
	if tc != nil && sendfileSupported {
		c.sock, _ = tc.SyscallConn()
	}
	return c
}

func (c *conn) serve() {
	defer c.close()
	go c.writeLoop()
	c.log.Debug("connection accepted")
	for {
		limit := c.s.cfg.SocketRequestMaxBytes
		if c.gate != nil {
			if maxFrame, authenticating := c.gate.Authenticating(); authenticating {
				if !c.pipe.waitForIdle() {
					return
				}
				limit = min(limit, maxFrame)
			}
		}
		if !c.pipe.waitForRoom(c.s.cfg.MaxInflightBytes) {
			return
		}
		n, err := c.readFrame(limit)
		if err != nil {
			c.logReadError(err)
			return
		}
		received := time.Now()
		if c.isStopping() {
			// Shutdown began while the frame was read: it is not handled,
			// and the connection closes once the requests before it are
			// answered.
			return
		}
		keep := c.processGuarded(c.frame[:n], received)
		c.res.Release()
		if !keep {
			return
		}
		c.trimFrame()
	}
}

// close ends the connection once the writer has answered (or, after a
// failure, finished) every request in flight: the reader has stopped, so
// no response is lost silently.
func (c *conn) close() {
	c.res.Release()
	c.pipe.setReaderDone()
	<-c.writerDone
	c.nc.Close()
	c.s.removeConn(c)
	c.log.Debug("connection closed")
}

// errStopping is returned by readFrame once Shutdown has begun.
var errStopping = errors.New("server shutting down")

// stopReading makes the reader read no further request (Shutdown): a read
// under way fails at once, and the connection closes after answering what
// is in flight.
func (c *conn) stopReading() {
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	c.stopping = true
	c.nc.SetReadDeadline(time.Unix(1, 0))
}

func (c *conn) isStopping() bool {
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	return c.stopping
}

// armRead sets the read deadline (zero: none) unless the reader is
// stopping, which a deadline set here must not undo.
func (c *conn) armRead(deadline time.Time) error {
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	if c.stopping {
		return errStopping
	}
	return c.nc.SetReadDeadline(deadline)
}

// readFrame reads the next request frame into c.frame and returns its size.
// The claimed size is checked against limit (socket.request.max.bytes, or
// less while the connection authenticates) before any
// buffer is sized for it, and the buffer grows as the bytes arrive, each
// step taken from the request memory pool first (which may make the
// connection wait: it stops reading until memory is given back).
func (c *conn) readFrame(limit int32) (int, error) {
	idle := c.s.cfg.ConnectionsMaxIdle
	var deadline time.Time
	if idle > 0 {
		deadline = time.Now().Add(idle)
	}
	if err := c.armRead(deadline); err != nil {
		return 0, err
	}
	if _, err := io.ReadFull(c.br, c.size[:]); err != nil {
		return 0, err
	}
	size := int32(binary.BigEndian.Uint32(c.size[:]))
	if size < 0 || size > limit {
		return 0, &invalidReceiveError{size: size, limit: limit}
	}
	if idle > 0 {
		deadline = time.Now().Add(idle)
		if err := c.armRead(deadline); err != nil {
			return 0, err
		}
	}
	want := min(int(size), firstFrameStep)
	c.res.Take(int64(want))
	if err := c.growFrame(want, 0, deadline); err != nil {
		return 0, err
	}
	for got := 0; got < int(size); {
		if got == want {
			want = frameStep(want, int(size))
			if err := c.growFrame(want, got, deadline); err != nil {
				return 0, err
			}
		}
		n, err := c.br.Read(c.frame[got:want])
		got += n
		if err != nil && got < int(size) {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, fmt.Errorf("reading %d-byte request frame (%d bytes read): %w", size, got, err)
		}
	}
	c.s.metrics.in(4 + int(size))
	return int(size), nil
}

// growFrame makes room in c.frame for want bytes of the frame, keeping the
// got bytes read so far, after taking the memory from the pool. The first
// firstFrameStep bytes are taken before (Take), never waited for: the small
// requests that keep clients alive (heartbeats, fetches, metadata) are not
// held up by large frames filling the pool.
func (c *conn) growFrame(want, got int, deadline time.Time) error {
	if more := int64(want) - c.res.Size(); more > 0 {
		waited, err := c.res.Grow(more, c.s.drained, deadline, c.s.metrics.memoryWait)
		if err != nil {
			return err
		}
		if waited {
			c.log.Debug("request memory given back; reading on", "frame_bytes", want)
		}
	}
	if want <= cap(c.frame) {
		c.frame = c.frame[:cap(c.frame)]
		return nil
	}
	if want <= retainBufferBytes {
		buf := make([]byte, max(want, minFrameBuffer))
		copy(buf, c.frame[:got])
		c.releaseFrame()
		c.frame, c.small = buf, buf
		return nil
	}
	// A large frame (a big produce) comes from the shared pool and goes
	// back to it after the request, uncleared: allocating it fresh would
	// clear megabytes the read overwrites anyway.
	buf := bigFrames.Get(want)
	buf = buf[:cap(buf)]
	copy(buf, c.frame[:got])
	c.releaseFrame()
	c.frame = buf
	return nil
}

func (c *conn) logReadError(err error) {
	var invalid *invalidReceiveError
	switch {
	case errors.As(err, &invalid):
		c.s.metrics.error(reasonInvalidReceive)
		c.log.Warn("closing connection: invalid request frame size",
			"size", invalid.size, "limit", invalid.limit, "err", err)
	case errors.Is(err, io.EOF):
		// The client closed the connection between requests.
	case errors.Is(err, errStopping), errors.Is(err, errPoolClosed),
		errors.Is(err, os.ErrDeadlineExceeded) && c.isStopping(),
		errors.Is(err, net.ErrClosed) && (c.s.draining.Load() || c.pipe.isBroken()):
		// Stopped by Shutdown, or closed by the writer after a failure.
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.log.Info("closing idle connection", "connections_max_idle", c.s.cfg.ConnectionsMaxIdle)
	case errors.Is(err, errPoolTimeout):
		c.log.Warn("closing connection: no request memory became free", "err", err,
			"queued_max_request_bytes", c.s.pool.capacity)
	default:
		c.log.Info("closing connection: read failed", "err", err)
	}
}

// trimFrame drops a frame buffer grown past retainBufferBytes by a large
// request.
func (c *conn) trimFrame() {
	if cap(c.frame) > retainBufferBytes {
		c.releaseFrame()
	}
}

// releaseFrame gives a large frame buffer back to bigFrames and goes back
// to the connection's small one. The decoded requests cached in probes point
// into the frame, so they go with it.
func (c *conn) releaseFrame() {
	if cap(c.frame) > retainBufferBytes {
		bigFrames.Put(c.frame)
	}
	c.frame = c.small
	c.probes = [kmsg.MaxKey + 1]kmsg.Request{}
}

// bigFrames holds request frame buffers above retainBufferBytes between
// requests, on any connection, up to 64 MiB of them; frames above 128 MiB
// (socket.request.max.bytes allows that only if raised) are not kept.
var bigFrames = bufpool.New(2*retainBufferBytes, 128<<20, 64<<20)

// processGuarded runs process, turning a panic in the framing code or the
// kmsg decoders into a closed connection rather than a dead broker.
func (c *conn) processGuarded(frame []byte, received time.Time) (keep bool) {
	defer func() {
		if r := recover(); r != nil {
			c.s.metrics.error(reasonPanic)
			c.log.Error("panic while processing request; closing connection",
				"panic", r, "stack", string(debug.Stack()))
			keep = false
		}
	}()
	return c.process(frame, received)
}

// process decodes one frame and dispatches it, or answers an unsupported
// ApiVersions version itself. It returns false when the connection must be
// closed.
func (c *conn) process(frame []byte, received time.Time) bool {
	key, version, ok := peekKeyVersion(frame)
	if !ok {
		c.s.metrics.error(reasonDecode)
		c.log.Warn("closing connection: request header truncated", "frame_size", len(frame))
		return false
	}
	body := kmsg.RequestForKey(key)
	var minV, maxV int16
	served := false
	if body != nil {
		minV, maxV, served = c.s.h.Versions(key)
	}
	if !served {
		c.s.metrics.error(reasonUnknownAPIKey)
		c.log.Warn("closing connection: unknown or disabled api key",
			"api_key", key, "api_version", version)
		return false
	}
	body.SetVersion(version)
	hdr, rest, err := parseRequestHeader(frame, body.IsFlexible())
	if err != nil {
		c.s.metrics.error(reasonDecode)
		c.log.Warn("closing connection: cannot parse request header",
			"api", kmsg.NameForKey(key), "api_key", key, "api_version", version, "err", err)
		return false
	}
	if version < minV || version > maxV || version > body.MaxVersion() {
		c.s.metrics.error(reasonUnsupportedVersion)
		if key == keyApiVersions {
			return c.answerUnsupportedApiVersions(frame, hdr, minV, maxV, received)
		}
		c.log.Warn("closing connection: unsupported api version",
			"api", kmsg.NameForKey(key), "api_key", key, "api_version", version,
			"min_version", minV, "max_version", maxV, "correlation_id", hdr.correlationID)
		return false
	}
	if err := c.decode(body, rest); err != nil {
		c.s.metrics.error(reasonDecode)
		c.log.Warn("closing connection: cannot decode request",
			"api", kmsg.NameForKey(key), "api_key", key, "api_version", version,
			"correlation_id", hdr.correlationID, "body_size", len(rest), "err", err)
		return false
	}
	req := &Request{
		Key:           key,
		Version:       version,
		CorrelationID: hdr.correlationID,
		ClientID:      hdr.clientID,
		Body:          body,
		Conn:          c.info,
		Received:      received,
	}
	return c.dispatch(req, len(frame))
}

// dispatch hands a decoded request to the handler and queues its response
// behind the requests in flight (or writes it at once when there are none).
// It returns false when the connection must be closed.
func (c *conn) dispatch(req *Request, size int) bool {
	slot := metricSlot(req.Key, req.Body)
	c.s.metrics.request(slot, req.Version)
	called := time.Now()
	c.s.metrics.stage(slot, stageRequestQueue, called.Sub(req.Received))
	resp, err := c.handle(req)
	handled := time.Now()
	c.s.metrics.stage(slot, stageLocal, handled.Sub(called))
	if err != nil {
		if resp != nil {
			c.drop(resp)
		}
		if !errors.Is(err, errHandlerPanicked) {
			c.s.metrics.error(reasonHandler)
			c.log.Warn("closing connection: request handler failed",
				"api", kmsg.NameForKey(req.Key), "api_version", req.Version,
				"correlation_id", req.CorrelationID, "err", err)
		}
		return false
	}
	return c.respond(inflight{key: req.Key, slot: slot, version: req.Version, correlationID: req.CorrelationID,
		received: req.Received, handled: handled, size: size, resp: resp})
}

// respond queues e's response behind the requests in flight, or writes it
// now if there are none and it is complete. A nil response (acks=0
// produce) sends nothing and so waits for nothing.
func (c *conn) respond(e inflight) bool {
	if e.resp == nil {
		c.s.metrics.inflight(c.pipe.inFlight() + 1)
		c.s.metrics.observe(e.slot, time.Since(e.received))
		return true
	}
	_, deferred := e.resp.(Deferred)
	pushed, n := c.pipe.push(e, deferred)
	c.s.metrics.inflight(n)
	if pushed {
		return true
	}
	c.s.metrics.stage(e.slot, stageResponseQueue, 0)
	c.s.metrics.stage(e.slot, stageRemote, 0)
	ok := c.send(e, e.resp)
	c.trimOut()
	return ok
}

// decode reads body into req and rejects bodies with bytes left over.
func (c *conn) decode(req kmsg.Request, body []byte) error {
	if err := req.ReadFrom(body); err != nil {
		return err
	}
	if c.hasTrailingBytes(req.Key(), req.GetVersion(), body) {
		return errors.New("request has trailing bytes after its body")
	}
	return nil
}

// hasTrailingBytes reports whether a body that decoded successfully holds
// bytes past the end of the request. kmsg does not say how much it
// consumed, so the body minus its last byte is decoded again into a scratch
// request: that succeeds exactly when the last byte was not needed.
func (c *conn) hasTrailingBytes(key, version int16, body []byte) bool {
	if len(body) == 0 {
		return false
	}
	p := c.probes[key]
	if p == nil {
		p = kmsg.RequestForKey(key)
		c.probes[key] = p
	}
	p.SetVersion(version)
	short := body[:len(body)-1]
	if u, ok := p.(kmsg.UnsafeReadFrom); ok {
		return u.UnsafeReadFrom(short) == nil
	}
	return p.ReadFrom(short) == nil
}

// handle calls the handler, recovering a panic into errHandlerPanicked.
func (c *conn) handle(req *Request) (resp kmsg.Response, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.s.metrics.error(reasonPanic)
			c.log.Error("panic in request handler; closing connection",
				"api", kmsg.NameForKey(req.Key), "api_key", req.Key, "api_version", req.Version,
				"correlation_id", req.CorrelationID, "panic", r, "stack", string(debug.Stack()))
			resp, err = nil, errHandlerPanicked
		}
	}()
	return c.s.h.Handle(c.s.base, req)
}

// answerUnsupportedApiVersions answers an ApiVersions request whose version
// is not served the way Kafka does (KIP-511): a v0 response with
// UNSUPPORTED_VERSION whose ApiKeys lists only ApiVersions and the version
// range served for it, so the client can retry with a version we know. The
// body is not parsed, as its layout is unknown.
func (c *conn) answerUnsupportedApiVersions(frame []byte, hdr requestHeader, minV, maxV int16, received time.Time) bool {
	c.log.Debug("answering unsupported ApiVersions version with v0 UNSUPPORTED_VERSION",
		"api_version", hdr.version, "min_version", minV, "max_version", maxV)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	key := kmsg.NewApiVersionsResponseApiKey()
	key.ApiKey = keyApiVersions
	key.MinVersion = minV
	key.MaxVersion = maxV
	resp.ApiKeys = append(resp.ApiKeys, key)
	return c.respond(inflight{key: keyApiVersions, slot: keyApiVersions, version: 0,
		correlationID: hdr.correlationID, received: received, handled: received, size: len(frame), resp: resp})
}
