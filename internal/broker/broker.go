package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/admin/source"
	"github.com/gregor-broker/gregor/internal/api"
	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/cleaner"
	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/cluster"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/kclient"
	"github.com/gregor-broker/gregor/internal/logdirs"
	"github.com/gregor-broker/gregor/internal/logmgr"
	"github.com/gregor-broker/gregor/internal/replica"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/txn"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Options build a Broker.
type Options struct {
	// Static is the static configuration: server.properties plus overrides.
	Static   map[string]string
	FS       vfs.FS
	Clock    clock.Clock
	Logger   *slog.Logger
	Registry *prometheus.Registry
	// ControllerOverTCP makes this broker reach its own node's controller
	// over the CONTROLLER listener too, as it reaches another node's
	// (tests run the wire path with it); by default a local controller is
	// called in process.
	ControllerOverTCP bool
	// DialRaft opens the raft transport's connections (tests); default a
	// net.Dialer.
	DialRaft func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Broker is one running Gregor node: a broker and a metadata quorum voter.
type Broker struct {
	// uncleanElections, lastKnownElections count the unclean and
	// last-known-leader elections this node's controller made (onElection).
	uncleanElections, lastKnownElections atomic.Int64

	o      Options
	static *config.Broker
	cfg    atomic.Pointer[config.Broker]
	logger *slog.Logger
	layout *cluster.Layout
	dirs   *logdirs.Held // the log dirs, locked until Shutdown

	incarnation [16]byte
	node        *cluster.Node
	ctrlSrv     *server.Server // the CONTROLLER listener's Kafka RPCs
	ctrlLn      net.Listener
	pool        *kclient.Pool // to other brokers: the inter-broker listener (interBrokerPool)
	ctrlPool    *kclient.Pool // to the active controller: the CONTROLLER listener
	ctrl        api.ControllerClient
	life        *cluster.Lifecycle

	logs     *logmgr.Manager
	cleaner  *cleaner.Cleaner
	replicas *replica.Manager
	sessions *replica.SessionCache
	// requestMemory bounds the request bytes held (queued.max.request.bytes).
	requestMemory *server.MemoryPool
	groups        *group.Coordinator
	txns          *txn.Coordinator
	orphans       *txn.OrphanAborter // automatic abort of orphaned transactions (opt-in)
	coordPeers    *api.CoordinatorPeers
	// listeners are the client listeners, in listeners order (the first
	// is the one Addr reports); they share handler.
	listeners []kafkaListener
	handler   api.Deferred // the client listeners', set by startup
	adm       *admin.Admin
	view      *source.Source // what the admin JSON API and web console read

	// metaCaughtUp is the last time the broker confirmed it had caught up
	// with the metadata log (watchMetadata).
	metaCaughtUp atomic.Pointer[catchUp]

	// ready is closed once the broker serves clients (startup); startErr
	// says why startup failed, when it did (then fatal carries it too).
	ready     chan struct{}
	startDone chan struct{}
	startErr  error
	stopStart context.CancelFunc

	audit *auth.Audit
	// authzCfg is the authorizer's configuration, nil without
	// authorizer.class.name; authorizer is rebuilt whenever the ACLs change.
	authzCfg   *auth.AuthorizerConfig
	authorizer atomic.Pointer[auth.Authorizer]
	ctrlSec    *auth.Listener // the CONTROLLER listener's security

	pidMu   sync.Mutex
	pidNext int64
	pidEnd  int64

	shutdownOnce sync.Once
	shutdownErr  error

	// fatal carries the error that stops the broker on its own (every log
	// dir offline, a startup that cannot finish) to Run.
	fatal chan error
}

// diskCheckInterval is how often the free space of each log dir is read
// (appends also trigger a reading once they use up what the last left).
const diskCheckInterval = time.Second

// New validates the configuration.
func New(o Options) (*Broker, error) {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	static, err := config.NewBroker(o.Static)
	if err != nil {
		return nil, err
	}
	if err := static.CheckServable(); err != nil {
		return nil, err
	}
	for _, name := range static.Unknown() {
		// Listener-prefixed security settings are not in the registry but
		// are read by package auth.
		if !config.IsHonouredSecurityConfig(name) {
			o.Logger.Warn("ignoring unknown broker config", "name", name)
		}
	}
	layout, err := cluster.ParseLayout(static)
	if err != nil {
		return nil, err
	}
	b := &Broker{o: o, static: static, logger: o.Logger, layout: layout, fatal: make(chan error, 1),
		ready: make(chan struct{}), startDone: make(chan struct{})}
	b.cfg.Store(static)
	if _, err := rand.Read(b.incarnation[:]); err != nil {
		return nil, err
	}
	return b, nil
}

// Config is the current broker configuration (static plus dynamic).
func (b *Broker) Config() *config.Broker { return b.cfg.Load() }

// Start checks and locks the log dirs, opens the metadata log, binds the
// listeners and starts the broker's lifecycle, and returns: the rest
// (catching up with the metadata, loading the logs, registering with the
// controller, being unfenced) needs the metadata quorum, which needs the
// other voters, so it goes on in the background until Ready is closed.
// Serving starts with Run. On an error, Shutdown releases what Start took.
func (b *Broker) Start() error {
	cfg := b.Config()
	if err := b.openDirs(cfg); err != nil {
		return err
	}
	adminSec, err := b.adminSecurity(cfg)
	if err != nil {
		return err
	}
	b.adm = admin.New(admin.Config{Addr: cfg.String("gregor.admin.listen"), Logger: b.logger, Registry: b.o.Registry,
		Security: adminSec, MetricsAddr: cfg.String("gregor.admin.metrics.listen")})
	b.adm.SetCondition("metadata", admin.NotReady, "catching up with the metadata log")
	b.adm.SetCondition("log recovery", admin.NotReady, "waiting for the metadata")
	b.adm.SetCondition("broker registration", admin.NotReady, "not registered with the controller yet")
	if err := b.adm.Listen(); err != nil {
		return fmt.Errorf("admin listener: %w", err)
	}
	b.audit = auth.NewAudit(b.logger, b.o.Registry, b.o.Clock)
	if err := b.buildAuthorizerConfig(cfg); err != nil {
		return err
	}
	if err := b.openNode(cfg); err != nil {
		return err
	}
	if err := checkInternalTopics(cfg, b.node.Image(), len(b.layout.Voters)); err != nil {
		return err
	}
	if err := b.listenClients(cfg); err != nil {
		return err
	}
	if err := b.startLifecycle(cfg); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.stopStart = cancel
	go b.startup(ctx)
	return nil
}

// openDirs locks and checks the log dirs (formatting them when all are
// empty), and converts an older Gregor's metadata file into the metadata
// log.
func (b *Broker) openDirs(cfg *config.Broker) error {
	lc := logdirs.Config{FS: b.o.FS, LogDirs: cfg.LogDirs(), MetadataLogDir: cfg.String("metadata.log.dir"),
		NodeID: cfg.NodeID(), MetadataFile: cluster.MetadataDirName, LegacyMetadataFile: cluster.LegacyMetadataFile}
	if b.layout.ExplicitVoters {
		lc.NewClusterID = func() string { return cluster.DeriveClusterID(b.layout.Voters) }
	}
	var err error
	b.dirs, err = logdirs.Open(lc, cluster.Format(b.o.FS, cfg.NodeID(), b.layout.VoterIDs()), b.logger)
	if err != nil {
		return err
	}
	if _, err := b.o.FS.Stat(filepath.Join(b.dirs.MetadataDir, cluster.LegacyMetadataFile)); err != nil {
		return nil
	}
	epoch, err := cluster.Upgrade(cluster.UpgradeConfig{FS: b.o.FS, Dir: b.dirs.MetadataDir, NodeID: cfg.NodeID(),
		ClusterID: b.dirs.ClusterID, Voters: b.layout.VoterIDs(), LogDirs: b.logDirIDs()})
	if err != nil {
		return err
	}
	if epoch > 0 {
		b.logger.Info("converted the single-node metadata into the metadata log", "dir", b.dirs.MetadataDir,
			"retired", cluster.RetiredMetadataFile)
		if b.cleanlyStopped() {
			// The old broker shut down cleanly: its logs hold everything it
			// acknowledged, so it comes back as a clean restart.
			return cluster.WriteEpoch(b.o.FS, b.dirs.MetadataDir, epoch, cluster.EpochCleanShutdown)
		}
	}
	return nil
}

// cleanlyStopped reports whether every log dir holds the log manager's
// clean-shutdown marker, or acknowledgements waited for fsync: then the logs
// hold everything the last run acknowledged.
func (b *Broker) cleanlyStopped() bool {
	if b.Config().Bool("gregor.ack.fsync") {
		return true
	}
	for _, d := range b.Config().LogDirs() {
		if _, err := b.o.FS.Stat(filepath.Join(d, logmgr.CleanShutdownFile)); err != nil {
			return false
		}
	}
	return true
}

// logDirIDs are the directory ids of the log dirs, from their
// meta.properties (written by now, when Open formatted them), as the broker
// registers them.
func (b *Broker) logDirIDs() [][16]byte {
	var out [][16]byte
	for _, d := range b.dirs.Ensemble.Dirs {
		data, err := vfs.ReadFile(b.o.FS, filepath.Join(d.Path, logdirs.MetaPropertiesFile))
		if err != nil {
			continue
		}
		m, err := logdirs.ParseMetaProperties(data)
		if err != nil {
			continue
		}
		if id, err := parseUUID(m.DirectoryID); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// listenClients binds the client listeners, each with its security
// (requests are served once the broker is ready, in Run).
func (b *Broker) listenClients(cfg *config.Broker) error {
	ms := func(name string) time.Duration { return time.Duration(cfg.Long(name)) * time.Millisecond }
	b.audit.InitDenied(append(api.SupportedNames(), controllerConnection))
	if err := b.buildSecurity(cfg); err != nil {
		return err
	}
	var err error
	if b.pool, err = b.interBrokerPool(cfg); err != nil {
		return err
	}
	b.requestMemory = server.NewMemoryPool(cfg.Long("queued.max.request.bytes"))
	metrics := server.NewMetrics(b.o.Registry)
	for i := range b.listeners {
		l := &b.listeners[i]
		sec := l.sec
		l.srv = server.New(server.Config{
			Addr:                  net.JoinHostPort(l.Bind.Host, strconv.Itoa(l.Bind.Port)),
			Listener:              l.Bind.Listener,
			SocketRequestMaxBytes: cfg.Int("socket.request.max.bytes"),
			MaxConnections:        int(cfg.Int("max.connections")),
			ConnectionsMaxIdle:    ms("connections.max.idle.ms"),
			Logger:                b.logger,
			Metrics:               metrics,
			MemoryPool:            b.requestMemory,
			MaxInflightRequests:   int(cfg.Int("gregor.max.in.flight.requests.per.connection")),
			MaxInflightBytes:      int(cfg.Int("gregor.max.in.flight.bytes.per.connection")),
			Secure:                func(nc net.Conn) (net.Conn, any) { return sec.Wrap(nc) },
		}, &b.handler)
		if err := l.srv.Listen(); err != nil {
			return fmt.Errorf("listener %s: %w", l.Bind.Listener, err)
		}
		if l.Advertised.Port == 0 {
			l.Advertised.Port = l.srv.Addr().(*net.TCPAddr).Port
			b.layout.Clients[i].Advertised.Port = l.Advertised.Port
		}
	}
	b.layout.Advertised = b.listeners[0].Advertised
	return nil
}

// Ready is closed once the broker serves clients: caught up with the
// metadata, logs loaded, registered and unfenced.
func (b *Broker) Ready() <-chan struct{} { return b.ready }

// WaitReady waits until the broker is ready, its startup failed, or ctx
// ends.
func (b *Broker) WaitReady(ctx context.Context) error {
	select {
	case <-b.ready:
		return nil
	case <-b.startDone:
		if b.startErr != nil {
			return b.startErr
		}
		<-b.ready
		return nil
	case <-ctx.Done():
		return fmt.Errorf("broker %d not ready: %w", b.layout.NodeID, ctx.Err())
	}
}

// Source is what the admin JSON API and web console read; nil before the
// broker is ready.
func (b *Broker) Source() admin.Source {
	if b.view == nil {
		return nil
	}
	return b.view
}

// Addr is the first client listener's address.
func (b *Broker) Addr() net.Addr { return b.listeners[0].srv.Addr() }

// ControllerAddr is the CONTROLLER listener's address.
func (b *Broker) ControllerAddr() net.Addr { return b.ctrlLn.Addr() }

// AdminAddr is the admin HTTP listener's address.
func (b *Broker) AdminAddr() net.Addr { return b.adm.Addr() }

// Admin exposes the admin server (for extra routes).
func (b *Broker) Admin() *admin.Admin { return b.adm }

// Replicas exposes the replica manager (tests, admin JSON API).
func (b *Broker) Replicas() *replica.Manager { return b.replicas }

// Node exposes this node's metadata quorum member and controller.
func (b *Broker) Node() *cluster.Node { return b.node }

// Lifecycle exposes the broker's registration and heartbeats.
func (b *Broker) Lifecycle() *cluster.Lifecycle { return b.life }

// Groups exposes the group coordinator.
func (b *Broker) Groups() *group.Coordinator { return b.groups }

// Transactions exposes the transaction coordinator.
func (b *Broker) Transactions() *txn.Coordinator { return b.txns }

// leaderEpoch is a hosted partition's leader epoch (0 when not hosted).
func (b *Broker) leaderEpoch(tp topicpart.TopicPartition) int32 {
	if p, ok := b.replicas.Get(tp); ok {
		return p.LeaderEpoch()
	}
	return 0
}

// Logs exposes the log manager.
func (b *Broker) Logs() *logmgr.Manager { return b.logs }

// Run serves until ctx ends, then shuts down: a controlled shutdown first
// (the controller moves this broker's leaderships away), then the
// listeners, the logs and the metadata log. Clients are served once the
// broker is ready. If the broker cannot go on (every log dir offline, a
// startup that failed) it shuts down by itself and Run returns why, so that
// `gregor serve` exits non-zero.
func (b *Broker) Run(ctx context.Context) error {
	errc := make(chan error, len(b.listeners)+1)
	go func() { errc <- b.adm.Serve(context.Background()) }()
	serving := b.ready
	var fatal error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-serving:
			serving = nil
			for _, l := range b.listeners {
				go func() { errc <- l.srv.Serve(context.Background()) }()
			}
		case err := <-errc:
			if err != nil && !errors.Is(err, server.ErrServerClosed) {
				b.logger.Error("listener stopped", "err", err)
			}
			break loop
		case fatal = <-b.fatal:
			b.logger.Error("shutting down", "err", fatal)
			break loop
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return errors.Join(fatal, b.Shutdown(sctx))
}

// onLogDirChange shows a log dir's health as a readiness condition: ready,
// a warning while it is full (fetches are still served and taking the broker
// out of a load balancer would free nothing), not ready once offline. When
// no dir is left online the broker stops, as Kafka halts then. It runs on
// the goroutine that saw the change (see logmgr.Options.OnDirChange).
func (b *Broker) onLogDirChange(st logmgr.DirState, all []logmgr.DirState) {
	name := "log dir " + st.Path
	switch {
	case st.Offline != nil:
		b.adm.SetCondition(name, admin.NotReady, fmt.Sprintf("offline after a failed write or fsync (%v); "+
			"its partitions answer KAFKA_STORAGE_ERROR until a restart", st.Offline))
	case st.Full:
		b.adm.SetCondition(name, admin.Warning, fmt.Sprintf("full: %s usable, gregor.log.dir.min.free.bytes keeps %s; "+
			"produce is refused with KAFKA_STORAGE_ERROR (clients retry) and followers do not append until retention or DeleteRecords frees space",
			mib(st.Usage.Usable), mib(st.MinFree)))
	default:
		b.adm.SetCondition(name, admin.Ready, "")
	}
	if st.Offline == nil || len(all) == 0 {
		return
	}
	for _, d := range all {
		if d.Offline == nil {
			return
		}
	}
	b.stopWith(fmt.Errorf("all log dirs are offline, the last %s: %w", st.Path, st.Offline))
}

// stopWith makes Run shut the broker down and return err.
func (b *Broker) stopWith(err error) {
	select {
	case b.fatal <- err:
	default:
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// DataDirs returns the absolute log dirs.
func (b *Broker) DataDirs() []string {
	var out []string
	for _, d := range b.Config().LogDirs() {
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		out = append(out, d)
	}
	return out
}
