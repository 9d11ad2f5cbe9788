package controller

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/controller/election"
	"github.com/gregor-broker/gregor/internal/metadata"
)

// maxElectionsPerPass bounds the elections of one timer-driven pass (Kafka's
// MAX_ELECTIONS_PER_IMBALANCE); a pass that reaches it runs again at once.
const maxElectionsPerPass = 1000

// rerunDelay is how soon a pass that hit maxElectionsPerPass runs again.
const rerunDelay = 10 * time.Millisecond

// alterPartition is ReplicationControlManager.alterPartition (v2+: topics by
// id, NEW_LEADER_ELECTED, INELIGIBLE_REPLICA): the sender's broker epoch,
// then each partition validated in Kafka's order and changed with the
// target ISR through election.Build (which completes a reassignment whose
// adding replicas all joined, and keeps the ELR).
func (c *Core) alterPartition(w *write, r *AlterPartitionRequest) built {
	if err := checkBrokerEpoch(w.im, r.BrokerID, r.BrokerEpoch); err != nil {
		return answer(nil, err)
	}
	resp := &AlterPartitionResponse{Topics: make([]AlterPartitionTopicResult, len(r.Topics))}
	var elections []Election
	for i, rt := range r.Topics {
		out := &resp.Topics[i]
		out.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			res := AlterPartitionPartitionResult{Partition: rp.Partition}
			t := w.im.TopicByID(rt.TopicID)
			if t == nil {
				res.Err = fmt.Errorf("%w: unknown topic id %s", kerr.UnknownTopicID, rt.TopicID)
			} else if res.Err = validateAlterPartition(w.im, r.BrokerID, t, rp); res.Err == nil {
				kind := election.Online
				if w.uncleanAllowed(t.Name) {
					kind = election.Unclean
				}
				isr := make([]int32, len(rp.NewISR))
				for j, m := range rp.NewISR {
					isr[j] = m.BrokerID
				}
				ch := w.change(t, rp.Partition, election.Request{Kind: kind, TargetISR: isr, TargetRecovery: rp.LeaderRecoveryState})
				if ch.Changed {
					w.emit(ch.Change)
					if ch.Change.Leader != metadata.NoLeaderChange && ch.Change.Leader != r.BrokerID {
						// A reassignment completed and the leader moved: the
						// sender must learn the new state from the log.
						res.Err = fmt.Errorf("%w: the change completed a reassignment that moved the leader", kerr.NewLeaderElected)
					}
				}
				if e := w.election(t, rp.Partition, ch); e != nil {
					w.emit(e.Record())
					elections = append(elections, *e)
				}
			}
			out.Partitions = append(out.Partitions, res)
		}
	}
	return built{elections: elections, reply: func(after *metadata.Image, _ uint64) (any, error) {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				fillPartitionState(after, resp.Topics[i].TopicID, &resp.Topics[i].Partitions[j])
			}
		}
		return resp, nil
	}}
}

func fillPartitionState(im *metadata.Image, id metadata.TopicID, res *AlterPartitionPartitionResult) {
	if res.Err != nil {
		return
	}
	p := im.TopicByID(id).Partitions[res.Partition]
	res.LeaderID, res.LeaderEpoch, res.PartitionEpoch = p.Leader, p.LeaderEpoch, p.PartitionEpoch
	res.ISR, res.LeaderRecoveryState = slices.Clone(p.ISR), p.LeaderRecoveryState
}

