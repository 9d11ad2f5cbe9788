package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/server"
)

// DeleteTopics, versions 1-6 (Kafka 4.2; v0 was removed in Kafka 4.0).
//
// v1-v5 name topics; v6 names each topic by name or by id, not both. As in
// Kafka's controller: delete.topic.enable=false fails every topic with
// TOPIC_DELETION_DISABLED (INVALID_REQUEST before v3); a name or id given
// twice is INVALID_REQUEST ("Duplicate topic name." / "Duplicate topic id."),
// as is a topic with neither or both; an unknown name is
// UNKNOWN_TOPIC_OR_PARTITION and an unknown id UNKNOWN_TOPIC_ID; a name that
// resolves to an id also given by id is INVALID_REQUEST. A deleted topic's
// result carries its id (v6). The partitions' logs are deleted before the
// response is sent. Kafka shuffles the results so their order says nothing;
// Gregor answers invalid entries first, then deletions in request order.
func init() { register(kmsg.DeleteTopics.Int16(), 1, 6, handleDeleteTopics) }

func handleDeleteTopics(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	topics := req.Topics
	if req.Version < 6 {
		topics = make([]kmsg.DeleteTopicsRequestTopic, len(req.TopicNames))
		for i := range req.TopicNames {
			topics[i].Topic = &req.TopicNames[i]
		}
	}
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
		return resp, nil
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

	// Resolve both to the topics to delete, in request order.
	im := h.d.Controller.Image()
	type target struct {
		name string
		id   controller.TopicID
	}
	var targets []target
	byID := map[controller.TopicID]int{} // index in targets
	for _, id := range ids {
		if idCount[id] > 1 {
			continue
		}
		t := im.TopicByID(controller.TopicID(id))
		if t == nil {
			add(nil, id, kerr.UnknownTopicID, strp(kerr.UnknownTopicID.Description))
			continue
		}
		byID[t.ID] = len(targets)
		targets = append(targets, target{t.Name, t.ID})
	}
	dropped := map[controller.TopicID]bool{}
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
	for _, t := range targets {
		if dropped[t.id] {
			continue
		}
		_, err := h.d.Controller.DeleteTopic("", t.id)
		if err != nil {
			h.d.Logger.Debug("delete topic failed", "topic", t.name, "err", err)
		}
		add(strp(t.name), t.id, err, kafkaMessage(err))
	}
	return resp, nil
}
