package group

import (
	"context"
	"crypto/rand"
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
	"github.com/gregor-broker/gregor/internal/record"
)

// Topics is what the coordinator needs from the cluster: the metadata image
// the broker acts on, and creating __consumer_offsets.
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
	// NewID returns a fresh UUID for member ids; nil uses random UUIDs.
	NewID func() string
}

// Coordinator is the group coordinator service: it routes each group to
// the shard of its __consumer_offsets partition and runs the request there
// (see internal/coord). Its methods are safe for concurrent use; Join and
// Sync block until the rebalance answers them or ctx ends.
type Coordinator struct {
	o        Options
	rt       *coord.Runtime[*Shard]
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
	if o.NewID == nil {
		o.NewID = randomUUID
	}
	c := &Coordinator{o: o}
	logger := o.Logger.With("component", "group-coordinator")
	c.rt = coord.New(coord.Options[*Shard]{
		Topic:    OffsetsTopic,
		Replicas: o.Replicas,
		NewShard: func(p int32) *Shard {
			return NewShard(p, c.config, o.NewID, logger.With("partition", p))
		},
		Clock:  o.Clock,
		Logger: logger,
		Codec: func() record.Codec {
			codec := record.Codec(o.Config().Int("offsets.topic.compression.codec"))
			if codec < record.CodecNone || codec > record.CodecZstd {
				return record.CodecNone
			}
			return codec
		},
		LoadBufferBytes: func() int { return int(o.Config().Int("offsets.load.buffer.size")) },
		WriteTimeout: func() time.Duration {
			return time.Duration(o.Config().Int("offsets.commit.timeout.ms")) * time.Millisecond
		},
	})
	return c
}

// ConfigFrom reads the group coordinator's configuration.
func ConfigFrom(b *config.Broker) Config {
	c := DefaultConfig()
	c.MinSessionTimeoutMs = b.Int("group.min.session.timeout.ms")
	c.MaxSessionTimeoutMs = b.Int("group.max.session.timeout.ms")
	c.InitialRebalanceDelayMs = b.Int("group.initial.rebalance.delay.ms")
	c.MaxSize = b.Int("group.max.size")
	c.OffsetsRetentionMs = int64(b.Int("offsets.retention.minutes")) * 60000
	c.RetentionCheckMs = b.Long("offsets.retention.check.interval.ms")
	c.OffsetMetadataMaxBytes = b.Int("offset.metadata.max.bytes")
	return c
}

func (c *Coordinator) config() Config { return ConfigFrom(c.o.Config()) }

// OnElection loads partition p of __consumer_offsets, which this broker has
// just become the leader of (Kafka's GroupCoordinator.onElection): it
// replays in the background, and requests for its groups answer
// COORDINATOR_LOAD_IN_PROGRESS meanwhile. Loading a loaded partition does
// nothing.
func (c *Coordinator) OnElection(p int32) { c.rt.Load(p) }

// OnResignation unloads partition p, which this broker no longer leads (or
// which was deleted): parked requests answer NOT_COORDINATOR, and the
// clients find the new coordinator. It returns once the partition's owner
// has stopped.
func (c *Coordinator) OnResignation(p int32) { c.rt.Unload(p) }

// Loaded lists the partitions this broker coordinates (loading or loaded).
func (c *Coordinator) Loaded() []int32 { return c.rt.Owned() }

// OnTopicDeleted forgets the committed offsets of a deleted topic (see
// deleteTopicOffsets); the broker calls it as it applies the deletion.
func (c *Coordinator) OnTopicDeleted(topic string, partitions int32) {
	c.deleteTopicOffsets(topic, partitions)
}

// deleteTopicOffsets has every __consumer_offsets shard loaded here remove the
// committed offsets of a deleted topic (Kafka's onPartitionsDeleted), so
// OffsetFetch stops returning them and a topic created again under the name
// starts without them. It runs in the background: the metadata listener must
// not wait for coordinator writes. A shard still loading keeps them (as in
// Kafka, whose write to an unloaded shard fails); they expire with the
// group's offsets.
func (c *Coordinator) deleteTopicOffsets(topic string, partitions int32) {
	owned := c.rt.Owned() // the partitions this broker coordinates
	if len(owned) == 0 {
		return
	}
	go func() {
		for _, p := range owned {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			v, err := c.rt.Do(ctx, p, func(s *Shard, _ time.Time, w coord.Waiter, out *coord.Output) {
				out.Reply(w, s.DeleteTopicOffsets(topic, partitions, out), nil)
			})
			cancel()
			if err != nil {
				c.o.Logger.Warn("could not delete the committed offsets of a deleted topic", "topic", topic,
					"partition", p, "err", err)
			} else if n, _ := v.(int); n > 0 {
				c.o.Logger.Info("deleted the committed offsets of a deleted topic", "topic", topic,
					"offsets_partition", p, "offsets", n)
			}
		}
	}()
}

