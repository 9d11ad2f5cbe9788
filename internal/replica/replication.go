package replica

import (
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/replica/isr"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// ReplicationConfig is what a broker's replication needs beyond its logs.
type ReplicationConfig struct {
	// NodeID is this broker's node.id.
	NodeID int32
	// BrokerEpoch is this broker's epoch, -1 until it registered: its
	// fetches carry it (KIP-903), and so does AlterPartition.
	BrokerEpoch func() int64
	// LagTimeMax is replica.lag.time.max.ms.
	LagTimeMax time.Duration
	Fetch      FetcherConfig
	// Endpoint opens the connection to a leader's broker.
	Endpoint func(broker int32) (LeaderEndpoint, error)
	// AlterPartition reaches the active controller.
	AlterPartition AlterPartitionSender
	// RequestTimeout bounds each AlterPartition request (it is sent again
	// after it).
	RequestTimeout time.Duration
	// OnTruncate hears of every follower truncation (the log cleaner
	// lowers its checkpoint below the new log end offset).
	OnTruncate func(tp topicpart.TopicPartition, logEndOffset int64)
}

// replication is the Manager's replication machinery: follower fetchers,
// the AlterPartition queue and the isr-expiration task.
type replication struct {
	m      *Manager
	cfg    ReplicationConfig
	nodeID int32
	logger *slog.Logger

	fetchers *fetchers
	alter    *alterManager

	mu      sync.Mutex
	started bool
	stop    chan struct{}
	done    chan struct{}

	shrinks, expands prometheus.Counter
}

func newReplication() *replication {
	r := &replication{nodeID: -1, logger: slog.Default(), stop: make(chan struct{}), done: make(chan struct{}),
		shrinks: prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_replicamanager_isrshrinks_total",
			Help: "ISR shrinks this broker made as leader, confirmed by the controller (IsrShrinksPerSec)."}),
		expands: prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_replicamanager_isrexpands_total",
			Help: "ISR expansions this broker made as leader, confirmed by the controller (IsrExpandsPerSec)."}),
	}
	r.cfg.LagTimeMax = 30 * time.Second
	r.cfg.BrokerEpoch = func() int64 { return -1 }
	r.fetchers = newFetchers(r)
	r.alter = newAlterManager(r)
	return r
}

// StartReplication starts following leaders and leading followers: the
// fetchers of the partitions this broker follows, the AlterPartition queue,
// and the isr-expiration task every replica.lag.time.max.ms/2. Call it
// before the first Assign; a Manager without it hosts sole replicas only
// (tests, single-node tools).
func (m *Manager) StartReplication(cfg ReplicationConfig) {
	r := m.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return
	}
	r.started = true
	r.configure(m, cfg)
	r.fetchers.start()
	r.alter.start()
	go r.expireISRs()
}

// configure sets replication up without starting anything: what the
// deterministic simulation drives by hand.
func (r *replication) configure(m *Manager, cfg ReplicationConfig) {
	r.m, r.cfg, r.nodeID, r.logger = m, cfg, cfg.NodeID, m.logger.With("component", "replication")
	if cfg.BrokerEpoch == nil {
		r.cfg.BrokerEpoch = func() int64 { return -1 }
	}
	if r.cfg.RequestTimeout <= 0 {
		r.cfg.RequestTimeout = 30 * time.Second
	}
	if r.cfg.Fetch.Backoff <= 0 {
		r.cfg.Fetch.Backoff = time.Second
	}
	if r.cfg.Fetch.RequestTimeout <= 0 {
		r.cfg.Fetch.RequestTimeout = 30 * time.Second
	}
}

// StopReplication stops the fetchers, the AlterPartition queue and the
// isr-expiration task (a broker shutting down, once its logs no longer
// change).
func (m *Manager) StopReplication() {
	r := m.repl
	r.mu.Lock()
	started := r.started
	r.started = true
	r.mu.Unlock()
	select {
	case <-r.stop:
		return
	default:
	}
	close(r.stop)
	r.fetchers.stop()
	r.alter.close()
	if started {
		<-r.done
	}
}

