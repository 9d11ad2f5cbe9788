package broker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/admin/source"
	"github.com/gregor-broker/gregor/internal/api"
	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/logmgr"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/replica"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/txn"
)

// startup is the rest of Start, in the background (design §2.10, §5.8.7):
// catch up with the metadata log, load and recover the logs against that
// image (setting aside those it does not know), publish the whole image
// once (partitions hosted in their roles, coordinators loaded), then ask the
// controller to unfence this broker. Ready is closed once it has; from then
// on, until ctx ends, the goroutine keeps the "metadata" readiness
// condition current (watchMetadata).
func (b *Broker) startup(ctx context.Context) {
	defer close(b.startDone)
	caughtUp, err := b.bringUp(ctx)
	if err != nil {
		b.startErr = err
		if ctx.Err() == nil {
			b.stopWith(fmt.Errorf("startup: %w", err))
		}
		return
	}
	close(b.ready)
	b.watchMetadata(ctx, caughtUp)
}

// bringUp returns the metadata index it caught up to.
func (b *Broker) bringUp(ctx context.Context) (uint64, error) {
	caughtUp, err := b.catchUp(ctx)
	if err != nil {
		return 0, err
	}
	im := b.node.Image()
	if err := b.applyBrokerConfigs(im); err != nil {
		return 0, err
	}
	b.adm.SetCondition("log recovery", admin.NotReady, "loading and recovering the partition logs")
	cfg := b.Config()
	if b.logs, err = b.openLogs(cfg, im); err != nil {
		return 0, err
	}
	for _, st := range b.logs.DirStates() {
		b.onLogDirChange(st, nil)
	}
	b.replicas = replica.New(b.logs, cfg.Bool("gregor.ack.fsync"), b.logger)
	b.startReplication(cfg)
	b.groups = group.NewCoordinator(group.Options{Replicas: b.replicas, Topics: groupTopics{b}, Config: b.Config,
		Clock: b.o.Clock, Logger: b.logger})
	b.sessions = replica.NewSessionCache(int(cfg.Int("max.incremental.fetch.session.cache.slots")), b.o.Clock.Now)
	// The authorizer over the ACLs caught up with, before any request is
	// served; Publish rebuilds it whenever they change.
	b.refreshAuthorizer(im)
	deps := api.Deps{
		NodeID: cfg.NodeID(), Metadata: published{b}, Controller: b.ctrl.RPC, Replicas: b.replicas, Logs: b.logs,
		Sessions:          b.sessions,
		Config:            b.Config,
		Listener:          b.layout.Client.Listener,
		ProducerIDs:       b.nextProducerID,
		EnsureTopic:       b.ensureTopic,
		Checkpoint:        b.logs.CheckpointLogStart,
		Groups:            b.groups,
		Peers:             b.pool,
		PeerListener:      b.layout.InterBroker,
		Authorizer:        b.Authorizer,
		Audit:             b.audit,
		CheckBrokerConfig: b.checkBrokerConfig,
		Clock:             b.o.Clock,
		Logger:            b.logger,
	}
	// The transaction coordinator loads the __transaction_state partitions
	// this broker leads as they are published, and writes markers through
	// the WriteTxnMarkers path.
	markers := api.NewMarkerWriter(deps)
	b.coordPeers = api.NewCoordinatorPeers(deps)
	b.txns = txn.NewCoordinator(txn.Options{Replicas: b.replicas, Topics: groupTopics{b}, Config: b.Config,
		Clock: b.o.Clock, Logger: b.logger, ProducerIDs: b.nextProducerID, Markers: markers,
		LeaderEpoch: b.leaderEpoch})
	deps.Txn = b.txns
	b.handler.Set(api.New(deps))
	b.node.StartPublishing(b)
	if err := b.node.WaitPublished(ctx, caughtUp); err != nil {
		return 0, err
	}
	b.adm.SetCondition("log recovery", admin.Ready, "")
	b.adm.SetCondition("metadata", admin.Ready, fmt.Sprintf("caught up with the metadata log at index %d", caughtUp))
	b.metaCaughtUp.Store(&catchUp{at: b.o.Clock.Now(), index: caughtUp})
	b.logs.Start()
	b.startCleaner()
	b.startOrphanAborter(markers)
	// The JSON API, console and metrics are served before the broker is
	// unfenced, so that they answer by the time /readyz does.
	b.view = b.newSource()
	admin.RegisterAPI(b.adm, b.view)
	admin.RegisterConsole(b.adm, b.view)
	b.registerMetrics()
	b.life.ReadyToUnfence()
	if err := b.waitUnfenced(ctx); err != nil {
		return 0, err
	}
	// The entry that unfenced this broker also elected it leader of the
	// partitions that had none: serve once they are published here.
	if err := b.node.WaitPublished(ctx, 0); err != nil {
		return 0, err
	}
	b.logger.Info("serving", "node_id", b.layout.NodeID, "broker_epoch", b.life.Epoch(), "listener", b.Addr().String())
	return caughtUp, nil
}

