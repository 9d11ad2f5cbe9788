package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/metadata"
)

// AlterPartition, versions 2-3 (Kafka 4.2's controller), on the CONTROLLER
// listener only: a partition leader proposes a new ISR. Topics are named by
// id; v3 names each ISR member's broker epoch (KIP-903), v2 gives -1, which
// skips that check. The answer per partition is the partition's state
// after the change, or the error that refused it.
func init() {
	registerController(kmsg.AlterPartition.Int16(), 2, 3, handleAlterPartition)
}

func handleAlterPartition(ctx context.Context, h *ControllerHandler, kr kmsg.Request) (kmsg.Response, uint64, error) {
	req := kr.(*kmsg.AlterPartitionRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	r := &controller.AlterPartitionRequest{BrokerID: req.BrokerID, BrokerEpoch: req.BrokerEpoch}
	for _, t := range req.Topics {
		ct := controller.AlterPartitionTopic{TopicID: t.TopicID}
		for _, p := range t.Partitions {
			cp := controller.AlterPartitionPartition{Partition: p.Partition, LeaderEpoch: p.LeaderEpoch,
				LeaderRecoveryState: metadata.LeaderRecoveryState(p.LeaderRecoveryState), PartitionEpoch: p.PartitionEpoch}
			if req.Version >= 3 {
				for _, m := range p.NewEpochISR {
					cp.NewISR = append(cp.NewISR, controller.BrokerState{BrokerID: m.BrokerID, BrokerEpoch: m.BrokerEpoch})
				}
			} else {
				for _, id := range p.NewISR {
					cp.NewISR = append(cp.NewISR, controller.BrokerState{BrokerID: id, BrokerEpoch: -1})
				}
			}
			ct.Partitions = append(ct.Partitions, cp)
		}
		r.Topics = append(r.Topics, ct)
	}
	out, index, err := h.d.Controller.AlterPartition(ctx, r)
	if err != nil {
		resp.ErrorCode = h.code(err)
		return resp, 0, nil
	}
	for _, t := range out.Topics {
		rt := kmsg.NewAlterPartitionResponseTopic()
		rt.TopidID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionResponseTopicPartition()
			rp.Partition = p.Partition
			if p.Err != nil {
				rp.ErrorCode = h.code(p.Err)
			} else {
				rp.LeaderID, rp.LeaderEpoch, rp.ISR = p.LeaderID, p.LeaderEpoch, p.ISR
				rp.LeaderRecoveryState, rp.PartitionEpoch = int8(p.LeaderRecoveryState), p.PartitionEpoch
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, index, nil
}
