package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/coord"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// StateTopic is the internal topic holding transaction metadata.
const StateTopic = topicpart.TransactionStateTopic

// Topics is what the coordinator needs from the controller: the metadata
// image and creating __transaction_state.
type Topics interface {
	Image() *metadata.Image
	// CreateTopic creates a topic through the controller and returns once
	// this broker has published it.
	CreateTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string) error
}

// Options configure a Coordinator.
type Options struct {
	Replicas coord.Partitions
	Topics   Topics
	Config   func() *config.Broker
	Clock    clock.Clock
	Logger   *slog.Logger
	// ProducerIDs hands out producer ids (blocks recorded by the
	// controller).
	ProducerIDs func(ctx context.Context) (int64, error)
	// Markers writes transaction markers to partition leaders.
	Markers MarkerWriter
	// LeaderEpoch is the leader epoch of a hosted __transaction_state
	// partition: the coordinator epoch of its shard.
	LeaderEpoch func(tp topicpart.TopicPartition) int32
}

// Coordinator is the transaction coordinator service: it routes each
// transactional id to the shard of its __transaction_state partition and
// runs the request there (internal/coord), and writes the markers of
// decided transactions. Its methods are safe for concurrent use.
type Coordinator struct {
	o        Options
	rt       *coord.Runtime[*Shard]
	markers  *markerSender
	createMu sync.Mutex
}

// NewCoordinator builds a coordinator with nothing loaded; call Start.
func NewCoordinator(o Options) *Coordinator {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c := &Coordinator{o: o}
	logger := o.Logger.With("component", "transaction-coordinator")
	c.markers = newMarkerSender(o.Markers, o.Clock, c.complete, logger.Warn)
	c.rt = coord.New(coord.Options[*Shard]{
		Topic:    StateTopic,
		Replicas: o.Replicas,
		NewShard: func(p int32) *Shard {
			epoch := int32(0)
			if o.LeaderEpoch != nil {
				epoch = o.LeaderEpoch(topicpart.TopicPartition{Topic: StateTopic, Partition: p})
			}
			return NewShard(p, epoch, c.config, logger.With("partition", p))
		},
		Clock:           o.Clock,
		Logger:          logger,
		LoadBufferBytes: func() int { return int(o.Config().Int("transaction.state.log.load.buffer.size")) },
		WriteTimeout:    func() time.Duration { return time.Duration(o.Config().Int("request.timeout.ms")) * time.Millisecond },
		OnDurable:       c.onDurable,
	})
	return c
}

// ConfigFrom reads the transaction coordinator's configuration.
func ConfigFrom(b *config.Broker) Config {
	c := DefaultConfig()
	c.MaxTimeoutMs = b.Int("transaction.max.timeout.ms")
	c.AbortCheckMs = int64(b.Int("transaction.abort.timed.out.transaction.cleanup.interval.ms"))
	c.ExpirationCheckMs = int64(b.Int("transaction.remove.expired.transaction.cleanup.interval.ms"))
	c.IDExpirationMs = int64(b.Int("transactional.id.expiration.ms"))
	c.ValueVersion = 0
	if FinalizedVersion(b) >= TV1 {
		c.ValueVersion = 1
	}
	return c
}

// FinalizedVersion is the finalized transaction.version feature level.
func FinalizedVersion(b *config.Broker) int16 { return int16(b.Int("gregor.transaction.version")) }

func (c *Coordinator) config() Config { return ConfigFrom(c.o.Config()) }

// onDurable carries out a shard's effects once its records are durable.
func (c *Coordinator) onDurable(partition int32, effects []any) {
	for _, e := range effects {
		switch e := e.(type) {
		case MarkerJob:
			c.markers.start(e)
		case NeedProducerID:
			go c.abortWithNewProducerID(partition, e.TransactionalID)
		}
	}
}

