package controller

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// MetadataFile is the metadata image file in the metadata log dir.
const MetadataFile = "gregor-metadata.json"

// MaxTopicNameLength is Kafka's limit (249).
const MaxTopicNameLength = 249

// MaxPartitionsPerRequest bounds one create or expand, as Kafka's controller
// bounds one batch of metadata records.
const MaxPartitionsPerRequest = 10000

// Change describes one metadata change for listeners.
type Change struct {
	Created, Deleted *Topic // one of them, or neither
	Expanded         *Topic // partitions added (Partitions is the new count; OldPartitions the old)
	OldPartitions    int32
	ConfigChanged    *Topic // a topic's overrides changed
	BrokerConfigs    bool   // cluster-default broker configs changed
	Image            *Image
}

// Options configure a Controller.
type Options struct {
	FS vfs.FS
	// MetadataDir is the dir holding MetadataFile, as package logdirs found
	// it; ClusterID is the cluster its meta.properties name.
	MetadataDir string
	ClusterID   string
	NodeID      int32
	Logger      *slog.Logger
	// Broker returns the current broker config (for num.partitions,
	// default.replication.factor, delete.topic.enable and validation).
	Broker func() *config.Broker
}

// Controller is the single-node metadata owner.
type Controller struct {
	o         Options
	path      string
	mu        sync.Mutex
	image     atomic.Pointer[Image]
	listeners []func(Change)
}

// Bootstrap writes a new cluster's empty metadata into dir (the
// logdirs.Bootstrap a broker formats its dirs with).
func Bootstrap(fs vfs.FS, nodeID int32) func(dir, clusterID string) error {
	return func(dir, clusterID string) error {
		im := &Image{ClusterID: clusterID, NodeID: nodeID, Topics: map[string]*Topic{}}
		data, err := im.marshal()
		if err != nil {
			return err
		}
		return vfs.WriteFileAtomic(fs, filepath.Join(dir, MetadataFile), data)
	}
}

// Open loads the metadata image from the metadata dir. The image must be
// there (the log dirs were checked and, when new, formatted, before) and
// belong to this cluster and node.
func Open(o Options) (*Controller, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c := &Controller{o: o, path: filepath.Join(o.MetadataDir, MetadataFile)}
	data, err := vfs.ReadFile(o.FS, c.path)
	if err != nil {
		return nil, fmt.Errorf("metadata image: %w", err)
	}
	im, err := unmarshalImage(data)
	if err != nil {
		return nil, fmt.Errorf("metadata image %s: %w", c.path, err)
	}
	if im.ClusterID != o.ClusterID {
		return nil, fmt.Errorf("metadata image %s belongs to cluster %s, but the log dirs' meta.properties name cluster %s",
			c.path, im.ClusterID, o.ClusterID)
	}
	if im.NodeID != o.NodeID {
		return nil, fmt.Errorf("metadata image %s belongs to node.id %d, this broker is %d", c.path, im.NodeID, o.NodeID)
	}
	im.index()
	c.image.Store(im)
	return c, nil
}

func (c *Controller) persist(im *Image) error {
	data, err := im.marshal()
	if err != nil {
		return err
	}
	return vfs.WriteFileAtomic(c.o.FS, c.path, data)
}

// Image returns the current metadata.
func (c *Controller) Image() *Image { return c.image.Load() }

// OnChange registers a listener (see the package doc).
func (c *Controller) OnChange(f func(Change)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listeners = append(c.listeners, f)
}

// commit makes next durable, publishes it and tells listeners.
func (c *Controller) commit(next *Image, ch Change) error {
	next.Epoch++
	if err := c.persist(next); err != nil {
		return err
	}
	next.index()
	c.image.Store(next)
	ch.Image = next
	for _, f := range c.listeners {
		f(ch)
	}
	return nil
}

