package isr

import (
	"fmt"
	"slices"
	"time"
)

// Blocker is one expansion rule a replica outside the ISR does not meet
// yet, with what it waits for.
type Blocker struct {
	// Rule names the rule: "replica", "in-flight", "fetched-this-epoch",
	// "caught-up-to-high-watermark", "caught-up-to-leader-epoch-start",
	// "registered", "unfenced", "not-shutting-down", "broker-epoch".
	Rule string
	// Detail is a sentence for people.
	Detail string
}

// blockers are the expansion rules id does not meet (Kafka's
// needsExpandIsr, canAddReplicaToIsr, isFollowerInSync and
// isReplicaIsrEligible), in that order; none means it may join.
func (l *Leader) blockers(id int32, hw int64, brokers Brokers) []Blocker {
	f := l.followers[id]
	if f == nil || id == l.cfg.LocalID {
		return []Blocker{{"replica", fmt.Sprintf("broker %d is not a follower of this partition (replicas %v)", id, l.a.Replicas)}}
	}
	if slices.Contains(l.a.ISR, id) {
		return []Blocker{{"replica", fmt.Sprintf("broker %d is in the ISR", id)}}
	}
	var out []Blocker
	add := func(rule, format string, args ...any) { out = append(out, Blocker{rule, fmt.Sprintf(format, args...)}) }
	if l.pending != Committed {
		add("in-flight", "an ISR change (%s to %v) is waiting for the controller; one change at a time", l.pending, l.proposal.IDs())
	}
	if !f.FetchedThisEpoch {
		add("fetched-this-epoch", "no fetch from broker %d in leader epoch %d yet", id, l.a.LeaderEpoch)
	}
	if f.LogEndOffset < hw {
		add("caught-up-to-high-watermark", "its log end offset %d is below the high watermark %d (%d behind)",
			f.LogEndOffset, hw, hw-max(f.LogEndOffset, 0))
	}
	if f.LogEndOffset < l.leso {
		add("caught-up-to-leader-epoch-start", "its log end offset %d is below %d, where leader epoch %d began",
			f.LogEndOffset, l.leso, l.a.LeaderEpoch)
	}
	b, ok := brokers(id)
	switch {
	case !ok:
		add("registered", "broker %d is not registered with the controller", id)
	case b.Fenced:
		add("unfenced", "broker %d is fenced (no heartbeat within broker.session.timeout.ms, or not caught up with the metadata yet)", id)
	case b.ShuttingDown:
		add("not-shutting-down", "broker %d is in controlled shutdown", id)
	case f.BrokerEpoch != -1 && f.BrokerEpoch != b.Epoch:
		add("broker-epoch", "broker %d's last fetch came from broker epoch %d, the registered one is %d (it restarted; KIP-903)",
			id, f.BrokerEpoch, b.Epoch)
	}
	return out
}

// ReplicaView is one replica as the leader sees it.
type ReplicaView struct {
	ID           int32
	Leader       bool
	InISR        bool
	InMaximalISR bool
	// LogEndOffset is -1 while unknown (no fetch from this leader yet).
	LogEndOffset       int64
	LogStartOffset     int64
	LastFetch          time.Time
	LastCaughtUp       time.Time
	BrokerEpoch        int64
	FetchedThisEpoch   bool
	CaughtUp           bool
	HoldsHighWatermark bool
	// Departure is why it is not in the ISR (nil for members).
	Departure *Departure
	// Blockers are the expansion rules it does not meet yet (replicas
	// outside the ISR).
	Blockers []Blocker
}

// View describes every replica, in assignment order, given the leader's log
// end offset leo and high watermark hw.
func (l *Leader) View(leo, hw int64, now time.Time, brokers Brokers) []ReplicaView {
	out := make([]ReplicaView, 0, len(l.a.Replicas))
	for _, id := range l.a.Replicas {
		v := ReplicaView{ID: id, InISR: slices.Contains(l.a.ISR, id), InMaximalISR: l.inMaximal(id)}
		if id == l.cfg.LocalID {
			v.Leader, v.LogEndOffset, v.CaughtUp, v.LastCaughtUp = true, leo, true, now
			v.FetchedThisEpoch = true
			if b, ok := brokers(id); ok {
				v.BrokerEpoch = b.Epoch
			}
			out = append(out, v)
			continue
		}
		f := l.followers[id]
		if f == nil {
			continue
		}
		v.LogEndOffset, v.LogStartOffset, v.LastFetch, v.LastCaughtUp = f.LogEndOffset, f.LogStartOffset, f.LastFetch, f.LastCaughtUp
		if f.Waiting && f.LogEndOffset >= leo {
			// Its fetch waits at the log end offset: caught up this instant.
			v.LastCaughtUp = now
		}
		v.BrokerEpoch, v.FetchedThisEpoch, v.CaughtUp = f.BrokerEpoch, f.FetchedThisEpoch, l.caughtUp(f, leo, now)
		v.HoldsHighWatermark = v.InMaximalISR || (v.CaughtUp && l.eligible(f, brokers))
		if !v.InISR {
			if d, ok := l.departures[id]; ok {
				v.Departure = &d
			}
			v.Blockers = l.blockers(id, hw, brokers)
		}
		out = append(out, v)
	}
	return out
}