// complete records a transaction's completion after its markers.
func (c *Coordinator) complete(ctx context.Context, job MarkerJob) error {
	_, err := c.rt.Do(ctx, job.CoordinatorPartition, func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) {
		s.CompleteTxn(job, now, w, out)
	})
	return err
}

func (c *Coordinator) abortWithNewProducerID(partition int32, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pid, err := c.o.ProducerIDs(ctx)
	if err != nil {
		c.o.Logger.Warn("no producer id for aborting a timed-out transaction; retried at the next check",
			"transactional_id", id, "err", err)
		return
	}
	if _, err := c.rt.Do(ctx, partition, func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) {
		s.AbortTimedOut(id, pid, now, w, out)
	}); err != nil {
		c.o.Logger.Warn("aborting a timed-out transaction failed; retried at the next check", "transactional_id", id, "err", err)
	}
}

// OnElection loads partition p of __transaction_state, which this broker
// has just become the leader of (Kafka's
// TransactionCoordinator.onElection): it replays in the background, then
// re-drives the markers of transactions it finds completing; requests for
// its transactional ids answer COORDINATOR_LOAD_IN_PROGRESS meanwhile.
// Loading a loaded partition does nothing.
func (c *Coordinator) OnElection(p int32) { c.rt.Load(p) }

// OnResignation unloads partition p, which this broker no longer leads (or
// which was deleted): parked requests answer NOT_COORDINATOR, and the
// clients find the new coordinator. It returns once the partition's owner
// has stopped.
func (c *Coordinator) OnResignation(p int32) { c.rt.Unload(p) }

// Close stops every shard and marker sender.
func (c *Coordinator) Close() {
	c.markers.close()
	c.rt.Close()
}

// EnsureTopic creates __transaction_state on first use (Kafka's
// TransactionStateManager topic configs); COORDINATOR_NOT_AVAILABLE while it
// cannot be created.
func (c *Coordinator) EnsureTopic(ctx context.Context) error {
	if c.o.Topics.Image().Topic(StateTopic) != nil {
		return nil
	}
	c.createMu.Lock()
	defer c.createMu.Unlock()
	if c.o.Topics.Image().Topic(StateTopic) != nil {
		return nil
	}
	spec := StateTopicSpec(c.o.Config())
	err := c.o.Topics.CreateTopic(ctx, spec.Name, spec.Partitions, spec.ReplicationFactor, spec.Configs)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		c.o.Logger.Warn("cannot create "+StateTopic, "err", err)
		return fmt.Errorf("%w: creating %s: %v", kerr.CoordinatorNotAvailable, StateTopic, err)
	}
	return nil
}

// TopicSpec is an internal topic as the coordinator creates it.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string
}

// StateTopicSpec is how the coordinator creates __transaction_state under
// broker configuration b (Kafka's TransactionLog topic configs).
func StateTopicSpec(b *config.Broker) TopicSpec {
	return TopicSpec{
		Name:              StateTopic,
		Partitions:        b.Int("transaction.state.log.num.partitions"),
		ReplicationFactor: int16(b.Int("transaction.state.log.replication.factor")),
		Configs: map[string]string{
			"cleanup.policy":                 "compact",
			"compression.type":               "uncompressed",
			"min.insync.replicas":            strconv.Itoa(int(b.Int("transaction.state.log.min.isr"))),
			"segment.bytes":                  strconv.Itoa(int(b.Int("transaction.state.log.segment.bytes"))),
			"unclean.leader.election.enable": "false",
		},
	}
}

// PartitionFor is the __transaction_state partition of a transactional id.
func (c *Coordinator) PartitionFor(id string) int32 {
	n := c.o.Config().Int("transaction.state.log.num.partitions")
	if t := c.o.Topics.Image().Topic(StateTopic); t != nil {
		n = int32(len(t.Partitions))
	}
	return coord.PartitionFor(id, n)
}

