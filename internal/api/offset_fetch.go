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

// OffsetFetch, versions 1-10 (Kafka 4.2; v0 was removed in Kafka 4.0). v2+
// may ask for every committed offset (null topics) and reports group errors
// at the top level (per partition before); v7 adds require_stable; v8+
// fetches several groups; v10 names topics by id (UNKNOWN_TOPIC_ID for an
// unknown id; offsets of topics that no longer exist are left out of a v10
// "all topics" answer since they have no id). A partition without a
// committed offset answers offset -1. Every offset returned is durable.
func init() { register(kmsg.OffsetFetch.Int16(), 1, 10, handleOffsetFetch) }

func handleOffsetFetch(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version < 8 {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = req.Group
		if req.Topics != nil {
			rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
			for _, t := range req.Topics {
				gt := kmsg.NewOffsetFetchRequestGroupTopic()
				gt.Topic, gt.Partitions = t.Topic, t.Partitions
				rg.Topics = append(rg.Topics, gt)
			}
		}
		g := h.offsetFetchGroup(ctx, r, req, &rg)
		resp.ErrorCode = g.ErrorCode
		for _, t := range g.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	for i := range req.Groups {
		resp.Groups = append(resp.Groups, h.offsetFetchGroup(ctx, r, req, &req.Groups[i]))
	}
	return resp, nil
}

// offsetFetchGroup answers one group in the v8+ shape. Authorization, as
// in Kafka: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED), DESCRIBE on
// each topic: a requested topic without it is TOPIC_AUTHORIZATION_FAILED,
// and a request for every topic leaves it out.
func (h *Handler) offsetFetchGroup(ctx context.Context, r *server.Request, req *kmsg.OffsetFetchRequest, rg *kmsg.OffsetFetchRequestGroup) kmsg.OffsetFetchResponseGroup {
	out := kmsg.NewOffsetFetchResponseGroup()
	out.Group = rg.Group
	byID := req.Version >= 10
	im := h.d.Metadata.Image()
	z := h.authz(r)
	fr := &group.FetchRequest{Group: rg.Group, RequireStable: req.RequireStable}
	// unknown[i]: the request's topic i names an unknown topic id;
	// denied[i]: the principal may not describe it.
	unknown := make([]bool, len(rg.Topics))
	denied := make([]bool, len(rg.Topics))
	if rg.Topics != nil {
		fr.Topics = []group.TopicPartitions{}
		for i, t := range rg.Topics {
			name := t.Topic
			if byID {
				ti := im.TopicByID(metadata.TopicID(t.TopicID))
				if ti == nil {
					unknown[i] = true
					continue
				}
				name = ti.Name
			}
			if !z.allowed(auth.OpDescribe, auth.ResourceTopic, name) {
				denied[i] = true
				continue
			}
			fr.Topics = append(fr.Topics, group.TopicPartitions{Topic: name, Partitions: t.Partitions})
		}
	}
	coord, err := h.groups()
	var res *group.FetchResult
	switch {
	case !z.allowed(auth.OpDescribe, auth.ResourceGroup, rg.Group):
		err = kerr.GroupAuthorizationFailed
	case err == nil:
		res, err = coord.Fetch(ctx, fr)
	}
	if err == nil {
		err = res.Err
	}
	if err != nil {
		if req.Version >= 2 {
			out.ErrorCode = errCode(h.d.Logger, err)
			return out
		}
		// v1 has no top-level error: every requested partition carries it.
		for _, t := range rg.Topics {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, -1, -1, strp("")
				rp.ErrorCode = errCode(h.d.Logger, err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
		return out
	}
	addTopic := func(name string, id [16]byte, parts []group.FetchPartition) {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic, rt.TopicID = name, id
		for _, p := range parts {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p.Partition, p.Offset, p.LeaderEpoch, strp(p.Metadata)
			rp.ErrorCode = errCode(h.d.Logger, p.Err)
			if req.Version < 5 {
				rp.LeaderEpoch = -1
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
	if rg.Topics == nil {
		for _, t := range res.Topics {
			if !z.filter(auth.OpDescribe, auth.ResourceTopic, t.Topic) {
				continue
			}
			var id [16]byte
			if byID {
				ti := im.Topic(t.Topic)
				if ti == nil {
					continue
				}
				id = ti.ID
			}
			addTopic(t.Topic, id, t.Partitions)
		}
		return out
	}
	next := 0
	for i, t := range rg.Topics {
		if unknown[i] || denied[i] {
			var perr error = kerr.TopicAuthorizationFailed
			if unknown[i] {
				perr = fmt.Errorf("%w: topic id %s", kerr.UnknownTopicID, metadata.TopicID(t.TopicID))
			}
			parts := make([]group.FetchPartition, len(t.Partitions))
			for j, p := range t.Partitions {
				parts[j] = group.FetchPartition{Partition: p, Offset: -1, LeaderEpoch: -1, Err: perr}
			}
			addTopic(t.Topic, t.TopicID, parts)
			continue
		}
		addTopic(t.Topic, t.TopicID, res.Topics[next].Partitions)
		next++
	}
	return out
}
