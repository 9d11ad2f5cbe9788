package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/controller"
)

// CreatePartitions, versions 0-3 (Kafka 4.2).
//
// Any broker takes it and forwards it to the active controller, then
// answers once it hosts the new partitions it is a replica of. The
// controller grows each topic to Count partitions, checked as Kafka's
// controller checks it: an unknown topic is UNKNOWN_TOPIC_OR_PARTITION; a
// count equal to or below the current one is INVALID_PARTITIONS; a manual
// assignment must have one entry per new partition and each entry must be a
// valid replica list of the topic's replication factor, else
// INVALID_REPLICA_ASSIGNMENT. New partitions without an assignment continue
// the topic's stripe over the brokers. A topic named twice is
// INVALID_REQUEST ("Duplicate topic name.", one result per name, before the
// others). ValidateOnly checks and changes nothing.
func init() {
	register(kmsg.CreatePartitions.Int16(), 0, 3, handleForwarded)
	registerController(kmsg.CreatePartitions.Int16(), 0, 3, controllerCreatePartitions)
}

func controllerCreatePartitions(ctx context.Context, h *ControllerHandler, kr kmsg.Request) (kmsg.Response, uint64, error) {
	req := kr.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	count := make(map[string]int, len(req.Topics))
	for _, rt := range req.Topics {
		count[rt.Topic]++
	}
	for _, rt := range req.Topics {
		if count[rt.Topic] > 1 {
			count[rt.Topic] = -1 // answered once
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic = rt.Topic
			st.ErrorCode = kerr.InvalidRequest.Code
			st.ErrorMessage = strp("Duplicate topic name.")
			resp.Topics = append(resp.Topics, st)
		}
	}
	cr := &controller.CreatePartitionsRequest{ValidateOnly: req.ValidateOnly}
	for _, rt := range req.Topics {
		if count[rt.Topic] < 0 {
			continue
		}
		ct := controller.CreatePartitionsTopic{Name: rt.Topic, Count: rt.Count}
		if rt.Assignment != nil {
			ct.Assignments = make([][]int32, len(rt.Assignment))
			for i, a := range rt.Assignment {
				ct.Assignments[i] = a.Replicas
			}
		}
		cr.Topics = append(cr.Topics, ct)
	}
	if len(cr.Topics) == 0 {
		return resp, 0, nil
	}
	ctx, cancel := withTimeoutMillis(ctx, req.TimeoutMillis)
	defer cancel()
	out, index, err := h.d.Controller.CreatePartitions(ctx, cr)
	for i, ct := range cr.Topics {
		terr := err
		if err == nil {
			terr = out.Topics[i].Err
		}
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = ct.Name
		st.ErrorCode, st.ErrorMessage = h.code(terr), kafkaMessage(terr)
		if terr != nil {
			h.d.Logger.Debug("create partitions refused", "topic", ct.Name, "count", ct.Count, "err", terr)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, index, nil
}

// failCreatePartitions answers every topic with code.
func failCreatePartitions(req *kmsg.CreatePartitionsRequest, code int16, msg *string) *kmsg.CreatePartitionsResponse {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic, st.ErrorCode, st.ErrorMessage = rt.Topic, code, msg
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
