package controller

import (
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/metadata"
)

// The requests the active controller serves, and their answers. Each type
// mirrors the Kafka request of the same name field by field (kmsg's
// BrokerRegistrationRequest, AlterPartitionRequest, …), so the api layer maps
// them one to one; the controller itself never sees kmsg. Errors are kerr
// errors wrapped with Kafka's message ("%w: message"), per topic, partition or
// resource where Kafka answers per item, else as the reply's error.

// Request is a request to the active controller; one of the *Request types of
// this file.
type Request interface{ request() }

// BrokerRegistrationRequest is BrokerRegistration (key 62, v4).
type BrokerRegistrationRequest struct {
	BrokerID      int32
	ClusterID     string
	IncarnationID [16]byte
	Listeners     []metadata.Endpoint
	Rack          string // "" when the broker has none (kmsg: nil)
	LogDirs       [][16]byte
	// PreviousBrokerEpoch is the epoch the broker wrote to its clean-shutdown
	// file when it last stopped cleanly, -1 when it has none (v3+).
	PreviousBrokerEpoch int64
}

// BrokerRegistrationResponse carries the new incarnation's broker epoch.
type BrokerRegistrationResponse struct {
	BrokerEpoch int64
}

// BrokerHeartbeatRequest is BrokerHeartbeat (key 63, v1).
type BrokerHeartbeatRequest struct {
	BrokerID              int32
	BrokerEpoch           int64
	CurrentMetadataOffset int64 // the broker's applied metadata index
	WantFence             bool
	WantShutDown          bool
}

// BrokerHeartbeatResponse is BrokerHeartbeat's answer.
type BrokerHeartbeatResponse struct {
	IsCaughtUp     bool // CurrentMetadataOffset ≥ the broker's registration index
	IsFenced       bool
	ShouldShutDown bool
}

// AlterPartitionRequest is AlterPartition (key 56, v2/v3: topics by id).
type AlterPartitionRequest struct {
	BrokerID    int32
	BrokerEpoch int64
	Topics      []AlterPartitionTopic
}

// AlterPartitionTopic is one topic of an AlterPartitionRequest.
type AlterPartitionTopic struct {
	TopicID    metadata.TopicID
	Partitions []AlterPartitionPartition
}

// AlterPartitionPartition is one partition's proposed ISR.
type AlterPartitionPartition struct {
	Partition   int32
	LeaderEpoch int32
	// NewISR is v3's NewIsrWithEpochs; a v2 request gives every member
	// BrokerEpoch -1, which skips the epoch check.
	NewISR              []BrokerState
	LeaderRecoveryState metadata.LeaderRecoveryState
	PartitionEpoch      int32
}

// BrokerState names a broker incarnation.
type BrokerState struct {
	BrokerID    int32
	BrokerEpoch int64
}

// AlterPartitionResponse answers per partition.
type AlterPartitionResponse struct {
	Topics []AlterPartitionTopicResult
}

// AlterPartitionTopicResult is one topic's answers.
type AlterPartitionTopicResult struct {
	TopicID    metadata.TopicID
	Partitions []AlterPartitionPartitionResult
}

// AlterPartitionPartitionResult is the partition's state after the change,
// or the error that refused it.
type AlterPartitionPartitionResult struct {
	Partition           int32
	Err                 error
	LeaderID            int32
	LeaderEpoch         int32
	ISR                 []int32
	LeaderRecoveryState metadata.LeaderRecoveryState
	PartitionEpoch      int32
}

// CreateTopicsRequest is CreateTopics (key 19). Duplicate names and
// __cluster_metadata are refused by the api layer before it gets here, as
// Kafka's ControllerApis refuses them.
type CreateTopicsRequest struct {
	Topics       []CreatableTopic
	ValidateOnly bool
}

// CreatableTopic is one topic to create.
type CreatableTopic struct {
	Name              string
	NumPartitions     int32 // -1: num.partitions
	ReplicationFactor int16 // -1: default.replication.factor
	// Assignments places each partition by hand; NumPartitions and
	// ReplicationFactor must then be -1.
	Assignments []ReplicaAssignment
	Configs     []ConfigValue
}

// ConfigValue is a config name with a value, nil meaning null.
type ConfigValue struct {
	Name  string
	Value *string
}

// CreateTopicsResponse answers per topic, in request order.
type CreateTopicsResponse struct {
	Topics []CreatableTopicResult
}

// CreatableTopicResult is a created topic (or one validateOnly would
// create), or the error that refused it.
type CreatableTopicResult struct {
	Name              string
	TopicID           metadata.TopicID
	Err               error
	NumPartitions     int32
	ReplicationFactor int16
	// Configs are the topic's overrides; the effective configs follow from
	// them and the broker config (config.EffectiveTopic).
	Configs map[string]string
}

// DeleteTopicsRequest is DeleteTopics (key 20): each topic by name, or by id
// when the name is empty.
type DeleteTopicsRequest struct {
	Topics []DeleteTopicState
}

// DeleteTopicState names one topic to delete.
type DeleteTopicState struct {
	Name    string
	TopicID metadata.TopicID
}

// DeleteTopicsResponse answers per topic, in request order.
type DeleteTopicsResponse struct {
	Topics []DeletableTopicResult
}

// DeletableTopicResult is one topic's answer, with both its name and id when
// it existed.
type DeletableTopicResult struct {
	Name    string
	TopicID metadata.TopicID
	Err     error
}

