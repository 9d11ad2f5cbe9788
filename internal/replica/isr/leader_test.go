package isr

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The scenarios of Kafka's PartitionTest (ISR expansion and shrink, the high
// watermark, min ISR, broker epochs, AlterPartition results), against the
// pure state machine. Broker 1 leads; 2 and 3 follow.

const lag = 30 * time.Second

var t0 = time.Unix(1_700_000_000, 0)

type fixture struct {
	t       *testing.T
	l       *Leader
	brokers map[int32]BrokerInfo
	now     time.Time
}

func newFixture(t *testing.T, isr []int32, minISR int32) *fixture {
	f := &fixture{t: t, now: t0, brokers: map[int32]BrokerInfo{1: {Epoch: 10}, 2: {Epoch: 20}, 3: {Epoch: 30}}}
	f.l = NewLeader(Config{LocalID: 1, LagTimeMax: lag}, minISR)
	if got := f.l.Become(Assignment{Replicas: []int32{1, 2, 3}, ISR: isr, Leader: 1, LeaderEpoch: 5, PartitionEpoch: 7}, 100, f.now, f.lookup); got != NewEpoch {
		t.Fatalf("Become = %v", got)
	}
	return f
}

func (f *fixture) lookup(id int32) (BrokerInfo, bool) {
	b, ok := f.brokers[id]
	return b, ok
}

func (f *fixture) fetch(id int32, offset, leaderLEO int64) {
	f.t.Helper()
	if err := f.l.FollowerFetched(id, offset, 0, f.brokers[id].Epoch, leaderLEO, f.now, f.lookup); err != nil {
		f.t.Fatalf("fetch by %d at %d: %v", id, offset, err)
	}
}

func (f *fixture) hw(own, leo int64) (int64, bool) {
	return f.l.HighWatermark(own, leo, f.now, f.lookup)
}

func (f *fixture) advance(d time.Duration) { f.now = f.now.Add(d) }

func TestHighWatermarkIsMinimumOfMaximalISR(t *testing.T) {
	f := newFixture(t, []int32{1, 2, 3}, 1)
	if _, ok := f.hw(120, 120); ok {
		t.Fatal("a new leader moved the high watermark before every ISR follower fetched")
	}
	f.fetch(2, 110, 120)
	if _, ok := f.hw(120, 120); ok {
		t.Fatal("high watermark moved while follower 3's log end offset is unknown")
	}
	f.fetch(3, 105, 120)
	if hw, ok := f.hw(120, 120); !ok || hw != 105 {
		t.Fatalf("hw = %d, %v; want 105 (follower 3)", hw, ok)
	}
	// The leader's own term is its flushed offset.
	if hw, _ := f.hw(103, 120); hw != 103 {
		t.Fatalf("hw = %d; want the leader's flushed 103", hw)
	}
}

func TestStrictMinISRStopsHighWatermark(t *testing.T) {
	f := newFixture(t, []int32{1}, 2)
	f.fetch(2, 120, 120)
	if !f.l.UnderMinISR() {
		t.Fatal("ISR {1} with min.insync.replicas=2 is not under min ISR")
	}
	if _, ok := f.hw(120, 120); ok {
		t.Fatal("the high watermark moved under min ISR (KAFKA-15583)")
	}
	// Effective min ISR is capped by the replica count.
	g := NewLeader(Config{LocalID: 1, LagTimeMax: lag}, 3)
	g.Become(Assignment{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 1}, 0, t0, f.lookup)
	if g.EffectiveMinISR() != 2 || g.UnderMinISR() {
		t.Fatalf("effective min ISR %d, under %v; want 2, false", g.EffectiveMinISR(), g.UnderMinISR())
	}
}

func TestCaughtUpNonISRFollowerHoldsHighWatermark(t *testing.T) {
	f := newFixture(t, []int32{1, 2}, 1)
	f.fetch(2, 120, 120)
	f.fetch(3, 100, 120) // not caught up: does not hold the HW back
	if hw, _ := f.hw(120, 120); hw != 120 {
		t.Fatalf("hw = %d; a lagging non-ISR follower held it back", hw)
	}
	f.fetch(3, 120, 125) // caught up to the leader's log end as of now
	f.fetch(2, 125, 125)
	if hw, _ := f.hw(125, 125); hw != 120 {
		t.Fatalf("hw = %d; a caught-up eligible follower (at 120) must hold it (KIP-497)", hw)
	}
	f.brokers[3] = BrokerInfo{Epoch: 30, Fenced: true}
	if hw, _ := f.hw(125, 125); hw != 125 {
		t.Fatalf("hw = %d; a fenced follower must not hold it (KAFKA-15021)", hw)
	}
}

