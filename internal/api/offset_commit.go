package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/server"
)

// OffsetCommit, versions 2-10 (Kafka 4.2; v0-v1 were removed in Kafka 4.0).
// Each partition's offset becomes an OffsetCommit record in
// __consumer_offsets; the response is sent once the records are durable,
// like an acks=all produce. v2-v4 may set a retention time (stored as the
// offset's expire timestamp); v9+ answers GROUP_ID_NOT_FOUND for an unknown
// group with a generation; v10 names topics by id (UNKNOWN_TOPIC_ID when the
// id is unknown). As Kafka's KafkaApis does before it calls the coordinator,
// a partition of a topic the metadata does not hold (or beyond its partition
// count) is answered UNKNOWN_TOPIC_OR_PARTITION and never committed; the
// others are committed as usual.
func init() { register(kmsg.OffsetCommit.Int16(), 2, 10, handleOffsetCommit) }

// commitSlot says where one request partition went: its pre-coordinator
// error, or its place in the coordinator's CommitRequest.
type commitSlot struct {
	err  error
	t, p int
}

func handleOffsetCommit(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	cr := &group.CommitRequest{Group: req.Group, Generation: req.Generation, MemberID: req.MemberID,
		InstanceID: req.InstanceID, RetentionMs: -1, ReportUnknownGroup: req.Version >= 9}
	if req.Version <= 4 {
		cr.RetentionMs = req.RetentionTimeMillis
	}
	z := h.authz(r)
	groupAllowed := z.allowed(auth.OpRead, auth.ResourceGroup, req.Group)
	slots := commitSlots(h.d.Metadata.Image(), req, cr, func(topic string) bool {
		return !groupAllowed || z.allowed(auth.OpRead, auth.ResourceTopic, topic)
	})
	var res *group.CommitResult
	coord, err := h.groups()
	switch {
	case !groupAllowed:
		err = kerr.GroupAuthorizationFailed
	case req.Group == "":
		err = errEmptyGroupID
	case err == nil && len(cr.Topics) > 0:
		res, err = coord.Commit(ctx, cr)
	}
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch s := slots[i][j]; {
			case !groupAllowed:
				rp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			case s.err != nil:
				rp.ErrorCode = errCode(h.d.Logger, s.err)
			case err != nil:
				rp.ErrorCode = errCode(h.d.Logger, err)
			default:
				rp.ErrorCode = errCode(h.d.Logger, res.Errs[s.t][s.p])
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// commitSlots checks every request partition against the metadata image and
// READ authorization on its topic (before whether it exists, as Kafka
// does) and adds the ones that pass to cr; slots[i][j] says what became of
// request topic i's partition j.
func commitSlots(im *metadata.Image, req *kmsg.OffsetCommitRequest, cr *group.CommitRequest, readable func(string) bool) [][]commitSlot {
	byID := req.Version >= 10
	slots := make([][]commitSlot, len(req.Topics))
	for i, t := range req.Topics {
		slots[i] = make([]commitSlot, len(t.Partitions))
		var ti *metadata.TopicImage
		var missing error
		if byID {
			if ti = im.TopicByID(metadata.TopicID(t.TopicID)); ti == nil {
				missing = fmt.Errorf("%w: topic id %s", kerr.UnknownTopicID, metadata.TopicID(t.TopicID))
			}
		} else if !readable(t.Topic) {
			missing = kerr.TopicAuthorizationFailed
		} else if ti = im.Topic(t.Topic); ti == nil {
			missing = fmt.Errorf("%w: topic %s does not exist", kerr.UnknownTopicOrPartition, t.Topic)
		}
		if byID && ti != nil && !readable(ti.Name) {
			missing = kerr.TopicAuthorizationFailed
		}
		ct := group.CommitTopic{}
		for j, p := range t.Partitions {
			switch {
			case missing != nil:
				slots[i][j].err = missing
				continue
			case p.Partition < 0 || int(p.Partition) >= len(ti.Partitions):
				slots[i][j].err = fmt.Errorf("%w: %s has no partition %d", kerr.UnknownTopicOrPartition, ti.Name, p.Partition)
				continue
			}
			epoch := p.LeaderEpoch
			if req.Version < 6 {
				epoch = -1
			}
			slots[i][j] = commitSlot{t: len(cr.Topics), p: len(ct.Partitions)}
			ct.Partitions = append(ct.Partitions, group.CommitPartition{Partition: p.Partition, Offset: p.Offset,
				LeaderEpoch: epoch, Metadata: p.Metadata})
		}
		if len(ct.Partitions) > 0 {
			ct.Topic = ti.Name
			cr.Topics = append(cr.Topics, ct)
		}
	}
	return slots
}
