package server

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
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
// is negative or above socket.request.max.bytes.
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

// conn is one client connection. Its goroutine (serve) reads a frame,
// handles it and writes the response before reading the next frame, so
// responses leave in request order and the read and encode buffers can be
// reused.
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
	// out is the reused response buffer.
	out []byte
	// vec is the reused list of pieces of a BulkResponse's frame.
	vec net.Buffers
	// probes are scratch requests, one per key, used to detect trailing
	// bytes. They are decoded with unsafe strings into frame, so they are
	// dropped whenever frame is replaced.
	probes [kmsg.MaxKey + 1]kmsg.Request

	mu sync.Mutex
	// busy is true from the moment a whole frame has been read until its
	// response is written; Shutdown closes only connections that are not
	// busy and leaves the others to finish.
	busy bool
}

func newConn(s *Server, id uint64, nc net.Conn) *conn {
	info := ConnInfo{ID: id, Remote: nc.RemoteAddr(), Listener: s.cfg.Listener}
	return &conn{
		s:    s,
		nc:   nc,
		info: info,
		log:  s.log.With("conn_id", id, "remote", info.Remote.String()),
		br:   bufio.NewReaderSize(nc, readBufferSize),
		res:  s.pool.Reserve(),
	}
}

func (c *conn) serve() {
	defer c.close()
	c.log.Debug("connection accepted")
	for {
		n, err := c.readFrame()
		if err != nil {
			c.logReadError(err)
			return
		}
		received := time.Now()
		if !c.begin() {
			return
		}
		keep := c.processGuarded(c.frame[:n], received)
		c.res.Release()
		if !c.end() || !keep {
			return
		}
		c.trimBuffers()
	}
}

func (c *conn) close() {
	c.res.Release()
	c.nc.Close()
	c.s.removeConn(c)
	c.log.Debug("connection closed")
}

// begin marks the connection busy; it returns false if the server is
// draining, in which case the request is dropped and the connection closed.
func (c *conn) begin() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s.draining.Load() {
		return false
	}
	c.busy = true
	return true
}

// end marks the connection idle; it returns false if the server is
// draining.
func (c *conn) end() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.busy = false
	return !c.s.draining.Load()
}

// closeIfIdle closes the socket unless a request is being handled.
func (c *conn) closeIfIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.busy {
		c.nc.Close()
	}
}

// readFrame reads the next request frame into c.frame and returns its size.
// The claimed size is checked against socket.request.max.bytes before any
// buffer is sized for it, and the buffer grows as the bytes arrive, each
// step taken from the request memory pool first (which may make the
// connection wait: it stops reading until memory is given back).
func (c *conn) readFrame() (int, error) {
	idle := c.s.cfg.ConnectionsMaxIdle
	if idle > 0 {
		c.nc.SetReadDeadline(time.Now().Add(idle))
	}
	if _, err := io.ReadFull(c.br, c.size[:]); err != nil {
		return 0, err
	}
	size := int32(binary.BigEndian.Uint32(c.size[:]))
	if limit := c.s.cfg.SocketRequestMaxBytes; size < 0 || size > limit {
		return 0, &invalidReceiveError{size: size, limit: limit}
	}
	var deadline time.Time
	if idle > 0 {
		deadline = time.Now().Add(idle)
		c.nc.SetReadDeadline(deadline)
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
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.log.Info("closing idle connection", "connections_max_idle", c.s.cfg.ConnectionsMaxIdle)
	case errors.Is(err, net.ErrClosed) && c.s.draining.Load(), errors.Is(err, errPoolClosed):
		// Closed by Shutdown.
	case errors.Is(err, errPoolTimeout):
		c.log.Warn("closing connection: no request memory became free", "err", err,
			"queued_max_request_bytes", c.s.pool.capacity)
	default:
		c.log.Info("closing connection: read failed", "err", err)
	}
}

// trimBuffers drops buffers grown past retainBufferBytes by a large request
// or response.
func (c *conn) trimBuffers() {
	if cap(c.frame) > retainBufferBytes {
		c.releaseFrame()
	}
	if cap(c.out) > retainBufferBytes {
		b := c.out[:0]
		bigBuffers.Put(&b)
		c.out = nil
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

// bigBuffers holds response buffers too large for a connection to keep, so
// the next large response (on any connection) reuses one instead of
// allocating and growing a new one.
var bigBuffers sync.Pool

// responseBuffer returns c.out with room for at least hint bytes.
func (c *conn) responseBuffer(hint int) []byte {
	if hint <= cap(c.out) {
		return c.out[:0]
	}
	if p, ok := bigBuffers.Get().(*[]byte); ok {
		if cap(*p) >= hint {
			return (*p)[:0]
		}
	}
	return make([]byte, 0, hint)
}

// responseSizeHint estimates the encoded size of responses that carry bulk
// record data, so the encode buffer is sized once instead of grown by
// repeated doubling and copying.
func responseSizeHint(resp kmsg.Response) int {
	f, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return 0
	}
	n := 256
	for i := range f.Topics {
		t := &f.Topics[i]
		n += 64 + len(t.Topic)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			n += 128 + len(p.RecordBatches) + 32*len(p.AbortedTransactions)
		}
	}
	return n
}

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
			return c.answerUnsupportedApiVersions(hdr, minV, maxV, received)
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
	return c.dispatch(req)
}