// Close stops every shard; parked requests are answered NOT_COORDINATOR.
func (c *Coordinator) Close() { c.rt.Close() }

// EnsureTopic creates __consumer_offsets on first use with
// offsets.topic.num.partitions partitions, replication factor
// offsets.topic.replication.factor, cleanup.policy=compact and
// segment.bytes=offsets.topic.segment.bytes. When it cannot be created the
// error is COORDINATOR_NOT_AVAILABLE, as clients expect while Kafka's
// coordinator topic is missing.
func (c *Coordinator) EnsureTopic(ctx context.Context) error {
	if c.o.Topics.Image().Topic(OffsetsTopic) != nil {
		return nil
	}
	c.createMu.Lock()
	defer c.createMu.Unlock()
	if c.o.Topics.Image().Topic(OffsetsTopic) != nil {
		return nil
	}
	spec := OffsetsTopicSpec(c.o.Config())
	err := c.o.Topics.CreateTopic(ctx, spec.Name, spec.Partitions, spec.ReplicationFactor, spec.Configs)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		c.o.Logger.Warn("cannot create "+OffsetsTopic, "err", err)
		return fmt.Errorf("%w: creating %s: %v", kerr.CoordinatorNotAvailable, OffsetsTopic, err)
	}
	return nil
}

// TopicSpec is an internal topic as a coordinator creates it.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string
}

// OffsetsTopicSpec is how the coordinator creates __consumer_offsets under
// broker configuration b (Kafka's GroupCoordinator
// groupMetadataTopicConfigs): offsets.topic.num.partitions partitions,
// offsets.topic.replication.factor replicas, compacted, stored as producers
// compressed it, segment.bytes=offsets.topic.segment.bytes.
func OffsetsTopicSpec(b *config.Broker) TopicSpec {
	return TopicSpec{
		Name:              OffsetsTopic,
		Partitions:        b.Int("offsets.topic.num.partitions"),
		ReplicationFactor: int16(b.Int("offsets.topic.replication.factor")),
		Configs: map[string]string{
			"cleanup.policy":   "compact",
			"compression.type": "producer",
			"segment.bytes":    strconv.Itoa(int(b.Int("offsets.topic.segment.bytes"))),
		},
	}
}

// PartitionFor is the __consumer_offsets partition coordinating group, from
// the topic's partition count (offsets.topic.num.partitions before it
// exists).
func (c *Coordinator) PartitionFor(group string) int32 {
	n := c.o.Config().Int("offsets.topic.num.partitions")
	if t := c.o.Topics.Image().Topic(OffsetsTopic); t != nil {
		n = int32(len(t.Partitions))
	}
	return PartitionFor(group, n)
}

func do[T any](ctx context.Context, c *Coordinator, group string, op func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output)) (T, error) {
	var zero T
	v, err := c.rt.Do(ctx, c.PartitionFor(group), op)
	if err != nil {
		return zero, err
	}
	t, _ := v.(T) // a nil error reply is the zero T
	return t, nil
}

// Join runs a JoinGroup; it blocks until the join phase completes, at most
// the group's rebalance timeout.
func (c *Coordinator) Join(ctx context.Context, req *JoinRequest) (*JoinResult, error) {
	return do[*JoinResult](ctx, c, req.Group, func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) {
		s.Join(now, w, req, out)
	})
}

// Sync runs a SyncGroup; a follower blocks until the leader's assignment is
// durable (or the rebalance restarts).
func (c *Coordinator) Sync(ctx context.Context, req *SyncRequest) (*SyncResult, error) {
	return do[*SyncResult](ctx, c, req.Group, func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) {
		s.Sync(now, w, req, out)
	})
}

// Heartbeat runs a Heartbeat. The error is the Kafka answer (nil: NONE).
func (c *Coordinator) Heartbeat(ctx context.Context, req *HeartbeatRequest) error {
	res, err := do[error](ctx, c, req.Group, func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) {
		out.Reply(w, s.Heartbeat(now, req), nil)
	})
	if err != nil {
		return err
	}
	return res
}

