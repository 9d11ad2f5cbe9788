package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/server"
)

// OffsetForLeaderEpoch, versions 2-4 (Kafka 4.2; v0-v1 were removed in
// Kafka 4.0).
//
// Per partition: CurrentLeaderEpoch (-1: not checked) older than the
// partition's leader epoch is FENCED_LEADER_EPOCH, newer is
// UNKNOWN_LEADER_EPOCH. Otherwise the answer is the leader-epoch cache's, as
// Kafka's LeaderEpochFileCache.endOffsetFor gives it: for the latest epoch,
// (that epoch, log end offset); for an older one, the largest epoch at or
// below it and the start offset of the next higher epoch; for an epoch below
// every cached one, (the requested epoch, the first cached start offset);
// for an epoch above them all, or an empty cache, (-1, -1) with no error.
//
// ReplicaId (v3+; -1 for a consumer, a broker id for a follower, -2 when a v2
// client sent none) does not change the answer, as in Kafka: consumers and
// followers alike get end offsets bounded by the log end offset, not the
// high watermark (a consumer only compares them with its position, which is
// below the high watermark). ReplicaId decides authorization, as in Kafka:
// a replica needs CLUSTER_ACTION on the cluster (else every partition is
// CLUSTER_AUTHORIZATION_FAILED), a consumer DESCRIBE on each topic
// (TOPIC_AUTHORIZATION_FAILED).
func init() { register(kmsg.OffsetForLeaderEpoch.Int16(), 2, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	z := h.authz(r)
	var denied error
	if req.ReplicaID != -1 && !z.cluster(auth.OpClusterAction) {
		denied = kerr.ClusterAuthorizationFailed
	}
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		topicErr := denied
		if denied == nil && req.ReplicaID == -1 && !z.allowed(auth.OpDescribe, auth.ResourceTopic, rt.Topic) {
			topicErr = kerr.TopicAuthorizationFailed
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			err := topicErr
			if err == nil {
				err = h.endOffsetForEpoch(rt.Topic, rp, &sp)
			}
			sp.ErrorCode = errCode(h.d.Logger, err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (h *Handler) endOffsetForEpoch(topic string, rp kmsg.OffsetForLeaderEpochRequestTopicPartition,
	sp *kmsg.OffsetForLeaderEpochResponseTopicPartition) error {
	p, err := h.partition(topic, rp.Partition)
	if err != nil {
		return err
	}
	if err := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); err != nil {
		return err
	}
	sp.LeaderEpoch, sp.EndOffset = p.Log.EndOffsetForEpoch(rp.LeaderEpoch)
	return nil
}
