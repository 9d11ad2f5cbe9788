package server

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Defaults of the per-connection pipeline.
const (
	// DefaultMaxInflightRequests is gregor.max.in.flight.requests.per.connection:
	// Kafka clients' own maximum (max.in.flight.requests.per.connection=5
	// with idempotence), so they never wait for the broker's bound.
	DefaultMaxInflightRequests = 5
	// DefaultMaxInflightBytes is gregor.max.in.flight.bytes.per.connection.
	DefaultMaxInflightBytes = 64 << 20
)

// Deferred is a response whose answer is not known when Handle returns: a
// produce waiting for its fsync, a fetch waiting for data. A Handler returns
// it as its kmsg.Response (so it embeds one); the Server reads the next
// requests of the connection meanwhile and calls Finish from the
// connection's writer goroutine when the responses before it have been
// written, so answers still leave in request order.
//
// Finish is called exactly once for every Deferred returned, also when the
// connection is closing and the answer will not be sent: then with a
// cancelled context, and the work it holds (locks, registrations) must
// still be given back.
type Deferred interface {
	// Finish waits for the answer and returns it: the response to send
	// (nil sends nothing), or an error that closes the connection.
	Finish(ctx context.Context) (kmsg.Response, error)
}

// inflight is a request handed to the Handler whose response has not been
// written yet.
type inflight struct {
	key, slot, version int16
	correlationID      int32
	received           time.Time
	// handled is when the Handler returned the response.
	handled time.Time
	// size is the request's frame size, counted in the connection's bytes
	// in flight.
	size int
	// resp is the response, or a Deferred that gives it.
	resp kmsg.Response
}

// pipeline is a connection's requests in flight, oldest first: the reader
// goroutine appends, the writer goroutine answers and removes them.
type pipeline struct {
	mu   sync.Mutex
	cond sync.Cond // broadcast on every change below
	// ring holds the requests in flight from head on, n of them.
	ring    []inflight
	head, n int
	// bytes is the sum of the sizes of the requests in flight.
	bytes int
	// readerDone: the reader appends nothing more; the writer ends once
	// the ring is empty.
	readerDone bool
	// broken: the connection is closed; the writer gives every request
	// left its Finish (cancelled) and the reader stops.
	broken bool
}

func newPipeline(maxRequests int) *pipeline {
	p := &pipeline{ring: make([]inflight, maxRequests)}
	p.cond.L = &p.mu
	return p
}

// waitForRoom blocks while the connection may not read another request:
// while maxRequests requests, or maxBytes bytes of requests, are in flight
// (one request is always allowed). It returns false once the connection is
// broken.
func (p *pipeline) waitForRoom(maxBytes int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.broken && (p.n == len(p.ring) || p.n > 0 && p.bytes >= maxBytes) {
		p.cond.Wait()
	}
	return !p.broken
}

// waitForIdle blocks until no request is in flight, every response
// written; false once the connection is broken.
func (p *pipeline) waitForIdle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.broken && p.n > 0 {
		p.cond.Wait()
	}
	return !p.broken
}

// push appends e, or reports false when nothing is in flight, so the reader
// writes e's response itself (the writer touches nothing while the ring is
// empty). Deferred responses are always pushed. n is how many requests are
// in flight with e.
func (p *pipeline) push(e inflight, deferred bool) (pushed bool, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 && !deferred {
		return false, 1
	}
	p.ring[(p.head+p.n)%len(p.ring)] = e
	p.n++
	p.bytes += e.size
	p.cond.Broadcast()
	return true, p.n
}

// next returns the oldest request in flight, waiting for one; ok is false
// once the reader is done and nothing is left.
func (p *pipeline) next() (e inflight, broken, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.n == 0 && !p.readerDone {
		p.cond.Wait()
	}
	if p.n == 0 {
		return inflight{}, p.broken, false
	}
	return p.ring[p.head], p.broken, true
}