func TestLastCaughtUpTime(t *testing.T) {
	f := newFixture(t, []int32{1, 2, 3}, 1)
	start := f.now
	f.advance(time.Second)
	f.fetch(2, 90, 100) // behind the leader's 100: not caught up now
	fl, _ := f.l.Follower(2)
	if !fl.LastCaughtUp.Equal(start) {
		t.Fatalf("lastCaughtUp = %v; want the reset time %v", fl.LastCaughtUp, start)
	}
	f.advance(time.Second)
	f.fetch(2, 100, 110) // reached what the leader had at the previous fetch
	fl, _ = f.l.Follower(2)
	if !fl.LastCaughtUp.Equal(start.Add(time.Second)) {
		t.Fatalf("lastCaughtUp = %v; want the previous fetch time", fl.LastCaughtUp)
	}
	f.advance(time.Second)
	f.fetch(2, 110, 110)
	fl, _ = f.l.Follower(2)
	if !fl.LastCaughtUp.Equal(f.now) {
		t.Fatalf("lastCaughtUp = %v; want now", fl.LastCaughtUp)
	}
}

func TestShrinkAfterLagTime(t *testing.T) {
	f := newFixture(t, []int32{1, 2, 3}, 1)
	f.fetch(2, 100, 100)
	f.fetch(3, 100, 100)
	f.advance(lag)
	f.fetch(2, 150, 150)
	if p := f.l.MaybeShrink(150, f.now, f.lookup); p != nil {
		t.Fatalf("shrank at exactly replica.lag.time.max.ms: %+v", p)
	}
	f.advance(time.Millisecond)
	f.fetch(2, 150, 150)
	p := f.l.MaybeShrink(150, f.now, f.lookup)
	if p == nil || p.Kind != PendingShrink || !slices.Equal(p.IDs(), []int32{1, 2}) {
		t.Fatalf("shrink = %+v; want {1,2}", p)
	}
	if p.ISR[0].BrokerEpoch != 10 || p.ISR[1].BrokerEpoch != 20 {
		t.Fatalf("broker epochs %+v; want the leader's and follower 2's last fetch", p.ISR)
	}
	// Shrinks apply only once confirmed: the maximal ISR stays {1,2,3}.
	if !slices.Equal(f.l.MaximalISR(), []int32{1, 2, 3}) {
		t.Fatalf("maximal ISR %v during a pending shrink", f.l.MaximalISR())
	}
	if f.l.MaybeShrink(150, f.now, f.lookup) != nil || f.l.MaybeExpand(3, 100, f.lookup) != nil {
		t.Fatal("a second change while one is in flight")
	}
	out, _ := f.l.Completed(p.Seq, Result{LeaderEpoch: 5, PartitionEpoch: 8, ISR: []int32{1, 2}}, f.now)
	if out != Applied || !slices.Equal(f.l.ISR(), []int32{1, 2}) {
		t.Fatalf("outcome %v, ISR %v", out, f.l.ISR())
	}
	d, ok := f.l.Departure(3)
	if !ok || d.Cause != CauseLagged {
		t.Fatalf("departure of 3 = %+v", d)
	}
}

func TestNoShrinkWhenPreviousFetchCaughtUp(t *testing.T) {
	// Kafka's testShouldNotShrinkIsrIfPreviousFetchIsCaughtUp: a follower
	// fetching what the leader had at its previous fetch stays in sync even
	// if the leader keeps growing.
	f := newFixture(t, []int32{1, 2, 3}, 1)
	f.fetch(3, 100, 100)
	leo := int64(100)
	for i := 0; i < 5; i++ {
		f.advance(lag / 2)
		prev := leo
		leo += 10
		f.fetch(2, leo, leo)
		f.fetch(3, prev, leo)
	}
	if p := f.l.MaybeShrink(leo, f.now, f.lookup); p != nil {
		t.Fatalf("shrank a follower that keeps up one fetch behind: %+v", p)
	}
}

