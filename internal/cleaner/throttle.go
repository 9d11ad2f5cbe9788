package cleaner

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
)

// throttleCheckInterval is how often the I/O rate is measured, as Kafka's
// Throttler does (300 ms).
const throttleCheckInterval = 300 * time.Millisecond

// throttler holds all workers' reads and writes together to
// log.cleaner.io.max.bytes.per.second (Kafka's Throttler): bytes are counted
// per period, and when a period's rate runs above the limit the caller
// sleeps until the average comes back to it. The lock is held while
// sleeping, so every worker waits.
type throttler struct {
	clock clock.Clock
	rate  func() float64

	mu       sync.Mutex
	start    time.Time
	observed float64
	throttle time.Duration // total time spent sleeping (status)
}

func newThrottler(c clock.Clock, rate func() float64) *throttler {
	return &throttler{clock: c, rate: rate, start: c.Now()}
}

// throttleDelay is how long to sleep after observed bytes in elapsed at a
// limit of rate bytes per second.
func throttleDelay(observed float64, elapsed time.Duration, rate float64) time.Duration {
	if rate <= 0 || elapsed <= 0 || observed/elapsed.Seconds() <= rate {
		return 0
	}
	want := time.Duration(observed / rate * float64(time.Second))
	return want - elapsed
}

// maybeThrottle counts n bytes and sleeps if the rate is over the limit.
func (t *throttler) maybeThrottle(ctx context.Context, n int) error {
	rate := t.rate()
	if rate <= 0 || rate >= math.MaxFloat64/2 || math.IsInf(rate, 1) {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observed += float64(n)
	now := t.clock.Now()
	elapsed := now.Sub(t.start)
	if elapsed < throttleCheckInterval {
		return nil
	}
	if d := throttleDelay(t.observed, elapsed, rate); d > 0 {
		if err := sleep(ctx, t.clock, d); err != nil {
			return err
		}
		t.throttle += d
	}
	t.start, t.observed = t.clock.Now(), 0
	return nil
}

// sleep waits d on the clock or until ctx ends.
func sleep(ctx context.Context, c clock.Clock, d time.Duration) error {
	done := make(chan struct{})
	tm := c.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		tm.Stop()
		return errStopped
	}
}
