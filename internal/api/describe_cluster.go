package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/server"
)

// DescribeCluster, versions 0-2 (Kafka 4.2).
//
// Answers from the metadata this broker has published: the cluster id, the
// unfenced brokers with their endpoint on the listener the request came in
// on and their broker.rack, and the controller id (the active controller if
// its broker is live, else a random live broker, as in Metadata). v2's
// IncludeFencedBrokers adds the fenced ones, marked IsFenced. Only broker
// endpoints are served: EndpointType 2 (controllers) is
// MISMATCHED_ENDPOINT_TYPE and an unknown type UNSUPPORTED_ENDPOINT_TYPE
// (both INVALID_REQUEST at v0), as Kafka's brokers answer. Cluster
// authorized operations are sent when asked for: the principal's operations
// on the cluster if it may DESCRIBE it, else none (no other authorization,
// as in Kafka).
func init() { register(kmsg.DescribeCluster.Int16(), 0, 2, handleDescribeCluster) }

const (
	endpointTypeBroker     = 1
	endpointTypeController = 2
)

func handleDescribeCluster(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	endpointType := req.EndpointType
	if req.Version == 0 {
		endpointType = endpointTypeBroker
	}
	fail := func(code *kerr.Error, msg string) (kmsg.Response, error) {
		if req.Version == 0 {
			code = kerr.InvalidRequest
		}
		resp.ErrorCode, resp.ErrorMessage = code.Code, strp(msg)
		return resp, nil
	}
	switch endpointType {
	case endpointTypeBroker:
	case endpointTypeController:
		return fail(kerr.MismatchedEndpointType,
			"The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
	default:
		return fail(kerr.UnsupportedEndpointType, fmt.Sprintf("Unsupported endpoint type %d", endpointType))
	}
	im := h.d.Metadata.Image()
	live, ctrl := h.liveBrokers(im, r.Conn.Listener)
	for _, mb := range live {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID, b.Host, b.Port, b.Rack = mb.NodeID, mb.Host, mb.Port, mb.Rack
		resp.Brokers = append(resp.Brokers, b)
	}
	if req.IncludeFencedBrokers {
		for _, fb := range im.SortedBrokers() {
			ep, ok := fb.Endpoint(listenerOr(r.Conn.Listener, h.d.Listener))
			if !fb.Fenced || !ok {
				continue
			}
			b := kmsg.NewDescribeClusterResponseBroker()
			b.NodeID, b.Host, b.Port, b.IsFenced = fb.ID, ep.Host, ep.Port, true
			if fb.Rack != "" {
				b.Rack = strp(fb.Rack)
			}
			resp.Brokers = append(resp.Brokers, b)
		}
	}
	resp.EndpointType = endpointTypeBroker
	resp.ClusterID = im.ClusterID
	resp.ControllerID = ctrl
	if req.IncludeClusterAuthorizedOperations {
		z := h.authz(r)
		resp.ClusterAuthorizedOperations = 0
		if z.filter(auth.OpDescribe, auth.ResourceCluster, auth.ClusterName) {
			resp.ClusterAuthorizedOperations = z.operations(true, auth.ResourceCluster, auth.ClusterName)
		}
	}
	return resp, nil
}
