package metadata

import (
	"maps"
	"slices"
)

// Delta says what one applied entry changed, for the consumers of images
// (the broker's partitions, the group coordinator, metrics). It names what
// changed; the new values are in the new image and the old ones in Prev.
type Delta struct {
	Prev *Image
	// TopicsCreated and TopicsRemoved hold topic ids; a removed topic's old
	// state is Prev.TopicByID(id).
	TopicsCreated []TopicID
	TopicsRemoved []TopicID
	// Partitions created or changed, by topic id, then partition id (a
	// created topic's partitions are here too).
	Partitions map[TopicID]map[int32]bool
	// Brokers registered, changed or unregistered.
	Brokers map[int32]bool
	// Configs set or deleted, by resource (a removed topic's are here too).
	Configs map[ConfigResource]bool
	// Features, Controller, ProducerIDs and ClusterID changed.
	Features, Controller, ProducerIDs, ClusterID bool
	// ACLs or SCRAM credentials changed.
	ACLs, Scram bool
}

// Empty reports whether the entry changed nothing.
func (d *Delta) Empty() bool {
	return len(d.TopicsCreated) == 0 && len(d.TopicsRemoved) == 0 && len(d.Partitions) == 0 &&
		len(d.Brokers) == 0 && len(d.Configs) == 0 && !d.Features && !d.Controller && !d.ProducerIDs && !d.ClusterID &&
		!d.ACLs && !d.Scram
}

// Apply applies the entry committed at (index, term) to im and returns the
// new image and what changed. It is a pure function of its arguments: every
// node applying the same entries gets the same images.
//
// An entry proposed in another term than the one raft committed it in is
// skipped whole (a controller proposes only for its own term; counted in
// Skipped). Records whose guard fails — a PartitionChange whose expected
// partition epoch is not the partition's, a broker change for a stale
// broker epoch, a record naming a topic or broker that does not exist — are
// skipped one by one and counted, never partly applied.
func Apply(im *Image, index, term uint64, e *Entry) (*Image, *Delta) {
	a := applier{next: im.shallowCopy(), d: &Delta{Prev: im}}
	a.next.Index, a.next.Term = index, term
	if e.Term != term {
		a.next.Skipped++
		return a.next, a.d
	}
	for _, r := range e.Records {
		a.apply(index, r)
	}
	return a.next, a.d
}

// applier builds the next image copy-on-write: each map is copied at its
// first change within the entry.
type applier struct {
	next *Image
	d    *Delta

	brokersCopied, configsCopied, featuresCopied bool
	aclsCopied, scramCopied                      bool
	// topics and byID write the next image's topic maps, copying a shard
	// at its first change; nil until the entry changes a topic.
	topics *cowWriter[string, *TopicImage]
	byID   *cowWriter[TopicID, *TopicImage]
	// topicCopied marks topics whose TopicImage (and partition slice) is
	// already this entry's own copy.
	topicCopied map[TopicID]bool
}

func (im *Image) shallowCopy() *Image {
	c := *im
	return &c
}

func (a *applier) apply(index uint64, r Record) {
	switch r := r.(type) {
	case ClusterID:
		a.next.ClusterID, a.d.ClusterID = r.ID, true
	case Activation:
		a.next.Controller, a.d.Controller = r, true
	case FeatureLevel:
		a.setFeature(r)
	case RegisterBroker:
		a.registerBroker(index, r)
	case BrokerRegistrationChange:
		a.changeBroker(r)
	case UnregisterBroker:
		a.unregisterBroker(r)
	case Topic:
		a.createTopic(r)
	case Partition:
		a.createPartition(r)
	case PartitionChange:
		a.changePartition(r)
	case RemoveTopic:
		a.removeTopic(r)
	case Config:
		a.setConfig(r)
	case ProducerIDs:
		if r.NextBlockStart <= a.next.NextProducerID {
			a.next.Skipped++
			return
		}
		a.next.NextProducerID, a.d.ProducerIDs = r.NextBlockStart, true
	case AccessControlEntry:
		a.addACL(r)
	case RemoveAccessControlEntry:
		a.removeACL(r)
	case UserScramCredential:
		a.setScram(r)
	case RemoveUserScramCredential:
		a.removeScram(r)
	case UncleanElection:
		a.setUnclean(r)
	case AckUncleanElection:
		a.ackUnclean(r)
	default:
		a.next.Skipped++
	}
}

