package metadata

// RecordType numbers a metadata record kind on the wire. The numbers are
// Gregor's own (they are never sent to Kafka clients); they are fixed once
// released.
type RecordType uint8

const (
	TypeActivation               RecordType = 1
	TypeFeatureLevel             RecordType = 2
	TypeRegisterBroker           RecordType = 3
	TypeBrokerRegistrationChange RecordType = 4
	TypeUnregisterBroker         RecordType = 5
	TypeTopic                    RecordType = 6
	TypePartition                RecordType = 7
	TypePartitionChange          RecordType = 8
	TypeRemoveTopic              RecordType = 9
	TypeConfig                   RecordType = 10
	TypeProducerIDs              RecordType = 11
	TypeClusterID                RecordType = 12
)

func (t RecordType) String() string {
	switch t {
	case TypeActivation:
		return "Activation"
	case TypeFeatureLevel:
		return "FeatureLevel"
	case TypeRegisterBroker:
		return "RegisterBroker"
	case TypeBrokerRegistrationChange:
		return "BrokerRegistrationChange"
	case TypeUnregisterBroker:
		return "UnregisterBroker"
	case TypeTopic:
		return "Topic"
	case TypePartition:
		return "Partition"
	case TypePartitionChange:
		return "PartitionChange"
	case TypeRemoveTopic:
		return "RemoveTopic"
	case TypeConfig:
		return "Config"
	case TypeProducerIDs:
		return "ProducerIDs"
	case TypeClusterID:
		return "ClusterID"
	case TypeAccessControlEntry:
		return "AccessControlEntry"
	case TypeRemoveAccessControlEntry:
		return "RemoveAccessControlEntry"
	case TypeUserScramCredential:
		return "UserScramCredential"
	case TypeRemoveUserScramCredential:
		return "RemoveUserScramCredential"
	case TypeUncleanElection:
		return "UncleanElection"
	case TypeAckUncleanElection:
		return "AckUncleanElection"
	}
	return "Unknown"
}

// Record is one metadata change. Every node applies the same records in the
// same order to its image (Apply); what a record does depends only on the
// image it is applied to and the entry carrying it, never on the node.
type Record interface {
	Type() RecordType
}

// Sentinels of the PartitionChange and Partition fields.
const (
	// NoLeader is a partition without a leader (offline).
	NoLeader int32 = -1
	// NoLeaderChange in PartitionChange.Leader keeps the leader.
	NoLeaderChange int32 = -2
)

// LeaderRecoveryState is KIP-704's state: a partition whose leader was
// elected uncleanly is Recovering until the leader says it has recovered;
// meanwhile its ISR may not grow past the leader.
type LeaderRecoveryState int8

const (
	Recovered  LeaderRecoveryState = 0
	Recovering LeaderRecoveryState = 1
	// NoRecoveryChange in PartitionChange keeps the state.
	NoRecoveryChange LeaderRecoveryState = -1
)

// FencingChange is BrokerRegistrationChange's fencing field (Kafka's
// BrokerRegistrationFencingChange).
type FencingChange int8

const (
	Unfence         FencingChange = -1
	NoFencingChange FencingChange = 0
	Fence           FencingChange = 1
)

// ClusterID names the cluster; it is the first record of the bootstrap
// snapshot and never changes.
type ClusterID struct {
	ID string
}

// Activation marks Node as the active controller of raft term Term. A
// controller acts only once its own activation has been applied: every entry
// of earlier terms is then in its image.
type Activation struct {
	Node int32
	Term uint64
}

// FeatureLevel sets a finalized feature (Kafka's FeatureLevelRecord); level
// 0 removes it.
type FeatureLevel struct {
	Name  string
	Level int16
}

// Endpoint is a listener a broker advertises.
type Endpoint struct {
	Name             string // listener name, e.g. PLAINTEXT
	Host             string
	Port             int32
	SecurityProtocol int16 // Kafka's SecurityProtocol id (0 PLAINTEXT)
}

