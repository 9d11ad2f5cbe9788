package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produceRun is the shape of one produce benchmark.
type produceRun struct {
	size int
	// records is how many to produce, over all clients; 0 runs for warmup
	// and then duration, measuring only the second.
	records  int64
	duration time.Duration
	warmup   time.Duration
	// rate is records per second over all clients; 0 is as fast as the
	// clients go.
	rate int
	// sample reads the server at the start and the end of the measured
	// window.
	sample func() serverSample
}

// produceStats gathers the acknowledgements of a run.
type produceStats struct {
	mu  sync.Mutex
	lat []int64 // ack latency from the intended send time, ns
	// late is how long after its intended send time each record of a
	// fixed-rate run was handed to the client, ns: the generator's own
	// wake-up delay, which the latency includes and no broker causes.
	late     []int64
	acked    int64 // acknowledged in the measured window
	errs     int64
	firstErr error
}

// runProduce produces with every client at once and reports the measured
// window: records acknowledged in it, and the ack latency of the records
// whose intended send time lies in it. At a fixed rate a record's intended
// send time is when the schedule says it is due, not when the client took
// it, so a client or broker that falls behind shows in the latency
// (coordinated omission is not hidden).
func runProduce(ctx context.Context, clients []*kgo.Client, run produceRun, progress io.Writer) benchResult {
	value := make([]byte, run.size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	timed := run.records == 0
	start := time.Now()
	t0, t1 := start, time.Time{}
	if timed {
		t0 = start.Add(run.warmup)
		t1 = t0.Add(run.duration)
	}
	var samples [2]serverSample
	var sampled sync.WaitGroup
	if timed {
		sampled.Add(2)
		time.AfterFunc(time.Until(t0), func() { samples[0] = run.sample(); sampled.Done() })
		time.AfterFunc(time.Until(t1), func() { samples[1] = run.sample(); sampled.Done() })
	} else {
		samples[0] = run.sample()
	}
	st := &produceStats{lat: make([]int64, 0, 1<<20)}
	var produced atomic.Int64
	stopProgress := startProgress(progress, start, func() (int64, int64) {
		n := produced.Load()
		return n, n * int64(run.size)
	})
	var wg sync.WaitGroup
	for c, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			produceFrom(ctx, cl, c, len(clients), run, value, start, t0, t1, &produced, st)
		}()
	}
	wg.Wait()
	end := time.Now()
	stopProgress()
	if timed {
		sampled.Wait()
	} else {
		samples[1] = run.sample()
		t1 = end
	}
	seconds := t1.Sub(t0).Seconds()
	res := benchResult{Mode: "produce", RecordSize: run.size, Clients: len(clients), Records: st.acked,
		Bytes: st.acked * int64(run.size), Seconds: seconds, Errors: st.errs}
	res.RecordsPerS = float64(res.Records) / seconds
	res.MiBPerS = float64(res.Bytes) / seconds / (1 << 20)
	res.latencies(st.lat, st.late)
	res.window(samples[0], samples[1], res.Bytes)
	if st.firstErr != nil {
		fmt.Fprintf(progress, "first produce error: %v\n", st.firstErr)
	}
	return res
}

// produceFrom is client c of n producing its share of run.
func produceFrom(ctx context.Context, cl *kgo.Client, c, n int, run produceRun, value []byte,
	start, t0, t1 time.Time, produced *atomic.Int64, st *produceStats) {
	timed := run.records == 0
	var interval time.Duration
	if run.rate > 0 {
		interval = time.Duration(n) * time.Second / time.Duration(run.rate)
	}
	var inflight sync.WaitGroup
	defer inflight.Wait()
	for i := int64(0); ctx.Err() == nil; i++ {
		if !timed && produced.Add(1) > run.records {
			break
		}
		intended := time.Now()
		if interval > 0 {
			// Client c's records are due at its own offset into each
			// interval, so n clients together keep the overall rate.
			intended = start.Add(time.Duration(c)*interval/time.Duration(n) + time.Duration(i)*interval)
			if d := time.Until(intended); d > 0 {
				time.Sleep(d)
			}
		}
		if timed {
			if !intended.Before(t1) {
				break
			}
			produced.Add(1)
		}
		if interval > 0 && !intended.Before(t0) {
			late := int64(time.Since(intended))
			st.mu.Lock()
			st.late = append(st.late, late)
			st.mu.Unlock()
		}
		inflight.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			defer inflight.Done()
			done := time.Now()
			st.mu.Lock()
			defer st.mu.Unlock()
			if err != nil {
				if st.errs++; st.errs == 1 {
					st.firstErr = err
				}
				return
			}
			if !timed || (!done.Before(t0) && done.Before(t1)) {
				st.acked++
			}
			if !timed || !intended.Before(t0) {
				st.lat = append(st.lat, int64(done.Sub(intended)))
			}
		})
	}
}

// latencies fills in the percentiles of lat and late (ns).
func (r *benchResult) latencies(lat, late []int64) {
	if len(late) > 0 {
		slices.Sort(late)
		r.SendLagP50Ms, r.SendLagP99Ms = pctMs(late, 0.50), pctMs(late, 0.99)
	}
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	r.LatencyP50Ms, r.LatencyP99Ms, r.LatencyP999 = pctMs(lat, 0.50), pctMs(lat, 0.99), pctMs(lat, 0.999)
	r.LatencyMaxMs = float64(lat[len(lat)-1]) / 1e6
}

// pctMs is the p-quantile of sorted nanoseconds, in milliseconds.
func pctMs(sorted []int64, p float64) float64 {
	return float64(sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]) / 1e6
}
