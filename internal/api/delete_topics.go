package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/metadata"
)

// DeleteTopics, versions 1-6 (Kafka 4.2; v0 was removed in Kafka 4.0).
//
// Any broker takes it and forwards it to the active controller, then
// answers once it has published the deletions itself (its logs of the
// deleted partitions are gone by then). v1-v5 name topics; v6 names each topic by name or by id, not both. As in
// Kafka's controller: delete.topic.enable=false fails every topic with
// TOPIC_DELETION_DISABLED (INVALID_REQUEST before v3); a name or id given
// twice is INVALID_REQUEST ("Duplicate topic name." / "Duplicate topic id."),
// as is a topic with neither or both; an unknown name is
// UNKNOWN_TOPIC_OR_PARTITION and an unknown id UNKNOWN_TOPIC_ID; a name that
// resolves to an id also given by id is INVALID_REQUEST. A deleted topic's
// result carries its id (v6). Kafka shuffles the results so their order says nothing;
// Gregor answers invalid entries first, then deletions in request order.
func init() {
	register(kmsg.DeleteTopics.Int16(), 1, 6, handleForwarded)
	registerController(kmsg.DeleteTopics.Int16(), 1, 6, controllerDeleteTopics)
}

// deleteTopicsRequest lists a DeleteTopics request's topics whatever its
// version.
func deleteTopicsRequest(req *kmsg.DeleteTopicsRequest) []kmsg.DeleteTopicsRequestTopic {
	if req.Version >= 6 {
		return req.Topics
	}
	topics := make([]kmsg.DeleteTopicsRequestTopic, len(req.TopicNames))
	for i := range req.TopicNames {
		topics[i].Topic = &req.TopicNames[i]
	}
	return topics
}

// failDeleteTopics answers every topic with code.
func failDeleteTopics(req *kmsg.DeleteTopicsRequest, code int16, msg *string) *kmsg.DeleteTopicsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	for _, t := range deleteTopicsRequest(req) {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID, st.ErrorCode, st.ErrorMessage = t.Topic, t.TopicID, code, msg
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func controllerDeleteTopics(ctx context.Context, h *ControllerHandler, kr kmsg.Request) (kmsg.Response, uint64, error) {
	req := kr.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	topics := deleteTopicsRequest(req)
	add := func(name *string, id [16]byte, err error, msg *string) {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = name, id
		st.ErrorCode = errCode(h.d.Logger, err)
		st.ErrorMessage = msg
		resp.Topics = append(resp.Topics, st)
	}
	if !h.d.Config().Bool("delete.topic.enable") {
		err := kerr.TopicDeletionDisabled
		if req.Version < 3 {
			err = kerr.InvalidRequest
		}
		for _, t := range topics {
			add(t.Topic, t.TopicID, err, nil)
		}
		return resp, 0, nil
	}

	// Collect names and ids, setting duplicates aside as Kafka does.
	var names []string
	var ids [][16]byte
	nameCount := map[string]int{}
	idCount := map[[16]byte]int{}
	for _, t := range topics {
		switch {
		case t.Topic == nil && t.TopicID == [16]byte{}:
			add(nil, t.TopicID, kerr.InvalidRequest, strp("Neither topic name nor id were specified."))
		case t.Topic == nil:
			if idCount[t.TopicID]++; idCount[t.TopicID] == 1 {
				ids = append(ids, t.TopicID)
			}
		case t.TopicID == [16]byte{}:
			if nameCount[*t.Topic]++; nameCount[*t.Topic] == 1 {
				names = append(names, *t.Topic)
			}
		default:
			add(t.Topic, t.TopicID, kerr.InvalidRequest, strp("You may not specify both topic name and topic id."))
		}
	}
	for _, n := range names {
		if nameCount[n] > 1 {
			add(strp(n), [16]byte{}, kerr.InvalidRequest, strp("Duplicate topic name."))
		}
	}
	for _, id := range ids {
		if idCount[id] > 1 {
			add(nil, id, kerr.InvalidRequest, strp("Duplicate topic id."))
		}
	}

	// Resolve both to the topics to delete, in request order, against the
	// controller's image (the deletion itself is checked again when it is
	// written).
	im := h.d.Image()
	type target struct {
		name string
		id   metadata.TopicID
	}
	var targets []target
	byID := map[metadata.TopicID]int{} // index in targets
	for _, id := range ids {
		if idCount[id] > 1 {
			continue
		}
		t := im.TopicByID(metadata.TopicID(id))
		if t == nil {
			add(nil, id, kerr.UnknownTopicID, strp(kerr.UnknownTopicID.Description))
			continue
		}
		byID[t.ID] = len(targets)
		targets = append(targets, target{t.Name, t.ID})
	}
	dropped := map[metadata.TopicID]bool{}
	for _, n := range names {
		if nameCount[n] > 1 {
			continue
		}
		t := im.Topic(n)
		if t == nil {
			add(strp(n), [16]byte{}, kerr.UnknownTopicOrPartition, strp(kerr.UnknownTopicOrPartition.Description))
			continue
		}
		if _, dup := byID[t.ID]; dup {
			// Kafka answers the name and silently drops the id entry.
			dropped[t.ID] = true
			add(strp(n), t.ID, kerr.InvalidRequest, strp("The provided topic name maps to an ID that was already supplied."))
			continue
		}
		byID[t.ID] = len(targets)
		targets = append(targets, target{t.Name, t.ID})
	}
	dr := &controller.DeleteTopicsRequest{}
	var kept []target
	for _, t := range targets {
		if !dropped[t.id] {
			dr.Topics = append(dr.Topics, controller.DeleteTopicState{TopicID: t.id})
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		return resp, 0, nil
	}
	ctx, cancel := withTimeoutMillis(ctx, req.TimeoutMillis)
	defer cancel()
	out, index, err := h.d.Controller.DeleteTopics(ctx, dr)
	for i, t := range kept {
		terr := err
		if err == nil {
			terr = out.Topics[i].Err
		}
		if terr != nil {
			h.d.Logger.Debug("delete topic failed", "topic", t.name, "err", terr)
		}
		add(strp(t.name), t.id, terr, kafkaMessage(terr))
	}
	return resp, index, nil
}