// validateAlterPartition is validateAlterPartitionData, in Kafka's order.
func validateAlterPartition(im *metadata.Image, sender int32, t *metadata.TopicImage, rp AlterPartitionPartition) error {
	if rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
		return fmt.Errorf("%w: unknown partition %s-%d", kerr.UnknownTopicOrPartition, t.Name, rp.Partition)
	}
	p := t.Partitions[rp.Partition]
	switch {
	case rp.LeaderEpoch > p.LeaderEpoch:
		return fmt.Errorf("%w: the request's leader epoch %d is newer than the controller's %d", kerr.NotController, rp.LeaderEpoch, p.LeaderEpoch)
	case rp.PartitionEpoch > p.PartitionEpoch:
		return fmt.Errorf("%w: the request's partition epoch %d is newer than the controller's %d", kerr.NotController, rp.PartitionEpoch, p.PartitionEpoch)
	case rp.LeaderEpoch < p.LeaderEpoch:
		return fmt.Errorf("%w: the current leader epoch is %d, not %d", kerr.FencedLeaderEpoch, p.LeaderEpoch, rp.LeaderEpoch)
	case sender != p.Leader:
		return fmt.Errorf("%w: the current leader is %d, not %d", kerr.InvalidRequest, p.Leader, sender)
	case rp.PartitionEpoch < p.PartitionEpoch:
		return fmt.Errorf("%w: the current partition epoch is %d, not %d", kerr.InvalidUpdateVersion, p.PartitionEpoch, rp.PartitionEpoch)
	}
	isr := make([]int32, len(rp.NewISR))
	for i, m := range rp.NewISR {
		isr[i] = m.BrokerID
	}
	switch {
	case !validISR(p.Replicas, isr):
		return fmt.Errorf("%w: invalid ISR %v for replicas %v", kerr.InvalidRequest, isr, p.Replicas)
	case !slices.Contains(isr, p.Leader):
		return fmt.Errorf("%w: the ISR %v does not include the leader %d", kerr.InvalidRequest, isr, p.Leader)
	case rp.LeaderRecoveryState == metadata.Recovering && len(isr) > 1:
		return fmt.Errorf("%w: the ISR %v has more than the leader while it recovers from an unclean election", kerr.InvalidRequest, isr)
	case p.LeaderRecoveryState == metadata.Recovered && rp.LeaderRecoveryState == metadata.Recovering:
		return fmt.Errorf("%w: the leader recovery state cannot change from RECOVERED to RECOVERING", kerr.InvalidRequest)
	}
	var ineligible []string
	for _, m := range rp.NewISR {
		b := im.Brokers[m.BrokerID]
		switch {
		case b == nil:
			ineligible = append(ineligible, fmt.Sprintf("%d (not registered)", m.BrokerID))
		case b.InControlledShutdown:
			ineligible = append(ineligible, fmt.Sprintf("%d (shutting down)", m.BrokerID))
		case b.Fenced:
			ineligible = append(ineligible, fmt.Sprintf("%d (fenced)", m.BrokerID))
		case m.BrokerEpoch != -1 && m.BrokerEpoch != b.Epoch:
			ineligible = append(ineligible, fmt.Sprintf("%d (broker epoch mismatch: requested=%d VS expected=%d)", m.BrokerID, m.BrokerEpoch, b.Epoch))
		}
	}
	if len(ineligible) > 0 {
		return fmt.Errorf("%w: ineligible replicas %v in the new ISR", kerr.IneligibleReplica, ineligible)
	}
	return nil
}

// validISR is Replicas.validateIsr: every member a replica, none twice.
func validISR(replicas, isr []int32) bool {
	for i, id := range isr {
		if !slices.Contains(replicas, id) || slices.Contains(isr[:i], id) {
			return false
		}
	}
	return true
}

// electLeaders is ReplicationControlManager.electLeaders.
func (c *Core) electLeaders(w *write, r *ElectLeadersRequest) built {
	if r.ElectionType != ElectionPreferred && r.ElectionType != ElectionUnclean {
		return answer(nil, fmt.Errorf("%w: Unknown election type %d", kerr.InvalidRequest, r.ElectionType))
	}
	resp := &ElectLeadersResponse{}
	var elections []Election
	elect := func(topic string, p int32) error {
		e, err := w.electLeader(topic, p, r.ElectionType)
		if e != nil {
			elections = append(elections, *e)
		}
		return err
	}
	if r.Topics == nil {
		for _, t := range w.im.SortedTopics() {
			tr := TopicPartitionResults{Topic: t.Name}
			for p := range t.Partitions {
				// Asked for everything, Kafka leaves out partitions that
				// already have the leader asked for.
				if err := elect(t.Name, int32(p)); !isErr(err, kerr.ElectionNotNeeded) {
					tr.Partitions = append(tr.Partitions, PartitionResult{Partition: int32(p), Err: err})
				}
			}
			resp.Topics = append(resp.Topics, tr)
		}
	} else {
		for _, rt := range r.Topics {
			tr := TopicPartitionResults{Topic: rt.Topic}
			for _, p := range rt.Partitions {
				tr.Partitions = append(tr.Partitions, PartitionResult{Partition: p, Err: elect(rt.Topic, p)})
			}
			resp.Topics = append(resp.Topics, tr)
		}
	}
	return built{elections: elections, reply: func(*metadata.Image, uint64) (any, error) { return resp, nil }}
}

