package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/server"
)

// OffsetCommit, versions 2-10 (Kafka 4.2; v0-v1 were removed in Kafka 4.0).
// Each partition's offset becomes an OffsetCommit record in
// __consumer_offsets; the response is sent once the records are durable,
// like an acks=all produce. v2-v4 may set a retention time (stored as the
// offset's expire timestamp); v9+ answers GROUP_ID_NOT_FOUND for an unknown
// group with a generation; v10 names topics by id (UNKNOWN_TOPIC_ID when the
// id is unknown). Offsets may be committed for topics that do not exist, as
// in Kafka.
func init() { register(kmsg.OffsetCommit.Int16(), 2, 10, handleOffsetCommit) }

func handleOffsetCommit(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	byID := req.Version >= 10
	cr := &group.CommitRequest{Group: req.Group, Generation: req.Generation, MemberID: req.MemberID,
		InstanceID: req.InstanceID, RetentionMs: -1, ReportUnknownGroup: req.Version >= 9}
	if req.Version <= 4 {
		cr.RetentionMs = req.RetentionTimeMillis
	}
	// Topics named by an unknown id never reach the coordinator.
	topicErr := make([]error, len(req.Topics))
	var im *controller.Image
	if byID {
		im = h.d.Controller.Image()
	}
	for i, t := range req.Topics {
		name := t.Topic
		if byID {
			if ti := im.TopicByID(controller.TopicID(t.TopicID)); ti != nil {
				name = ti.Name
			} else {
				topicErr[i] = fmt.Errorf("%w: topic id %s", kerr.UnknownTopicID, controller.TopicID(t.TopicID))
				continue
			}
		}
		ct := group.CommitTopic{Topic: name}
		for _, p := range t.Partitions {
			ct.Partitions = append(ct.Partitions, group.CommitPartition{Partition: p.Partition, Offset: p.Offset,
				LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata})
		}
		cr.Topics = append(cr.Topics, ct)
	}
	if req.Version < 6 {
		for i := range cr.Topics {
			for j := range cr.Topics[i].Partitions {
				cr.Topics[i].Partitions[j].LeaderEpoch = -1
			}
		}
	}
	var res *group.CommitResult
	coord, err := h.groups()
	switch {
	case req.Group == "":
		err = errEmptyGroupID
	case err == nil && len(cr.Topics) > 0:
		res, err = coord.Commit(ctx, cr)
	}
	next := 0
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		var errs []error
		if topicErr[i] == nil {
			if res != nil {
				errs = res.Errs[next]
			}
			next++
		}
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case topicErr[i] != nil:
				rp.ErrorCode = errCode(h.d.Logger, topicErr[i])
			case err != nil:
				rp.ErrorCode = errCode(h.d.Logger, err)
			default:
				rp.ErrorCode = errCode(h.d.Logger, errs[j])
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
