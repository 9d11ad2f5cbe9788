package api

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// partitionView is what Metadata and DescribeTopicPartitions tell clients
// about a partition: the metadata's leader, epochs, replicas, ISR and
// eligible leader replicas, with the replicas that cannot serve listed
// offline (their broker is unregistered or fenced, it has no endpoint on
// this listener, or it is this broker and the partition's log dir is
// offline) and no leader when the leader is one of them. A partition
// without a leader answers LEADER_NOT_AVAILABLE, as Kafka's does.
type partitionView struct {
	leader, leaderEpoch              int32
	replicas, isr, elr, lastKnownELR []int32
	offline                          []int32
	err                              error
}

func (h *Handler) viewPartition(im *metadata.Image, topic string, p int32, pi *metadata.PartitionImage) partitionView {
	v := partitionView{leader: pi.Leader, leaderEpoch: pi.LeaderEpoch, replicas: nonNil(pi.Replicas), isr: nonNil(pi.ISR),
		elr: nonNil(pi.ELR), lastKnownELR: nonNil(pi.LastKnownELR), offline: []int32{}}
	for _, id := range pi.Replicas {
		if !h.replicaOnline(im, topic, p, id) {
			v.offline = append(v.offline, id)
		}
	}
	if v.leader >= 0 && slices.Contains(v.offline, v.leader) {
		v.leader = -1
	}
	if v.leader < 0 {
		v.err = kerr.LeaderNotAvailable
	}
	return v
}

// replicaOnline reports whether broker id can serve its replica of topic-p.
func (h *Handler) replicaOnline(im *metadata.Image, topic string, p, id int32) bool {
	if _, _, ok := h.endpoint(im, id); !ok {
		return false
	}
	if id != h.d.NodeID {
		return true
	}
	part, ok := h.d.Replicas.Get(topicpart.TopicPartition{Topic: topic, Partition: p})
	return !ok || part.Offline() == nil
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}
