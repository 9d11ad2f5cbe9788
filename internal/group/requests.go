package group

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The coordinator's requests and results are Gregor's own types, so that
// protocol churn stays in internal/api. Errors are Kafka errors (kerr),
// usually wrapped with the message Kafka would log. Byte slices of requests
// may alias the connection's read buffer: the shard copies what it keeps.
// Byte slices of results are shared with the shard and must not be modified.

// JoinRequest is a JoinGroup.
type JoinRequest struct {
	Group              string
	MemberID           string
	InstanceID         *string
	ClientID           string
	ClientHost         string
	SessionTimeoutMs   int32
	RebalanceTimeoutMs int32
	ProtocolType       string
	Protocols          []Protocol
	// RequireKnownMemberID: JoinGroup v4+ (a new dynamic member is first
	// given its id with MEMBER_ID_REQUIRED).
	RequireKnownMemberID bool
	// SupportsSkipAssignment: JoinGroup v9+ (KIP-814).
	SupportsSkipAssignment bool
	Reason                 string
}

// JoinMember is one member listed to the leader.
type JoinMember struct {
	MemberID   string
	InstanceID *string
	Metadata   []byte
}

// JoinResult answers a JoinGroup.
type JoinResult struct {
	Err            error
	Generation     int32
	ProtocolType   *string
	Protocol       *string
	Leader         string
	MemberID       string
	SkipAssignment bool
	Members        []JoinMember
}

// SyncRequest is a SyncGroup.
type SyncRequest struct {
	Group        string
	Generation   int32
	MemberID     string
	InstanceID   *string
	ProtocolType *string // v5+
	Protocol     *string // v5+
	Assignments  []Assignment
}

// Assignment is the leader's assignment for one member.
type Assignment struct {
	MemberID   string
	Assignment []byte
}

// SyncResult answers a SyncGroup.
type SyncResult struct {
	Err          error
	ProtocolType *string
	Protocol     *string
	Assignment   []byte
}

// HeartbeatRequest is a Heartbeat.
type HeartbeatRequest struct {
	Group      string
	Generation int32
	MemberID   string
	InstanceID *string
}

// LeaveRequest is a LeaveGroup (v0-v2 carry one member).
type LeaveRequest struct {
	Group   string
	Members []LeaveMember
}

// LeaveMember is one leaving member.
type LeaveMember struct {
	MemberID   string
	InstanceID *string
	Reason     string
}

// LeaveResult answers a LeaveGroup: Err for the group, Members per member.
type LeaveResult struct {
	Err     error
	Members []error
}

// CommitRequest is an OffsetCommit (generation -1 and no member: a commit
// from outside group management).
type CommitRequest struct {
	Group      string
	Generation int32
	MemberID   string
	InstanceID *string
	// RetentionMs is OffsetCommit v2-v4's retention time; -1 for the broker's
	// offsets.retention.minutes.
	RetentionMs int64
	// ReportUnknownGroup: OffsetCommit v9+ answers GROUP_ID_NOT_FOUND for an
	// unknown group (older versions ILLEGAL_GENERATION).
	ReportUnknownGroup bool
	Topics             []CommitTopic
}

// CommitTopic is one topic of a commit.
type CommitTopic struct {
	Topic      string
	Partitions []CommitPartition
}

// CommitPartition is one partition of a commit.
type CommitPartition struct {
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    *string
}

// CommitResult answers an OffsetCommit: Errs[t][p] for the request's topic t
// and partition p.
type CommitResult struct {
	Errs [][]error
}

// FetchRequest is one group of an OffsetFetch. Nil Topics means every
// committed offset of the group.
type FetchRequest struct {
	Group         string
	Topics        []TopicPartitions
	RequireStable bool
}

// TopicPartitions names partitions of a topic.
type TopicPartitions struct {
	Topic      string
	Partitions []int32
}

// FetchResult answers one group of an OffsetFetch.
type FetchResult struct {
	Err    error
	Topics []FetchTopic
}

// FetchTopic is one topic of a FetchResult.
type FetchTopic struct {
	Topic      string
	Partitions []FetchPartition
}

// FetchPartition is one committed offset; Offset is -1 when there is none.
type FetchPartition struct {
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	Err         error
}

// OffsetDeleteResult answers an OffsetDelete: Err for the group, Errs[t][p]
// per requested partition.
type OffsetDeleteResult struct {
	Err  error
	Errs [][]error
}

// ListFilter filters ListGroups (case-insensitive; empty matches all).
type ListFilter struct {
	States []string
	Types  []string
}

// Listing is one group of ListGroups.
type Listing struct {
	Group        string
	ProtocolType string
	State        string
	Type         string
}

// Description is one group of DescribeGroups. Err is GROUP_ID_NOT_FOUND for
// an unknown group.
type Description struct {
	Err          error
	Group        string
	State        string
	ProtocolType string
	Protocol     string
	Members      []MemberDescription
}

// MemberDescription is one member of a Description.
type MemberDescription struct {
	MemberID   string
	InstanceID *string
	ClientID   string
	ClientHost string
	Metadata   []byte
	Assignment []byte
}

func errUnknownMember(id string) error {
	return fmt.Errorf("%w: member %q is not a member of the group", kerr.UnknownMemberID, id)
}

func errFenced(instanceID, memberID string) error {
	return fmt.Errorf("%w: static member %q with member id %q has been fenced by a newer instance", kerr.FencedInstanceID, instanceID, memberID)
}

func errIllegalGeneration(got, want int32) error {
	return fmt.Errorf("%w: generation %d is not the group's generation %d", kerr.IllegalGeneration, got, want)
}

func errGroupNotFound(id string) error {
	return fmt.Errorf("%w: group %s not found", kerr.GroupIDNotFound, id)
}