// ValidateTopicName applies Kafka's topic name rules (Topic.validate), with
// Kafka's wording.
func ValidateTopicName(name string) error {
	var reason string
	switch {
	case name == "":
		reason = "the empty string is not allowed"
	case name == ".":
		reason = "'.' is not allowed"
	case name == "..":
		reason = "'..' is not allowed"
	case len(name) > MaxTopicNameLength:
		reason = fmt.Sprintf("the length of '%s' is longer than the max allowed length %d", name, MaxTopicNameLength)
	default:
		for _, r := range name {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
				reason = fmt.Sprintf("'%s' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'", name)
				break
			}
		}
	}
	if reason != "" {
		return fmt.Errorf("%w: Topic name is invalid: %s", kerr.InvalidTopicException, reason)
	}
	return nil
}

// Kafka's internal topics: they are marked internal whoever creates them
// (Kafka's Topic.isInternal), so clients cannot produce to them.
// ClusterMetadataTopic is never created through the API.
const (
	GroupMetadataTopic    = "__consumer_offsets"
	TransactionStateTopic = "__transaction_state"
	ShareGroupStateTopic  = "__share_group_state"
	ClusterMetadataTopic  = "__cluster_metadata"
)

// IsInternalTopic reports whether name is one of Kafka's internal topics.
func IsInternalTopic(name string) bool {
	return name == GroupMetadataTopic || name == TransactionStateTopic || name == ShareGroupStateTopic
}

func collisionKey(name string) string { return strings.ReplaceAll(name, ".", "_") }

// CreateTopicRequest is one topic of a CreateTopics request.
type CreateTopicRequest struct {
	Name              string
	NumPartitions     int32 // -1: num.partitions
	ReplicationFactor int16 // -1: default.replication.factor
	// Assignment is the manual assignment in request order; when it is
	// given, NumPartitions and ReplicationFactor must both be -1.
	Assignment []ReplicaAssignment
	Configs    map[string]string
	// NullConfigs names configs the request gave a null value; Kafka
	// refuses those with INVALID_CONFIG.
	NullConfigs []string
	// Internal marks the topic internal; Kafka's internal topic names are
	// internal whatever this says.
	Internal bool
}

// ReplicaAssignment places one partition on brokers.
type ReplicaAssignment struct {
	Partition int32
	Replicas  []int32
}

// CreateTopic validates and (unless validateOnly) creates a topic. It returns
// the topic as created (or as it would be; a validate-only topic gets a fresh
// id too, as in Kafka). The checks run in the order Kafka's controller runs
// them, so a request with several problems gets the error Kafka would give.
func (c *Controller) CreateTopic(req CreateTopicRequest, validateOnly bool) (*Topic, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	im := c.Image()
	b := c.o.Broker()
	if err := validateNewTopic(req.Name, im.Topics[req.Name] != nil, im.TopicNames, req.Configs, req.NullConfigs, b); err != nil {
		return nil, err
	}
	parts, err := c.partitionCount(req, b)
	if err != nil {
		return nil, err
	}
	if err := checkPartitionLimit(parts); err != nil {
		return nil, err
	}
	t := &Topic{Name: req.Name, ID: NewTopicID(), Partitions: parts, Configs: cloneMap(req.Configs),
		Internal: req.Internal || IsInternalTopic(req.Name)}
	if validateOnly {
		return t, nil
	}
	next := im.clone()
	next.Topics[t.Name] = t
	if err := c.commit(next, Change{Created: t}); err != nil {
		return nil, err
	}
	c.o.Logger.Info("created topic", "topic", t.Name, "topic_id", t.ID.String(), "partitions", parts, "configs", t.Configs)
	return t, nil
}

