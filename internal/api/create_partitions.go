package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/server"
)

// CreatePartitions, versions 0-3 (Kafka 4.2).
//
// Grows each topic to Count partitions, checked as Kafka's controller checks
// it: an unknown topic is UNKNOWN_TOPIC_OR_PARTITION; a count equal to or
// below the current one is INVALID_PARTITIONS; a manual assignment must have
// one entry per new partition and each entry must be a valid replica list of
// the topic's replication factor (1), else INVALID_REPLICA_ASSIGNMENT. A
// topic named twice is INVALID_REQUEST ("Duplicate topic name.", one result
// per name, before the others). ValidateOnly checks and changes nothing. The
// new partitions are hosted before the response is sent, so TimeoutMillis is
// never reached.
func init() { register(kmsg.CreatePartitions.Int16(), 0, 3, handleCreatePartitions) }

func handleCreatePartitions(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreatePartitionsRequest)
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
	for _, rt := range req.Topics {
		if count[rt.Topic] < 0 {
			continue
		}
		var assignment [][]int32
		if rt.Assignment != nil {
			assignment = make([][]int32, len(rt.Assignment))
			for i, a := range rt.Assignment {
				assignment[i] = a.Replicas
			}
		}
		err := h.d.Controller.CreatePartitions(rt.Topic, rt.Count, assignment, req.ValidateOnly)
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		st.ErrorCode = errCode(h.d.Logger, err)
		st.ErrorMessage = kafkaMessage(err)
		if err != nil {
			h.d.Logger.Debug("create partitions refused", "topic", rt.Topic, "count", rt.Count, "err", err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
