package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/controller"
)

// ListPartitionReassignments, version 0 (Kafka 4.2). A broker forwards it
// to the active controller, which lists the ongoing reassignments of the
// named partitions, or of every partition when Topics is null.
func init() {
	register(kmsg.ListPartitionReassignments.Int16(), 0, 0, handleForwarded)
	registerController(kmsg.ListPartitionReassignments.Int16(), 0, 0, controllerListReassignments)
}

func controllerListReassignments(ctx context.Context, h *ControllerHandler, kr kmsg.Request) (kmsg.Response, uint64, error) {
	req := kr.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	r := &controller.ListPartitionReassignmentsRequest{}
	if req.Topics != nil {
		r.Topics = []controller.TopicPartitions{}
		for _, t := range req.Topics {
			r.Topics = append(r.Topics, controller.TopicPartitions{Topic: t.Topic, Partitions: t.Partitions})
		}
	}
	ctx, cancel := withTimeoutMillis(ctx, req.TimeoutMillis)
	defer cancel()
	out, index, err := h.d.Controller.ListPartitionReassignments(ctx, r)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = h.code(err), kafkaMessage(err)
		return resp, 0, nil
	}
	for _, t := range out.Topics {
		rt := kmsg.NewListPartitionReassignmentsResponseTopic()
		rt.Topic = t.Name
		for _, p := range t.Partitions {
			rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			rp.Partition, rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas = p.Partition, p.Replicas, p.Adding, p.Removing
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, index, nil
}
