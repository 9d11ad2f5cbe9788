package api

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/metadata"
)

// ControllerRPC sends a request to the active controller, wherever it is
// (ControllerRouter), and returns its answer and the metadata index the
// answer holds at (0 when the controller was remote and did not say).
type ControllerRPC interface {
	Call(ctx context.Context, req kmsg.Request) (kmsg.Response, uint64, error)
}

// Metadata is the cluster metadata as this broker has acted on it: the
// image its replicas, coordinators and configs follow.
type Metadata interface {
	// Image is the last image published to the broker.
	Image() *metadata.Image
	// WaitPublished returns once an image holding everything up to
	// index has been published (0: everything committed before the call).
	WaitPublished(ctx context.Context, index uint64) error
}

// defaultForwardTimeout bounds a forwarded request without a timeout of
// its own (Kafka's request.timeout.ms default).
const defaultForwardTimeout = 30 * time.Second

// forward sends req to the active controller, as it came (same version),
// and waits until this broker has published the metadata the answer holds
// at, so the client's next request here sees what it changed: the topic it
// created is in Metadata and hosted, a deleted one gone, a config in force
// (design §5.8.7). The request's TimeoutMillis bounds the whole; the error
// is the one to answer every item with when no controller answered.
func (h *Handler) forward(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	timeout := defaultForwardTimeout
	if tr, ok := req.(kmsg.TimeoutRequest); ok && tr.Timeout() > 0 {
		timeout = time.Duration(tr.Timeout()) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, index, err := h.d.Controller.Call(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := h.d.Metadata.WaitPublished(ctx, index); err != nil {
		h.d.Logger.Warn("answering a forwarded request before this broker has published what it changed",
			"request", kmsg.NameForKey(req.Key()), "index", index, "err", err)
	}
	return resp, nil
}

// failForwarded answers a forwarded request that no controller answered:
// every item gets code.
func failForwarded(req kmsg.Request, code int16, msg *string) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		return failCreateTopics(r, code, msg)
	case *kmsg.DeleteTopicsRequest:
		return failDeleteTopics(r, code, msg)
	case *kmsg.CreatePartitionsRequest:
		return failCreatePartitions(r, code, msg)
	case *kmsg.AlterConfigsRequest:
		return failAlterConfigs(r, code, msg)
	case *kmsg.IncrementalAlterConfigsRequest:
		return failIncrementalAlterConfigs(r, code, msg)
	case *kmsg.ElectLeadersRequest:
		return failElectLeaders(r, code, msg)
	case *kmsg.AlterPartitionAssignmentsRequest:
		resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp
	case *kmsg.ListPartitionReassignmentsRequest:
		resp := r.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp
	case *kmsg.CreateACLsRequest:
		return failCreateAcls(r, code, msg)
	case *kmsg.DeleteACLsRequest:
		return failDeleteAcls(r, code, msg)
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return failAlterUserScram(r, code, msg)
	case *kmsg.UpdateFeaturesRequest:
		return failUpdateFeatures(r, code, msg)
	case *kmsg.DescribeQuorumRequest:
		resp := r.ResponseKind().(*kmsg.DescribeQuorumResponse)
		resp.ErrorCode = code
		if r.Version >= 2 {
			resp.ErrorMessage = msg
		}
		return resp
	}
	return nil
}

// code is errCode with the handler's logger.
func (h *Handler) code(err error) int16 { return errCode(h.d.Logger, err) }
