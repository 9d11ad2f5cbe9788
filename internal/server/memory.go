package server

import (
	"errors"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// MemoryPool bounds the bytes held for requests across a broker's
// connections: queued.max.request.bytes, Kafka's MemoryPool. A connection
// takes memory for a frame as the frame's bytes arrive (Reservation.Grow)
// and gives it back once the request is answered; while the pool is
// exhausted a connection that needs more stops reading (Kafka mutes it)
// until memory is given back.
//
// The first bytes of every frame (Take) are counted but never waited for,
// so the pool bounds the growth of large frames and small requests keep
// flowing while large ones wait; Kafka makes every request wait.
//
// Kafka lets a request through when the pool is not yet exhausted, even if
// it takes the pool below zero, so one request larger than the pool still
// proceeds. Gregor grows a frame's memory with its bytes instead of taking
// the size its header announces at once (a client announcing 100 MiB and
// sending nothing holds nothing), so the same guarantee takes another form:
// when the pool is exhausted one reservation, the overdraft, may keep
// growing past the capacity until its request is answered. So the bytes
// held never exceed the capacity plus one frame (socket.request.max.bytes)
// plus the first bytes of the frames being read, and some request can
// always be read to its end: partial frames that have filled the pool
// cannot wait on each other forever.
//
// A pool with a capacity of zero or less counts but never waits (Kafka's
// -1, no limit). Safe for concurrent use.
type MemoryPool struct {
	capacity int64

	mu   sync.Mutex
	used int64
	// overdraft is the reservation allowed past the capacity, nil if none.
	overdraft *Reservation
	// freed is closed (and replaced) when memory is given back while
	// connections wait.
	freed   chan struct{}
	waiting int
}

// NewMemoryPool returns a pool of capacity bytes; capacity <= 0 is
// unbounded.
func NewMemoryPool(capacity int64) *MemoryPool {
	return &MemoryPool{capacity: capacity}
}

// Bounded reports whether the pool has a capacity.
func (p *MemoryPool) Bounded() bool { return p.capacity > 0 }

// Used is the bytes held by reservations now.
func (p *MemoryPool) Used() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

// Available is the capacity left, which is negative while the overdraft
// holds more than the pool had left; math.MaxInt64 for an unbounded pool,
// as Kafka reports it.
func (p *MemoryPool) Available() int64 {
	if !p.Bounded() {
		return math.MaxInt64
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.capacity - p.used
}

// errPoolClosed is returned by Grow when stop is closed while it waits.
var errPoolClosed = errors.New("server shutting down while waiting for request memory")

// errPoolTimeout is returned by Grow when the deadline passes while it waits.
var errPoolTimeout = errors.New("no request memory (queued.max.request.bytes) free before the connection's idle timeout")

// Reservation is the memory one request frame holds in a pool. The zero
// Reservation is not usable; take one with Reserve. Its methods are called
// from one goroutine.
type Reservation struct {
	pool *MemoryPool
	n    int64
	over bool // r is the pool's overdraft
}

// Reserve returns an empty reservation on p.
func (p *MemoryPool) Reserve() Reservation { return Reservation{pool: p} }

// Size is the bytes r holds.
func (r *Reservation) Size() int64 { return r.n }

// Grow adds n bytes to r. When the pool has no room it calls onWait (if
// not nil) and waits until memory is given back, stop is closed
// (errPoolClosed) or deadline passes (errPoolTimeout; a zero deadline waits
// without one). waited reports whether it had to wait.
func (r *Reservation) Grow(n int64, stop <-chan struct{}, deadline time.Time, onWait func()) (waited bool, err error) {
	if n <= 0 {
		return false, nil
	}
	p := r.pool
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		p.mu.Lock()
		if p.tryGrowLocked(r, n) {
			p.mu.Unlock()
			return waited, nil
		}
		if p.freed == nil {
			p.freed = make(chan struct{})
		}
		freed := p.freed
		p.waiting++
		p.mu.Unlock()
		if !waited && onWait != nil {
			onWait()
		}
		waited = true
		var expired <-chan time.Time
		if !deadline.IsZero() {
			if timer == nil {
				timer = time.NewTimer(time.Until(deadline))
			}
			expired = timer.C
		}
		select {
		case <-freed:
			err = nil
		case <-stop:
			err = errPoolClosed
		case <-expired:
			err = errPoolTimeout
		}
		p.mu.Lock()
		p.waiting--
		p.mu.Unlock()
		if err != nil {
			return waited, err
		}
	}
}

// Take adds n bytes to r without waiting, even past the capacity: for the
// first bytes of every frame, which a connection may always hold (the
// capacity then bounds the growth of larger frames).
func (r *Reservation) Take(n int64) {
	p := r.pool
	p.mu.Lock()
	p.used += n
	r.n += n
	p.mu.Unlock()
}

// tryGrowLocked grants n bytes to r if the rules allow. p.mu is held.
func (p *MemoryPool) tryGrowLocked(r *Reservation, n int64) bool {
	switch {
	case p.capacity <= 0, p.used+n <= p.capacity, p.overdraft == r:
	case p.overdraft == nil:
		p.overdraft, r.over = r, true
	default:
		return false
	}
	p.used += n
	r.n += n
	return true
}

// Release gives back everything r holds (and the overdraft, if r held it)
// and wakes connections waiting for memory. r may be grown again after.
func (r *Reservation) Release() {
	p := r.pool
	if p == nil || (r.n == 0 && !r.over) {
		return
	}
	p.mu.Lock()
	p.used -= r.n
	r.n = 0
	if r.over {
		p.overdraft, r.over = nil, false
	}
	if p.waiting > 0 && p.freed != nil {
		close(p.freed)
		p.freed = nil
	}
	p.mu.Unlock()
}

// The pool's gauges, named as Kafka's SocketServer gauges.
var (
	descPoolAvailable = prometheus.NewDesc("kafka_network_socketserver_memorypoolavailable",
		"Request memory left in the pool (queued.max.request.bytes); negative while the one request allowed past it holds more.", nil, nil)
	descPoolUsed = prometheus.NewDesc("kafka_network_socketserver_memorypoolused",
		"Bytes of request frames held, from their first byte read until they are answered.", nil, nil)
)

// Collector returns the pool's gauges, read at scrape time.
func (p *MemoryPool) Collector() prometheus.Collector { return (*poolCollector)(p) }

type poolCollector MemoryPool

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descPoolAvailable
	ch <- descPoolUsed
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	p := (*MemoryPool)(c)
	ch <- prometheus.MustNewConstMetric(descPoolAvailable, prometheus.GaugeValue, float64(p.Available()))
	ch <- prometheus.MustNewConstMetric(descPoolUsed, prometheus.GaugeValue, float64(p.Used()))
}