// RegisterBroker registers a broker incarnation. Its broker epoch is the raft
// index of the entry that carries it, so epochs are unique and grow with
// every registration.
type RegisterBroker struct {
	ID int32
	// Epoch is 0 in what a controller writes (the epoch is then the entry's
	// index); a snapshot carries each broker's epoch here.
	Epoch       int64
	Incarnation [16]byte
	Endpoints   []Endpoint
	Rack        string // empty: none
	Fenced      bool
	// InControlledShutdown is carried for Kafka parity; a new registration
	// is never in controlled shutdown.
	InControlledShutdown bool
	LogDirs              [][16]byte
}

// BrokerRegistrationChange fences, unfences or starts the controlled shutdown
// of a registered broker. It is skipped when Epoch is not the broker's
// current epoch (the change was decided for an older incarnation).
type BrokerRegistrationChange struct {
	ID                   int32
	Epoch                int64
	Fenced               FencingChange
	InControlledShutdown bool // true starts it; false keeps the state
}

// UnregisterBroker removes a broker. Skipped when Epoch is stale; -1 removes
// whatever incarnation is registered.
type UnregisterBroker struct {
	ID    int32
	Epoch int64
}

// Topic creates a topic (its partitions follow as Partition records).
type Topic struct {
	Name string
	ID   TopicID
}

// Partition creates a partition of a topic.
type Partition struct {
	Topic               TopicID
	Partition           int32
	Replicas            []int32 // assignment order: the first is the preferred leader
	ISR                 []int32
	ELR                 []int32 // KIP-966 eligible leader replicas
	LastKnownELR        []int32
	Leader              int32
	LeaderRecoveryState LeaderRecoveryState
	LeaderEpoch         int32
	PartitionEpoch      int32
	Adding, Removing    []int32 // reassignment in progress
}

// PartitionChange changes a partition (Kafka's PartitionChangeRecord). A nil
// slice keeps the field. It is skipped unless ExpectedPartitionEpoch is the
// partition's epoch (a Gregor addition: a change decided against an image
// that has moved on is never applied). Applied, it bumps the partition epoch,
// and the leader epoch when Leader is set (even to the same leader).
type PartitionChange struct {
	Topic                  TopicID
	Partition              int32
	ExpectedPartitionEpoch int32
	Leader                 int32 // NoLeaderChange keeps it
	ISR                    []int32
	ELR                    []int32
	LastKnownELR           []int32
	Replicas               []int32
	Adding, Removing       []int32
	LeaderRecoveryState    LeaderRecoveryState // NoRecoveryChange keeps it
}

// RemoveTopic deletes a topic with its partitions and configs.
type RemoveTopic struct {
	ID TopicID
}

// ConfigResource is what a config belongs to, as in DescribeConfigs.
type ConfigResource struct {
	Type int8   // ResourceTopic or ResourceBroker
	Name string // topic name; broker id in decimal, or "" for the cluster default
}

// Config resource types (Kafka's ConfigResource.Type ids).
const (
	ResourceTopic  int8 = 2
	ResourceBroker int8 = 4
)

// Config sets (Value non-nil) or deletes (nil) one config of a resource.
type Config struct {
	Resource ConfigResource
	Name     string
	Value    *string
}

// ProducerIDs hands the block [NextBlockStart-size, NextBlockStart) of
// producer ids out: afterwards no block below NextBlockStart is handed out
// again. Skipped when NextBlockStart does not grow.
type ProducerIDs struct {
	BrokerID       int32
	BrokerEpoch    int64
	NextBlockStart int64
}

func (ClusterID) Type() RecordType                { return TypeClusterID }
func (Activation) Type() RecordType               { return TypeActivation }
func (FeatureLevel) Type() RecordType             { return TypeFeatureLevel }
func (RegisterBroker) Type() RecordType           { return TypeRegisterBroker }
func (BrokerRegistrationChange) Type() RecordType { return TypeBrokerRegistrationChange }
func (UnregisterBroker) Type() RecordType         { return TypeUnregisterBroker }
func (Topic) Type() RecordType                    { return TypeTopic }
func (Partition) Type() RecordType                { return TypePartition }
func (PartitionChange) Type() RecordType          { return TypePartitionChange }
func (RemoveTopic) Type() RecordType              { return TypeRemoveTopic }
func (Config) Type() RecordType                   { return TypeConfig }
func (ProducerIDs) Type() RecordType              { return TypeProducerIDs }
