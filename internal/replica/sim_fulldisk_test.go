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
	simFollowerDiskFullSeeds(t, 0)
}

// A follower's appends keep its log dir's free-space reserve
// (gregor.log.dir.min.free.bytes) as a client's do: with 64 KiB reserved
// and 8 KiB above it, the follower stops appending at the reserve (its
// volume keeps at least 56 KiB: index and checkpoint writes, which are not
// admitted, may use some of the reserve; they used under 2.1 KiB), leaves
// the ISR, and catches up and rejoins once space is freed, with every
// acknowledged record on every replica. Before follower appends were
// admitted, it wrote on into the reserve until the volume refused a write
// (ENOSPC).
func TestSimFollowerDiskReserve(t *testing.T) {
	simFollowerDiskFullSeeds(t, 64<<10)
}

func simFollowerDiskFullSeeds(t *testing.T, reserve int64) {
	for seed := uint64(1); seed <= 5; seed++ {
		func() {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(simAbort); !ok {
						t.Errorf("seed %d: panic: %v", seed, r)
					}
				}
			}()
			simFollowerDiskFull(t, seed, reserve)
		}()
	}
}

// simFollowerDiskFull fills a follower's disk: to a few hundred bytes above
// what it holds when reserve is 0 (the default reserve, 1% of that tiny
// volume), else to reserve plus 8 KiB with reserve kept.
func simFollowerDiskFull(t *testing.T, seed uint64, reserve int64) {
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
	used := u.Total - u.Usable
	if reserve == 0 {
		f.fs.SetCapacity(used + 512)
	} else {
		f.minFree.Store(reserve)
		f.fs.SetCapacity(used + reserve + 8<<10)
		// The disk filled since the last reading: take one now, as the
		// periodic check would within a second.
		f.logs.CheckDiskSpace()
	}
	s.logf("broker %d's disk is full", f.id)
	// keeps checks that f never writes into the reserve.
	keeps := func() {
		if reserve == 0 {
			return
		}
		if u, err := f.fs.DiskUsage("/data"); err != nil || u.Usable < reserve-8<<10 {
			s.fatalf("broker %d has %d bytes usable (%v) with %d reserved: its appends used the reserve", f.id, u.Usable, err, reserve)
		}
	}
	left := false
	for i := 0; i < 20000 && !left; i++ {
		s.step(false)
		s.check()
		keeps()
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
		keeps()
	}
	f.fs.SetCapacity(1 << 40)
	s.logf("broker %d's disk has room again", f.id)
	s.heal()
	for range 200 {
		s.step(false)
	}
	s.final()
}