// dispatch hands a decoded request to the handler and writes its response.
// It returns false when the connection must be closed.
func (c *conn) dispatch(req *Request) bool {
	slot := metricSlot(req.Key, req.Body)
	c.s.metrics.request(slot, req.Version)
	resp, err := c.handle(req)
	if b, ok := resp.(BulkResponse); ok {
		defer b.Release()
	}
	if err != nil {
		if !errors.Is(err, errHandlerPanicked) {
			c.s.metrics.error(reasonHandler)
			c.log.Warn("closing connection: request handler failed",
				"api", kmsg.NameForKey(req.Key), "api_version", req.Version,
				"correlation_id", req.CorrelationID, "err", err)
		}
		return false
	}
	if resp == nil {
		c.s.metrics.observe(slot, time.Since(req.Received))
		return true
	}
	if resp.Key() != req.Key {
		c.s.metrics.error(reasonHandler)
		c.log.Error("closing connection: handler answered with the wrong response type",
			"api", kmsg.NameForKey(req.Key), "response_api", kmsg.NameForKey(resp.Key()),
			"correlation_id", req.CorrelationID)
		return false
	}
	resp.SetVersion(req.Version)
	return c.writeResponse(req.Key, slot, req.CorrelationID, resp, req.Received)
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
func (c *conn) answerUnsupportedApiVersions(hdr requestHeader, minV, maxV int16, received time.Time) bool {
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
	return c.writeResponse(keyApiVersions, keyApiVersions, hdr.correlationID, resp, received)
}

// writeResponse encodes resp into the reused buffer and writes it as one
// frame with one write (a BulkResponse with one vectored write).
func (c *conn) writeResponse(key, slot int16, correlationID int32, resp kmsg.Response, received time.Time) bool {
	c.out = appendResponseHeader(c.responseBuffer(responseSizeHint(resp)), correlationID, responseHeaderV1(key, resp.IsFlexible()))
	if idle := c.s.cfg.ConnectionsMaxIdle; idle > 0 {
		c.nc.SetWriteDeadline(time.Now().Add(idle))
	}
	var n int
	var err error
	if b, ok := resp.(BulkResponse); ok {
		n, err = c.writeBulk(b)
	} else {
		c.out = resp.AppendTo(c.out)
		finishFrame(c.out)
		n, err = c.nc.Write(c.out)
	}
	c.s.metrics.out(n)
	c.s.metrics.observe(slot, time.Since(received))
	if err != nil {
		c.log.Info("closing connection: writing response failed",
			"api", kmsg.NameForKey(key), "correlation_id", correlationID, "err", err)
		return false
	}
	return true
}

// writeBulk finishes the frame begun in c.out with resp's body and writes
// the encoded parts and the bulk data between them: Data pieces with one
// writev, so their bytes are copied once, by the kernel; a Body read into a
// pooled buffer of at most bodyChunk bytes and written piece by piece, its
// first piece in the writev of the parts before it.
func (c *conn) writeBulk(resp BulkResponse) (int, error) {
	var splices []Splice
	c.out, splices = resp.AppendBulk(c.out)
	size, largest := len(c.out)-4, 0
	for _, s := range splices {
		size += s.Size()
		if s.Body != nil {
			largest = max(largest, s.Body.Size())
		}
	}
	kbin.AppendInt32(c.out[:0], int32(size))
	w := bulkWriter{nc: c.nc, vec: c.vec[:0], chunk: min(largest, bodyChunk)}
	prev := 0
	for _, s := range splices {
		w.vec = append(w.vec, c.out[prev:s.At])
		prev = s.At
		if s.Body == nil {
			w.vec = append(w.vec, s.Data)
		} else if err := w.copyBody(s.Body); err != nil {
			w.release()
			return w.n, err
		}
	}
	w.vec = append(w.vec, c.out[prev:])
	err := w.flush()
	w.release()
	c.vec = w.vec[:0]
	return w.n, err
}

// bodyChunk is the most of a Body held in memory at once per connection.
const bodyChunk = 1 << 20

// bodyBuffers are the pieces Bodies are read into, shared by connections.
var bodyBuffers = bufpool.New(16<<10, bodyChunk, 8*bodyChunk)

// bulkWriter gathers the pieces of one bulk response frame.
type bulkWriter struct {
	nc    net.Conn
	vec   net.Buffers
	chunk int    // size of the body buffer: the largest body, at most bodyChunk
	buf   []byte // the pooled body buffer, once one is needed
	n     int
}

// flush writes the gathered pieces with one writev.
func (w *bulkWriter) flush() error {
	pieces := w.vec // WriteTo consumes its receiver
	n, err := pieces.WriteTo(w.nc)
	w.n += int(n)
	clear(w.vec) // keep no reference to buffers the response releases
	w.vec = w.vec[:0]
	return err
}

// copyBody writes b after the gathered pieces.
func (w *bulkWriter) copyBody(b Body) error {
	size := b.Size()
	if w.buf == nil && size > 0 {
		w.buf = bodyBuffers.Get(w.chunk)[:w.chunk]
	}
	for off := 0; off < size; {
		p := w.buf[:min(len(w.buf), size-off)]
		if n, err := b.ReadAt(p, int64(off)); n < len(p) {
			return fmt.Errorf("reading %d bytes at %d of a %d-byte response body: %w", len(p), off, size, cmp.Or(err, io.ErrUnexpectedEOF))
		}
		w.vec = append(w.vec, p)
		if err := w.flush(); err != nil {
			return err
		}
		off += len(p)
	}
	return nil
}

// release returns the body buffer to the pool.
func (w *bulkWriter) release() {
	if w.buf != nil {
		bodyBuffers.Put(w.buf[:0])
		w.buf = nil
	}
	clear(w.vec)
}
