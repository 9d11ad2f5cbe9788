package metadata

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
)

// TopicID is a topic's 16-byte UUID.
type TopicID [16]byte

// NewTopicID returns a random version-4 UUID that is neither the zero id nor
// Kafka's metadata topic id.
func NewTopicID() TopicID {
	var id TopicID
	for id == (TopicID{}) || id == (TopicID{15: 1}) {
		if _, err := rand.Read(id[:]); err != nil {
			panic(err)
		}
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
	}
	return id
}

// String is Kafka's base64url (no padding) form.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

func (id TopicID) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(id[:])), nil }

func (id *TopicID) UnmarshalText(b []byte) error {
	n, err := hex.Decode(id[:], b)
	if err == nil && n != 16 {
		err = fmt.Errorf("topic id of %d bytes", n)
	}
	return err
}

// NewClusterID returns a random cluster id in Kafka's form (base64url UUID).
func NewClusterID() string { return NewTopicID().String() }

// Image is the cluster metadata after some prefix of the metadata log. It is
// immutable: Apply returns a new Image sharing every part the entry did not
// change, so readers may hold one without locks.
type Image struct {
	ClusterID string
	// Index and Term are those of the last entry applied.
	Index, Term uint64
	// Controller is the active controller's activation (Node -1: none yet).
	Controller Activation
	Features   map[string]int16
	Brokers    map[int32]*Broker
	topics     cowMap[string, *TopicImage]
	byID       cowMap[TopicID, *TopicImage]
	// configs holds every resource's configs; a resource with none is absent.
	configs map[ConfigResource]map[string]string
	// NextProducerID is the first producer id no block has handed out.
	NextProducerID int64
	// acls are the ACLs by id, scram the SCRAM credentials (security.go).
	acls  map[[16]byte]ACL
	scram map[ScramKey]ScramCredential
	// Skipped counts records refused by their own guard (stale partition
	// epoch, stale broker epoch, a term mismatch): a correct controller
	// never writes one, so tests assert it stays zero.
	Skipped int64
}

// Broker is a registered broker.
type Broker struct {
	ID                   int32
	Epoch                int64 // the raft index of its registration
	Incarnation          [16]byte
	Endpoints            []Endpoint
	Rack                 string
	Fenced               bool
	InControlledShutdown bool
	LogDirs              [][16]byte
}

// Endpoint returns the broker's endpoint for a listener name.
func (b *Broker) Endpoint(listener string) (Endpoint, bool) {
	for _, ep := range b.Endpoints {
		if ep.Name == listener {
			return ep, true
		}
	}
	return Endpoint{}, false
}

// TopicImage is a topic with its partitions, indexed by partition id.
type TopicImage struct {
	Name       string
	ID         TopicID
	Partitions []*PartitionImage
}

// PartitionImage is one partition's replication state.
type PartitionImage struct {
	Replicas            []int32
	ISR                 []int32
	ELR                 []int32
	LastKnownELR        []int32
	Leader              int32
	LeaderRecoveryState LeaderRecoveryState
	LeaderEpoch         int32
	PartitionEpoch      int32
	Adding, Removing    []int32
	// Unclean is the partition's last unclean or last-known-leader
	// election not acknowledged yet; nil when there is none.
	Unclean *UncleanElection
}

// IsReplica reports whether broker id holds a replica of the partition.
func (p *PartitionImage) IsReplica(id int32) bool { return slices.Contains(p.Replicas, id) }

// InISR reports whether broker id is in the ISR.
func (p *PartitionImage) InISR(id int32) bool { return slices.Contains(p.ISR, id) }

// Empty is the image before any record: no cluster id, no controller.
func Empty() *Image {
	return &Image{Controller: Activation{Node: -1}, Features: map[string]int16{}, Brokers: map[int32]*Broker{},
		topics: newCowMap[string, *TopicImage](), byID: newCowMap[TopicID, *TopicImage](), configs: map[ConfigResource]map[string]string{}}
}

// Topic returns a topic by name, or nil.
func (im *Image) Topic(name string) *TopicImage { return im.topics.get(name) }

// TopicByID returns a topic by id, or nil.
func (im *Image) TopicByID(id TopicID) *TopicImage { return im.byID.get(id) }

// NumTopics is how many topics exist.
func (im *Image) NumTopics() int { return im.topics.len() }

// TopicNames returns every topic name, sorted.
func (im *Image) TopicNames() []string {
	names := make([]string, 0, im.topics.len())
	im.topics.each(func(n string, _ *TopicImage) { names = append(names, n) })
	slices.Sort(names)
	return names
}

// SortedTopics returns every topic, by name.
func (im *Image) SortedTopics() []*TopicImage {
	out := make([]*TopicImage, 0, im.topics.len())
	for _, n := range im.TopicNames() {
		out = append(out, im.topics.get(n))
	}
	return out
}

// Partition returns a partition's state, or nil.
func (im *Image) Partition(topic string, partition int32) *PartitionImage {
	t := im.topics.get(topic)
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return nil
	}
	return t.Partitions[partition]
}

// Configs returns a resource's configs (read-only; nil when it has none).
func (im *Image) Configs(r ConfigResource) map[string]string { return im.configs[r] }

// TopicConfigs is shorthand for a topic's configs.
func (im *Image) TopicConfigs(topic string) map[string]string {
	return im.configs[ConfigResource{Type: ResourceTopic, Name: topic}]
}

// ClusterBrokerConfigs are the dynamic broker configs set for every broker.
func (im *Image) ClusterBrokerConfigs() map[string]string {
	return im.configs[ConfigResource{Type: ResourceBroker}]
}

// NodeBrokerConfigs are the dynamic broker configs of one broker.
func (im *Image) NodeBrokerConfigs(id int32) map[string]string {
	return im.configs[ConfigResource{Type: ResourceBroker, Name: strconv.Itoa(int(id))}]
}

// SortedBrokers returns the registered brokers by id.
func (im *Image) SortedBrokers() []*Broker {
	out := make([]*Broker, 0, len(im.Brokers))
	for _, b := range im.Brokers {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b *Broker) int { return int(a.ID) - int(b.ID) })
	return out
}

// Usable reports whether broker id is registered, unfenced and not shutting
// down: whether it may lead or join an ISR.
func (im *Image) Usable(id int32) bool {
	b := im.Brokers[id]
	return b != nil && !b.Fenced && !b.InControlledShutdown
}