// electLeader is ReplicationControlManager.electLeader.
func (w *write) electLeader(topic string, p int32, typ int8) (*Election, error) {
	t := w.im.Topic(topic)
	if t == nil {
		return nil, fmt.Errorf("%w: No such topic as %s", kerr.UnknownTopicOrPartition, topic)
	}
	if p < 0 || int(p) >= len(t.Partitions) {
		return nil, fmt.Errorf("%w: No such partition as %s-%d", kerr.UnknownTopicOrPartition, topic, p)
	}
	cur := t.Partitions[p]
	if (typ == ElectionPreferred && hasPreferredLeader(cur)) || (typ == ElectionUnclean && cur.Leader != metadata.NoLeader) {
		return nil, kerr.ElectionNotNeeded
	}
	kind := election.Preferred
	if typ == ElectionUnclean {
		kind = election.Unclean
	}
	res := w.change(t, p, election.Request{Kind: kind, TargetRecovery: metadata.NoRecoveryChange})
	if !res.Changed {
		if typ == ElectionPreferred {
			return nil, kerr.PreferredLeaderNotAvailable
		}
		return nil, kerr.EligibleLeadersNotAvailable
	}
	e := w.election(t, p, res)
	w.emit(res.Change)
	if e != nil {
		w.emit(e.Record())
	}
	return e, nil
}

func hasPreferredLeader(p *metadata.PartitionImage) bool {
	return len(p.Replicas) > 0 && p.Leader == p.Replicas[0]
}

func isErr(err error, target *kerr.Error) bool {
	ke, ok := err.(*kerr.Error)
	return ok && ke == target
}

// electUncleanLeaders is maybeElectUncleanLeaders, every
// unclean.leader.election.interval.ms: leaderless partitions of topics that
// allow unclean elections elect any acceptable replica.
func (c *Core) electUncleanLeaders(w *write) built {
	var elections []Election
	n := 0
	for _, t := range w.im.SortedTopics() {
		if n >= maxElectionsPerPass || !w.uncleanAllowed(t.Name) {
			continue
		}
		for p, part := range t.Partitions {
			if n >= maxElectionsPerPass || part.Leader != metadata.NoLeader {
				continue
			}
			if e, err := w.electLeader(t.Name, int32(p), ElectionUnclean); err == nil {
				n++
				if e != nil {
					elections = append(elections, *e)
				}
			}
		}
	}
	c.uncleanAt = c.now.Add(c.uncleanInterval())
	if n >= maxElectionsPerPass {
		c.uncleanAt = c.now.Add(rerunDelay)
	}
	return built{elections: elections}
}

// balanceLeaders is maybeBalancePartitionLeaders, every
// leader.imbalance.check.interval.seconds when auto.leader.rebalance.enable
// is on: partitions not led by their preferred replica elect it where it is
// valid. Like Kafka's KRaft controller, it does not read
// leader.imbalance.per.broker.percentage: any imbalance is corrected.
func (c *Core) balanceLeaders(w *write) built {
	n := 0
	for _, t := range w.im.SortedTopics() {
		for p, part := range t.Partitions {
			if n >= maxElectionsPerPass || hasPreferredLeader(part) {
				continue
			}
			res := w.change(t, int32(p), election.Request{Kind: election.Preferred, TargetRecovery: metadata.NoRecoveryChange})
			if res.Changed {
				w.emit(res.Change)
				n++
			}
		}
	}
	c.balanceAt = c.now.Add(c.balanceInterval())
	if n >= maxElectionsPerPass {
		c.balanceAt = c.now.Add(rerunDelay)
	}
	return built{}
}
