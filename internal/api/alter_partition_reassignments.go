package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/controller"
)

// AlterPartitionReassignments, versions 0-1 (Kafka 4.2). A broker forwards
// it to the active controller, which starts (replicas given) or cancels
// (null replicas) each partition's reassignment. v1's
// AllowReplicationFactorChange (KIP-860) may forbid changing the number of
// replicas; v0 allows it. The replicas being added fetch from the leader
// and join the ISR once caught up; the controller then completes the
// reassignment, and the brokers of the replicas it removed delete their
// logs.
func init() {
	register(kmsg.AlterPartitionAssignments.Int16(), 0, 1, handleForwarded)
	registerController(kmsg.AlterPartitionAssignments.Int16(), 0, 1, controllerAlterReassignments)
}

func controllerAlterReassignments(ctx context.Context, h *ControllerHandler, kr kmsg.Request) (kmsg.Response, uint64, error) {
	req := kr.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	r := &controller.AlterPartitionReassignmentsRequest{AllowReplicationFactorChange: req.Version < 1 || req.AllowReplicationFactorChange}
	for _, t := range req.Topics {
		rt := controller.ReassignableTopic{Name: t.Topic}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, controller.ReassignablePartition{Partition: p.Partition, Replicas: p.Replicas})
		}
		r.Topics = append(r.Topics, rt)
	}
	ctx, cancel := withTimeoutMillis(ctx, req.TimeoutMillis)
	defer cancel()
	out, index, err := h.d.Controller.AlterPartitionReassignments(ctx, r)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = h.code(err), kafkaMessage(err)
		return resp, 0, nil
	}
	for _, t := range out.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, h.code(p.Err), kafkaMessage(p.Err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, index, nil
}