func (a *applier) setFeature(r FeatureLevel) {
	if !a.featuresCopied {
		a.next.Features, a.featuresCopied = maps.Clone(a.next.Features), true
	}
	if r.Level == 0 {
		delete(a.next.Features, r.Name)
	} else {
		a.next.Features[r.Name] = r.Level
	}
	a.d.Features = true
}

func (a *applier) brokers() map[int32]*Broker {
	if !a.brokersCopied {
		a.next.Brokers, a.brokersCopied = maps.Clone(a.next.Brokers), true
	}
	return a.next.Brokers
}

func (a *applier) markBroker(id int32) {
	if a.d.Brokers == nil {
		a.d.Brokers = map[int32]bool{}
	}
	a.d.Brokers[id] = true
}

func (a *applier) registerBroker(index uint64, r RegisterBroker) {
	epoch := r.Epoch
	if epoch == 0 {
		epoch = int64(index)
	}
	a.brokers()[r.ID] = &Broker{ID: r.ID, Epoch: epoch, Incarnation: r.Incarnation,
		Endpoints: slices.Clone(r.Endpoints), Rack: r.Rack, Fenced: r.Fenced,
		InControlledShutdown: r.InControlledShutdown, LogDirs: slices.Clone(r.LogDirs)}
	a.markBroker(r.ID)
}

func (a *applier) changeBroker(r BrokerRegistrationChange) {
	old := a.next.Brokers[r.ID]
	if old == nil || old.Epoch != r.Epoch {
		a.next.Skipped++
		return
	}
	b := *old
	switch r.Fenced {
	case Fence:
		b.Fenced = true
	case Unfence:
		b.Fenced = false
	}
	if r.InControlledShutdown {
		b.InControlledShutdown = true
	}
	a.brokers()[r.ID] = &b
	a.markBroker(r.ID)
}

func (a *applier) unregisterBroker(r UnregisterBroker) {
	old := a.next.Brokers[r.ID]
	if old == nil || (r.Epoch != -1 && old.Epoch != r.Epoch) {
		a.next.Skipped++
		return
	}
	delete(a.brokers(), r.ID)
	a.markBroker(r.ID)
}

// topicMaps makes the topic maps this entry's own.
func (a *applier) topicMaps() {
	if a.topics == nil {
		a.topics, a.byID = writer(&a.next.topics), writer(&a.next.byID)
	}
}

// ownTopic returns a copy of the topic the entry may change in place.
func (a *applier) ownTopic(id TopicID) *TopicImage {
	t := a.next.byID.get(id)
	if t == nil {
		return nil
	}
	if a.topicCopied[id] {
		return t
	}
	a.topicMaps()
	c := &TopicImage{Name: t.Name, ID: t.ID, Partitions: slices.Clone(t.Partitions)}
	a.topics.set(c.Name, c)
	a.byID.set(id, c)
	if a.topicCopied == nil {
		a.topicCopied = map[TopicID]bool{}
	}
	a.topicCopied[id] = true
	return c
}

func (a *applier) markPartition(id TopicID, p int32) {
	if a.d.Partitions == nil {
		a.d.Partitions = map[TopicID]map[int32]bool{}
	}
	if a.d.Partitions[id] == nil {
		a.d.Partitions[id] = map[int32]bool{}
	}
	a.d.Partitions[id][p] = true
}

func (a *applier) createTopic(r Topic) {
	if a.next.topics.get(r.Name) != nil || a.next.byID.get(r.ID) != nil || r.ID == (TopicID{}) {
		a.next.Skipped++
		return
	}
	a.topicMaps()
	t := &TopicImage{Name: r.Name, ID: r.ID}
	a.topics.set(r.Name, t)
	a.byID.set(r.ID, t)
	if a.topicCopied == nil {
		a.topicCopied = map[TopicID]bool{}
	}
	a.topicCopied[r.ID] = true
	a.d.TopicsCreated = append(a.d.TopicsCreated, r.ID)
}

