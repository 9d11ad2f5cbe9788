package main

// Gathering a partition's state from the outside: metadata for leader,
// replicas and ISR; ListOffsets for the log start offset, last stable
// offset and high watermark; ListOffsets with Kafka's debugging replica id
// for each replica's log end offset; DescribeLogDirs for sizes.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/admin"
)

// debuggingReplicaID is Kafka's ListOffsetsRequest.DEBUGGING_REPLICA_ID. A
// ListOffsets request carrying it is answered without an isolation level,
// which makes "latest" the replica's log end offset instead of the high
// watermark, and it may be sent to followers as well as the leader.
const debuggingReplicaID = -2

// partitionState is everything a client can learn about one partition.
// Offsets are -1 when they could not be listed (see Errors).
type partitionState struct {
	Topic           string  `json:"topic"`
	Partition       int32   `json:"partition"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	OfflineReplicas []int32 `json:"offline_replicas,omitempty"`
	// ELR and LastKnownELR are KIP-966's eligible leader replicas (from
	// DescribeTopicPartitions); ELR is null when the broker did not say.
	ELR              []int32        `json:"elr"`
	LastKnownELR     []int32        `json:"last_known_elr,omitempty"`
	LogStartOffset   int64          `json:"log_start_offset"`
	LastStableOffset int64          `json:"last_stable_offset"`
	HighWatermark    int64          `json:"high_watermark"`
	LogEndOffset     *int64         `json:"log_end_offset"` // the leader's; null when it did not say
	SizeBytes        *int64         `json:"size_bytes,omitempty"`
	ReplicaStates    []replicaState `json:"replica_states,omitempty"`
	Errors           []string       `json:"errors,omitempty"`
	// UncleanElection is the partition's unacknowledged unclean election,
	// from Gregor's admin listener when describe was given one (--admin);
	// Kafka's protocol does not carry it.
	UncleanElection *admin.UncleanElectionView `json:"unclean_election,omitempty"`
}

// replicaState is one replica's log as its broker reports it.
type replicaState struct {
	Broker       int32  `json:"broker"`
	InISR        bool   `json:"in_isr"`
	LogEndOffset *int64 `json:"log_end_offset"`
	// Lag is the leader's log end offset minus this one's (0 for the
	// leader), each as its broker answered; null when either is unknown.
	Lag       *int64 `json:"lag"`
	SizeBytes *int64 `json:"size_bytes,omitempty"`
	Error     string `json:"error,omitempty"`
}

func (ps *partitionState) fail(what string, err error) {
	ps.Errors = append(ps.Errors, fmt.Sprintf("%s: %v", what, err))
}

func (ps *partitionState) replica(broker int32) *replicaState {
	for i := range ps.ReplicaStates {
		if ps.ReplicaStates[i].Broker == broker {
			return &ps.ReplicaStates[i]
		}
	}
	return nil
}

// gatherPartitions describes the partitions of tds that keep accepts,
// sorted by topic and partition. withSizes adds DescribeLogDirs.
//
// The offsets only grow (outside truncation), so they are listed smallest
// first: log start, then LSO, then HW, then LEO. Each later value is read
// no earlier than the one before it, so a busy partition still shows
// log start ≤ LSO ≤ HW ≤ LEO.
func gatherPartitions(ctx context.Context, cl *kgo.Client, adm *kadm.Client, tds kadm.TopicDetails,
	keep func(topic string, partition int32) bool, withSizes bool) ([]*partitionState, error) {
	var parts []*partitionState
	index := map[string]map[int32]*partitionState{}
	for _, td := range tds.Sorted() {
		for _, pd := range td.Partitions.Sorted() {
			if !keep(td.Topic, pd.Partition) {
				continue
			}
			ps := &partitionState{Topic: td.Topic, Partition: pd.Partition, Leader: pd.Leader, LeaderEpoch: pd.LeaderEpoch,
				Replicas: pd.Replicas, ISR: pd.ISR, OfflineReplicas: pd.OfflineReplicas,
				LogStartOffset: -1, LastStableOffset: -1, HighWatermark: -1}
			if pd.Err != nil {
				ps.fail("metadata", pd.Err)
			}
			for _, r := range pd.Replicas {
				ps.ReplicaStates = append(ps.ReplicaStates, replicaState{Broker: r, InISR: slices.Contains(pd.ISR, r)})
			}
			parts = append(parts, ps)
			if index[td.Topic] == nil {
				index[td.Topic] = map[int32]*partitionState{}
			}
			index[td.Topic][pd.Partition] = ps
		}
	}
	if len(parts) == 0 {
		return nil, nil
	}
	topics := make([]string, 0, len(index))
	for t := range index {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	lists := []struct {
		what string
		list func(context.Context, ...string) (kadm.ListedOffsets, error)
		set  func(*partitionState, int64)
	}{
		{"log start offset", adm.ListStartOffsets, func(ps *partitionState, o int64) { ps.LogStartOffset = o }},
		{"last stable offset", adm.ListCommittedOffsets, func(ps *partitionState, o int64) { ps.LastStableOffset = o }},
		{"high watermark", adm.ListEndOffsets, func(ps *partitionState, o int64) { ps.HighWatermark = o }},
	}
	for _, l := range lists {
		listed, err := l.list(ctx, topics...)
		if err != nil && len(listed) == 0 {
			return nil, fmt.Errorf("listing %ss: %w", l.what, err)
		}
		for _, ps := range parts {
			o, ok := listed.Lookup(ps.Topic, ps.Partition)
			switch {
			case !ok:
				ps.fail(l.what, fmt.Errorf("not listed (%v)", err))
			case o.Err != nil:
				ps.fail(l.what, o.Err)
			default:
				l.set(ps, o.Offset)
			}
		}
	}
	listReplicaLogEndOffsets(ctx, cl, parts)
	if withSizes {
		describeSizes(ctx, adm, parts)
	}
	return parts, nil
}

// listReplicaLogEndOffsets asks every replica's broker for its own log end
// offset (ListOffsets "latest" with the debugging replica id).
func listReplicaLogEndOffsets(ctx context.Context, cl *kgo.Client, parts []*partitionState) {
	reqs := map[int32]*kmsg.ListOffsetsRequest{}
	for _, ps := range parts {
		for _, r := range ps.Replicas {
			req := reqs[r]
			if req == nil {
				req = kmsg.NewPtrListOffsetsRequest()
				req.ReplicaID = debuggingReplicaID
				reqs[r] = req
			}
			i := slices.IndexFunc(req.Topics, func(t kmsg.ListOffsetsRequestTopic) bool { return t.Topic == ps.Topic })
			if i < 0 {
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = ps.Topic
				req.Topics = append(req.Topics, rt)
				i = len(req.Topics) - 1
			}
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition = ps.Partition
			rp.Timestamp = -1
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		}
	}
	find := func(topic string, partition int32) *partitionState {
		for _, ps := range parts {
			if ps.Topic == topic && ps.Partition == partition {
				return ps
			}
		}
		return nil
	}
	for broker, req := range reqs {
		kresp, err := cl.Broker(int(broker)).Request(ctx, req)
		if err != nil {
			for _, rt := range req.Topics {
				for _, rp := range rt.Partitions {
					if ps := find(rt.Topic, rp.Partition); ps != nil {
						ps.replica(broker).Error = err.Error()
					}
				}
			}
			continue
		}
		for _, rt := range kresp.(*kmsg.ListOffsetsResponse).Topics {
			for _, rp := range rt.Partitions {
				ps := find(rt.Topic, rp.Partition)
				if ps == nil || ps.replica(broker) == nil {
					continue
				}
				rs := ps.replica(broker)
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					rs.Error = err.Error()
					continue
				}
				leo := rp.Offset
				rs.LogEndOffset = &leo
				if broker == ps.Leader {
					ps.LogEndOffset = &leo
				}
			}
		}
	}
	for _, ps := range parts {
		for i := range ps.ReplicaStates {
			rs := &ps.ReplicaStates[i]
			if ps.LogEndOffset != nil && rs.LogEndOffset != nil {
				// Asked one broker after another, a follower may answer
				// after a write the leader had not taken yet: no negative lag.
				lag := max(*ps.LogEndOffset-*rs.LogEndOffset, 0)
				rs.Lag = &lag
			}
		}
	}
}

// describeELR fills each partition's ELR and last known ELR from
// DescribeTopicPartitions (Metadata does not carry them). A broker that
// does not serve it leaves them null; the error is returned, not recorded,
// since the rest of the description stands without them.
func describeELR(ctx context.Context, cl *kgo.Client, parts []*partitionState) error {
	var topics []string
	for _, ps := range parts {
		if !slices.Contains(topics, ps.Topic) {
			topics = append(topics, ps.Topic)
		}
	}
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	for _, t := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = t
		req.Topics = append(req.Topics, rt)
	}
	req.ResponsePartitionLimit = 2000
	// Bounded: each page answers at least one partition.
	for range 1 + len(parts) {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		for _, rt := range resp.Topics {
			if rt.Topic == nil || rt.ErrorCode != 0 {
				continue
			}
			for _, rp := range rt.Partitions {
				for _, ps := range parts {
					if ps.Topic == *rt.Topic && ps.Partition == rp.Partition && rp.ErrorCode == 0 {
						ps.ELR = append([]int32{}, rp.EligibleLeaderReplicas...)
						ps.LastKnownELR = rp.LastKnownELR
					}
				}
			}
		}
		if resp.NextCursor == nil {
			return nil
		}
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	return nil
}

// describeSizes fills each replica's size from DescribeLogDirs. A replica
// on one broker lives in one log dir, except while it moves (the future
// copy is not counted).
func describeSizes(ctx context.Context, adm *kadm.Client, parts []*partitionState) {
	var set kadm.TopicsSet
	for _, ps := range parts {
		set.Add(ps.Topic, ps.Partition)
	}
	all, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		for _, ps := range parts {
			ps.fail("size", err)
		}
		return
	}
	for _, ps := range parts {
		for i := range ps.ReplicaStates {
			rs := &ps.ReplicaStates[i]
			dirs, ok := all[rs.Broker]
			if !ok {
				continue
			}
			var size int64
			found := false
			dirs.EachPartition(func(d kadm.DescribedLogDirPartition) {
				if d.Topic == ps.Topic && d.Partition == ps.Partition && !d.IsFuture {
					size += d.Size
					found = true
				}
			})
			if found {
				rs.SizeBytes = &size
				if rs.Broker == ps.Leader {
					ps.SizeBytes = &size
				}
			}
		}
	}
}

// formatOffset prints an offset, "-" for unknown.
func formatOffset(o int64) string {
	if o < 0 {
		return "-"
	}
	return fmt.Sprint(o)
}

func formatOptOffset(o *int64) string {
	if o == nil {
		return "-"
	}
	return formatOffset(*o)
}

// humanBytes prints a size in binary units.
func humanBytes(n *int64) string {
	if n == nil {
		return "-"
	}
	v := float64(*n)
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", *n)
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

func formatBrokers(ids []int32) string {
	s := "["
	for i, id := range ids {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(id)
	}
	return s + "]"
}
