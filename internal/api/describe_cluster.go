package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/server"
)

// DescribeCluster, versions 0-2 (Kafka 4.2).
//
// Answers the cluster id, this node as the one broker (its advertised client
// listener and broker.rack) and as the controller id, as a KRaft broker
// names a live broker there. Only broker endpoints are served: EndpointType
// 2 (controllers) is MISMATCHED_ENDPOINT_TYPE and an unknown type
// UNSUPPORTED_ENDPOINT_TYPE (both INVALID_REQUEST at v0), as Kafka's brokers
// answer. Cluster authorized operations are sent when asked for; Gregor has
// no ACLs yet, so every cluster operation is allowed. A running single node
// is never fenced, so IncludeFencedBrokers (v2) changes nothing.
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
	host, port := h.d.Advertised()
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID, b.Host, b.Port = h.d.NodeID, host, port
	if rack, _, ok := h.d.Config().Value("broker.rack"); ok {
		b.Rack = strp(rack)
	}
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{b}
	resp.EndpointType = endpointTypeBroker
	resp.ClusterID = h.d.Controller.Image().ClusterID
	resp.ControllerID = h.d.NodeID
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = authorizedClusterOps
	}
	return resp, nil
}
