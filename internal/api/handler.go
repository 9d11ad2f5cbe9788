package api

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/kclient"
	"github.com/gregor-broker/gregor/internal/logmgr"
	"github.com/gregor-broker/gregor/internal/replica"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/txn"
)

// Deps is what the handlers call into. The broker package builds it.
type Deps struct {
	NodeID int32
	// Metadata is the metadata as this broker acts on it; Controller
	// reaches the active controller, which admin requests are forwarded
	// to.
	Metadata   Metadata
	Controller ControllerRPC
	Replicas   *replica.Manager
	Logs       *logmgr.Manager
	Sessions   *replica.SessionCache
	// Config returns the current broker config snapshot.
	Config func() *config.Broker
	// Listener is the first client listener's name: brokers are described
	// to clients by their endpoint of the listener the request came on,
	// this one when a request has none.
	Listener string
	// ProducerIDs hands out producer ids for InitProducerId.
	ProducerIDs func(ctx context.Context) (int64, error)
	// EnsureTopic auto-creates a topic with broker defaults through the
	// controller and returns once this broker has published it (Metadata
	// with auto.create.topics.enable); nil disables auto-creation.
	EnsureTopic func(ctx context.Context, name string) error
	// Checkpoint writes log-start-offset-checkpoint after DeleteRecords.
	Checkpoint func() error
	// Groups is the group coordinator; nil answers COORDINATOR_NOT_AVAILABLE.
	Groups *group.Coordinator
	// Authorizer returns the current authorizer (rebuilt when ACLs or
	// super.users change); nil, or a nil result, when none is configured:
	// every request is allowed and the ACL APIs answer SECURITY_DISABLED.
	Authorizer func() *auth.Authorizer
	// Audit counts and logs authorization denials; may be nil.
	Audit *auth.Audit
	// CheckBrokerConfig validates a broker configuration an AlterConfigs
	// would make, beyond the config registry (a listener's new key store
	// must load); may be nil.
	CheckBrokerConfig func(*config.Broker) error
	// Txn is the transaction coordinator; nil answers
	// COORDINATOR_NOT_AVAILABLE. Produce verifies with it when it leads
	// the transactional id's __transaction_state partition, else with the
	// broker that does, through Peers.
	Txn *txn.Coordinator
	// Peers reaches other brokers on their PeerListener (transaction
	// verification and markers), with that listener's security (the
	// broker's inter-broker pool); nil: this broker alone.
	Peers *kclient.Pool
	// PeerListener is the inter-broker listener's name (Peers dial each
	// broker's endpoint of it); empty: Listener.
	PeerListener string
	Clock        clock.Clock
	Logger       *slog.Logger
}

type handlerFunc func(ctx context.Context, h *Handler, req *server.Request) (kmsg.Response, error)

type apiEntry struct {
	min, max int16
	fn       handlerFunc
}

var registry [kmsg.MaxKey + 1]*apiEntry

// register is called from each API file's init.
func register(key int16, min, max int16, fn handlerFunc) {
	if registry[key] != nil {
		panic(fmt.Sprintf("api key %d registered twice", key))
	}
	registry[key] = &apiEntry{min: min, max: max, fn: fn}
}

// Handler implements server.Handler.
type Handler struct {
	d Deps
}

// New returns the request handler.
func New(d Deps) *Handler {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Clock == nil {
		d.Clock = clock.Real{}
	}
	return &Handler{d: d}
}

// Versions reports the served range of key.
func (h *Handler) Versions(key int16) (int16, int16, bool) {
	if key < 0 || int(key) >= len(registry) || registry[key] == nil {
		return 0, 0, false
	}
	e := registry[key]
	return e.min, e.max, true
}

// Handle dispatches to the API's handler, after the connection's security
// session admitted the request (an unauthenticated or expired session
// closes the connection).
func (h *Handler) Handle(ctx context.Context, req *server.Request) (kmsg.Response, error) {
	e := registry[req.Key]
	if e == nil {
		return nil, fmt.Errorf("api key %d not served", req.Key)
	}
	if s, ok := req.Conn.Session.(*auth.Session); ok {
		if err := s.Admit(req.Key); err != nil {
			return nil, err
		}
	}
	return e.fn(ctx, h, req)
}

// Deferred is a server.Handler whose Handler is set after the listener is
// bound: a broker binds its client listener at start, to know the port it
// registers with, but can answer only once it has loaded its logs. Set it
// before the server serves.
type Deferred struct{ h atomic.Pointer[Handler] }

// Set makes h answer every request from now on.
func (d *Deferred) Set(h *Handler) { d.h.Store(h) }

func (d *Deferred) Versions(key int16) (int16, int16, bool) { return d.h.Load().Versions(key) }

func (d *Deferred) Handle(ctx context.Context, req *server.Request) (kmsg.Response, error) {
	return d.h.Load().Handle(ctx, req)
}

// SupportedKeys lists every served key with its range (for ApiVersions and tools).
func SupportedKeys() []kmsg.ApiVersionsResponseApiKey {
	var out []kmsg.ApiVersionsResponseApiKey
	for k, e := range registry {
		if e != nil {
			out = append(out, kmsg.ApiVersionsResponseApiKey{ApiKey: int16(k), MinVersion: e.min, MaxVersion: e.max})
		}
	}
	return out
}

// SupportedNames lists the name of every served key (Kafka's API names,
// kmsg.NameForKey), for per-API metrics.
func SupportedNames() []string {
	var out []string
	for _, k := range SupportedKeys() {
		out = append(out, kmsg.NameForKey(k.ApiKey))
	}
	return out
}
