package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/server"
)

// CreateTopics, versions 2-7 (Kafka 4.2; v0-v1 were removed in Kafka 4.0).
//
// Each topic is checked in the order Kafka's controller checks it (name,
// existence and collisions, configs, then partitions, replication factor or
// manual assignment) and gets Kafka's error code and message. A topic named
// twice in one request is refused with INVALID_REQUEST ("Duplicate topic
// name.", one result per name, after the others), and __cluster_metadata
// with INVALID_REQUEST too. Kafka's internal topic names (__consumer_offsets,
// __transaction_state, __share_group_state) may be created by clients, as in
// Kafka, and are internal. The only replication factor a single node can
// reach is 1. ValidateOnly checks everything and creates nothing; like Kafka
// it still answers with a fresh topic id. v5+ answers with the new topic's
// effective configs, partition count and replication factor; v7+ with its id.
//
// Deviation: the controller hosts the new partitions before answering, so
// TimeoutMillis is never reached and no REQUEST_TIMED_OUT is sent.
func init() { register(kmsg.CreateTopics.Int16(), 2, 7, handleCreateTopics) }

func handleCreateTopics(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	count := make(map[string]int, len(req.Topics))
	for _, rt := range req.Topics {
		count[rt.Topic]++
	}
	var tail []kmsg.CreateTopicsResponseTopic
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		switch n := count[rt.Topic]; {
		case n > 1:
			count[rt.Topic] = -1 // answered once
			st.ErrorCode = kerr.InvalidRequest.Code
			st.ErrorMessage = strp("Duplicate topic name.")
			tail = append(tail, st)
			continue
		case n < 0:
			continue
		case rt.Topic == controller.ClusterMetadataTopic:
			st.ErrorCode = kerr.InvalidRequest.Code
			st.ErrorMessage = strp("Creation of internal topic " + controller.ClusterMetadataTopic + " is prohibited.")
			tail = append(tail, st)
			continue
		}
		t, err := h.d.Controller.CreateTopic(createTopicRequest(rt), req.ValidateOnly)
		if err != nil {
			st.ErrorCode = errCode(h.d.Logger, err)
			st.ErrorMessage = kafkaMessage(err)
			h.d.Logger.Debug("create topic refused", "topic", rt.Topic, "client", r.ClientID, "err", err)
		} else {
			h.describeCreatedTopic(t, &st)
		}
		resp.Topics = append(resp.Topics, st)
	}
	resp.Topics = append(resp.Topics, tail...)
	return resp, nil
}

func createTopicRequest(rt kmsg.CreateTopicsRequestTopic) controller.CreateTopicRequest {
	ct := controller.CreateTopicRequest{
		Name:              rt.Topic,
		NumPartitions:     rt.NumPartitions,
		ReplicationFactor: rt.ReplicationFactor,
	}
	for _, a := range rt.ReplicaAssignment {
		ct.Assignment = append(ct.Assignment, controller.ReplicaAssignment{Partition: a.Partition, Replicas: a.Replicas})
	}
	for _, c := range rt.Configs {
		if c.Value == nil {
			ct.NullConfigs = append(ct.NullConfigs, c.Name)
			continue
		}
		if ct.Configs == nil {
			ct.Configs = make(map[string]string, len(rt.Configs))
		}
		ct.Configs[c.Name] = *c.Value
	}
	return ct
}

// describeCreatedTopic fills the v5+ fields: what the topic was created with.
func (h *Handler) describeCreatedTopic(t *controller.Topic, st *kmsg.CreateTopicsResponseTopic) {
	st.TopicID = t.ID
	st.NumPartitions = t.Partitions
	st.ReplicationFactor = 1
	for _, e := range config.EffectiveTopic(h.d.Config(), t.Configs) {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name = e.Name
		c.Value = e.Value
		c.ReadOnly = e.ReadOnly
		c.Source = int8(e.Source)
		c.IsSensitive = e.Sensitive
		st.Configs = append(st.Configs, c)
	}
}
