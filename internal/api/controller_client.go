package api

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/kclient"
)

// RouterConfig configures a ControllerRouter.
type RouterConfig struct {
	NodeID int32
	// Leader is the raft leader this node knows of (-1 none): the active
	// controller, or about to become it.
	Leader func() int32
	// Addr is a voter's CONTROLLER listener.
	Addr func(id int32) (string, bool)
	// Local serves requests in-process when this node is the leader,
	// unless OverTCP (tests run the encoding path that way too).
	Local   *ControllerHandler
	OverTCP bool
	Pool    *kclient.Pool
	Clock   clock.Clock
	Logger  *slog.Logger
}

// ControllerRouter finds the active controller and sends it requests
// (design §5.8.9): the raft leader's id, through the voters' address book,
// to its CONTROLLER listener, or to this node's own controller in process.
// An answer saying NOT_CONTROLLER, or a connection that fails, sends the
// request again to the leader known then, after a short backoff (10 ms
// doubling to routerMaxBackoff), until the context ends. A request that failed after it was sent may have been
// applied: a retried CreateTopics may then answer TOPIC_ALREADY_EXISTS, as
// a Kafka broker's forwarding does.
type ControllerRouter struct{ cfg RouterConfig }

// NewControllerRouter returns a router.
func NewControllerRouter(cfg RouterConfig) *ControllerRouter {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &ControllerRouter{cfg: cfg}
}

// routerMaxBackoff caps the wait between two tries: a failover's new
// controller is found within it of its activation. A try with no leader
// known costs no I/O, one to a leader that is not yet the controller one
// round trip, so retrying at this pace through an election costs
// nothing worth saving.
const routerMaxBackoff = 50 * time.Millisecond

// Call sends req to the active controller (ControllerRPC).
func (r *ControllerRouter) Call(ctx context.Context, req kmsg.Request) (kmsg.Response, uint64, error) {
	backoff := 10 * time.Millisecond
	var last error
	for {
		resp, index, err := r.try(ctx, req)
		if err == nil && !notController(resp) {
			return resp, index, nil
		}
		if err == nil {
			err = kerr.NotController
		}
		last = err
		ch, t := clock.NewTimer(r.cfg.Clock, backoff)
		select {
		case <-ch:
		case <-ctx.Done():
			t.Stop()
			return nil, 0, fmt.Errorf("%w: %s: %v", errNoController, kmsg.NameForKey(req.Key()), last)
		}
		backoff = min(2*backoff, routerMaxBackoff)
	}
}

func (r *ControllerRouter) try(ctx context.Context, req kmsg.Request) (kmsg.Response, uint64, error) {
	leader := r.cfg.Leader()
	if leader < 0 {
		return nil, 0, fmt.Errorf("no metadata quorum leader is known")
	}
	if leader == r.cfg.NodeID && r.cfg.Local != nil && !r.cfg.OverTCP {
		return r.cfg.Local.Serve(ctx, req)
	}
	addr, ok := r.cfg.Addr(leader)
	if !ok {
		return nil, 0, fmt.Errorf("node %d leads the metadata quorum but has no controller address", leader)
	}
	resp, err := r.cfg.Pool.Request(ctx, addr, req)
	if err != nil {
		r.cfg.Pool.CloseIdle(addr)
	}
	return resp, 0, err
}

// ControllerClient makes a broker's own calls to the active controller in
// the controller's terms: registration, heartbeats, producer id blocks,
// creating a topic (auto-creation, __consumer_offsets). Errors are kerr
// errors with the controller's message.
type ControllerClient struct{ RPC ControllerRPC }

// RegisterBroker sends BrokerRegistration.
func (c ControllerClient) RegisterBroker(ctx context.Context, r *controller.BrokerRegistrationRequest) (*controller.BrokerRegistrationResponse, error) {
	resp, _, err := c.RPC.Call(ctx, RegistrationToKafka(r))
	if err != nil {
		return nil, err
	}
	kr := resp.(*kmsg.BrokerRegistrationResponse)
	if err := kerr.ErrorForCode(kr.ErrorCode); err != nil {
		return nil, err
	}
	return &controller.BrokerRegistrationResponse{BrokerEpoch: kr.BrokerEpoch}, nil
}

// BrokerHeartbeat sends BrokerHeartbeat.
func (c ControllerClient) BrokerHeartbeat(ctx context.Context, r *controller.BrokerHeartbeatRequest) (*controller.BrokerHeartbeatResponse, error) {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(1)
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = r.BrokerID, r.BrokerEpoch, r.CurrentMetadataOffset
	req.WantFence, req.WantShutdown = r.WantFence, r.WantShutDown
	resp, _, err := c.RPC.Call(ctx, req)
	if err != nil {
		return nil, err
	}
	kr := resp.(*kmsg.BrokerHeartbeatResponse)
	if err := kerr.ErrorForCode(kr.ErrorCode); err != nil {
		return nil, err
	}
	return &controller.BrokerHeartbeatResponse{IsCaughtUp: kr.IsCaughtUp, IsFenced: kr.IsFenced, ShouldShutDown: kr.ShouldShutdown}, nil
}

// AllocateProducerIDs asks for the next block of producer ids.
func (c ControllerClient) AllocateProducerIDs(ctx context.Context, brokerID int32, epoch int64) (int64, int32, error) {
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = brokerID, epoch
	resp, _, err := c.RPC.Call(ctx, req)
	if err != nil {
		return 0, 0, err
	}
	kr := resp.(*kmsg.AllocateProducerIDsResponse)
	if err := kerr.ErrorForCode(kr.ErrorCode); err != nil {
		return 0, 0, err
	}
	return kr.ProducerIDStart, kr.ProducerIDLen, nil
}

// CreateTopic creates one topic and returns the metadata index it holds at
// (0 when unknown; see ControllerRPC).
func (c ControllerClient) CreateTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string) (uint64, error) {
	resp, index, err := c.RPC.Call(ctx, CreateTopicRequest(name, partitions, rf, configs))
	if err != nil {
		return 0, err
	}
	kr := resp.(*kmsg.CreateTopicsResponse)
	if len(kr.Topics) != 1 {
		return 0, fmt.Errorf("%w: %d topics in the answer to a CreateTopics of one", kerr.UnknownServerError, len(kr.Topics))
	}
	t := kr.Topics[0]
	if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
		if t.ErrorMessage != nil {
			return index, fmt.Errorf("%w: %s", err, *t.ErrorMessage)
		}
		return index, err
	}
	return index, nil
}