// pop removes the oldest request, once answered.
func (p *pipeline) pop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bytes -= p.ring[p.head].size
	p.ring[p.head] = inflight{}
	p.head = (p.head + 1) % len(p.ring)
	p.n--
	p.cond.Broadcast()
}

// inFlight is how many requests are in flight.
func (p *pipeline) inFlight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func (p *pipeline) setBroken() {
	p.mu.Lock()
	p.broken = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *pipeline) setReaderDone() {
	p.mu.Lock()
	p.readerDone = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

// cancelled is the context Finish gets for a response that will not be
// sent.
var cancelled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// writeLoop is the connection's writer goroutine: it answers the requests
// in flight in order, waiting for each Deferred, until the reader is done
// and nothing is left. After a failed write or answer it closes the socket
// and only finishes (cancelled) the requests left, so nothing they hold is
// kept.
func (c *conn) writeLoop() {
	defer close(c.writerDone)
	for {
		e, broken, ok := c.pipe.next()
		if !ok {
			return
		}
		if broken {
			c.drop(e.resp)
		} else if !c.answer(e) {
			c.pipe.setBroken()
			c.nc.Close()
		}
		c.trimOut()
		c.pipe.pop()
	}
}

// answer finishes e's response and writes it; false when the connection
// must be closed.
func (c *conn) answer(e inflight) bool {
	resp := e.resp
	picked := time.Now()
	c.s.metrics.stage(e.slot, stageResponseQueue, picked.Sub(e.handled))
	if d, ok := resp.(Deferred); ok {
		var err error
		resp, err = c.finish(d, e)
		c.s.metrics.stage(e.slot, stageRemote, time.Since(picked))
		if err != nil {
			if !errors.Is(err, errHandlerPanicked) {
				c.s.metrics.error(reasonHandler)
				c.log.Warn("closing connection: request handler failed",
					"api", kmsg.NameForKey(e.key), "api_version", e.version,
					"correlation_id", e.correlationID, "err", err)
			}
			return false
		}
		if resp == nil {
			c.s.metrics.observe(e.slot, time.Since(e.received))
			return true
		}
	} else {
		c.s.metrics.stage(e.slot, stageRemote, 0)
	}
	return c.send(e, resp)
}

// send checks resp's type and writes it, releasing a BulkResponse after.
func (c *conn) send(e inflight, resp kmsg.Response) bool {
	if b, ok := resp.(BulkResponse); ok {
		defer b.Release()
	}
	if resp.Key() != e.key {
		c.s.metrics.error(reasonHandler)
		c.log.Error("closing connection: handler answered with the wrong response type",
			"api", kmsg.NameForKey(e.key), "response_api", kmsg.NameForKey(resp.Key()),
			"correlation_id", e.correlationID)
		return false
	}
	resp.SetVersion(e.version)
	return c.writeResponse(e.key, e.slot, e.correlationID, resp, e.received)
}

// finish calls d.Finish with the handler context, recovering a panic into
// errHandlerPanicked.
func (c *conn) finish(d Deferred, e inflight) (resp kmsg.Response, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.s.metrics.error(reasonPanic)
			c.log.Error("panic in request handler; closing connection",
				"api", kmsg.NameForKey(e.key), "api_key", e.key, "api_version", e.version,
				"correlation_id", e.correlationID, "panic", r, "stack", string(debug.Stack()))
			resp, err = nil, errHandlerPanicked
		}
	}()
	return d.Finish(c.s.base)
}

// drop gives back what an unsent response holds: a Deferred is finished
// with a cancelled context, a BulkResponse released.
func (c *conn) drop(resp kmsg.Response) {
	if d, ok := resp.(Deferred); ok {
		func() {
			defer func() {
				if r := recover(); r != nil {
					c.log.Error("panic finishing a dropped request", "panic", r, "stack", string(debug.Stack()))
				}
			}()
			resp, _ = d.Finish(cancelled)
		}()
	}
	if b, ok := resp.(BulkResponse); ok {
		b.Release()
	}
}

func (p *pipeline) isBroken() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.broken
}
