package controller

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/controller/placement"
	"github.com/gregor-broker/gregor/internal/metadata"
)

// createTopics is ReplicationControlManager.createTopics: each topic is
// checked in Kafka's order and written as a Topic record, its Config
// records, and one Partition record per partition (leader the first active
// replica, ISR the active replicas, epochs 0). Topics of one request are
// built one after another, so a later one sees an earlier one.
func (c *Core) createTopics(w *write, r *CreateTopicsRequest) built {
	resp := &CreateTopicsResponse{Topics: make([]CreatableTopicResult, len(r.Topics))}
	for i, ct := range r.Topics {
		res, recs := c.createTopic(w, ct)
		resp.Topics[i] = res
		if res.Err == nil && !r.ValidateOnly {
			w.emit(recs...)
		}
	}
	return answer(resp, nil)
}

func (c *Core) createTopic(w *write, ct CreatableTopic) (CreatableTopicResult, []metadata.Record) {
	res := CreatableTopicResult{Name: ct.Name}
	configs := map[string]string{}
	var nulls []string
	for _, cv := range ct.Configs {
		if cv.Value == nil {
			nulls = append(nulls, cv.Name)
		} else {
			configs[cv.Name] = *cv.Value
		}
	}
	res.Err = validateNewTopic(ct.Name, w.im.Topic(ct.Name) != nil, w.im.TopicNames, configs, nulls, c.brokerCfg)
	if res.Err != nil {
		return res, nil
	}
	var assignments [][]int32
	var isrs [][]int32
	if len(ct.Assignments) > 0 {
		assignments, isrs, res.Err = w.manualAssignments(ct)
	} else {
		assignments, isrs, res.Err = c.placeNewTopic(w, ct)
	}
	if res.Err != nil {
		return res, nil
	}
	res.TopicID = c.cfg.NewTopicID()
	res.NumPartitions, res.ReplicationFactor = int32(len(assignments)), int16(len(assignments[0]))
	res.Configs = configs
	recs := []metadata.Record{metadata.Topic{Name: ct.Name, ID: res.TopicID}}
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		v := configs[k]
		recs = append(recs, metadata.Config{Resource: metadata.ConfigResource{Type: metadata.ResourceTopic, Name: ct.Name}, Name: k, Value: &v})
	}
	for p, replicas := range assignments {
		recs = append(recs, newPartition(res.TopicID, int32(p), replicas, isrs[p]))
	}
	return res, recs
}

func newPartition(id metadata.TopicID, p int32, replicas, isr []int32) metadata.Partition {
	return metadata.Partition{Topic: id, Partition: p, Replicas: replicas, ISR: isr, ELR: []int32{}, LastKnownELR: []int32{},
		Leader: isr[0], LeaderRecoveryState: metadata.Recovered, Adding: []int32{}, Removing: []int32{}}
}

// manualAssignments checks a CreateTopics manual assignment: partitions
// 0..n-1 once each, each a valid replica list of one replication factor
// with some active broker.
func (w *write) manualAssignments(ct CreatableTopic) ([][]int32, [][]int32, error) {
	if err := checkManualAssignmentShape(ct.ReplicationFactor, ct.NumPartitions); err != nil {
		return nil, nil, err
	}
	byPartition := map[int32][]int32{}
	var isrs = map[int32][]int32{}
	rf := -1
	for _, a := range ct.Assignments {
		if _, dup := byPartition[a.Partition]; dup {
			return nil, nil, fmt.Errorf("%w: Found multiple manual partition assignments for partition %d", kerr.InvalidReplicaAssignment, a.Partition)
		}
		if err := checkReplicaAssignment(a.Replicas, rf, w.registered); err != nil {
			return nil, nil, err
		}
		rf = len(a.Replicas)
		isr := w.active(a.Replicas)
		if len(isr) == 0 {
			return nil, nil, fmt.Errorf("%w: All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.",
				kerr.InvalidReplicaAssignment, a.Partition)
		}
		byPartition[a.Partition], isrs[a.Partition] = slices.Clone(a.Replicas), isr
	}
	out, outISR := make([][]int32, len(byPartition)), make([][]int32, len(byPartition))
	for p := range out {
		replicas, ok := byPartition[int32(p)]
		if !ok {
			return nil, nil, fmt.Errorf("%w: partitions should be a consecutive 0-based integer sequence", kerr.InvalidReplicaAssignment)
		}
		out[p], outISR[p] = replicas, isrs[int32(p)]
	}
	if err := checkPartitionLimit(int32(len(out))); err != nil {
		return nil, nil, err
	}
	return out, outISR, nil
}

// placeNewTopic places a topic's partitions with the striped placer over the
// registered brokers that are not shutting down.
func (c *Core) placeNewTopic(w *write, ct CreatableTopic) ([][]int32, [][]int32, error) {
	if err := checkCounts(ct.ReplicationFactor, ct.NumPartitions); err != nil {
		return nil, nil, err
	}
	n, rf := int(ct.NumPartitions), int(ct.ReplicationFactor)
	if n == -1 {
		n = int(c.brokerCfg.Int("num.partitions"))
	}
	if rf == -1 {
		rf = int(c.brokerCfg.Int("default.replication.factor"))
	}
	if err := checkPartitionLimit(int32(n)); err != nil {
		return nil, nil, err
	}
	assignments, err := placement.Place(c.cfg.Rand, w.placementBrokers(), nil, n, rf)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: Unable to replicate the partition %d time(s): %s", kerr.InvalidReplicationFactor, rf, kafkaText(err))
	}
	isrs := make([][]int32, len(assignments))
	for p, replicas := range assignments {
		if isrs[p] = w.active(replicas); len(isrs[p]) == 0 {
			return nil, nil, errAllFenced(rf)
		}
	}
	return assignments, isrs, nil
}

