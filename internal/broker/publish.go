package broker

import (
	"fmt"
	"slices"

	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/replica"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/txn"
)

// Publish makes the broker follow a metadata image (cluster.Listener): the
// dynamic broker configs (the listeners' key and trust stores reloaded),
// the authorizer over the ACLs, then the partitions this broker is a replica of
// (hosted in the role the image gives them; Kafka's
// ReplicaManager.applyDelta, without LeaderAndIsr), the logs of partitions
// it no longer holds deleted, the topic configs, and the group and
// transaction coordinators following the leaderships of __consumer_offsets
// and __transaction_state. d nil: compare prev and
// next whole. It runs on the publisher's goroutine, one image at a time.
func (b *Broker) Publish(prev, next *metadata.Image, d *metadata.Delta) {
	b.replicas.SetImage(next)
	configsChanged := d == nil || d.Configs[metadata.ConfigResource{Type: metadata.ResourceBroker}] ||
		d.Configs[metadata.ConfigResource{Type: metadata.ResourceBroker, Name: fmt.Sprint(b.layout.NodeID)}]
	if configsChanged {
		if err := b.applyBrokerConfigs(next); err != nil {
			b.logger.Error("applying dynamic broker configs failed", "err", err)
		} else if d != nil {
			b.reloadListeners(b.Config())
		}
	}
	if d == nil || d.ACLs {
		b.refreshAuthorizer(next)
	}
	// Topics gone (by id: a topic deleted and created again under its name
	// is another topic) give up their partitions first.
	for _, id := range removedTopics(prev, next, d) {
		if t := prev.TopicByID(id); t != nil {
			b.dropTopic(t)
			if t.Name != group.OffsetsTopic {
				b.groups.OnTopicDeleted(t.Name, int32(len(t.Partitions)))
			}
		}
	}
	for _, t := range changedTopics(next, d) {
		parts := changedPartitions(t, d)
		for _, p := range parts {
			b.applyPartition(next, t, p)
		}
		if d == nil || d.Configs[metadata.ConfigResource{Type: metadata.ResourceTopic, Name: t.Name}] {
			b.reconfigureTopic(next, t)
		}
	}
	if configsChanged && d != nil {
		for _, t := range next.SortedTopics() {
			b.reconfigureTopic(next, t)
		}
	}
}

// removedTopics are the ids of the topics in prev and not in next.
func removedTopics(prev, next *metadata.Image, d *metadata.Delta) []metadata.TopicID {
	if d != nil {
		return d.TopicsRemoved
	}
	var out []metadata.TopicID
	for _, t := range prev.SortedTopics() {
		if next.TopicByID(t.ID) == nil {
			out = append(out, t.ID)
		}
	}
	return out
}

// changedTopics are the topics of next that d touched (every topic: d nil).
func changedTopics(next *metadata.Image, d *metadata.Delta) []*metadata.TopicImage {
	if d == nil {
		return next.SortedTopics()
	}
	var out []*metadata.TopicImage
	seen := map[metadata.TopicID]bool{}
	for id := range d.Partitions {
		if t := next.TopicByID(id); t != nil && !seen[id] {
			seen[id] = true
			out = append(out, t)
		}
	}
	for r := range d.Configs {
		if r.Type != metadata.ResourceTopic {
			continue
		}
		if t := next.Topic(r.Name); t != nil && !seen[t.ID] {
			seen[t.ID] = true
			out = append(out, t)
		}
	}
	return out
}

// changedPartitions are t's partitions d touched (all of them: d nil).
func changedPartitions(t *metadata.TopicImage, d *metadata.Delta) []int32 {
	var out []int32
	for p := range t.Partitions {
		if d == nil || d.Partitions[t.ID][int32(p)] {
			out = append(out, int32(p))
		}
	}
	return out
}

// applyPartition hosts partition p of t in the role next gives this broker,
// or stops hosting it (deleting its log) when this broker is not a replica.
func (b *Broker) applyPartition(next *metadata.Image, t *metadata.TopicImage, p int32) {
	tp := topicpart.TopicPartition{Topic: t.Name, Partition: p}
	pi := t.Partitions[p]
	self := b.layout.NodeID
	if !pi.IsReplica(self) {
		if part, ok := b.replicas.Get(tp); ok && part.TopicID == t.ID {
			b.dropPartition(tp)
		}
		return
	}
	if part, ok := b.replicas.Get(tp); ok && part.TopicID != t.ID {
		b.dropPartition(tp) // an earlier topic of that name
	}
	tc := b.resolveTopic(next, t.Name)
	pi = replica.ForIncarnation(pi, next, self, b.incarnation)
	if _, err := b.replicas.Assign(tp, t.ID, LogConfig(tc, b.Config()), tc.MinInsyncReplicas, pi); err != nil {
		b.logger.Error("hosting partition failed", "partition", tp, "err", err)
		return
	}
	switch t.Name {
	case group.OffsetsTopic:
		b.followCoordinator(p, pi.Leader == self)
	case txn.StateTopic:
		b.followTxnCoordinator(p, pi.Leader == self)
	}
}