// CreatePartitionsRequest is CreatePartitions (key 37).
type CreatePartitionsRequest struct {
	Topics       []CreatePartitionsTopic
	ValidateOnly bool
}

// CreatePartitionsTopic grows a topic to Count partitions; Assignments, when
// not nil, places each new partition.
type CreatePartitionsTopic struct {
	Name        string
	Count       int32
	Assignments [][]int32
}

// CreatePartitionsResponse answers per topic, in request order.
type CreatePartitionsResponse struct {
	Topics []TopicResult
}

// TopicResult is a per-topic error (nil: success).
type TopicResult struct {
	Name string
	Err  error
}

// IncrementalAlterConfigsRequest is IncrementalAlterConfigs (key 44) for
// topics and brokers. The api layer refuses duplicate resources, null values
// and the resource types Gregor has none of before it gets here.
type IncrementalAlterConfigsRequest struct {
	Resources    []IncrementalAlterConfigsResource
	ValidateOnly bool
}

// IncrementalAlterConfigsResource is one resource's operations.
type IncrementalAlterConfigsResource struct {
	Type int8   // metadata.ResourceTopic or metadata.ResourceBroker
	Name string // topic name; broker id in decimal, "" for the cluster default
	Ops  []config.AlterEntry
}

// AlterConfigsRequest is the legacy AlterConfigs (key 33): each resource's
// dynamic configs become exactly Configs.
type AlterConfigsRequest struct {
	Resources    []AlterConfigsResource
	ValidateOnly bool
}

// AlterConfigsResource is one resource's new configs.
type AlterConfigsResource struct {
	Type    int8
	Name    string
	Configs []ConfigValue
}

// AlterConfigsResponse answers per resource, in request order.
type AlterConfigsResponse struct {
	Resources []ResourceResult
}

// ResourceResult is a per-resource error (nil: success).
type ResourceResult struct {
	Type int8
	Name string
	Err  error
}

// AllocateProducerIDsRequest is AllocateProducerIds (key 67).
type AllocateProducerIDsRequest struct {
	BrokerID    int32
	BrokerEpoch int64
}

// AllocateProducerIDsResponse is the block [Start, Start+Len).
type AllocateProducerIDsResponse struct {
	Start int64
	Len   int32
}

// Election types of ElectLeaders.
const (
	ElectionPreferred int8 = 0
	ElectionUnclean   int8 = 1
)

// ElectLeadersRequest is ElectLeaders (key 43); nil Topics means every
// partition.
type ElectLeadersRequest struct {
	ElectionType int8
	Topics       []TopicPartitions
}

// TopicPartitions names partitions of a topic.
type TopicPartitions struct {
	Topic      string
	Partitions []int32
}

// ElectLeadersResponse answers per partition. When every partition was
// asked for, partitions that already had the leader asked for are left out,
// as in Kafka.
type ElectLeadersResponse struct {
	Topics []TopicPartitionResults
}

// TopicPartitionResults is one topic's per-partition errors.
type TopicPartitionResults struct {
	Topic      string
	Partitions []PartitionResult
}

// PartitionResult is a per-partition error (nil: success).
type PartitionResult struct {
	Partition int32
	Err       error
}

// AlterPartitionReassignmentsRequest is AlterPartitionReassignments (key 45).
type AlterPartitionReassignmentsRequest struct {
	// AllowReplicationFactorChange is v1's field (KIP-860); v0 requests
	// allow it.
	AllowReplicationFactorChange bool
	Topics                       []ReassignableTopic
}

// ReassignableTopic is one topic's target assignments.
type ReassignableTopic struct {
	Name       string
	Partitions []ReassignablePartition
}

// ReassignablePartition moves a partition to Replicas; nil cancels the
// partition's reassignment.
type ReassignablePartition struct {
	Partition int32
	Replicas  []int32
}

// AlterPartitionReassignmentsResponse answers per partition.
type AlterPartitionReassignmentsResponse struct {
	Topics []TopicPartitionResults
}

// ListPartitionReassignmentsRequest is ListPartitionReassignments (key 46);
// nil Topics lists every reassigning partition.
type ListPartitionReassignmentsRequest struct {
	Topics []TopicPartitions
}

// ListPartitionReassignmentsResponse lists the ongoing reassignments.
type ListPartitionReassignmentsResponse struct {
	Topics []OngoingTopicReassignment
}

// OngoingTopicReassignment is one topic's ongoing reassignments.
type OngoingTopicReassignment struct {
	Name       string
	Partitions []OngoingPartitionReassignment
}

// OngoingPartitionReassignment is a partition being moved: Replicas holds
// both the target and the replicas still to remove.
type OngoingPartitionReassignment struct {
	Partition                  int32
	Replicas, Adding, Removing []int32
}

func (*BrokerRegistrationRequest) request()          {}
func (*BrokerHeartbeatRequest) request()             {}
func (*AlterPartitionRequest) request()              {}
func (*CreateTopicsRequest) request()                {}
func (*DeleteTopicsRequest) request()                {}
func (*CreatePartitionsRequest) request()            {}
func (*IncrementalAlterConfigsRequest) request()     {}
func (*AlterConfigsRequest) request()                {}
func (*AllocateProducerIDsRequest) request()         {}
func (*ElectLeadersRequest) request()                {}
func (*AlterPartitionReassignmentsRequest) request() {}
func (*ListPartitionReassignmentsRequest) request()  {}
