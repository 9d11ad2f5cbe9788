package broker

import (
	"context"
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
	"github.com/gregor-broker/gregor/internal/cleaner"
	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/logdirs"
	"github.com/gregor-broker/gregor/internal/logmgr"
	"github.com/gregor-broker/gregor/internal/replica"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/topicpart"
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
}

// Broker is one running Gregor node.
type Broker struct {
	o        Options
	static   *config.Broker
	cfg      atomic.Pointer[config.Broker]
	logger   *slog.Logger
	dirs     *logdirs.Held // the log dirs, locked until Shutdown
	ctrl     *controller.Controller
	logs     *logmgr.Manager
	cleaner  *cleaner.Cleaner
	replicas *replica.Manager
	sessions *replica.SessionCache
	// requestMemory bounds the request bytes held (queued.max.request.bytes).
	requestMemory *server.MemoryPool
	groups        *group.Coordinator
	srv           *server.Server
	adm           *admin.Admin
	view          *source.Source // what the admin JSON API and web console read

	advHost string
	advPort int32

	pidMu   sync.Mutex
	pidNext int64
	pidEnd  int64

	shutdownOnce sync.Once
	shutdownErr  error

	// fatal carries the error that stops the broker on its own (every log
	// dir offline) to Run.
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
		o.Logger.Warn("ignoring unknown broker config", "name", name)
	}
	b := &Broker{o: o, static: static, logger: o.Logger, fatal: make(chan error, 1)}
	b.cfg.Store(static)
	return b, nil
}

// Config is the current broker configuration (static plus dynamic).
func (b *Broker) Config() *config.Broker { return b.cfg.Load() }

// clientEndpoint picks the client listener and its advertised address.
func (b *Broker) clientEndpoint() (bind config.Endpoint, adv config.Endpoint, err error) {
	cfg := b.Config()
	ctrlNames := map[string]bool{}
	for _, n := range cfg.List("controller.listener.names") {
		ctrlNames[n] = true
	}
	eps, err := config.ParseEndpoints(cfg.List("listeners"))
	if err != nil {
		return bind, adv, err
	}
	found := false
	for _, ep := range eps {
		if !ctrlNames[ep.Listener] {
			bind, found = ep, true
			break
		}
	}
	if !found {
		return bind, adv, fmt.Errorf("listeners %v has no client listener outside controller.listener.names", cfg.List("listeners"))
	}
	if proto := cfg.SecurityProtocolMap()[bind.Listener]; proto != "" && proto != "PLAINTEXT" {
		return bind, adv, fmt.Errorf("listener %s uses security protocol %s; Gregor serves only PLAINTEXT so far (TLS and SASL are not implemented)",
			bind.Listener, proto)
	}
	adv = bind
	if advs, err := config.ParseEndpoints(cfg.List("advertised.listeners")); err == nil {
		for _, ep := range advs {
			if ep.Listener == bind.Listener {
				adv = ep
			}
		}
	}
	if adv.Host == "" || adv.Host == "0.0.0.0" || adv.Host == "::" {
		adv.Host = "127.0.0.1"
	}
	return bind, adv, nil
}

