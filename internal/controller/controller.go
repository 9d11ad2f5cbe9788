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
	"github.com/gregor-broker/gregor/internal/log"
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
	FS      vfs.FS
	LogDirs []string
	NodeID  int32
	Logger  *slog.Logger
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

// Open loads the metadata image, formatting the log dirs when they are new.
func Open(o Options) (*Controller, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c := &Controller{o: o, path: filepath.Join(o.LogDirs[0], MetadataFile)}
	data, err := log.ReadFile(o.FS, c.path)
	var im *Image
	switch {
	case err == nil:
		if im, err = unmarshalImage(data); err != nil {
			return nil, fmt.Errorf("metadata image %s: %w", c.path, err)
		}
		if im.NodeID != o.NodeID {
			return nil, fmt.Errorf("metadata image %s belongs to node.id %d, this broker is %d", c.path, im.NodeID, o.NodeID)
		}
	case vfs.IsNotExist(err):
		im = &Image{ClusterID: NewClusterID(), NodeID: o.NodeID, Topics: map[string]*Topic{}}
		if err := c.formatDirs(im); err != nil {
			return nil, err
		}
		if err := c.persist(im); err != nil {
			return nil, err
		}
		o.Logger.Info("formatted new cluster", "cluster_id", im.ClusterID, "node_id", o.NodeID, "log_dirs", o.LogDirs)
	default:
		return nil, err
	}
	if err := c.checkDirs(im); err != nil {
		return nil, err
	}
	c.image.Store(im)
	return c, nil
}

// formatDirs writes meta.properties into every log dir.
func (c *Controller) formatDirs(im *Image) error {
	for _, d := range c.o.LogDirs {
		if err := c.o.FS.MkdirAll(d, 0o755); err != nil {
			return err
		}
		body := fmt.Sprintf("#\n#Written by gregor\ncluster.id=%s\ndirectory.id=%s\nnode.id=%d\nversion=1\n",
			im.ClusterID, NewTopicID().String(), im.NodeID)
		if err := log.WriteFileAtomic(c.o.FS, filepath.Join(d, "meta.properties"), []byte(body)); err != nil {
			return err
		}
	}
	return nil
}

// checkDirs makes sure every log dir belongs to this cluster and node,
// formatting dirs added to log.dirs later.
func (c *Controller) checkDirs(im *Image) error {
	for _, d := range c.o.LogDirs {
		data, err := log.ReadFile(c.o.FS, filepath.Join(d, "meta.properties"))
		if vfs.IsNotExist(err) {
			if err := c.formatDirs(&Image{ClusterID: im.ClusterID, NodeID: im.NodeID}); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		props := map[string]string{}
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(k, "#") {
				props[k] = v
			}
		}
		if props["cluster.id"] != im.ClusterID {
			return fmt.Errorf("log dir %s belongs to cluster %q, not %q", d, props["cluster.id"], im.ClusterID)
		}
		if props["node.id"] != fmt.Sprint(im.NodeID) {
			return fmt.Errorf("log dir %s belongs to node.id %s, not %d", d, props["node.id"], im.NodeID)
		}
	}
	return nil
}

func (c *Controller) persist(im *Image) error {
	data, err := im.marshal()
	if err != nil {
		return err
	}
	return log.WriteFileAtomic(c.o.FS, c.path, data)
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
	c.image.Store(next)
	ch.Image = next
	for _, f := range c.listeners {
		f(ch)
	}
	return nil
}

// ValidateTopicName applies Kafka's topic name rules.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: Topic name is illegal, it can't be empty", kerr.InvalidTopicException)
	case name == "." || name == "..":
		return fmt.Errorf("%w: Topic name cannot be \".\" or \"..\"", kerr.InvalidTopicException)
	case len(name) > MaxTopicNameLength:
		return fmt.Errorf("%w: Topic name is illegal, it can't be longer than %d characters, topic name: %s",
			kerr.InvalidTopicException, MaxTopicNameLength, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%w: Topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'",
				kerr.InvalidTopicException, name)
		}
	}
	return nil
}

func collisionKey(name string) string { return strings.ReplaceAll(name, ".", "_") }

// CreateTopicRequest is one topic of a CreateTopics request.
type CreateTopicRequest struct {
	Name              string
	NumPartitions     int32 // -1: num.partitions
	ReplicationFactor int16 // -1: default.replication.factor
	Assignment        map[int32][]int32
	Configs           map[string]string
	Internal          bool
}

