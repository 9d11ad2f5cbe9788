// Package clock injects time so tests can run an hour of retention in a
// millisecond. Production code takes a Clock; tests pass a *Fake.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d; Stop cancels it.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a cancellable timer made by a Clock.
type Timer interface {
	Stop() bool
}

// NewTimer returns a channel that receives the time once d has passed on c
// (as time.NewTimer does on the wall clock) and the Timer that cancels it.
func NewTimer(c Clock, d time.Duration) (<-chan time.Time, Timer) {
	ch := make(chan time.Time, 1)
	t := c.AfterFunc(d, func() { ch <- c.Now() })
	return ch, t
}

// Real is the wall clock.
type Real struct{}

func (Real) Now() time.Time { return time.Now() }

func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Fake is a manually advanced clock. Timers fire during Advance, in due order.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

// NewFake returns a Fake set to t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// Pending is the number of timers waiting to fire, so a test can advance
// the clock only once the code under test is waiting on it.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Advance moves the clock forward by d, running every timer that comes due,
// each synchronously and in order of its deadline.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	for {
		var next *fakeTimer
		idx := -1
		for i, t := range c.timers {
			if !t.at.After(end) && (next == nil || t.at.Before(next.at)) {
				next, idx = t, i
			}
		}
		if next == nil {
			break
		}
		c.timers = append(c.timers[:idx], c.timers[idx+1:]...)
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
		c.mu.Lock()
	}
	c.now = end
	c.mu.Unlock()
}

type fakeTimer struct {
	c  *Fake
	at time.Time
	f  func()
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, x := range t.c.timers {
		if x == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			return true
		}
	}
	return false
}