// expireISRs is Kafka's isr-expiration task.
func (r *replication) expireISRs() {
	defer close(r.done)
	every := r.cfg.LagTimeMax / 2
	if every <= 0 {
		every = time.Second
	}
	for {
		ch, t := clock.NewTimer(r.m.logs.Clock(), every)
		select {
		case <-ch:
		case <-r.stop:
			t.Stop()
			return
		}
		for _, p := range r.m.Partitions() {
			r.m.checkISR(p)
		}
	}
}

func (r *replication) brokerEpoch() int64 { return r.cfg.BrokerEpoch() }

// truncated tells the cleaner a follower's log end moved down.
func (r *replication) truncated(p *Partition, leo int64) {
	if r.cfg.OnTruncate != nil {
		r.cfg.OnTruncate(p.TP, leo)
	}
}

func (r *replication) countISRChange(kind isr.PendingKind) {
	switch kind {
	case isr.PendingExpand:
		r.expands.Inc()
	case isr.PendingShrink:
		r.shrinks.Inc()
	}
}

func (m *Manager) now() time.Time { return m.logs.Clock().Now() }

// SetImage records the metadata image this broker follows: ISR decisions
// read brokers' epochs, fencing and controlled shutdown from it. Call it
// before the Assigns of that image.
func (m *Manager) SetImage(im *metadata.Image) { m.image.Store(im) }

// brokerInfo is isr.Brokers over the last image.
func (m *Manager) brokerInfo(id int32) (isr.BrokerInfo, bool) {
	im := m.image.Load()
	if im == nil {
		return isr.BrokerInfo{}, false
	}
	b := im.Brokers[id]
	if b == nil {
		return isr.BrokerInfo{}, false
	}
	return isr.BrokerInfo{Epoch: b.Epoch, Fenced: b.Fenced, ShuttingDown: b.InControlledShutdown}, true
}

// Assign hosts tp as the metadata says (Kafka's applyDelta for one
// partition this broker is a replica of), creating its log if needed:
// leader or follower of pi.Leader, in its leader and partition epochs, with
// its replicas and ISR.
func (m *Manager) Assign(tp topicpart.TopicPartition, topicID [16]byte, cfg log.Config, minISR int32, pi *metadata.PartitionImage) (*Partition, error) {
	self := m.repl.nodeID
	role := Role{Leader: pi.Leader == self && self >= 0, LeaderID: pi.Leader, LeaderEpoch: pi.LeaderEpoch,
		PartitionEpoch: pi.PartitionEpoch, Replicas: int32(len(pi.Replicas)), ISR: int32(len(pi.ISR))}
	a := &isr.Assignment{Replicas: pi.Replicas, ISR: pi.ISR, Leader: pi.Leader, LeaderEpoch: pi.LeaderEpoch,
		PartitionEpoch: pi.PartitionEpoch, Recovering: pi.LeaderRecoveryState == metadata.Recovering}
	m.mu.Lock()
	defer m.mu.Unlock()
	p, created, err := m.hostLocked(tp, topicID, cfg, minISR)
	if err != nil {
		return nil, err
	}
	if err := m.setRole(p, role, a); err != nil {
		if created {
			delete(m.parts, tp)
			m.metrics.dropped(tp.Topic)
		}
		return nil, err
	}
	return p, nil
}

// ForIncarnation is pi as this incarnation of broker self may host it: a
// leadership the image still gives an earlier incarnation (a broker
// restarted before the controller fenced it) is no leadership here. Kafka's
// broker installs its metadata publishers only once the controller has its
// new registration; Gregor hosts partitions earlier, so it must not lead in
// an epoch granted to a process whose unsynced records died with it: its
// followers would take its shorter log (OFFSET_OUT_OF_RANGE) and lose what
// they acknowledged. The registration then removes this broker from the ISR
// and the controller elects a leader in a new epoch.
func ForIncarnation(pi *metadata.PartitionImage, im *metadata.Image, self int32, incarnation [16]byte) *metadata.PartitionImage {
	if pi.Leader != self {
		return pi
	}
	if b := im.Brokers[self]; b != nil && b.Incarnation == incarnation {
		return pi
	}
	cp := *pi
	cp.Leader = -1
	return &cp
}
