package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/replica"
	"github.com/gregor-broker/gregor/internal/server"
)

// DescribeProducers, version 0 (Kafka 4.2, KIP-664): the producers each
// partition's leader knows, with their epoch, last sequence and timestamp,
// the coordinator epoch of their last marker and the first offset of their
// open transaction (-1 for none): what kafka-transactions.sh find-hanging
// and abort start from. With an authorizer every partition of a topic the
// principal may not READ is TOPIC_AUTHORIZATION_FAILED, before the topic's
// existence is looked at (KafkaApis).
func init() { register(kmsg.DescribeProducers.Int16(), 0, 0, handleDescribeProducers) }

func handleDescribeProducers(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	z := h.authz(r)
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		var denied error
		if !z.allowed(auth.OpRead, auth.ResourceTopic, t.Topic) {
			denied = kerr.TopicAuthorizationFailed
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			part, err := (*replica.Partition)(nil), denied
			if err == nil {
				part, err = h.partition(t.Topic, p)
			}
			if err != nil {
				rp.ErrorCode, rp.ErrorMessage = errCode(h.d.Logger, err), errMessage(err)
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			for _, ap := range part.Log.ActiveProducers() {
				a := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				a.ProducerID, a.ProducerEpoch, a.LastSequence = ap.ProducerID, int32(ap.ProducerEpoch), ap.LastSequence
				a.LastTimestamp, a.CoordinatorEpoch, a.CurrentTxnStartOffset = ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset
				rp.ActiveProducers = append(rp.ActiveProducers, a)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
