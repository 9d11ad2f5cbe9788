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
// Any broker takes it and forwards it to the active controller (KIP-590),
// then answers once it has published the new topics itself, so the
// client's next request to that broker finds them hosted. The controller
// checks each topic in Kafka's order (name, existence and collisions,
// configs, then partitions, replication factor or manual assignment) and
// answers Kafka's error code and message. A topic named twice in one
// request is refused with INVALID_REQUEST ("Duplicate topic name.", one
// result per name, after the others), and __cluster_metadata with
// INVALID_REQUEST too. Kafka's internal topic names (__consumer_offsets,
// __transaction_state, __share_group_state) may be created by clients, as
// in Kafka, and are internal. A replication factor above the number of
// unfenced brokers is INVALID_REPLICATION_FACTOR, as in Kafka.
// ValidateOnly checks everything and creates nothing; like Kafka it still
// answers with a fresh topic id. v5+ answers with the new topic's effective
// configs (the controller's broker configs under the topic's overrides),
// partition count and replication factor; v7+ with its id. TimeoutMillis
// bounds the whole: a controller that cannot write in time (a failover)
// answers REQUEST_TIMED_OUT, which clients retry.
func init() {
	register(kmsg.CreateTopics.Int16(), 2, 7, handleForwarded)
	registerController(kmsg.CreateTopics.Int16(), 2, 7, controllerCreateTopics)
}

func controllerCreateTopics(ctx context.Context, h *ControllerHandler, kr kmsg.Request) (kmsg.Response, uint64, error) {
	req := kr.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	count := make(map[string]int, len(req.Topics))
	for _, rt := range req.Topics {
		count[rt.Topic]++
	}
	var tail []kmsg.CreateTopicsResponseTopic
	cr := &controller.CreateTopicsRequest{ValidateOnly: req.ValidateOnly}
	var asked []int // resp.Topics index of each topic in cr
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
		cr.Topics = append(cr.Topics, creatableTopic(rt))
		asked = append(asked, len(resp.Topics))
		resp.Topics = append(resp.Topics, st)
	}
	var index uint64
	if len(cr.Topics) > 0 {
		ctx, cancel := withTimeoutMillis(ctx, req.TimeoutMillis)
		defer cancel()
		out, idx, err := h.d.Controller.CreateTopics(ctx, cr)
		index = idx
		for i, at := range asked {
			st := &resp.Topics[at]
			res := controller.CreatableTopicResult{Err: err}
			if err == nil {
				res = out.Topics[i]
			}
			if res.Err != nil {
				st.ErrorCode, st.ErrorMessage = h.code(res.Err), kafkaMessage(res.Err)
				h.d.Logger.Debug("create topic refused", "topic", st.Topic, "err", res.Err)
				continue
			}
			h.describeCreatedTopic(res, st)
		}
	}
	resp.Topics = append(resp.Topics, tail...)
	return resp, index, nil
}

func creatableTopic(rt kmsg.CreateTopicsRequestTopic) controller.CreatableTopic {
	ct := controller.CreatableTopic{Name: rt.Topic, NumPartitions: rt.NumPartitions, ReplicationFactor: rt.ReplicationFactor}
	for _, a := range rt.ReplicaAssignment {
		ct.Assignments = append(ct.Assignments, controller.ReplicaAssignment{Partition: a.Partition, Replicas: a.Replicas})
	}
	for _, c := range rt.Configs {
		ct.Configs = append(ct.Configs, controller.ConfigValue{Name: c.Name, Value: c.Value})
	}
	return ct
}

// describeCreatedTopic fills the v5+ fields: what the topic was created with.
func (h *ControllerHandler) describeCreatedTopic(res controller.CreatableTopicResult, st *kmsg.CreateTopicsResponseTopic) {
	st.TopicID = res.TopicID
	st.NumPartitions = res.NumPartitions
	st.ReplicationFactor = res.ReplicationFactor
	for _, e := range config.EffectiveTopic(h.d.Config(), res.Configs) {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name = e.Name
		c.Value = e.Value
		c.ReadOnly = e.ReadOnly
		c.Source = int8(e.Source)
		c.IsSensitive = e.Sensitive
		st.Configs = append(st.Configs, c)
	}
}

// failCreateTopics answers every topic with code.
func failCreateTopics(req *kmsg.CreateTopicsRequest, code int16, msg *string) *kmsg.CreateTopicsResponse {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic, st.ErrorCode, st.ErrorMessage = rt.Topic, code, msg
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// CreateTopicRequest is a CreateTopics request for one topic, at the latest
// version: what a broker sends the controller to create a topic itself
// (auto-creation, __consumer_offsets).
func CreateTopicRequest(name string, partitions int32, rf int16, configs map[string]string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = int32(defaultForwardTimeout.Milliseconds())
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, strp(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

var _ server.Handler = (*Handler)(nil)
