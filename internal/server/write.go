package server

import (
	"cmp"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/bufpool"
)

// bigBuffers holds response buffers too large for a connection to keep, so
// the next large response (on any connection) reuses one instead of
// allocating and growing a new one.
var bigBuffers sync.Pool

// trimOut drops a response buffer grown past retainBufferBytes by a large
// response.
func (c *conn) trimOut() {
	if cap(c.out) > retainBufferBytes {
		b := c.out[:0]
		bigBuffers.Put(&b)
		c.out = nil
	}
}

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

// writeResponse encodes resp into the reused buffer and writes it as one
// frame with one write (a BulkResponse with one vectored write).
func (c *conn) writeResponse(key, slot int16, correlationID int32, resp kmsg.Response, received time.Time) bool {
	start := time.Now()
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
	end := time.Now()
	c.s.metrics.stage(slot, stageResponseSend, end.Sub(start))
	c.s.metrics.observe(slot, end.Sub(received))
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
	w := bulkWriter{nc: c.nc, sock: c.sock, vec: c.vec[:0], chunk: min(largest, bodyChunk)}
	prev := 0
	for _, s := range splices {
		w.vec = append(w.vec, c.out[prev:s.At])
		prev = s.At
		if s.Body == nil {
			w.vec = append(w.vec, s.Data)
		} else if err := w.body(s.Body); err != nil {
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
	sock  syscall.RawConn // for sendfile; nil on a connection that is not plaintext TCP
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

// body writes b after the gathered pieces: with sendfile(2) when b is in
// a file and the connection is plaintext TCP (the gathered pieces are
// written first), else by copying.
func (w *bulkWriter) body(b Body) error {
	if fb, ok := b.(FileBody); ok && w.sock != nil {
		if f, off, ok := fb.File(); ok {
			if err := w.flush(); err != nil {
				return err
			}
			n, err := sendFile(w.sock, f, off, b.Size())
			w.n += n
			return err
		}
	}
	return w.copyBody(b)
}

// copyBody writes b after the gathered pieces, read a piece at a time into
// one pooled buffer: the path of bodies without a file and of connections
// that are not plaintext TCP (TLS, whose records the kernel cannot make).
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
