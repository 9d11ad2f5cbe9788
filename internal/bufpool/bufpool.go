package bufpool

import (
	"math/bits"
	"sync"
)

// Pool is a set of free buffers by power-of-two capacity.
type Pool struct {
	minShift, maxShift int
	maxHeld            int

	mu   sync.Mutex
	free [][][]byte // free[c]: buffers of capacity 1<<(minShift+c)
	held int        // bytes in free
}

// New returns a Pool of buffers from minSize to maxSize bytes (both rounded
// up to powers of two) that keeps at most maxHeld bytes of free buffers.
func New(minSize, maxSize, maxHeld int) *Pool {
	lo, hi := shiftFor(minSize), shiftFor(maxSize)
	if hi < lo {
		hi = lo
	}
	return &Pool{minShift: lo, maxShift: hi, maxHeld: maxHeld, free: make([][][]byte, hi-lo+1)}
}

func shiftFor(n int) int { return bits.Len(uint(max(n, 1) - 1)) }

// Get returns an empty buffer with room for at least n bytes. A request
// above the pool's maximum size gets a fresh buffer of exactly n that Put
// will not keep.
func (p *Pool) Get(n int) []byte {
	shift := max(shiftFor(n), p.minShift)
	if shift > p.maxShift {
		return make([]byte, 0, n)
	}
	c := shift - p.minShift
	p.mu.Lock()
	if k := len(p.free[c]); k > 0 {
		b := p.free[c][k-1]
		p.free[c][k-1] = nil
		p.free[c] = p.free[c][:k-1]
		p.held -= cap(b)
		p.mu.Unlock()
		return b[:0]
	}
	p.mu.Unlock()
	return make([]byte, 0, 1<<shift)
}

// Put returns a buffer from Get. Buffers of other capacities, and any that
// would keep more than the pool's maximum held bytes, are left to the
// garbage collector.
func (p *Pool) Put(b []byte) {
	size := cap(b)
	shift := bits.Len(uint(size)) - 1
	if size == 0 || size != 1<<shift || shift < p.minShift || shift > p.maxShift {
		return
	}
	p.mu.Lock()
	if p.held+size <= p.maxHeld {
		c := shift - p.minShift
		p.free[c] = append(p.free[c], b[:0])
		p.held += size
	}
	p.mu.Unlock()
}

// Held is the number of bytes of free buffers the pool keeps.
func (p *Pool) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}