// Start opens storage and starts listening. Serving starts with Run. On an
// error, Shutdown releases what Start took.
func (b *Broker) Start() error {
	cfg := b.Config()
	dirs := cfg.LogDirs()
	var err error
	// Before anything else touches the dirs: lock them, and check (or, when
	// all are empty, format) them.
	b.dirs, err = logdirs.Open(logdirs.Config{FS: b.o.FS, LogDirs: dirs, MetadataLogDir: cfg.String("metadata.log.dir"),
		NodeID: cfg.NodeID(), MetadataFile: controller.MetadataFile}, controller.Bootstrap(b.o.FS, cfg.NodeID()), b.logger)
	if err != nil {
		return err
	}
	b.adm = admin.New(admin.Config{Addr: cfg.String("gregor.admin.listen"), Logger: b.logger, Registry: b.o.Registry})
	b.adm.SetReady("log recovery", false)
	b.adm.SetReady("metadata", false)
	if err := b.adm.Listen(); err != nil {
		return fmt.Errorf("admin listener: %w", err)
	}
	b.ctrl, err = controller.Open(controller.Options{FS: b.o.FS, MetadataDir: b.dirs.MetadataDir, ClusterID: b.dirs.ClusterID,
		NodeID: cfg.NodeID(), Logger: b.logger, Broker: b.Config})
	if err != nil {
		return err
	}
	if err := b.applyBrokerConfigs(b.ctrl.Image()); err != nil {
		return err
	}
	if err := checkInternalTopics(b.Config(), b.ctrl); err != nil {
		return err
	}
	b.adm.SetReady("metadata", true)
	if b.logs, err = b.openLogs(cfg, dirs); err != nil {
		return err
	}
	for _, st := range b.logs.DirStates() {
		b.onLogDirChange(st, nil)
	}
	ms := func(name string) time.Duration { return time.Duration(cfg.Long(name)) * time.Millisecond }
	b.replicas = replica.New(b.logs, cfg.Bool("gregor.ack.fsync"), b.logger)
	for _, t := range b.ctrl.Image().SortedTopics() {
		if err := b.hostTopic(t, 0); err != nil {
			return err
		}
	}
	b.ctrl.OnChange(b.onMetadataChange)
	// The group coordinator loads __consumer_offsets in the background and
	// follows its creation; its listener runs after the hosting one.
	b.groups = group.NewCoordinator(group.Options{Replicas: b.replicas, Topics: b.ctrl, Config: b.Config,
		Clock: b.o.Clock, Logger: b.logger})
	b.ctrl.OnChange(b.groups.OnMetadataChange)
	b.groups.Start()
	b.adm.SetReady("log recovery", true)

	bind, adv, err := b.clientEndpoint()
	if err != nil {
		return err
	}
	b.advHost, b.advPort = adv.Host, int32(adv.Port)
	b.sessions = replica.NewSessionCache(int(cfg.Int("max.incremental.fetch.session.cache.slots")), b.o.Clock.Now)
	handler := api.New(api.Deps{
		NodeID: cfg.NodeID(), Controller: b.ctrl, Replicas: b.replicas, Logs: b.logs,
		Sessions:    b.sessions,
		Config:      b.Config,
		Advertised:  func() (string, int32) { return b.advHost, b.advPort },
		ProducerIDs: b.nextProducerID,
		EnsureTopic: b.ensureTopic,
		Checkpoint:  b.logs.CheckpointLogStart,
		Groups:      b.groups,
		Clock:       b.o.Clock,
		Logger:      b.logger,
	})
	b.requestMemory = server.NewMemoryPool(cfg.Long("queued.max.request.bytes"))
	b.srv = server.New(server.Config{
		Addr:                  net.JoinHostPort(bind.Host, strconv.Itoa(bind.Port)),
		Listener:              bind.Listener,
		SocketRequestMaxBytes: cfg.Int("socket.request.max.bytes"),
		MaxConnections:        int(cfg.Int("max.connections")),
		ConnectionsMaxIdle:    ms("connections.max.idle.ms"),
		Logger:                b.logger,
		Metrics:               server.NewMetrics(b.o.Registry),
		MemoryPool:            b.requestMemory,
	}, handler)
	if err := b.srv.Listen(); err != nil {
		return fmt.Errorf("listener %s: %w", bind.Listener, err)
	}
	if b.advPort == 0 {
		b.advPort = int32(b.srv.Addr().(*net.TCPAddr).Port)
	}
	b.logs.Start()
	b.startCleaner()
	b.view = b.newSource()
	admin.RegisterAPI(b.adm, b.view)
	admin.RegisterConsole(b.adm, b.view)
	b.registerMetrics()
	return nil
}

// openLogs loads every partition log of dirs (logmgr.Open), setting aside
// the ones the metadata does not know.
func (b *Broker) openLogs(cfg *config.Broker, dirs []string) (*logmgr.Manager, error) {
	ms := func(name string) time.Duration { return time.Duration(cfg.Long(name)) * time.Millisecond }
	flushCheck := ms("log.flush.scheduler.interval.ms")
	if flushCheck <= 0 || flushCheck > time.Second {
		flushCheck = time.Second
	}
	return logmgr.Open(logmgr.Options{
		FS: b.o.FS, Clock: b.o.Clock, Dirs: dirs, Logger: b.logger,
		ConfigFor:              b.logConfigFor,
		Stray:                  b.strayReason,
		RecoveryThreadsPerDir:  int(cfg.Int("num.recovery.threads.per.data.dir")),
		RetentionCheckInterval: ms("log.retention.check.interval.ms"),
		FlushCheckInterval:     flushCheck,
		RecoveryPointInterval:  ms("log.flush.offset.checkpoint.interval.ms"),
		LogStartInterval:       ms("log.flush.start.offset.checkpoint.interval.ms"),
		HighWatermarkInterval:  ms("replica.high.watermark.checkpoint.interval.ms"),

		ProducerExpirationCheckInterval: ms("producer.id.expiration.check.interval.ms"),
		DiskCheckInterval:               diskCheckInterval,
		MinFreeBytes:                    func() int64 { return b.Config().Long("gregor.log.dir.min.free.bytes") },
		OnDirChange:                     b.onLogDirChange,
	})
}

