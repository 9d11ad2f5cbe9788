package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/server"
)

// OffsetDelete, version 0 (Kafka 4.2): tombstones a group's committed offsets
// of topics it is not subscribed to (GROUP_SUBSCRIBED_TO_TOPIC otherwise);
// groups of another protocol type than "consumer" must be empty
// (NON_EMPTY_GROUP). The response waits for the tombstones to be durable.
func init() { register(kmsg.OffsetDelete.Int16(), 0, 0, handleOffsetDelete) }

func handleOffsetDelete(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	z := h.authz(r)
	if !z.allowed(auth.OpDelete, auth.ResourceGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	dr := &group.FetchRequest{Group: req.Group, Topics: []group.TopicPartitions{}}
	denied := map[int]bool{}
	for i, t := range req.Topics {
		if !z.allowed(auth.OpRead, auth.ResourceTopic, t.Topic) {
			denied[i] = true
			continue
		}
		tp := group.TopicPartitions{Topic: t.Topic}
		for _, p := range t.Partitions {
			tp.Partitions = append(tp.Partitions, p.Partition)
		}
		dr.Topics = append(dr.Topics, tp)
	}
	coord, err := h.groups()
	var res *group.OffsetDeleteResult
	switch {
	case req.Group == "":
		err = errEmptyGroupID
	case err == nil:
		res, err = coord.DeleteOffsets(ctx, dr)
	}
	if err == nil {
		err = res.Err
	}
	if err != nil {
		resp.ErrorCode = errCode(h.d.Logger, err)
		return resp, nil
	}
	next := 0
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if denied[i] {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else {
				rp.ErrorCode = errCode(h.d.Logger, res.Errs[next][j])
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		if !denied[i] {
			next++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