// catchUp waits until this node has applied everything the metadata log had
// committed when it asked (ReadIndex), which needs a leader: with several
// voters, a quorum of them running.
func (b *Broker) catchUp(ctx context.Context) (uint64, error) {
	start := b.o.Clock.Now()
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		idx, err := b.node.CaughtUp(cctx)
		cancel()
		if err == nil {
			b.logger.Info("caught up with the metadata log", "index", idx, "topics", b.node.Image().NumTopics(),
				"took", b.o.Clock.Now().Sub(start))
			return idx, nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		detail := fmt.Sprintf("waiting for the metadata quorum (voters %s) to have a leader: a majority of them must run",
			voterList(b.layout.Voters))
		b.adm.SetCondition("metadata", admin.NotReady, detail)
		b.logger.Warn(detail, "waited", b.o.Clock.Now().Sub(start).Round(time.Second), "err", err)
	}
}

func voterList(v map[int32]string) string {
	var parts []string
	for _, id := range sortedIDs(v) {
		parts = append(parts, fmt.Sprintf("%d@%s", id, v[id]))
	}
	return strings.Join(parts, ",")
}

// waitUnfenced waits until the controller unfences this broker: it has
// registered, its metadata has reached its registration, and it asked.
func (b *Broker) waitUnfenced(ctx context.Context) error {
	for {
		tc, t := clock.NewTimer(b.o.Clock, 10*time.Second)
		select {
		case <-b.life.Unfenced():
			t.Stop()
			b.adm.SetCondition("broker registration", admin.Ready, "")
			return nil
		case <-b.life.Failed():
			t.Stop()
			b.adm.SetCondition("broker registration", admin.NotReady, b.life.Err().Error())
			return b.life.Err()
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-tc:
			b.logger.Warn("still waiting for the controller to register and unfence this broker",
				"broker_epoch", b.life.Epoch(), "controller", b.node.Leader())
		}
	}
}

// openLogs loads every partition log of the dirs (logmgr.Open), setting
// aside the ones the metadata image im does not give this broker.
func (b *Broker) openLogs(cfg *config.Broker, im *metadata.Image) (*logmgr.Manager, error) {
	ms := func(name string) time.Duration { return time.Duration(cfg.Long(name)) * time.Millisecond }
	flushCheck := ms("log.flush.scheduler.interval.ms")
	if flushCheck <= 0 || flushCheck > time.Second {
		flushCheck = time.Second
	}
	return logmgr.Open(logmgr.Options{
		FS: b.o.FS, Clock: b.o.Clock, Dirs: cfg.LogDirs(), Logger: b.logger,
		ConfigFor:              func(topic string) log.Config { return b.logConfigFor(im, topic) },
		Stray:                  func(tp topicpart.TopicPartition, id [16]byte) string { return b.strayReason(im, tp, id) },
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
		Metadata: published{b}, Partitions: b.replicas, Logs: b.logs, Cleaner: b.cleaner, Groups: b.groups, Txns: txnViews{b},
		Orphans: b.orphans,
		Config:  b.Config, TopicConfig: b.topicConfig, Clock: b.o.Clock, MetadataDir: b.dirs.MetadataDir,
		Listener: b.layout.Client.Listener, Quorum: b.quorumView, AckUnclean: b.ackUnclean,
		AdminAddr: func() string {
			if a := b.AdminAddr(); a != nil {
				return a.String()
			}
			return ""
		},
	})
}

// ackUnclean writes an unclean election's acknowledgement through this
// node's controller when it is the active one (ok false otherwise), and
// waits until this node has applied it, so the next read shows it cleared.
func (b *Broker) ackUnclean(ctx context.Context, r *controller.AckUncleanElectionRequest) (*controller.AckUncleanElectionResponse, bool, error) {
	sh := b.node.Shell()
	if active, _ := sh.Active(); !active {
		return nil, false, nil
	}
	rep := sh.Do(ctx, r)
	if rep.Err != nil {
		return nil, true, rep.Err
	}
	if err := b.node.Raft().WaitApplied(ctx, rep.Index); err != nil {
		return nil, true, err
	}
	return rep.Value.(*controller.AckUncleanElectionResponse), true, nil
}