// newSource builds the admin JSON API's and web console's read model over
// the started broker.
func (b *Broker) newSource() *source.Source {
	return source.New(source.Deps{
		Metadata: b.ctrl, Partitions: b.replicas, Logs: b.logs, Cleaner: b.cleaner, Groups: b.groups,
		Config: b.Config, TopicConfig: b.topicConfig, Clock: b.o.Clock, MetadataDir: b.dirs.MetadataDir,
		Listener: func() (string, string, int32) {
			name := "PLAINTEXT"
			if bind, _, err := b.clientEndpoint(); err == nil {
				name = bind.Listener
			}
			return name, b.advHost, b.advPort
		},
		AdminAddr: func() string {
			if a := b.AdminAddr(); a != nil {
				return a.String()
			}
			return ""
		},
	})
}

// Source is what the admin JSON API and web console read; nil before Start.
func (b *Broker) Source() admin.Source {
	if b.view == nil {
		return nil
	}
	return b.view
}

// Addr is the client listener's address.
func (b *Broker) Addr() net.Addr { return b.srv.Addr() }

// AdminAddr is the admin HTTP listener's address.
func (b *Broker) AdminAddr() net.Addr { return b.adm.Addr() }

// Admin exposes the admin server (for extra routes).
func (b *Broker) Admin() *admin.Admin { return b.adm }

// Replicas exposes the replica manager (tests, admin JSON API).
func (b *Broker) Replicas() *replica.Manager { return b.replicas }

// Controller exposes the metadata controller.
func (b *Broker) Controller() *controller.Controller { return b.ctrl }

// Groups exposes the group coordinator.
func (b *Broker) Groups() *group.Coordinator { return b.groups }

// Logs exposes the log manager.
func (b *Broker) Logs() *logmgr.Manager { return b.logs }

// Run serves until ctx ends, then shuts down gracefully. If the broker
// cannot go on (every log dir offline) it shuts down by itself and Run
// returns why, so that `gregor serve` exits non-zero.
func (b *Broker) Run(ctx context.Context) error {
	errc := make(chan error, 2)
	go func() { errc <- b.srv.Serve(context.Background()) }()
	go func() { errc <- b.adm.Serve(context.Background()) }()
	var fatal error
	select {
	case <-ctx.Done():
	case err := <-errc:
		if err != nil && !errors.Is(err, server.ErrServerClosed) {
			b.logger.Error("listener stopped", "err", err)
		}
	case fatal = <-b.fatal:
		b.logger.Error("shutting down", "err", fatal)
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
			"produce is refused with KAFKA_STORAGE_ERROR (clients retry) until retention or DeleteRecords frees space",
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
	select {
	case b.fatal <- fmt.Errorf("all log dirs are offline, the last %s: %w", st.Path, st.Offline):
	default:
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// Shutdown stops listeners, lets in-flight requests finish, and closes the
// logs cleanly.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.shutdownOnce.Do(func() {
		var errs []error
		if b.replicas != nil {
			b.replicas.BeginShutdown()
		}
		if b.srv != nil {
			if err := b.srv.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("kafka listener: %w", err))
			}
		}
		if b.adm != nil {
			if err := b.adm.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("admin listener: %w", err))
			}
		}
		if b.cleaner != nil {
			b.cleaner.Stop()
		}
		if b.logs != nil {
			if err := b.logs.Close(); err != nil {
				errs = append(errs, fmt.Errorf("closing logs: %w", err))
			}
		}
		// Last: the dirs stay locked until nothing of this broker writes.
		if b.dirs != nil {
			if err := b.dirs.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		b.shutdownErr = errors.Join(errs...)
		if b.shutdownErr == nil && b.srv != nil { // a broker that never started has nothing to report
			b.logger.Info("shut down cleanly")
		}
	})
	return b.shutdownErr
}

// logConfigFor resolves a topic's log configuration from the metadata image.
func (b *Broker) logConfigFor(topic string) log.Config {
	var overrides map[string]string
	if t := b.ctrl.Image().Topic(topic); t != nil {
		overrides = t.Configs
	}
	tc, err := config.ResolveTopic(b.Config(), overrides)
	if err != nil {
		b.logger.Error("topic config no longer valid, using defaults", "topic", topic, "err", err)
		tc, _ = config.ResolveTopic(b.Config(), nil)
	}
	return LogConfig(tc, b.Config())
}

func (b *Broker) topicConfig(t *controller.Topic) config.Topic {
	tc, err := config.ResolveTopic(b.Config(), t.Configs)
	if err != nil {
		b.logger.Error("topic config no longer valid, using defaults", "topic", t.Name, "err", err)
		tc, _ = config.ResolveTopic(b.Config(), nil)
	}
	return tc
}

