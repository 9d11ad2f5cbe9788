package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/server"
)

// DeleteRecords, versions 0-2 (Kafka 4.2).
//
// Moves each partition's log start offset up to the requested offset (-1:
// the high watermark) and answers the new low watermark, which on a single
// node is the log start offset. As in Kafka: an offset below -1 or above the
// high watermark is OFFSET_OUT_OF_RANGE, an offset at or below the current
// log start offset changes nothing, a topic whose cleanup.policy lacks
// "delete" is POLICY_VIOLATION, an internal topic is INVALID_TOPIC_EXCEPTION.
// TimeoutMillis bounds Kafka's wait for followers; a single node has none.
//
// Deviations: Kafka writes log-start-offset-checkpoint only every
// log.flush.start.offset.checkpoint.interval.ms, so a crash can bring deleted
// records back; Gregor writes it before answering, and if that write fails
// the moved partitions answer KAFKA_STORAGE_ERROR (the move holds in memory;
// a retry writes the checkpoint again). Segments wholly below the new start
// are removed at once rather than by the next retention pass.
func init() { register(kmsg.DeleteRecords.Int16(), 0, 2, handleDeleteRecords) }

func handleDeleteRecords(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	type at struct{ topic, partition int }
	var moved []at
	z := h.authz(r)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		allowed := z.allowed(auth.OpDelete, auth.ResourceTopic, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			changed, err := false, error(kerr.TopicAuthorizationFailed)
			if allowed {
				changed, err = h.deleteRecords(rt.Topic, rp, &sp)
			}
			if err != nil {
				sp.ErrorCode = errCode(h.d.Logger, err)
				h.d.Logger.Debug("delete records rejected", "topic", rt.Topic, "partition", rp.Partition,
					"offset", rp.Offset, "client", clientID(r), "remote", r.Conn.Remote, "err", err)
			}
			if changed {
				moved = append(moved, at{len(resp.Topics), len(st.Partitions)})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(moved) > 0 && h.d.Checkpoint != nil {
		if err := h.d.Checkpoint(); err != nil {
			h.d.Logger.Error("log start offset checkpoint after DeleteRecords failed", "err", err)
			for _, m := range moved {
				sp := &resp.Topics[m.topic].Partitions[m.partition]
				sp.ErrorCode, sp.LowWatermark = kerr.KafkaStorageError.Code, -1
			}
		}
	}
	return resp, nil
}

// deleteRecords moves one partition's log start offset; changed reports
// whether it moved.
func (h *Handler) deleteRecords(topic string, rp kmsg.DeleteRecordsRequestTopicPartition,
	sp *kmsg.DeleteRecordsResponseTopicPartition) (changed bool, err error) {
	if isInternal(topic) {
		return false, fmt.Errorf("%w: cannot delete records of internal topic %s", kerr.InvalidTopicException, topic)
	}
	p, err := h.partition(topic, rp.Partition)
	if err != nil {
		return false, err
	}
	l := p.Log
	if !l.Config().Delete {
		return false, fmt.Errorf("%w: records of %s-%d cannot be deleted: cleanup.policy does not include delete",
			kerr.PolicyViolation, topic, rp.Partition)
	}
	offset := rp.Offset
	if offset == -1 {
		offset = l.HighWatermark()
	}
	if offset < 0 {
		return false, fmt.Errorf("%w: offset %d", kerr.OffsetOutOfRange, offset)
	}
	before := l.LogStartOffset()
	start, err := l.IncrementLogStartOffset(offset)
	if err != nil {
		return start > before, err
	}
	sp.LowWatermark = start
	return start > before, nil
}
