package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/clock"
)

// catchUp is what the metadata watcher last learned of how far this node's
// broker is behind the metadata log.
type catchUp struct {
	// at is when the broker last had published everything the log had
	// committed when it asked (ReadIndex, then WaitPublished), and index
	// that commit index.
	at    time.Time
	index uint64
	// behind says why the last probe did not confirm it ("" if it did).
	behind string
}

// metadataReadiness is the "metadata" readiness condition: ready while the
// broker has confirmed it caught up with the metadata log within grace
// (broker.session.timeout.ms: a broker out of touch for longer is one the
// controller fences), not ready after, with why. A probe that fails for a
// moment (an election, a burst of records being applied) does not flip it.
func metadataReadiness(c catchUp, now time.Time, grace time.Duration) (admin.State, string) {
	age := now.Sub(c.at)
	if age <= grace {
		return admin.Ready, fmt.Sprintf("caught up with the metadata log at index %d, %s ago", c.index, roundAge(age))
	}
	return admin.NotReady, fmt.Sprintf("not caught up with the metadata log for %s (last at index %d, longer than "+
		"broker.session.timeout.ms %s): %s", roundAge(age), c.index, grace, c.behind)
}

func roundAge(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// probeInterval is how often a serving broker checks that it has caught up
// with the metadata log.
const probeInterval = time.Second

// watchMetadata keeps the "metadata" readiness condition current while the
// broker serves, from the caught-up index the startup confirmed at first,
// until ctx ends. Each probe asks the quorum leader for its commit index
// and waits, at most a probe interval, for this broker to publish it.
func (b *Broker) watchMetadata(ctx context.Context, first uint64) {
	grace := time.Duration(b.Config().Long("broker.session.timeout.ms")) * time.Millisecond
	last := catchUp{at: b.o.Clock.Now(), index: first}
	for {
		ch, t := clock.NewTimer(b.o.Clock, probeInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-ch:
		}
		pctx, cancel := context.WithTimeout(ctx, probeInterval)
		last = b.probeMetadata(pctx, last)
		cancel()
		if ctx.Err() != nil {
			return
		}
		st, detail := metadataReadiness(last, b.o.Clock.Now(), grace)
		b.adm.SetCondition("metadata", st, detail)
		b.metaCaughtUp.Store(&last)
	}
}

// probeMetadata asks whether the broker has caught up with the metadata
// log now, and returns last updated with the answer.
func (b *Broker) probeMetadata(ctx context.Context, last catchUp) catchUp {
	target, err := b.node.ReadIndex(ctx)
	if err != nil {
		if leader := b.node.Leader(); leader < 0 {
			last.behind = fmt.Sprintf("the metadata quorum has no leader: a majority of the voters (%s) must run and reach "+
				"each other; this node has applied up to index %d", voterList(b.layout.Voters), b.node.Applied())
		} else {
			last.behind = fmt.Sprintf("node %d leads the metadata quorum but did not confirm its commit index to this node "+
				"(%v); this node has applied up to index %d", leader, err, b.node.Applied())
		}
		return last
	}
	if err := b.node.WaitPublished(ctx, target); err != nil {
		last.behind = fmt.Sprintf("the metadata log is committed up to index %d, this node has applied %d", target, b.node.Applied())
		return last
	}
	return catchUp{at: b.o.Clock.Now(), index: target}
}

// MetadataCaughtUp is when this broker last confirmed it had caught up with
// the metadata log, and to which index (zero before it serves).
func (b *Broker) MetadataCaughtUp() (time.Time, uint64) {
	if c := b.metaCaughtUp.Load(); c != nil {
		return c.at, c.index
	}
	return time.Time{}, 0
}
