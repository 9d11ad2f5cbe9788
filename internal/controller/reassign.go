package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/controller/election"
	"github.com/gregor-broker/gregor/internal/metadata"
)

// alterReassignments is ReplicationControlManager.alterPartitionReassignments.
// A reassignment first adds the target replicas (replicas = target + those
// being removed, with Adding and Removing set); it completes when an ISR
// change (AlterPartition) brings every adding replica into the ISR, which
// election.Build turns into the final replica set. Moves that need no new
// replica complete at once.
func (c *Core) alterReassignments(w *write, r *AlterPartitionReassignmentsRequest) built {
	resp := &AlterPartitionReassignmentsResponse{}
	var elections []Election
	for _, rt := range r.Topics {
		tr := TopicPartitionResults{Topic: rt.Name}
		for _, rp := range rt.Partitions {
			e, err := w.alterReassignment(rt.Name, rp, r.AllowReplicationFactorChange)
			if e != nil {
				elections = append(elections, *e)
			}
			tr.Partitions = append(tr.Partitions, PartitionResult{Partition: rp.Partition, Err: err})
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return built{elections: elections, reply: func(*metadata.Image, uint64) (any, error) { return resp, nil }}
}

func (w *write) alterReassignment(topic string, rp ReassignablePartition, allowRFChange bool) (*Election, error) {
	t := w.im.Topic(topic)
	if t == nil {
		return nil, fmt.Errorf("%w: Unable to find a topic named %s.", kerr.UnknownTopicOrPartition, topic)
	}
	if rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
		return nil, fmt.Errorf("%w: Unable to find partition %s:%d.", kerr.UnknownTopicOrPartition, topic, rp.Partition)
	}
	p := t.Partitions[rp.Partition]
	var req election.Request
	uncleanRevert := false
	if rp.Replicas == nil {
		var err error
		if req, uncleanRevert, err = w.cancelReassignment(t, rp.Partition, p); err != nil {
			return nil, err
		}
	} else {
		if err := checkReplicaAssignment(rp.Replicas, -1, w.registered); err != nil {
			return nil, err
		}
		if original := len(p.Replicas) - len(p.Adding); !allowRFChange && original != len(rp.Replicas) {
			return nil, fmt.Errorf("%w: The replication factor is changed from %d to %d", kerr.InvalidReplicationFactor, original, len(rp.Replicas))
		}
		req = changeReassignment(p, rp.Replicas)
		req.TargetRecovery = metadata.NoRecoveryChange
	}
	res := w.change(t, rp.Partition, req)
	e := w.election(t, rp.Partition, res)
	if uncleanRevert && res.Changed && res.Change.Leader != metadata.NoLeaderChange {
		e = w.uncleanElection(t, rp.Partition, res.Leader)
	}
	if res.Changed {
		w.emit(res.Change)
	}
	if e != nil {
		w.emit(e.Record())
	}
	return e, nil
}

// changeReassignment is PartitionReassignmentReplicas: the replicas become
// the target followed by the current replicas it drops (removing, sorted),
// and adding are the target's new replicas (sorted).
func changeReassignment(p *metadata.PartitionImage, target []int32) election.Request {
	removing := sortedDifference(p.Replicas, target)
	adding := sortedDifference(target, p.Replicas)
	replicas := append(slices.Clone(target), removing...)
	req := election.Request{}
	if !slices.Equal(replicas, p.Replicas) {
		req.TargetReplicas = replicas
	}
	if len(removing) > 0 {
		req.TargetRemoving = removing
	}
	if len(adding) > 0 {
		req.TargetAdding = adding
	}
	return req
}

func sortedDifference(a, b []int32) []int32 {
	var out []int32
	for _, id := range a {
		if !slices.Contains(b, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// cancelReassignment is PartitionReassignmentRevert: back to the original
// replicas, with the adding replicas out of the ISR. If that empties the
// ISR, only the adding replicas had the data: reverting is an unclean
// election, allowed only where the topic allows one. Kafka then makes the
// first original replica the ISR even when it is fenced, and elects it
// without calling it unclean; here the first acceptable original replica
// becomes the ISR and the leader, the partition is RECOVERING and the
// election is reported like any unclean one.
func (w *write) cancelReassignment(t *metadata.TopicImage, partition int32, p *metadata.PartitionImage) (election.Request, bool, error) {
	if len(p.Adding) == 0 && len(p.Removing) == 0 {
		return election.Request{}, false, fmt.Errorf("%w: No partition reassignment is in progress.", kerr.NoReassignmentInProgress)
	}
	replicas := without(p.Replicas, p.Adding...)
	isr := without(p.ISR, p.Adding...)
	req := election.Request{TargetISR: isr, TargetReplicas: replicas, TargetAdding: []int32{}, TargetRemoving: []int32{},
		TargetRecovery: metadata.NoRecoveryChange}
	allowed := w.uncleanAllowed(t.Name)
	if allowed {
		req.Kind = election.Unclean
	}
	if len(isr) > 0 {
		return req, false, nil
	}
	if len(replicas) == 0 {
		return req, false, fmt.Errorf("%w: Invalid replica assignment: addingReplicas contains all replicas.", kerr.InvalidReplicaAssignment)
	}
	if !allowed {
		return req, false, fmt.Errorf("%w: Unable to revert partition assignment for %s:%d because it would require an unclean leader election.",
			kerr.InvalidReplicaAssignment, t.Name, partition)
	}
	i := slices.IndexFunc(replicas, w.im.Usable)
	if i < 0 {
		return req, false, fmt.Errorf("%w: Unable to revert partition assignment for %s:%d: no original replica can lead.",
			kerr.EligibleLeadersNotAvailable, t.Name, partition)
	}
	req.TargetISR, req.TargetRecovery = []int32{replicas[i]}, metadata.Recovering
	return req, true, nil
}

// listReassignments is ReplicationControlManager.listPartitionReassignments.
func listReassignments(im *metadata.Image, r *ListPartitionReassignmentsRequest) *ListPartitionReassignmentsResponse {
	resp := &ListPartitionReassignmentsResponse{}
	add := func(t *metadata.TopicImage, partitions []int32) {
		ot := OngoingTopicReassignment{Name: t.Name}
		for _, i := range partitions {
			if i < 0 || int(i) >= len(t.Partitions) {
				continue
			}
			p := t.Partitions[i]
			if len(p.Adding) > 0 || len(p.Removing) > 0 {
				ot.Partitions = append(ot.Partitions, OngoingPartitionReassignment{Partition: i,
					Replicas: slices.Clone(p.Replicas), Adding: slices.Clone(p.Adding), Removing: slices.Clone(p.Removing)})
			}
		}
		if len(ot.Partitions) > 0 {
			resp.Topics = append(resp.Topics, ot)
		}
	}
	if r.Topics == nil {
		for _, t := range im.SortedTopics() {
			all := make([]int32, len(t.Partitions))
			for i := range all {
				all[i] = int32(i)
			}
			add(t, all)
		}
		return resp
	}
	for _, rt := range r.Topics {
		if t := im.Topic(rt.Topic); t != nil {
			add(t, rt.Partitions)
		}
	}
	return resp
}
