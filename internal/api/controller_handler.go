package api

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/quorum"
	"github.com/gregor-broker/gregor/internal/server"
)

// The controller's side of the protocol: the requests the CONTROLLER
// listener serves (Kafka's ControllerApis), answered by this node's
// controller.Shell when it is the active controller and with
// NOT_CONTROLLER otherwise. Brokers send BrokerRegistration,
// BrokerHeartbeat, AlterPartition and AllocateProducerIds here, and forward
// the admin requests their clients send (CreateTopics, DeleteTopics,
// CreatePartitions, AlterConfigs, IncrementalAlterConfigs, ElectLeaders,
// AlterPartitionReassignments, ListPartitionReassignments, DescribeQuorum,
// CreateAcls, DeleteAcls, AlterUserScramCredentials)
// as they got them, at the client's version. A request the shell refuses
// whole (not the controller, a write that timed out) answers every item
// with that error; notController finds NOT_CONTROLLER in an answer, so a
// forwarding broker knows to find the new controller and send again.

// ControllerDeps is what the controller listener's handlers call.
type ControllerDeps struct {
	NodeID     int32
	Controller *controller.Shell
	// Image is the metadata this node has applied (requests that name
	// topics both ways are resolved against it).
	Image func() *metadata.Image
	// Quorum is this node's view of the metadata quorum (DescribeQuorum);
	// Voters the voters' CONTROLLER listeners, named ControllerListener.
	Quorum             func(ctx context.Context) (quorum.Status, error)
	Voters             map[int32]string
	ControllerListener string
	// Config is the node's current configuration (effective topic configs
	// in CreateTopics answers, delete.topic.enable).
	Config func() *config.Broker
	Logger *slog.Logger
}

// ControllerHandler serves the CONTROLLER listener (server.Handler), and
// in-process calls of this node's broker when the controller is local.
type ControllerHandler struct{ d ControllerDeps }

type controllerFunc func(ctx context.Context, h *ControllerHandler, req kmsg.Request) (kmsg.Response, uint64, error)

var controllerRegistry [kmsg.MaxKey + 1]*struct {
	min, max int16
	fn       controllerFunc
}

// registerController is called from each controller API's init.
func registerController(key, min, max int16, fn controllerFunc) {
	if controllerRegistry[key] != nil {
		panic(fmt.Sprintf("controller api key %d registered twice", key))
	}
	controllerRegistry[key] = &struct {
		min, max int16
		fn       controllerFunc
	}{min, max, fn}
}

// NewControllerHandler returns the CONTROLLER listener's handler.
func NewControllerHandler(d ControllerDeps) *ControllerHandler {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return &ControllerHandler{d: d}
}

// Versions reports the served range of key.
func (h *ControllerHandler) Versions(key int16) (int16, int16, bool) {
	if key < 0 || int(key) >= len(controllerRegistry) || controllerRegistry[key] == nil {
		return 0, 0, false
	}
	e := controllerRegistry[key]
	return e.min, e.max, true
}

// Handle answers a request that came over the CONTROLLER listener.
func (h *ControllerHandler) Handle(ctx context.Context, req *server.Request) (kmsg.Response, error) {
	resp, _, err := h.Serve(ctx, req.Body)
	return resp, err
}

// Serve answers req and says at which metadata index the answer holds (0
// when the answer changed nothing that needs waiting for). A broker calls
// it directly when its own node is the active controller.
func (h *ControllerHandler) Serve(ctx context.Context, req kmsg.Request) (kmsg.Response, uint64, error) {
	k := req.Key()
	min, max, ok := h.Versions(k)
	if !ok || req.GetVersion() < min || req.GetVersion() > max {
		return nil, 0, fmt.Errorf("%w: %s v%d is not served by the controller", kerr.UnsupportedVersion, kmsg.NameForKey(k), req.GetVersion())
	}
	return controllerRegistry[k].fn(ctx, h, req)
}

// ControllerKeys lists the keys the controller serves, with their ranges.
func ControllerKeys() []kmsg.ApiVersionsResponseApiKey {
	var out []kmsg.ApiVersionsResponseApiKey
	for k, e := range controllerRegistry {
		if e != nil {
			out = append(out, kmsg.ApiVersionsResponseApiKey{ApiKey: int16(k), MinVersion: e.min, MaxVersion: e.max})
		}
	}
	return out
}

func init() {
	registerController(kmsg.ApiVersions.Int16(), 0, 4, func(_ context.Context, _ *ControllerHandler, req kmsg.Request) (kmsg.Response, uint64, error) {
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.ApiKeys = ControllerKeys()
		resp.FinalizedFeaturesEpoch = -1
		return resp, 0, nil
	})
}

// code is errCode with the handler's logger.
func (h *ControllerHandler) code(err error) int16 { return errCode(h.d.Logger, err) }

// errNoController is what a forwarded request gets when no controller
// answered before it timed out.
var errNoController = fmt.Errorf("%w: no active controller answered in time", kerr.RequestTimedOut)

// notController reports whether a controller's answer says it is not the
// active controller (the forwarding broker then sends the request again to
// the one it finds next).
func notController(resp kmsg.Response) bool {
	nc := kerr.NotController.Code
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		return r.ErrorCode == nc
	case *kmsg.BrokerHeartbeatResponse:
		return r.ErrorCode == nc
	case *kmsg.AlterPartitionResponse:
		return r.ErrorCode == nc
	case *kmsg.AllocateProducerIDsResponse:
		return r.ErrorCode == nc
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.CreatePartitionsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.AlterConfigsResponse:
		for _, t := range r.Resources {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, t := range r.Resources {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.ElectLeadersResponse:
		if r.ErrorCode == nc {
			return true
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == nc {
					return true
				}
			}
		}
	case *kmsg.AlterPartitionAssignmentsResponse:
		return r.ErrorCode == nc
	case *kmsg.CreateACLsResponse:
		for _, x := range r.Results {
			if x.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.DeleteACLsResponse:
		for _, x := range r.Results {
			if x.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		for _, x := range r.Results {
			if x.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.ListPartitionReassignmentsResponse:
		return r.ErrorCode == nc
	case *kmsg.DescribeQuorumResponse:
		if r.ErrorCode == nc {
			return true
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == kerr.NotLeaderForPartition.Code {
					return true
				}
			}
		}
	}
	return false
}