func errAllFenced(rf int) error {
	return fmt.Errorf("%w: Unable to replicate the partition %d time(s): All brokers are currently fenced or in controlled shutdown.",
		kerr.InvalidReplicationFactor, rf)
}

// kafkaText is an error's message without its Kafka error name.
func kafkaText(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return strings.TrimPrefix(err.Error(), ke.Error()+": ")
	}
	return err.Error()
}

func (w *write) registered(id int32) bool { return w.im.Brokers[id] != nil }

// active are the replicas that are unfenced and not shutting down, in
// assignment order: a new partition's ISR.
func (w *write) active(replicas []int32) []int32 {
	out := make([]int32, 0, len(replicas))
	for _, id := range replicas {
		if w.im.Usable(id) {
			out = append(out, id)
		}
	}
	return out
}

// placementBrokers are the brokers replicas may go to: registered and not in
// controlled shutdown (fenced ones last, never as leader).
func (w *write) placementBrokers() []placement.Broker {
	var out []placement.Broker
	for _, b := range w.im.SortedBrokers() {
		if !b.InControlledShutdown {
			out = append(out, placement.Broker{ID: b.ID, Rack: b.Rack, Fenced: b.Fenced})
		}
	}
	return out
}

// deleteTopics removes topics by name or id (Kafka's ControllerApis then
// ReplicationControlManager.deleteTopics).
func (c *Core) deleteTopics(w *write, r *DeleteTopicsRequest) built {
	resp := &DeleteTopicsResponse{Topics: make([]DeletableTopicResult, len(r.Topics))}
	enabled := c.brokerCfg.Bool("delete.topic.enable")
	for i, dt := range r.Topics {
		res := &resp.Topics[i]
		res.Name, res.TopicID = dt.Name, dt.TopicID
		var t *metadata.TopicImage
		switch {
		case !enabled:
			res.Err = fmt.Errorf("%w: Topic deletion is disabled.", kerr.TopicDeletionDisabled)
			continue
		case dt.Name != "":
			if t = w.im.Topic(dt.Name); t == nil {
				res.Err = fmt.Errorf("%w: This server does not host this topic-partition.", kerr.UnknownTopicOrPartition)
			}
		default:
			if t = w.im.TopicByID(dt.TopicID); t == nil {
				res.Err = fmt.Errorf("%w: This server does not host this topic ID.", kerr.UnknownTopicID)
			}
		}
		if t != nil {
			res.Name, res.TopicID = t.Name, t.ID
			w.emit(metadata.RemoveTopic{ID: t.ID})
		}
	}
	return answer(resp, nil)
}

// createPartitions is ReplicationControlManager.createPartitions: the new
// partitions continue the topic's stripe (or follow the manual
// assignment) with the replication factor of its partition 0.
func (c *Core) createPartitions(w *write, r *CreatePartitionsRequest) built {
	resp := &CreatePartitionsResponse{Topics: make([]TopicResult, len(r.Topics))}
	for i, ct := range r.Topics {
		recs, err := c.createPartitionsOf(w, ct)
		resp.Topics[i] = TopicResult{Name: ct.Name, Err: err}
		if err == nil && !r.ValidateOnly {
			w.emit(recs...)
		}
	}
	return answer(resp, nil)
}

func (c *Core) createPartitionsOf(w *write, ct CreatePartitionsTopic) ([]metadata.Record, error) {
	t := w.im.Topic(ct.Name)
	if t == nil {
		return nil, fmt.Errorf("%w: This server does not host this topic-partition.", kerr.UnknownTopicOrPartition)
	}
	current := int32(len(t.Partitions))
	if err := checkPartitionIncrease(ct.Name, current, ct.Count, len(ct.Assignments), ct.Assignments != nil); err != nil {
		return nil, err
	}
	if current == 0 {
		return nil, fmt.Errorf("%w: Invalid state: topic %s appears to have no partitions.", kerr.UnknownServerError, ct.Name)
	}
	rf := len(t.Partitions[0].Replicas)
	var assignments [][]int32
	if ct.Assignments != nil {
		for i, replicas := range ct.Assignments {
			if err := checkReplicaAssignment(replicas, rf, w.registered); err != nil {
				return nil, err
			}
			if len(w.active(replicas)) == 0 {
				return nil, fmt.Errorf("%w: All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.",
					kerr.InvalidReplicaAssignment, int(current)+i)
			}
			assignments = append(assignments, slices.Clone(replicas))
		}
	} else {
		existing := make([][]int32, len(t.Partitions))
		for i, p := range t.Partitions {
			existing[i] = p.Replicas
		}
		var err error
		if assignments, err = placement.Place(c.cfg.Rand, w.placementBrokers(), existing, int(ct.Count-current), rf); err != nil {
			return nil, err
		}
	}
	recs := make([]metadata.Record, 0, len(assignments))
	for i, replicas := range assignments {
		isr := w.active(replicas)
		if len(isr) == 0 {
			return nil, errAllFenced(rf)
		}
		recs = append(recs, newPartition(t.ID, current+int32(i), replicas, isr))
	}
	return recs, nil
}