// strayReason is Kafka's stray test (LogManager.isStrayKraftReplica) for a
// partition log found on disk: the metadata must name its topic, with this
// partition, and with the topic id the log's partition.metadata holds (a log
// without one never had a record appended: the file is written first).
func (b *Broker) strayReason(tp topicpart.TopicPartition, topicID [16]byte) string {
	t := b.ctrl.Image().Topic(tp.Topic)
	switch {
	case t == nil:
		return "the metadata has no topic " + tp.Topic
	case tp.Partition >= t.Partitions:
		return fmt.Sprintf("topic %s has %d partitions", tp.Topic, t.Partitions)
	case topicID == [16]byte{}:
		return "the log has no partition.metadata naming its topic id"
	case controller.TopicID(topicID) != t.ID:
		return fmt.Sprintf("the log belongs to topic id %s, the metadata's %s is %s", controller.TopicID(topicID), tp.Topic, t.ID)
	}
	return ""
}

// hostTopic hosts partitions [from, t.Partitions) of t.
func (b *Broker) hostTopic(t *controller.Topic, from int32) error {
	tc := b.topicConfig(t)
	lc := LogConfig(tc, b.Config())
	for p := from; p < t.Partitions; p++ {
		if _, err := b.replicas.Host(topicpart.TopicPartition{Topic: t.Name, Partition: p}, t.ID, lc, tc.MinInsyncReplicas); err != nil {
			return fmt.Errorf("host %s-%d: %w", t.Name, p, err)
		}
	}
	return nil
}

func (b *Broker) reconfigureTopic(t *controller.Topic) {
	tc := b.topicConfig(t)
	lc := LogConfig(tc, b.Config())
	for p := int32(0); p < t.Partitions; p++ {
		if part, ok := b.replicas.Get(topicpart.TopicPartition{Topic: t.Name, Partition: p}); ok {
			part.Log.SetConfig(lc)
			part.SetMinISR(tc.MinInsyncReplicas)
		}
	}
}

func (b *Broker) applyBrokerConfigs(im *controller.Image) error {
	next, err := b.static.WithDynamic(im.BrokerConfigs)
	if err != nil {
		return err
	}
	if next, err = next.WithDynamicPerBroker(im.NodeConfigs); err != nil {
		return err
	}
	b.cfg.Store(next)
	return nil
}

// onMetadataChange applies a committed metadata change (called with the
// controller's lock held, one change at a time).
func (b *Broker) onMetadataChange(ch controller.Change) {
	switch {
	case ch.Created != nil:
		if err := b.hostTopic(ch.Created, 0); err != nil {
			b.logger.Error("hosting new topic failed", "topic", ch.Created.Name, "err", err)
		}
	case ch.Expanded != nil:
		if err := b.hostTopic(ch.Expanded, ch.OldPartitions); err != nil {
			b.logger.Error("hosting new partitions failed", "topic", ch.Expanded.Name, "err", err)
		}
	case ch.Deleted != nil:
		for p := int32(0); p < ch.Deleted.Partitions; p++ {
			tp := topicpart.TopicPartition{Topic: ch.Deleted.Name, Partition: p}
			if err := b.replicas.Drop(tp); err != nil {
				b.logger.Error("deleting partition log failed", "partition", tp, "err", err)
			}
		}
	case ch.ConfigChanged != nil:
		b.reconfigureTopic(ch.ConfigChanged)
	case ch.BrokerConfigs:
		if err := b.applyBrokerConfigs(ch.Image); err != nil {
			b.logger.Error("applying dynamic broker configs failed", "err", err)
			return
		}
		for _, t := range ch.Image.SortedTopics() {
			b.reconfigureTopic(t)
		}
	}
}

// ensureTopic creates a topic with broker defaults (auto-creation).
func (b *Broker) ensureTopic(name string) error {
	_, err := b.ctrl.CreateTopic(controller.CreateTopicRequest{Name: name, NumPartitions: -1, ReplicationFactor: -1}, false)
	return err
}

// nextProducerID hands out producer ids from durably reserved blocks.
func (b *Broker) nextProducerID() (int64, error) {
	b.pidMu.Lock()
	defer b.pidMu.Unlock()
	if b.pidNext >= b.pidEnd {
		start, err := b.ctrl.AllocateProducerIDBlock()
		if err != nil {
			return -1, err
		}
		b.pidNext, b.pidEnd = start, start+controller.ProducerIDBlockSize
	}
	id := b.pidNext
	b.pidNext++
	return id, nil
}

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