// CreateTopic validates and (unless validateOnly) creates a topic. It returns
// the topic as created (or as it would be).
func (c *Controller) CreateTopic(req CreateTopicRequest, validateOnly bool) (*Topic, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	im := c.Image()
	b := c.o.Broker()
	if err := ValidateTopicName(req.Name); err != nil {
		return nil, err
	}
	if im.Topics[req.Name] != nil {
		return nil, fmt.Errorf("%w: Topic '%s' already exists.", kerr.TopicAlreadyExists, req.Name)
	}
	for n := range im.Topics {
		if collisionKey(n) == collisionKey(req.Name) {
			return nil, fmt.Errorf("%w: Topic '%s' collides with existing topic: %s", kerr.InvalidTopicException, req.Name, n)
		}
	}
	parts := req.NumPartitions
	if len(req.Assignment) > 0 {
		if parts != -1 || req.ReplicationFactor != -1 {
			return nil, fmt.Errorf("%w: Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.", kerr.InvalidRequest)
		}
		if err := c.checkAssignment(req.Assignment); err != nil {
			return nil, err
		}
		parts = int32(len(req.Assignment))
	} else {
		if parts == -1 {
			parts = b.Int("num.partitions")
		}
		if parts <= 0 {
			return nil, fmt.Errorf("%w: Number of partitions was set to an invalid non-positive value.", kerr.InvalidPartitions)
		}
		rf := req.ReplicationFactor
		if rf == -1 {
			rf = int16(b.Int("default.replication.factor"))
		}
		if rf <= 0 {
			return nil, fmt.Errorf("%w: Replication factor must be larger than 0, or -1 to use the default value.", kerr.InvalidReplicationFactor)
		}
		if rf > 1 {
			return nil, fmt.Errorf("%w: Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only 1 broker(s) are registered.",
				kerr.InvalidReplicationFactor, rf, rf)
		}
	}
	if parts > MaxPartitionsPerRequest {
		return nil, fmt.Errorf("%w: %d partitions exceed the %d a single request may create", kerr.InvalidPartitions, parts, MaxPartitionsPerRequest)
	}
	if _, err := config.ResolveTopic(b, req.Configs); err != nil {
		return nil, fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
	}
	t := &Topic{Name: req.Name, ID: NewTopicID(), Partitions: parts, Configs: cloneMap(req.Configs), Internal: req.Internal}
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

func (c *Controller) checkAssignment(a map[int32][]int32) error {
	n := int32(len(a))
	for p, replicas := range a {
		if p < 0 || p >= n {
			return fmt.Errorf("%w: Partitions should be 0-based and consecutive; got partition %d of %d", kerr.InvalidReplicaAssignment, p, n)
		}
		if len(replicas) == 0 {
			return fmt.Errorf("%w: partition %d has no replicas", kerr.InvalidReplicaAssignment, p)
		}
		for _, r := range replicas {
			if r != c.o.NodeID {
				return fmt.Errorf("%w: The manual partition assignment includes broker %d, but no such broker is registered.", kerr.InvalidReplicaAssignment, r)
			}
		}
		if len(replicas) > 1 {
			return fmt.Errorf("%w: partition %d assigned to %d replicas, only 1 broker is registered", kerr.InvalidReplicationFactor, p, len(replicas))
		}
	}
	return nil
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

// CreatePartitions grows a topic to count partitions.
func (c *Controller) CreatePartitions(name string, count int32, assignment [][]int32, validateOnly bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	im := c.Image()
	t := im.Topics[name]
	if t == nil {
		return fmt.Errorf("%w: This server does not host this topic-partition.", kerr.UnknownTopicOrPartition)
	}
	switch {
	case count < t.Partitions:
		return fmt.Errorf("%w: The topic %s currently has %d partition(s); %d would not be an increase.", kerr.InvalidPartitions, name, t.Partitions, count)
	case count == t.Partitions:
		return fmt.Errorf("%w: Topic already has %d partition(s).", kerr.InvalidPartitions, t.Partitions)
	case count-t.Partitions > MaxPartitionsPerRequest:
		return fmt.Errorf("%w: %d new partitions exceed the %d a single request may create", kerr.InvalidPartitions, count-t.Partitions, MaxPartitionsPerRequest)
	}
	if assignment != nil {
		if int32(len(assignment)) != count-t.Partitions {
			return fmt.Errorf("%w: Attempted to add %d additional partition(s), but only %d assignment(s) were specified.",
				kerr.InvalidReplicaAssignment, count-t.Partitions, len(assignment))
		}
		a := map[int32][]int32{}
		for i, r := range assignment {
			a[int32(i)] = r
		}
		if err := c.checkAssignment(a); err != nil {
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

// SetTopicConfigs replaces a topic's overrides (AlterConfigs and, after
// merging, IncrementalAlterConfigs).
func (c *Controller) SetTopicConfigs(name string, overrides map[string]string, validateOnly bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	im := c.Image()
	t := im.Topics[name]
	if t == nil {
		return fmt.Errorf("%w: Topic %s does not exist", kerr.UnknownTopicOrPartition, name)
	}
	if _, err := config.ResolveTopic(c.o.Broker(), overrides); err != nil {
		return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
	}
	if validateOnly {
		return nil
	}
	next := im.clone()
	nt := next.Topics[name]
	nt.Configs = cloneMap(overrides)
	if err := c.commit(next, Change{ConfigChanged: nt}); err != nil {
		return err
	}
	c.o.Logger.Info("altered topic configs", "topic", name, "configs", overrides)
	return nil
}

// SetBrokerConfigs replaces the dynamic cluster-default broker configs after
// check validates them.
func (c *Controller) SetBrokerConfigs(configs map[string]string, check func(map[string]string) error, validateOnly bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := check(configs); err != nil {
		if errors.Is(err, config.ErrInvalidConfig) {
			return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
		}
		return err
	}
	if validateOnly {
		return nil
	}
	next := c.Image().clone()
	next.BrokerConfigs = cloneMap(configs)
	return c.commit(next, Change{BrokerConfigs: true})
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