// createPartition adds partition r.Partition, which must be the next one.
func (a *applier) createPartition(r Partition) {
	t := a.ownTopic(r.Topic)
	if t == nil || int(r.Partition) != len(t.Partitions) {
		a.next.Skipped++
		return
	}
	t.Partitions = append(t.Partitions, &PartitionImage{Replicas: slices.Clone(r.Replicas), ISR: slices.Clone(r.ISR),
		ELR: slices.Clone(r.ELR), LastKnownELR: slices.Clone(r.LastKnownELR), Leader: r.Leader,
		LeaderRecoveryState: r.LeaderRecoveryState, LeaderEpoch: r.LeaderEpoch, PartitionEpoch: r.PartitionEpoch,
		Adding: slices.Clone(r.Adding), Removing: slices.Clone(r.Removing)})
	a.markPartition(r.Topic, r.Partition)
}

// changePartition merges a PartitionChange as Kafka's
// PartitionRegistration.merge does, guarded by the expected partition epoch.
func (a *applier) changePartition(r PartitionChange) {
	if old := a.next.byID.get(r.Topic); old == nil || r.Partition < 0 || int(r.Partition) >= len(old.Partitions) ||
		old.Partitions[r.Partition].PartitionEpoch != r.ExpectedPartitionEpoch {
		a.next.Skipped++
		return
	}
	t := a.ownTopic(r.Topic)
	p := *t.Partitions[r.Partition]
	if r.Replicas != nil {
		p.Replicas = slices.Clone(r.Replicas)
	}
	if r.ISR != nil {
		p.ISR = slices.Clone(r.ISR)
	}
	if r.ELR != nil {
		p.ELR = slices.Clone(r.ELR)
	}
	if r.LastKnownELR != nil {
		p.LastKnownELR = slices.Clone(r.LastKnownELR)
	}
	if r.Adding != nil {
		p.Adding = slices.Clone(r.Adding)
	}
	if r.Removing != nil {
		p.Removing = slices.Clone(r.Removing)
	}
	if r.Leader != NoLeaderChange {
		p.Leader = r.Leader
		p.LeaderEpoch++
	}
	if r.LeaderRecoveryState != NoRecoveryChange {
		p.LeaderRecoveryState = r.LeaderRecoveryState
	}
	p.PartitionEpoch++
	t.Partitions[r.Partition] = &p
	a.markPartition(r.Topic, r.Partition)
}

func (a *applier) removeTopic(r RemoveTopic) {
	t := a.next.byID.get(r.ID)
	if t == nil {
		a.next.Skipped++
		return
	}
	a.topicMaps()
	a.topics.delete(t.Name)
	a.byID.delete(r.ID)
	if a.d.Partitions != nil {
		delete(a.d.Partitions, r.ID)
	}
	if i := slices.Index(a.d.TopicsCreated, r.ID); i >= 0 {
		a.d.TopicsCreated = slices.Delete(a.d.TopicsCreated, i, i+1)
	} else {
		a.d.TopicsRemoved = append(a.d.TopicsRemoved, r.ID)
	}
	res := ConfigResource{Type: ResourceTopic, Name: t.Name}
	if a.next.configs[res] != nil {
		a.ownConfigs()
		delete(a.next.configs, res)
		a.markConfig(res)
	}
}

func (a *applier) ownConfigs() {
	if !a.configsCopied {
		a.next.configs, a.configsCopied = maps.Clone(a.next.configs), true
	}
}

func (a *applier) markConfig(r ConfigResource) {
	if a.d.Configs == nil {
		a.d.Configs = map[ConfigResource]bool{}
	}
	a.d.Configs[r] = true
}

func (a *applier) setConfig(r Config) {
	if r.Resource.Type == ResourceTopic && a.next.topics.get(r.Resource.Name) == nil {
		a.next.Skipped++
		return
	}
	a.ownConfigs()
	m := maps.Clone(a.next.configs[r.Resource])
	if r.Value == nil {
		delete(m, r.Name)
	} else {
		if m == nil {
			m = map[string]string{}
		}
		m[r.Name] = *r.Value
	}
	if len(m) == 0 {
		delete(a.next.configs, r.Resource)
	} else {
		a.next.configs[r.Resource] = m
	}
	a.markConfig(r.Resource)
}
