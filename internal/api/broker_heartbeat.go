package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/controller"
)

// BrokerHeartbeat, versions 0-1 (Kafka 4.2's controller), on the CONTROLLER
// listener only: the broker's liveness and its wishes (stay fenced, shut
// down), answered with whether it is caught up, fenced, and may shut down.
// Offline and cordoned log dirs (tagged fields) are not acted on yet.
func init() {
	registerController(kmsg.BrokerHeartbeat.Int16(), 0, 1, handleBrokerHeartbeat)
}

func handleBrokerHeartbeat(ctx context.Context, h *ControllerHandler, kr kmsg.Request) (kmsg.Response, uint64, error) {
	req := kr.(*kmsg.BrokerHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	out, index, err := h.d.Controller.BrokerHeartbeat(ctx, &controller.BrokerHeartbeatRequest{BrokerID: req.BrokerID,
		BrokerEpoch: req.BrokerEpoch, CurrentMetadataOffset: req.CurrentMetadataOffset, WantFence: req.WantFence,
		WantShutDown: req.WantShutdown})
	if err != nil {
		resp.ErrorCode = h.code(err)
		resp.IsFenced = true
		return resp, 0, nil
	}
	resp.IsCaughtUp, resp.IsFenced, resp.ShouldShutdown = out.IsCaughtUp, out.IsFenced, out.ShouldShutDown
	return resp, index, nil
}