// followTxnCoordinator loads a __transaction_state partition's transactions
// when this broker becomes its leader, and unloads them when it stops being
// it.
func (b *Broker) followTxnCoordinator(p int32, leader bool) {
	loaded := slices.Contains(b.txns.Loaded(), p)
	switch {
	case leader && !loaded:
		b.txns.OnElection(p)
	case !leader && loaded:
		b.txns.OnResignation(p)
	}
}

// followCoordinator loads a __consumer_offsets partition's groups when this
// broker becomes its leader, and unloads them when it stops being it.
func (b *Broker) followCoordinator(p int32, leader bool) {
	loaded := slices.Contains(b.groups.Loaded(), p)
	switch {
	case leader && !loaded:
		b.groups.OnElection(p)
	case !leader && loaded:
		b.groups.OnResignation(p)
	}
}

func (b *Broker) dropTopic(t *metadata.TopicImage) {
	for p := range t.Partitions {
		tp := topicpart.TopicPartition{Topic: t.Name, Partition: int32(p)}
		if part, ok := b.replicas.Get(tp); ok && part.TopicID == t.ID {
			b.dropPartition(tp)
		}
	}
}

// dropPartition stops hosting tp and deletes its log.
func (b *Broker) dropPartition(tp topicpart.TopicPartition) {
	switch tp.Topic {
	case group.OffsetsTopic:
		b.groups.OnResignation(tp.Partition)
	case txn.StateTopic:
		b.txns.OnResignation(tp.Partition)
	}
	if err := b.replicas.Drop(tp); err != nil {
		b.logger.Error("deleting partition log failed", "partition", tp, "err", err)
	}
}

// resolveTopic is a topic's configuration from the image's overrides.
func (b *Broker) resolveTopic(im *metadata.Image, topic string) config.Topic {
	tc, err := config.ResolveTopic(b.Config(), im.TopicConfigs(topic))
	if err != nil {
		b.logger.Error("topic config no longer valid, using defaults", "topic", topic, "err", err)
		tc, _ = config.ResolveTopic(b.Config(), nil)
	}
	return tc
}

// logConfigFor resolves a topic's log configuration from an image.
func (b *Broker) logConfigFor(im *metadata.Image, topic string) log.Config {
	return LogConfig(b.resolveTopic(im, topic), b.Config())
}

// topicConfig is a topic's configuration as this broker has published it.
func (b *Broker) topicConfig(topic string) config.Topic {
	return b.resolveTopic(published{b}.Image(), topic)
}

func (b *Broker) reconfigureTopic(im *metadata.Image, t *metadata.TopicImage) {
	tc := b.resolveTopic(im, t.Name)
	lc := LogConfig(tc, b.Config())
	for p := range t.Partitions {
		if part, ok := b.replicas.Get(topicpart.TopicPartition{Topic: t.Name, Partition: int32(p)}); ok {
			part.Log.SetConfig(lc)
			part.SetMinISR(tc.MinInsyncReplicas)
		}
	}
}

// applyBrokerConfigs layers the image's dynamic broker configs (the
// cluster's, then this node's) over the static ones.
func (b *Broker) applyBrokerConfigs(im *metadata.Image) error {
	next, err := b.static.WithDynamic(im.ClusterBrokerConfigs())
	if err != nil {
		return err
	}
	if next, err = next.WithDynamicPerBroker(im.NodeBrokerConfigs(b.layout.NodeID)); err != nil {
		return err
	}
	b.cfg.Store(next)
	return nil
}

// strayReason is Kafka's stray test (LogManager.isStrayKraftReplica) for a
// partition log found on disk: the metadata must name its topic, with this
// partition, this broker among its replicas, and the topic id the log's
// partition.metadata holds (a log without one never had a record appended:
// the file is written first).
func (b *Broker) strayReason(im *metadata.Image, tp topicpart.TopicPartition, topicID [16]byte) string {
	t := im.Topic(tp.Topic)
	switch {
	case t == nil:
		return "the metadata has no topic " + tp.Topic
	case int(tp.Partition) >= len(t.Partitions):
		return fmt.Sprintf("topic %s has %d partitions", tp.Topic, len(t.Partitions))
	case !t.Partitions[tp.Partition].IsReplica(b.layout.NodeID):
		return fmt.Sprintf("broker %d is not a replica of %s (replicas %v)", b.layout.NodeID, tp, t.Partitions[tp.Partition].Replicas)
	case topicID == [16]byte{}:
		return "the log has no partition.metadata naming its topic id"
	case metadata.TopicID(topicID) != t.ID:
		return fmt.Sprintf("the log belongs to topic id %s, the metadata's %s is %s", metadata.TopicID(topicID), tp.Topic, t.ID)
	}
	return ""
}

func sortedIDs(m map[int32]string) []int32 {
	ids := make([]int32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
