package server

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

func TestMemoryPoolRules(t *testing.T) {
	p := NewMemoryPool(100)
	a, b, c := p.Reserve(), p.Reserve(), p.Reserve()
	grow := func(r *Reservation, n int64) error {
		_, err := r.Grow(n, nil, time.Now().Add(20*time.Millisecond), nil)
		return err
	}
	if err := grow(&a, 60); err != nil {
		t.Fatal(err)
	}
	// Past the capacity: the first to ask takes the overdraft, however much.
	if err := grow(&b, 500); err != nil || p.Used() != 560 || p.Available() != -460 {
		t.Fatalf("overdraft: %v, used %d, available %d", err, p.Used(), p.Available())
	}
	if err := grow(&b, 10); err != nil {
		t.Fatalf("the overdraft holder must keep growing: %v", err)
	}
	// Anyone else waits, however little they ask.
	if err := grow(&c, 1); !errors.Is(err, errPoolTimeout) {
		t.Fatalf("a second reservation past the capacity: %v, want a wait that times out", err)
	}
	stop := make(chan struct{})
	close(stop)
	if _, err := c.Grow(1, stop, time.Time{}, nil); !errors.Is(err, errPoolClosed) {
		t.Fatalf("waiting on a closed stop channel: %v", err)
	}
	// Giving the overdraft back lets the others in, within the capacity.
	done := make(chan error, 1)
	waits := 0
	go func() {
		_, err := c.Grow(40, nil, time.Time{}, func() { waits++ })
		done <- err
	}()
	b.Release()
	if err := <-done; err != nil || p.Used() != 100 || waits > 1 {
		t.Fatalf("after the overdraft was given back: %v, used %d, %d waits counted", err, p.Used(), waits)
	}
	a.Release()
	c.Release()
	if p.Used() != 0 {
		t.Fatalf("%d bytes left after every reservation was released", p.Used())
	}

	// Unbounded: counts, never waits.
	u := NewMemoryPool(-1)
	r := u.Reserve()
	if waited, err := r.Grow(1<<40, nil, time.Time{}, nil); waited || err != nil || u.Used() != 1<<40 {
		t.Fatalf("unbounded pool: waited %v, %v, used %d", waited, err, u.Used())
	}
}

// Frames growing step by step as their bytes arrive, some larger than the
// pool, all complete however they interleave, and the pool never holds
// more than its capacity, one frame and the first bytes of the others.
func TestMemoryPoolAlwaysProgresses(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	const capacity, maxFrame = 1 << 20, 3 << 20
	p := NewMemoryPool(capacity)
	var mu sync.Mutex
	var peak int64
	var wg sync.WaitGroup
	for i := range 32 {
		size := 1 + rng.IntN(maxFrame)
		frameRng := rand.New(rand.NewPCG(seed, uint64(i)+2))
		wg.Go(func() {
			r := p.Reserve()
			defer r.Release()
			r.Take(int64(min(size, firstFrameStep)))
			for want := min(size, firstFrameStep); ; want = frameStep(want, size) {
				if _, err := r.Grow(int64(want)-r.Size(), nil, time.Now().Add(20*time.Second), nil); err != nil {
					t.Errorf("a %d-byte frame at %d bytes: %v", size, want, err)
					return
				}
				mu.Lock()
				peak = max(peak, p.Used())
				mu.Unlock()
				if frameRng.IntN(4) == 0 {
					time.Sleep(time.Duration(frameRng.IntN(200)) * time.Microsecond) // the client is slow
				}
				if want == size {
					break
				}
			}
		})
	}
	wg.Wait()
	if limit := int64(capacity + maxFrame + 31*firstFrameStep); peak > limit {
		t.Fatalf("the pool held %d bytes, more than its capacity, one frame and the others' first bytes (%d)", peak, limit)
	}
	if p.Used() != 0 {
		t.Fatalf("%d bytes left", p.Used())
	}
}
