package api

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/server"
)

// ElectLeaders, versions 0-2 (Kafka 4.2). A broker forwards it to the
// active controller; the controller elects the preferred replica (type 0,
// v0's only type) or, for a partition without a leader, any live replica
// (type 1, unclean), per partition, or for every partition when Topics is
// null (then partitions that already have the leader asked for are left
// out, as in Kafka). Errors per partition: ELECTION_NOT_NEEDED,
// PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE,
// UNKNOWN_TOPIC_OR_PARTITION.
func init() {
	register(kmsg.ElectLeaders.Int16(), 0, 2, handleForwarded)
	registerController(kmsg.ElectLeaders.Int16(), 0, 2, controllerElectLeaders)
}

func controllerElectLeaders(ctx context.Context, h *ControllerHandler, kr kmsg.Request) (kmsg.Response, uint64, error) {
	req := kr.(*kmsg.ElectLeadersRequest)
	r := &controller.ElectLeadersRequest{ElectionType: controller.ElectionPreferred}
	if req.Version >= 1 {
		r.ElectionType = req.ElectionType
	}
	if req.Topics != nil {
		r.Topics = []controller.TopicPartitions{}
		for _, t := range req.Topics {
			r.Topics = append(r.Topics, controller.TopicPartitions{Topic: t.Topic, Partitions: t.Partitions})
		}
	}
	ctx, cancel := withTimeoutMillis(ctx, req.TimeoutMillis)
	defer cancel()
	out, index, err := h.d.Controller.ElectLeaders(ctx, r)
	if err != nil {
		return failElectLeaders(req, h.code(err), errMessage(err)), 0, nil
	}
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	for _, t := range out.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, h.code(p.Err), kafkaMessage(p.Err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, index, nil
}

// failElectLeaders answers every partition (and, v1+, the request) with code.
func failElectLeaders(req *kmsg.ElectLeadersRequest, code int16, msg *string) *kmsg.ElectLeadersResponse {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if req.Version >= 1 {
		resp.ErrorCode = code
	}
	for _, t := range req.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, code, msg
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// withTimeoutMillis bounds ctx by a request's TimeoutMillis (none when not
// positive).
func withTimeoutMillis(ctx context.Context, ms int32) (context.Context, context.CancelFunc) {
	if ms <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
}

// handleForwarded answers a request that only the controller can answer:
// it is forwarded as it came, and answered once this broker has published
// what it changed; failForwarded answers it when no controller could.
// Authorization comes first (authorizeForward): what the principal may not
// do is answered here and not forwarded.
func handleForwarded(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	fwd, finish, refused := h.authorizeForward(r)
	if refused != nil {
		return refused, nil
	}
	if fwd == nil {
		return finish(r.Body.ResponseKind()), nil
	}
	resp, err := h.forward(ctx, fwd)
	if err != nil {
		resp = failForwarded(fwd, h.code(err), errMessage(err))
	}
	return finish(resp), nil
}
