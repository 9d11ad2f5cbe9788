package replica

import (
	"slices"
	"testing"
)

// A follower whose disk fills up (its MemFS limited to a few hundred bytes
// more than it holds) stops appending, leaves the ISR, and once the space
// is back fetches again by itself and rejoins: the simulation converges
// (every replica at the leader's end, the ISR whole) and every acknowledged
// record is on every replica. Before the fetcher retried a follower append
// refused for want of space, the partition stopped fetching for good.
func TestSimFollowerDiskFull(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		func() {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(simAbort); !ok {
						t.Errorf("seed %d: panic: %v", seed, r)
					}
				}
			}()
			simFollowerDiskFull(t, seed)
		}()
	}
}

func simFollowerDiskFull(t *testing.T, seed uint64) {
	s := newSim(t, seed, simOptions{brokers: 3, partitions: 2, minISR: 2})
	s.boot()
	for range 300 {
		s.step(false)
		s.check()
	}
	p0 := s.im.Topic(simTopic).Partitions[0]
	if p0.Leader < 0 || len(p0.ISR) != 3 {
		s.fatalf("before the disk fills: %s-0 leader %d ISR %v", simTopic, p0.Leader, p0.ISR)
	}
	f := s.brokers[p0.Leader%3] // another broker: a follower of partition 0
	u, err := f.fs.DiskUsage("/data")
	if err != nil {
		s.fatalf("%v", err)
	}
	f.fs.SetCapacity(u.Total - u.Usable + 512)
	s.logf("broker %d's disk is full", f.id)
	left := false
	for i := 0; i < 20000 && !left; i++ {
		s.step(false)
		s.check()
		left = !slices.Contains(s.im.Topic(simTopic).Partitions[0].ISR, f.id)
	}
	if !left {
		s.fatalf("broker %d still in the ISR of %s-0 with a full disk", f.id, simTopic)
	}
	fp, _ := s.partition(f, 0)
	lp, _ := s.partition(s.brokers[s.im.Topic(simTopic).Partitions[0].Leader-1], 0)
	if fp.Log.LogEndOffset() >= lp.Log.LogEndOffset() {
		s.fatalf("broker %d left the ISR but holds all of %s-0 (LEO %d, leader's %d): the disk never filled",
			f.id, simTopic, fp.Log.LogEndOffset(), lp.Log.LogEndOffset())
	}
	for range 300 { // produce goes on without it
		s.step(false)
		s.check()
	}
	f.fs.SetCapacity(1 << 40)
	s.logf("broker %d's disk has room again", f.id)
	s.heal()
	for range 200 {
		s.step(false)
	}
	s.final()
}