func TestExpand(t *testing.T) {
	f := newFixture(t, []int32{1, 2}, 1)
	f.fetch(2, 100, 100)
	f.fetch(3, 90, 100)
	if p := f.l.MaybeExpand(3, 100, f.lookup); p != nil {
		t.Fatalf("expanded below the high watermark: %+v", p)
	}
	f.fetch(3, 100, 100)
	p := f.l.MaybeExpand(3, 100, f.lookup)
	if p == nil || p.Kind != PendingExpand || !slices.Equal(p.IDs(), []int32{1, 2, 3}) || p.ISR[2].BrokerEpoch != 30 {
		t.Fatalf("expand = %+v", p)
	}
	// Applied at once to the maximal ISR.
	if !slices.Equal(f.l.MaximalISR(), []int32{1, 2, 3}) || !slices.Equal(f.l.ISR(), []int32{1, 2}) {
		t.Fatalf("maximal %v, committed %v", f.l.MaximalISR(), f.l.ISR())
	}
	out, _ := f.l.Completed(p.Seq, Result{LeaderEpoch: 5, PartitionEpoch: 8, ISR: []int32{1, 2, 3}}, f.now)
	if out != Applied || !slices.Equal(f.l.ISR(), []int32{1, 2, 3}) {
		t.Fatalf("outcome %v ISR %v", out, f.l.ISR())
	}
	if _, ok := f.l.Departure(3); ok {
		t.Fatal("a member still has a departure")
	}
}

func TestExpandNeedsLeaderEpochStartOffset(t *testing.T) {
	// design §2.12.8: a new leader's high watermark may be stale (here 50);
	// a follower above it but below where the leader's epoch began (100)
	// must not join.
	f := newFixture(t, []int32{1, 2}, 1)
	f.fetch(3, 80, 100)
	bs := f.l.blockers(3, 50, f.lookup)
	if f.l.MaybeExpand(3, 50, f.lookup) != nil || len(bs) != 1 || bs[0].Rule != "caught-up-to-leader-epoch-start" {
		t.Fatalf("blockers %+v", bs)
	}
	f.fetch(3, 100, 100)
	if f.l.MaybeExpand(3, 50, f.lookup) == nil {
		t.Fatal("not expanded at the leader epoch start offset")
	}
}

func TestExpandRefusedForIneligibleBroker(t *testing.T) {
	for _, tc := range []struct {
		name string
		info BrokerInfo
		ok   bool
		rule string
	}{
		{"fenced", BrokerInfo{Epoch: 30, Fenced: true}, true, "unfenced"},
		{"shutting down", BrokerInfo{Epoch: 30, ShuttingDown: true}, true, "not-shutting-down"},
		{"unregistered", BrokerInfo{}, false, "registered"},
		{"restarted", BrokerInfo{Epoch: 31}, true, "broker-epoch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, []int32{1, 2}, 1)
			f.fetch(3, 100, 100)
			if tc.ok {
				f.brokers[3] = tc.info
			} else {
				delete(f.brokers, 3)
			}
			bs := f.l.blockers(3, 100, f.lookup)
			if f.l.MaybeExpand(3, 100, f.lookup) != nil || len(bs) != 1 || bs[0].Rule != tc.rule {
				t.Fatalf("blockers %+v; want %s", bs, tc.rule)
			}
		})
	}
}

func TestStaleBrokerEpochFetchRefused(t *testing.T) {
	// KIP-903 (Kafka's testFenceFollowerFetchWithStaleBrokerEpoch).
	f := newFixture(t, []int32{1, 2}, 1)
	f.brokers[3] = BrokerInfo{Epoch: 31}
	err := f.l.FollowerFetched(3, 100, 0, 30, 100, f.now, f.lookup)
	if !errors.Is(err, ErrStaleBrokerEpoch) {
		t.Fatalf("err = %v", err)
	}
	if fl, _ := f.l.Follower(3); fl.LogEndOffset != -1 {
		t.Fatalf("the stale fetch updated the follower: %+v", fl)
	}
	if err := f.l.FollowerFetched(4, 0, 0, 1, 100, f.now, f.lookup); !errors.Is(err, ErrUnknownReplica) {
		t.Fatalf("unknown replica: %v", err)
	}
}

func TestAlterPartitionErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Outcome
	}{
		{kerr.OperationNotAttempted, RolledBack},
		{kerr.IneligibleReplica, RolledBack},
		{kerr.UnknownTopicOrPartition, StillPending},
		{kerr.UnknownTopicID, StillPending},
		{kerr.FencedLeaderEpoch, StillPending},
		{kerr.InvalidUpdateVersion, StillPending},
		{kerr.InvalidRequest, StillPending},
		{kerr.NewLeaderElected, StillPending},
		{kerr.RequestTimedOut, Resubmit},
		{kerr.NotController, Resubmit},
	} {
		f := newFixture(t, []int32{1, 2}, 1)
		f.fetch(2, 100, 100)
		f.fetch(3, 100, 100)
		p := f.l.MaybeExpand(3, 100, f.lookup)
		out, again := f.l.Completed(p.Seq, Result{Err: tc.err}, f.now)
		if out != tc.want {
			t.Errorf("%v: outcome %v, want %v", tc.err, out, tc.want)
		}
		kind, _ := f.l.Pending()
		switch tc.want {
		case RolledBack:
			if kind != Committed || !slices.Equal(f.l.MaximalISR(), []int32{1, 2}) {
				t.Errorf("%v: not rolled back: %v %v", tc.err, kind, f.l.MaximalISR())
			}
		case StillPending:
			if kind != PendingExpand {
				t.Errorf("%v: %v, want still pending", tc.err, kind)
			}
		case Resubmit:
			if again == nil || again.Seq != p.Seq {
				t.Errorf("%v: resubmit %+v", tc.err, again)
			}
		}
	}
}

func TestStaleResultsIgnored(t *testing.T) {
	f := newFixture(t, []int32{1, 2}, 1)
	f.fetch(3, 100, 100)
	p := f.l.MaybeExpand(3, 100, f.lookup)
	if out, _ := f.l.Completed(p.Seq+1, Result{LeaderEpoch: 5, PartitionEpoch: 8, ISR: []int32{1, 2, 3}}, f.now); out != Ignored {
		t.Fatal("a result for another proposal applied")
	}
	if out, _ := f.l.Completed(p.Seq, Result{LeaderEpoch: 4, PartitionEpoch: 8, ISR: []int32{1, 2, 3}}, f.now); out != Ignored {
		t.Fatal("a result at another leader epoch applied")
	}
	if out, _ := f.l.Completed(p.Seq, Result{LeaderEpoch: 5, PartitionEpoch: 6, ISR: []int32{1, 2, 3}}, f.now); out != Ignored {
		t.Fatal("a result at an older partition epoch applied")
	}
	// The metadata wins the race: same leader epoch, newer partition epoch.
	if out := f.l.Become(Assignment{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 5, PartitionEpoch: 8}, 100, f.now, f.lookup); out != Applied {
		t.Fatalf("Become = %v", out)
	}
	if kind, _ := f.l.Pending(); kind != Committed || !slices.Equal(f.l.ISR(), []int32{1, 2, 3}) {
		t.Fatalf("after the delta: %v %v", kind, f.l.ISR())
	}
	if out, _ := f.l.Completed(p.Seq, Result{LeaderEpoch: 5, PartitionEpoch: 8, ISR: []int32{1, 2, 3}}, f.now); out != Ignored {
		t.Fatal("the late result applied after the delta")
	}
	// An older partition epoch from the metadata is ignored.
	if out := f.l.Become(Assignment{Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 5, PartitionEpoch: 7}, 100, f.now, f.lookup); out != Ignored {
		t.Fatalf("stale Become = %v", out)
	}
}

func TestNewLeaderEpochResetsFollowers(t *testing.T) {
	f := newFixture(t, []int32{1, 2}, 1)
	f.fetch(2, 100, 100)
	f.fetch(3, 100, 100)
	// Same leader, new epoch: ISR member 2 keeps its LEO but has not
	// fetched in the epoch; non-member 3 starts over (design §2.12.8).
	f.advance(time.Second)
	if out := f.l.Become(Assignment{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 6, PartitionEpoch: 9}, 110, f.now, f.lookup); out != NewEpoch {
		t.Fatalf("Become = %v", out)
	}
	f2, _ := f.l.Follower(2)
	f3, _ := f.l.Follower(3)
	if f2.LogEndOffset != 100 || f2.FetchedThisEpoch || !f2.LastCaughtUp.Equal(f.now) {
		t.Fatalf("follower 2: %+v", f2)
	}
	if f3.LogEndOffset != -1 || f3.FetchedThisEpoch {
		t.Fatalf("follower 3 kept state across the epoch: %+v", f3)
	}
	if f.l.LeaderEpochStartOffset() != 110 {
		t.Fatalf("LESO %d", f.l.LeaderEpochStartOffset())
	}
	if bs := f.l.blockers(3, 0, f.lookup); len(bs) == 0 || bs[0].Rule != "fetched-this-epoch" {
		t.Fatalf("blockers %+v", bs)
	}
}