// Leave runs a LeaveGroup.
func (c *Coordinator) Leave(ctx context.Context, req *LeaveRequest) (*LeaveResult, error) {
	return do[*LeaveResult](ctx, c, req.Group, func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) {
		out.Reply(w, s.Leave(now, req, out), nil)
	})
}

// Commit runs an OffsetCommit; it returns once the commit is durable.
func (c *Coordinator) Commit(ctx context.Context, req *CommitRequest) (*CommitResult, error) {
	res, err := do[*CommitResult](ctx, c, req.Group, func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) {
		out.Reply(w, s.Commit(now, req, out), nil)
	})
	if errors.Is(err, coord.ErrRecordsTooLarge) {
		err = fmt.Errorf("%w: %v", kerr.InvalidCommitOffsetSize, err)
	}
	return res, err
}

// TxnCommit runs a TxnOffsetCommit; it returns once the transactional
// records are durable (the offsets stay pending until the marker).
func (c *Coordinator) TxnCommit(ctx context.Context, req *TxnCommitRequest) (*CommitResult, error) {
	res, err := do[*CommitResult](ctx, c, req.Group, func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) {
		out.Reply(w, s.TxnCommit(now, req, out), nil)
	})
	if errors.Is(err, coord.ErrRecordsTooLarge) {
		err = fmt.Errorf("%w: %v", kerr.InvalidCommitOffsetSize, err)
	}
	return res, err
}

// CompleteTransaction writes a transaction marker to a __consumer_offsets
// partition (WriteTxnMarkers there) and applies it to the pending offsets;
// it returns once the marker is durable.
func (c *Coordinator) CompleteTransaction(ctx context.Context, partition int32, m coord.Marker) error {
	_, err := c.rt.Do(ctx, partition, func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) {
		s.CompleteTransaction(m, out)
		out.Reply(w, nil, nil)
	})
	return err
}

// Fetch runs one group of an OffsetFetch.
func (c *Coordinator) Fetch(ctx context.Context, req *FetchRequest) (*FetchResult, error) {
	return do[*FetchResult](ctx, c, req.Group, func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) {
		out.Reply(w, s.Fetch(req), nil)
	})
}

// DeleteOffsets runs an OffsetDelete.
func (c *Coordinator) DeleteOffsets(ctx context.Context, req *FetchRequest) (*OffsetDeleteResult, error) {
	return do[*OffsetDeleteResult](ctx, c, req.Group, func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) {
		out.Reply(w, s.DeleteOffsets(req, out), nil)
	})
}

// Describe runs one group of DescribeGroups.
func (c *Coordinator) Describe(ctx context.Context, group string) (*Description, error) {
	return do[*Description](ctx, c, group, func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) {
		out.Reply(w, s.Describe(group), nil)
	})
}

// Delete runs DeleteGroups: errs[i] answers groups[i]; a partition that is
// not available fails its groups with that error.
func (c *Coordinator) Delete(ctx context.Context, groups []string) []error {
	errs := make([]error, len(groups))
	byPartition := map[int32][]int{}
	for i, g := range groups {
		p := c.PartitionFor(g)
		byPartition[p] = append(byPartition[p], i)
	}
	for p, idx := range byPartition {
		ids := make([]string, len(idx))
		for j, i := range idx {
			ids[j] = groups[i]
		}
		v, err := c.rt.Do(ctx, p, func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) {
			out.Reply(w, s.Delete(ids, out), nil)
		})
		for j, i := range idx {
			if err != nil {
				errs[i] = err
			} else {
				errs[i] = v.([]error)[j]
			}
		}
	}
	return errs
}

// List runs ListGroups over every loaded partition. A partition still
// loading makes the whole answer COORDINATOR_LOAD_IN_PROGRESS, as in Kafka.
func (c *Coordinator) List(ctx context.Context, f ListFilter) ([]Listing, error) {
	parts := c.rt.Owned()
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	var out []Listing
	for _, p := range parts {
		v, err := c.rt.Do(ctx, p, func(s *Shard, now time.Time, w coord.Waiter, o *coord.Output) {
			o.Reply(w, s.List(f), nil)
		})
		if errors.Is(err, kerr.NotCoordinator) {
			continue // unloaded meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v.([]Listing)...)
	}
	return out, nil
}

// randomUUID is a random (version 4) UUID in its canonical form, as Java's
// UUID.randomUUID().toString() prints it.
func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
