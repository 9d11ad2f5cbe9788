package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/metadata"
)

// BrokerRegistration, versions 0-4 (Kafka 4.2's controller), on the
// CONTROLLER listener only: a broker registers a new incarnation and gets
// its broker epoch (the metadata log index of its registration). Listeners,
// rack, log dirs (v2+) and PreviousBrokerEpoch (v3+) are passed to the
// controller; broker features are not negotiated (Gregor nodes of one
// release run together), so Features is ignored.
func init() {
	registerController(kmsg.BrokerRegistration.Int16(), 0, 4, handleBrokerRegistration)
}

func handleBrokerRegistration(ctx context.Context, h *ControllerHandler, kr kmsg.Request) (kmsg.Response, uint64, error) {
	req := kr.(*kmsg.BrokerRegistrationRequest)
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	r := RegistrationFromKafka(req)
	out, index, err := h.d.Controller.RegisterBroker(ctx, r)
	if err != nil {
		resp.ErrorCode = h.code(err)
		return resp, 0, nil
	}
	resp.BrokerEpoch = out.BrokerEpoch
	return resp, index, nil
}

// RegistrationFromKafka is BrokerRegistration in the controller's terms.
func RegistrationFromKafka(req *kmsg.BrokerRegistrationRequest) *controller.BrokerRegistrationRequest {
	r := &controller.BrokerRegistrationRequest{BrokerID: req.BrokerID, ClusterID: req.ClusterID, IncarnationID: req.IncarnationID,
		LogDirs: req.LogDirs, PreviousBrokerEpoch: -1}
	if req.Version >= 3 {
		r.PreviousBrokerEpoch = req.PreviousBrokerEpoch
	}
	if req.Rack != nil {
		r.Rack = *req.Rack
	}
	for _, l := range req.Listeners {
		r.Listeners = append(r.Listeners, metadata.Endpoint{Name: l.Name, Host: l.Host, Port: int32(l.Port), SecurityProtocol: l.SecurityProtocol})
	}
	return r
}

// RegistrationToKafka is a registration as the latest BrokerRegistration.
func RegistrationToKafka(r *controller.BrokerRegistrationRequest) *kmsg.BrokerRegistrationRequest {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(4)
	req.BrokerID, req.ClusterID, req.IncarnationID = r.BrokerID, r.ClusterID, r.IncarnationID
	req.LogDirs, req.PreviousBrokerEpoch = r.LogDirs, r.PreviousBrokerEpoch
	if r.Rack != "" {
		req.Rack = strp(r.Rack)
	}
	for _, ep := range r.Listeners {
		l := kmsg.NewBrokerRegistrationRequestListener()
		l.Name, l.Host, l.Port, l.SecurityProtocol = ep.Name, ep.Host, uint16(ep.Port), ep.SecurityProtocol
		req.Listeners = append(req.Listeners, l)
	}
	return req
}