func TestNewLeaderKnowsNoFollowerLEO(t *testing.T) {
	l := NewLeader(Config{LocalID: 2, LagTimeMax: lag}, 1)
	brokers := func(id int32) (BrokerInfo, bool) { return BrokerInfo{Epoch: int64(id)}, true }
	l.Become(Assignment{Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}, Leader: 2, LeaderEpoch: 8, PartitionEpoch: 3}, 50, t0, brokers)
	if _, ok := l.HighWatermark(60, 60, t0, brokers); ok {
		t.Fatal("a new leader advanced the HW before its ISR follower fetched in its epoch")
	}
	if d, ok := l.Departure(1); !ok || d.Cause != CauseNeverJoined {
		t.Fatalf("departure of 1: %+v", d)
	}
}

func TestControllerRemovalExplained(t *testing.T) {
	f := newFixture(t, []int32{1, 2, 3}, 1)
	f.brokers[3] = BrokerInfo{Epoch: 30, Fenced: true}
	f.l.Become(Assignment{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 5, PartitionEpoch: 8}, 100, f.now, f.lookup)
	if d, ok := f.l.Departure(3); !ok || d.Cause != CauseFenced {
		t.Fatalf("departure %+v", d)
	}
}

// An idle follower's long poll: its fetch at the log end offset waits (up
// to replica.fetch.wait.max.ms). While it waits the view says it is caught
// up now; answered with nothing new, its last caught-up time is the
// answer's, not the fetch's arrival. Answered because the log grew (the
// follower is behind now), or for a fetch that is not its last, nothing
// moves; a fetch below the log end never counts.
func TestIdleFollowerLastCaughtUp(t *testing.T) {
	f := newFixture(t, []int32{1, 2, 3}, 1)
	f.advance(time.Second)
	arrived := f.now
	f.fetch(2, 100, 100)
	f.l.FollowerWaiting(2, 100, 100, true, f.now)
	f.advance(450 * time.Millisecond)
	caughtUp := func(id int32, leo int64) time.Time {
		for _, v := range f.l.View(leo, 100, f.now, f.lookup) {
			if v.ID == id {
				return v.LastCaughtUp
			}
		}
		t.Fatalf("no view of %d", id)
		return time.Time{}
	}
	if got := caughtUp(2, 100); !got.Equal(f.now) {
		t.Fatalf("waiting at the log end: last caught up %v, want now (%v; the fetch arrived %v)", got, f.now, arrived)
	}
	if fl, _ := f.l.Follower(2); !fl.LastCaughtUp.Equal(arrived) {
		t.Fatalf("the state moved before the answer: %v", fl.LastCaughtUp)
	}
	f.advance(50 * time.Millisecond)
	answered := f.now
	f.l.FollowerWaiting(2, 100, 100, false, f.now)
	f.advance(10 * time.Millisecond)
	if got := caughtUp(2, 100); !got.Equal(answered) {
		t.Fatalf("answered at the log end: last caught up %v, want the answer's time %v", got, answered)
	}
	// A long poll answered because the log grew: not caught up at the answer.
	f.fetch(2, 100, 100)
	f.l.FollowerWaiting(2, 100, 100, true, f.now)
	before, _ := f.l.Follower(2)
	f.advance(100 * time.Millisecond)
	f.l.FollowerWaiting(2, 100, 105, false, f.now)
	if after, _ := f.l.Follower(2); !after.LastCaughtUp.Equal(before.LastCaughtUp) || after.Waiting {
		t.Fatalf("answered behind the log end: last caught up %v → %v, waiting %v", before.LastCaughtUp, after.LastCaughtUp, after.Waiting)
	}
	if got := caughtUp(2, 105); !got.Equal(before.LastCaughtUp) {
		t.Fatalf("view of a follower behind: %v, want %v", got, before.LastCaughtUp)
	}
	// A stale fetch (not the follower's last) and one below the log end.
	f.advance(time.Second)
	f.fetch(3, 90, 105)
	f.l.FollowerWaiting(3, 80, 105, false, f.now)
	f.l.FollowerWaiting(3, 90, 105, true, f.now)
	if fl, _ := f.l.Follower(3); fl.LastCaughtUp.Equal(f.now) || caughtUp(3, 105).Equal(f.now) {
		t.Fatalf("a follower 15 behind counted caught up: %v", fl.LastCaughtUp)
	}
}
