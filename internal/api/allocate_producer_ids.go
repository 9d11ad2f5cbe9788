package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/controller"
)

// AllocateProducerIds, version 0 (Kafka 4.2's controller), on the
// CONTROLLER listener only: a broker gets the next block of producer ids
// (1000), recorded in the metadata log so no id is handed out twice.
func init() {
	registerController(kmsg.AllocateProducerIDs.Int16(), 0, 0, handleAllocateProducerIDs)
}

func handleAllocateProducerIDs(ctx context.Context, h *ControllerHandler, kr kmsg.Request) (kmsg.Response, uint64, error) {
	req := kr.(*kmsg.AllocateProducerIDsRequest)
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	out, index, err := h.d.Controller.AllocateProducerIDs(ctx, &controller.AllocateProducerIDsRequest{BrokerID: req.BrokerID,
		BrokerEpoch: req.BrokerEpoch})
	if err != nil {
		resp.ErrorCode = h.code(err)
		return resp, 0, nil
	}
	resp.ProducerIDStart, resp.ProducerIDLen = out.Start, out.Len
	return resp, index, nil
}
