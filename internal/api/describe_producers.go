package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/server"
)

// DescribeProducers, version 0 (Kafka 4.2, KIP-664): the producers each
// partition's leader knows, with their epoch, last sequence and timestamp,
// the coordinator epoch of their last marker and the first offset of their
// open transaction (-1 for none): what kafka-transactions.sh find-hanging
// and abort start from. Kafka requires READ on the topic; Gregor has no
// ACLs.
func init() { register(kmsg.DescribeProducers.Int16(), 0, 0, handleDescribeProducers) }

func handleDescribeProducers(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			part, err := h.partition(t.Topic, p)
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
