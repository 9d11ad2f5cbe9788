package api

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// DescribeTopicPartitions, version 0 (Kafka 4.2, KIP-966).
//
// Describes the requested topics (every topic when the list is empty) in
// name order with their partitions, at most min(ResponsePartitionLimit,
// max.request.partition.size.limit) partitions (and at least 1) per
// response; when the limit cuts a listing short, NextCursor names the first
// topic and partition not sent. A Cursor starts the listing at its topic and
// partition and drops topics named before it; when topics are listed, the
// cursor's topic must be one of them, and its partition must not be negative
// (INVALID_REQUEST for every topic otherwise, as Kafka answers). A listed
// topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION, or
// INVALID_TOPIC_EXCEPTION if its name is not valid; unknown topics are not
// reported when all topics are asked for. Each partition is described from
// the metadata this broker has published, as Metadata describes it, with
// its eligible leader replicas and last known ELR (KIP-966).
// Authorization: a topic needs DESCRIBE; a listed one without it is
// TOPIC_AUTHORIZATION_FAILED (whether or not it exists), and a listing of
// every topic leaves it out. Each topic carries the principal's authorized
// operations.
func init() { register(kmsg.DescribeTopicPartitions.Int16(), 0, 0, handleDescribeTopicPartitions) }

func handleDescribeTopicPartitions(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	im := h.d.Metadata.Image()
	all := len(req.Topics) == 0
	var cursorTopic string
	var cursorPartition int32
	if req.Cursor != nil {
		cursorTopic, cursorPartition = req.Cursor.Topic, req.Cursor.Partition
	}
	names := map[string]bool{}
	if all {
		for _, n := range im.TopicNames() {
			if n >= cursorTopic {
				names[n] = true
			}
		}
	} else {
		for _, t := range req.Topics {
			if t.Topic >= cursorTopic {
				names[t.Topic] = true
			}
		}
	}
	if req.Cursor != nil && (!all && !names[cursorTopic] || cursorPartition < 0) {
		for _, t := range req.Topics {
			st := kmsg.NewDescribeTopicPartitionsResponseTopic()
			st.Topic = strp(t.Topic)
			st.ErrorCode = kerr.InvalidRequest.Code
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)

	limit := max(min(h.d.Config().Int("max.request.partition.size.limit"), req.ResponsePartitionLimit), 1)
	remaining := limit
	z := h.authz(r)
	for _, name := range sorted {
		if all && !z.filter(auth.OpDescribe, auth.ResourceTopic, name) {
			continue
		}
		if remaining == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			break
		}
		st := kmsg.NewDescribeTopicPartitionsResponseTopic()
		st.Topic = strp(name)
		st.IsInternal = topicpart.Internal(name)
		st.AuthorizedOperations = z.operations(true, auth.ResourceTopic, name)
		if !all && !z.allowed(auth.OpDescribe, auth.ResourceTopic, name) {
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			st.AuthorizedOperations = authorizedOpsNotRequested
			resp.Topics = append(resp.Topics, st)
			continue
		}
		t := im.Topic(name)
		if t == nil {
			if !all {
				st.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if controller.ValidateTopicName(name) != nil {
					st.ErrorCode = kerr.InvalidTopicException.Code
				}
				resp.Topics = append(resp.Topics, st)
			}
			continue
		}
		st.TopicID = t.ID
		start := int32(0)
		if name == cursorTopic {
			start = cursorPartition
		}
		n := int32(len(t.Partitions))
		upper := int32(min(int64(n), int64(start)+int64(remaining))) // a cursor may be near MaxInt32
		for p := start; p < upper; p++ {
			st.Partitions = append(st.Partitions, h.describePartition(im, name, p, t.Partitions[p]))
		}
		resp.Topics = append(resp.Topics, st)
		if upper < n {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: upper}
			break
		}
		remaining -= int32(len(st.Partitions))
	}
	return resp, nil
}

func (h *Handler) describePartition(im *metadata.Image, topic string, p int32, pi *metadata.PartitionImage) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	v := h.viewPartition(im, topic, p, pi)
	sp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	sp.Partition, sp.LeaderID, sp.LeaderEpoch = p, v.leader, v.leaderEpoch
	sp.ErrorCode = h.code(v.err)
	sp.Replicas, sp.ISR, sp.OfflineReplicas = v.replicas, v.isr, v.offline
	sp.EligibleLeaderReplicas, sp.LastKnownELR = v.elr, v.lastKnownELR
	return sp
}