// partitionCount checks the partition count, replication factor or manual
// assignment of a new topic and returns how many partitions it gets.
func (c *Controller) partitionCount(req CreateTopicRequest, b *config.Broker) (int32, error) {
	if len(req.Assignment) > 0 {
		if err := checkManualAssignmentShape(req.ReplicationFactor, req.NumPartitions); err != nil {
			return 0, err
		}
		seen := make(map[int32]bool, len(req.Assignment))
		rf := -1
		for _, a := range req.Assignment {
			if seen[a.Partition] {
				return 0, fmt.Errorf("%w: Found multiple manual partition assignments for partition %d", kerr.InvalidReplicaAssignment, a.Partition)
			}
			seen[a.Partition] = true
			if err := c.checkReplicas(a.Replicas, rf); err != nil {
				return 0, err
			}
			rf = len(a.Replicas)
		}
		for p := int32(0); p < int32(len(seen)); p++ {
			if !seen[p] {
				return 0, fmt.Errorf("%w: partitions should be a consecutive 0-based integer sequence", kerr.InvalidReplicaAssignment)
			}
		}
		return int32(len(seen)), nil
	}
	if err := checkCounts(req.ReplicationFactor, req.NumPartitions); err != nil {
		return 0, err
	}
	parts := req.NumPartitions
	if parts == -1 {
		parts = b.Int("num.partitions")
	}
	rf := req.ReplicationFactor
	if rf == -1 {
		rf = int16(b.Int("default.replication.factor"))
	}
	if err := c.place(rf); err != nil {
		return 0, err
	}
	return parts, nil
}

// place is Kafka's replica placer on a one-broker cluster: any replication
// factor above the number of registered brokers cannot be reached.
func (c *Controller) place(rf int16) error {
	const registered = 1
	if rf > registered {
		return fmt.Errorf("%w: Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.",
			kerr.InvalidReplicationFactor, rf, rf, registered)
	}
	return nil
}

// checkReplicas is Kafka's validateManualPartitionAssignment on a one-broker
// cluster: this node is the only registered broker.
func (c *Controller) checkReplicas(replicas []int32, rf int) error {
	return checkReplicaAssignment(replicas, rf, func(id int32) bool { return id == c.o.NodeID })
}

// DeleteTopic removes a topic by name (or by id when name is empty).
func (c *Controller) DeleteTopic(name string, id TopicID) (*Topic, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.o.Broker().Bool("delete.topic.enable") {
		return nil, fmt.Errorf("%w: Topic deletion is disabled.", kerr.TopicDeletionDisabled)
	}
	im := c.Image()
	var t *Topic
	if name != "" {
		t = im.Topics[name]
	} else {
		t = im.TopicByID(id)
		if t == nil {
			return nil, fmt.Errorf("%w: topic id %s", kerr.UnknownTopicID, id)
		}
	}
	if t == nil {
		return nil, fmt.Errorf("%w: This server does not host this topic-partition.", kerr.UnknownTopicOrPartition)
	}
	next := im.clone()
	delete(next.Topics, t.Name)
	if err := c.commit(next, Change{Deleted: t}); err != nil {
		return nil, err
	}
	c.o.Logger.Info("deleted topic", "topic", t.Name, "topic_id", t.ID.String())
	return t, nil
}

// CreatePartitions grows a topic to count partitions. assignment, when not
// nil, places each new partition (one entry per new partition).
func (c *Controller) CreatePartitions(name string, count int32, assignment [][]int32, validateOnly bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	im := c.Image()
	t := im.Topics[name]
	if t == nil {
		return kerr.UnknownTopicOrPartition
	}
	if err := checkPartitionIncrease(name, t.Partitions, count, len(assignment), assignment != nil); err != nil {
		return err
	}
	// Every partition of a single-node topic has one replica.
	for _, replicas := range assignment {
		if err := c.checkReplicas(replicas, 1); err != nil {
			return err
		}
	}
	if validateOnly {
		return nil
	}
	next := im.clone()
	nt := next.Topics[name]
	old := nt.Partitions
	nt.Partitions = count
	if err := c.commit(next, Change{Expanded: nt, OldPartitions: old}); err != nil {
		return err
	}
	c.o.Logger.Info("added partitions", "topic", name, "from", old, "to", count)
	return nil
}

// SetTopicConfigs replaces a topic's overrides.
func (c *Controller) SetTopicConfigs(name string, overrides map[string]string, validateOnly bool) error {
	return c.UpdateTopicConfigs(name, func(map[string]string) (map[string]string, error) {
		return overrides, nil
	}, validateOnly)
}

