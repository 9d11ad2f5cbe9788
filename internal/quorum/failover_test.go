package quorum_test

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/quorum"
	"github.com/gregor-broker/gregor/internal/quorum/quorumtest"
)

// TestSimFailoverTime measures, in the deterministic simulator with the
// default timing (100 ms ticks, 10-tick election timeout, 1–10 ms links),
// how long after the leader of a 3-voter quorum crashes the others elect a
// new one and commit through it; it fails if the p99 is above the 3 s the
// cluster issue allows for a controller failover. (Two survivors can split
// their votes, so the tail is a few election timeouts long.)
func TestSimFailoverTime(t *testing.T) {
	seeds := 200
	if raceEnabled {
		seeds = 20
	}
	if os.Getenv("GREGOR_LONG") != "" {
		seeds = 2000
	}
	var elect, commit []time.Duration
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		t.Run("", func(t *testing.T) {
			sim := quorumtest.New(t, quorumtest.Options{Nodes: 3, Seed: seed})
			var first quorum.EntryID
			if !sim.RunUntil(func() bool {
				if l := sim.Leader(); l != quorum.NoLeader && first == (quorum.EntryID{}) {
					first, _ = sim.Propose(l, []byte("first"))
				}
				return first != (quorum.EntryID{}) && sim.Applied(0) >= first.Index && sim.Applied(1) >= first.Index && sim.Applied(2) >= first.Index
			}, 10*time.Second) {
				sim.Fatalf("no first commit")
			}
			// Let heartbeats settle for a random part of a tick.
			sim.RunFor(time.Duration(sim.Rand().Int64N(int64(300 * time.Millisecond))))
			old := sim.Leader()
			sim.Crash(old, false)
			crashed := sim.Now()
			var elected time.Duration
			var after quorum.EntryID
			if !sim.RunUntil(func() bool {
				l := sim.Leader()
				if l == quorum.NoLeader || l == old {
					return false
				}
				if elected == 0 {
					elected = sim.Now() - crashed
					after, _ = sim.Propose(l, []byte("after"))
				}
				return after != (quorum.EntryID{}) && sim.Applied(l) >= after.Index
			}, 20*time.Second) {
				sim.Fatalf("no new leader committed within 20s of the crash")
			}
			elect = append(elect, elected)
			commit = append(commit, sim.Now()-crashed)
		})
	}
	slices.Sort(elect)
	slices.Sort(commit)
	p := func(d []time.Duration, q float64) time.Duration { return d[int(q*float64(len(d)-1))] }
	t.Logf("%d crashes of the leader (virtual time): new leader min %v p50 %v p99 %v max %v; commit p50 %v p99 %v max %v",
		len(elect), elect[0], p(elect, 0.5), p(elect, 0.99), elect[len(elect)-1], p(commit, 0.5), p(commit, 0.99), commit[len(commit)-1])
	if m := p(commit, 0.99); m > 3*time.Second {
		t.Errorf("p99 failover %v, over 3 s", m)
	}
}