func do[T any](ctx context.Context, c *Coordinator, id string, op coord.Op[*Shard]) (T, error) {
	var zero T
	v, err := c.rt.Do(ctx, c.PartitionFor(id), op)
	if err != nil {
		return zero, err
	}
	t, _ := v.(T)
	return t, nil
}

// withProducerID runs an op that may ask for a fresh producer id
// (ErrNeedProducerID), allocating one and running it again. A producer id
// that cannot be had is COORDINATOR_LOAD_IN_PROGRESS, as Kafka answers
// (not a timeout: older clients take that as fatal).
func withProducerID[T any](ctx context.Context, c *Coordinator, id string, op func(newPID int64) coord.Op[*Shard]) (T, error) {
	newPID := int64(-1)
	for range 3 {
		res, err := do[T](ctx, c, id, op(newPID))
		if !errors.Is(err, ErrNeedProducerID) {
			return res, err
		}
		if newPID, err = c.o.ProducerIDs(ctx); err != nil {
			var zero T
			return zero, fmt.Errorf("%w: no producer id available: %v", kerr.CoordinatorLoadInProgress, err)
		}
	}
	var zero T
	return zero, fmt.Errorf("%w: no producer id available", kerr.CoordinatorLoadInProgress)
}

// InitProducerID runs InitProducerId for a transactional id.
func (c *Coordinator) InitProducerID(ctx context.Context, req InitRequest) (ProducerIDAndEpoch, error) {
	return withProducerID[ProducerIDAndEpoch](ctx, c, req.TransactionalID, func(newPID int64) coord.Op[*Shard] {
		r := req
		r.NewProducerID = newPID
		return func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) { s.InitProducerID(r, now, w, out) }
	})
}

// AddPartitions runs AddPartitionsToTxn (or AddOffsetsToTxn, or a TV2
// implicit add).
func (c *Coordinator) AddPartitions(ctx context.Context, req AddRequest) error {
	_, err := do[any](ctx, c, req.TransactionalID, func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) {
		s.AddPartitions(req, now, w, out)
	})
	return err
}

// Verify checks that partitions are in a producer's ongoing transaction.
func (c *Coordinator) Verify(ctx context.Context, req AddRequest) (map[topicpart.TopicPartition]error, error) {
	return do[map[topicpart.TopicPartition]error](ctx, c, req.TransactionalID, func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) {
		s.Verify(req, now, w, out)
	})
}

// EndTxn runs EndTxn; it returns once the decision is durable (the markers
// follow in the background).
func (c *Coordinator) EndTxn(ctx context.Context, req EndRequest) (ProducerIDAndEpoch, error) {
	return withProducerID[ProducerIDAndEpoch](ctx, c, req.TransactionalID, func(newPID int64) coord.Op[*Shard] {
		r := req
		r.NewProducerID = newPID
		return func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) { s.EndTxn(r, now, w, out) }
	})
}

// Describe runs DescribeTransactions for one id.
func (c *Coordinator) Describe(ctx context.Context, id string) (Description, error) {
	return do[Description](ctx, c, id, func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) {
		s.Describe(id, now, w, out)
	})
}

// List runs ListTransactions over every loaded partition; a partition
// still loading makes the answer COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) List(ctx context.Context, f ListFilter) ([]Description, error) {
	parts := c.rt.Owned()
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	var out []Description
	for _, p := range parts {
		v, err := c.rt.Do(ctx, p, func(s *Shard, now time.Time, w coord.Waiter, o *coord.Output) { s.List(f, now, w, o) })
		if errors.Is(err, kerr.NotCoordinator) {
			continue
		}
		if err != nil {
			return nil, err
		}
		res, _ := v.([]Description)
		out = append(out, res...)
	}
	return out, nil
}

// PendingMarkers lists the decided transactions whose markers are being
// written.
func (c *Coordinator) PendingMarkers() []MarkerStatus { return c.markers.status() }

// Loaded lists the __transaction_state partitions this coordinator owns.
func (c *Coordinator) Loaded() []int32 { return c.rt.Owned() }