// UpdateTopicConfigs replaces a topic's overrides with what update makes of
// the current ones, atomically with respect to other metadata changes
// (AlterConfigs passes a function returning the new set, and
// IncrementalAlterConfigs one applying its operations). As in Kafka's
// controller, the new overrides are validated before the topic's existence is
// checked: errors from update are returned as they are, invalid overrides are
// INVALID_CONFIG, and then a missing topic is UNKNOWN_TOPIC_OR_PARTITION.
// update runs with the controller's lock held (current is nil for a missing
// topic) and must not call back into mutations.
func (c *Controller) UpdateTopicConfigs(name string, update func(current map[string]string) (map[string]string, error), validateOnly bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	im := c.Image()
	t := im.Topics[name]
	var current map[string]string
	if t != nil {
		current = cloneMap(t.Configs)
	}
	overrides, err := update(current)
	if err != nil {
		return err
	}
	if _, err := config.ResolveTopic(c.o.Broker(), overrides); err != nil {
		return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
	}
	if t == nil {
		return fmt.Errorf("%w: The topic '%s' does not exist.", kerr.UnknownTopicOrPartition, name)
	}
	if validateOnly {
		return nil
	}
	next := im.clone()
	nt := next.Topics[name]
	nt.Configs = cloneMap(overrides)
	if len(nt.Configs) == 0 {
		nt.Configs = nil
	}
	if err := c.commit(next, Change{ConfigChanged: nt}); err != nil {
		return err
	}
	c.o.Logger.Info("altered topic configs", "topic", name, "configs", overrides)
	return nil
}

// SetBrokerConfigs replaces the dynamic cluster-default broker configs after
// check validates them.
func (c *Controller) SetBrokerConfigs(configs map[string]string, check func(map[string]string) error, validateOnly bool) error {
	return c.UpdateBrokerConfigs(false, func(map[string]string) (map[string]string, error) {
		if err := check(configs); err != nil {
			if errors.Is(err, config.ErrInvalidConfig) {
				return nil, fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
			}
			return nil, err
		}
		return configs, nil
	}, validateOnly)
}

// UpdateBrokerConfigs replaces one layer of dynamic broker configs with what
// update makes of its current contents: this node's own layer (resource
// named by node.id) when perNode, else the cluster default (resource "").
// update must validate the new layer against the broker configuration; its
// errors are returned as they are. It runs with the controller's lock held,
// after the previous change reached the listeners, and must not call back
// into mutations. Listeners see Change.BrokerConfigs.
func (c *Controller) UpdateBrokerConfigs(perNode bool, update func(current map[string]string) (map[string]string, error), validateOnly bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	im := c.Image()
	current := im.BrokerConfigs
	if perNode {
		current = im.NodeConfigs
	}
	configs, err := update(cloneMap(current))
	if err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	next := im.clone()
	configs = cloneMap(configs)
	if len(configs) == 0 {
		configs = nil
	}
	if perNode {
		next.NodeConfigs = configs
	} else {
		next.BrokerConfigs = configs
	}
	if err := c.commit(next, Change{BrokerConfigs: true}); err != nil {
		return err
	}
	c.o.Logger.Info("altered dynamic broker configs", "per_node", perNode, "configs", configs)
	return nil
}

// Topics returns the image's topics sorted by name.
func (im *Image) SortedTopics() []*Topic {
	out := make([]*Topic, 0, len(im.Topics))
	for _, t := range im.Topics {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ProducerIDBlockSize is how many producer ids one allocation reserves, as
// Kafka's controller hands out blocks of 1000.
const ProducerIDBlockSize = 1000

// AllocateProducerIDBlock durably reserves the next block of producer ids
// and returns its first id.
func (c *Controller) AllocateProducerIDBlock() (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := c.Image().clone()
	start := next.NextProducerIDBlock
	next.NextProducerIDBlock += ProducerIDBlockSize
	if err := c.commit(next, Change{}); err != nil {
		return 0, err
	}
	return start, nil
}
