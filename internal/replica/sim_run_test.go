package replica

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// TestSimulation runs the deterministic simulation over many seeds: 300
// short runs by default (30 under -race, 100 with -short), 5,000 longer
// ones under GREGOR_LONG=1 (or GREGOR_SIM_SEEDS=N); GREGOR_SIM_SEED=N
// replays one seed.
func TestSimulation(t *testing.T) {
	o := simOptions{brokers: 3, partitions: 2, minISR: 2, steps: 400, faults: true}
	seeds := 300
	if raceEnabled {
		seeds = 30
	}
	if os.Getenv("GREGOR_LONG") != "" {
		seeds, o.steps = 5000, 1500
	}
	if n, err := strconv.Atoi(os.Getenv("GREGOR_SIM_SEEDS")); err == nil {
		seeds = n
	}
	if seed, err := strconv.ParseUint(os.Getenv("GREGOR_SIM_SEED"), 10, 64); err == nil {
		run(t, seed, o)
		return
	}
	if testing.Short() {
		seeds = min(seeds, 100)
	}
	var wg sync.WaitGroup
	work := make(chan uint64)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range work {
				if t.Failed() {
					continue
				}
				run(t, seed, o)
			}
		}()
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		work <- seed
	}
	close(work)
	wg.Wait()
}
