package admin

import (
	"context"
	"errors"
	"time"

	"github.com/gregor-broker/gregor/internal/cleaner"
)

// ErrNotFound is returned by a Source for a topic, partition or group that
// does not exist; the JSON API answers it with 404 and the console with a
// "not found" page.
var ErrNotFound = errors.New("not found")

// ErrUnavailable is returned by a Source for state that exists but cannot be
// read for a moment (e.g. consumer groups while __consumer_offsets loads);
// the JSON API and the console answer it with 503 and Retry-After. Views that only decorate
// themselves with such state (lag on the topics list) leave it out instead.
var ErrUnavailable = errors.New("temporarily unavailable")

// Source is the broker state the JSON API (/v1/) and the web console read.
// Package admin/source implements it over the broker's in-process state (no
// Kafka round trips); every method returns a consistent-enough snapshot taken at call
// time and never blocks on a long operation. Implementations must be safe
// for concurrent use.
type Source interface {
	// Cluster describes this broker and its log dirs.
	Cluster(ctx context.Context) (ClusterView, error)
	// Topics lists every topic, internal ones included, sorted by name.
	Topics(ctx context.Context) ([]TopicSummary, error)
	// Topic describes one topic with its partitions and configs.
	Topic(ctx context.Context, name string) (TopicView, error)
	// Partition describes one partition in full: offsets, segments,
	// replicas, cleaner and retention state, groups' committed offsets.
	Partition(ctx context.Context, topic string, partition int32) (PartitionView, error)
	// Cleaner is one partition's log-cleaner status alone (what Partition
	// puts in PartitionView.Cleaner, without the rest of the view), for
	// pages that list many partitions; nil when the cleaner has nothing to
	// say about it.
	Cleaner(ctx context.Context, topic string, partition int32) (*cleaner.PartitionStatus, error)
	// Groups lists every consumer group, sorted by id.
	Groups(ctx context.Context) ([]GroupSummary, error)
	// Group describes one group: members, assignments, offsets and lag.
	Group(ctx context.Context, id string) (GroupView, error)
	// Transactions lists every partition whose last stable offset a
	// transaction holds back, each holder classified by the
	// hanging-transaction detector, sorted by topic and partition.
	Transactions(ctx context.Context) ([]HeldPartition, error)
	// OngoingTransactions lists the transactions every transaction
	// coordinator it can ask has under way, by transactional id.
	OngoingTransactions(ctx context.Context) (OngoingView, error)
	// AutoAbort is the automatic abort of orphaned transactions.
	AutoAbort(ctx context.Context) (AutoAbortView, error)
	// Records reads a bounded page of records from one partition, up to
	// the high watermark (read_uncommitted) or the LSO (read_committed).
	// The scan stops at q.MaxRecords, q.MaxBytes, the bound, or when ctx
	// ends, and says which in RecordPage.StopReason.
	Records(ctx context.Context, q RecordQuery) (RecordPage, error)
}

// ClusterView is the overview of this broker and the cluster it is in.
type ClusterView struct {
	ClusterID string `json:"cluster_id"`
	NodeID    int32  `json:"node_id"`
	// ControllerID is the active controller (-1: none has activated yet,
	// or this node has not heard).
	ControllerID int32     `json:"controller_id"`
	Version      string    `json:"version"`
	StartedAt    time.Time `json:"started_at"`
	// Listeners maps a listener name to its advertised host:port
	// (e.g. "PLAINTEXT" → "127.0.0.1:9092"); AdminAddr is this listener.
	Listeners map[string]string `json:"listeners"`
	AdminAddr string            `json:"admin_addr"`
	// Brokers are every broker registered in the metadata, fenced ones
	// included, by node id.
	Brokers []BrokerView `json:"brokers"`
	// Quorum is the metadata quorum; nil when the source has none to show.
	Quorum  *QuorumView  `json:"quorum,omitempty"`
	LogDirs []LogDirView `json:"log_dirs"`
	// MetadataDir is the dir holding the cluster metadata.
	MetadataDir string `json:"metadata_dir"`
	// StrayLogs counts the stray logs of every log dir (LogDirView.Strays).
	StrayLogs int `json:"stray_logs"`

	Topics          int `json:"topics"`
	Partitions      int `json:"partitions"`
	UnderReplicated int `json:"under_replicated_partitions"`
	UnderMinISR     int `json:"under_min_isr_partitions"`
	Offline         int `json:"offline_partitions"`
	// UncleanElections are every partition's unacknowledged unclean or
	// last-known-leader election, cluster-wide, by topic and partition:
	// possible data loss an operator has not acknowledged yet.
	UncleanElections []UncleanElectionView `json:"unclean_elections"`
	Groups           int                   `json:"groups"`
	LogBytes         int64                 `json:"log_bytes"`
}

// Broker states of BrokerView.State, as Kafka's controller keeps them.
const (
	BrokerUnfenced           = "unfenced"            // serving
	BrokerFenced             = "fenced"              // not serving: starting up, stopped, or its session expired
	BrokerControlledShutdown = "controlled-shutdown" // shutting down, not fenced yet: its leaderships move away
)

// BrokerView is one broker of the cluster as the metadata has it.
type BrokerView struct {
	NodeID int32 `json:"node_id"`
	// Host and Port are its endpoint on the client listener this broker
	// serves (empty if it registered none of that name).
	Host string `json:"host"`
	Port int32  `json:"port"`
	Rack string `json:"rack,omitempty"`
	// State is BrokerUnfenced, BrokerFenced or BrokerControlledShutdown.
	State string `json:"state"`
	// Epoch is its broker epoch: the metadata log index of its latest
	// registration.
	Epoch int64 `json:"epoch"`
	// IncarnationID is its process's registration id (Kafka's Uuid form).
	IncarnationID string `json:"incarnation_id"`
	// Endpoints are every listener it registered, name → host:port.
	Endpoints map[string]string `json:"endpoints"`
	// Controller: it is the active controller.
	Controller bool `json:"controller"`
}

// QuorumView is the metadata quorum (Kafka's DescribeQuorum): the leader's
// account of every voter's log, and this node's own view of the log.
type QuorumView struct {
	// LeaderID is the raft leader, the active controller (-1: none);
	// LeaderEpoch its term; HighWatermark the commit index: every entry
	// below it is on a majority of the voters.
	LeaderID      int32       `json:"leader_id"`
	LeaderEpoch   int64       `json:"leader_epoch"`
	HighWatermark int64       `json:"high_watermark"`
	Voters        []VoterView `json:"voters"`
	// Error says why the leader's account could not be had (no leader,
	// leader unreachable); the voters are then listed without their logs.
	Error string `json:"error,omitempty"`
	// Local is this node's own state in the quorum.
	Local LocalQuorumView `json:"local"`
}

// VoterView is one voter of the metadata quorum, as the leader sees it.
type VoterView struct {
	NodeID int32 `json:"node_id"`
	// DirectoryID is its metadata directory's id (Kafka's Uuid form),
	// "" if unknown to the leader.
	DirectoryID string `json:"directory_id,omitempty"`
	// Endpoint is its CONTROLLER listener.
	Endpoint string `json:"endpoint"`
	// LogEndOffset is the raft index its log is known to reach, Lag how far
	// that is behind the leader's (0 for the leader, -1 unknown).
	LogEndOffset int64 `json:"log_end_offset"`
	Lag          int64 `json:"lag"`
	// LastFetch is when the leader last heard from it, LastCaughtUp when
	// its log last reached the leader's end (nil: never, or unknown).
	LastFetch    *time.Time `json:"last_fetch,omitempty"`
	LastCaughtUp *time.Time `json:"last_caught_up,omitempty"`
}

// LocalQuorumView is this node's own state in the metadata quorum.
type LocalQuorumView struct {
	// Role is leader, follower, candidate or pre-candidate.
	Role string `json:"role"`
	Term uint64 `json:"term"`
	// CommitIndex is the highest index it knows committed, AppliedIndex the
	// highest its metadata image holds, LastIndex the end of its log,
	// SnapshotIndex its newest snapshot's.
	CommitIndex   uint64 `json:"commit_index"`
	AppliedIndex  uint64 `json:"applied_index"`
	LastIndex     uint64 `json:"last_index"`
	SnapshotIndex uint64 `json:"snapshot_index"`
	// CaughtUpAt is when this node last confirmed it had applied and
	// published everything the log had committed (its /readyz "metadata"
	// condition), CaughtUpIndex that commit index.
	CaughtUpAt    *time.Time `json:"caught_up_at,omitempty"`
	CaughtUpIndex uint64     `json:"caught_up_index"`
}

// LogDirView is one log.dirs entry: the filesystem it is on and the
// partitions it holds.
type LogDirView struct {
	Path       string `json:"path"`
	TotalBytes int64  `json:"total_bytes"`
	FreeBytes  int64  `json:"free_bytes"`
	LogBytes   int64  `json:"log_bytes"`
	Partitions int    `json:"partitions"`
	// State is "online", "full" (produce refused for want of space; see
	// MinFreeBytes) or "offline" (a write or fsync failed; Error says
	// which).
	State        string `json:"state"`
	MinFreeBytes int64  `json:"min_free_bytes"`
	Error        string `json:"error,omitempty"`
	// Strays are partition logs found at start that the metadata does not
	// know, set aside as <topic>-<partition>.<id>-stray: kept on disk, not
	// served, never deleted by the broker.
	Strays []StrayLogView `json:"stray_logs"`
}

// StrayLogView is one stray log.
type StrayLogView struct {
	Name      string `json:"name"` // its directory name in the log dir
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	SizeBytes int64  `json:"size_bytes"` // when the broker started
}

// Log dir states of LogDirView.State.
const (
	LogDirOnline  = "online"
	LogDirFull    = "full"
	LogDirOffline = "offline"
)

// TopicSummary is one row of the topics list.
type TopicSummary struct {
	Name              string `json:"name"`
	ID                string `json:"id"` // Kafka's base64 (URL-safe, unpadded) topic id
	Internal          bool   `json:"internal"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	CleanupPolicy     string `json:"cleanup_policy"`
	SizeBytes         int64  `json:"size_bytes"`
	// Records is the sum over partitions of HW − log start offset (an upper
	// bound on a compacted topic, where offsets have gaps).
	Records         int64 `json:"records"`
	UnderReplicated int   `json:"under_replicated_partitions"`
	// ConsumerLag is the lag of each group with offsets committed on this
	// topic, summed over its partitions.
	ConsumerLag []GroupLag `json:"consumer_lag"`
}

// GroupLag is one group's lag on a topic or partition.
type GroupLag struct {
	Group string `json:"group"`
	Lag   int64  `json:"lag"`
}

// TopicView is one topic in full.
type TopicView struct {
	TopicSummary
	Configs         []ConfigView       `json:"configs"`
	PartitionDetail []PartitionSummary `json:"partitions_detail"`
}

// ConfigView is one effective topic or broker config, as DescribeConfigs
// reports it.
type ConfigView struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Source    string `json:"source"` // Kafka's names: DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, …
	ReadOnly  bool   `json:"read_only"`
	Sensitive bool   `json:"sensitive"`
}

// Offsets are a partition's four offsets (plus the recovery point), with
// LogStart ≤ LSO ≤ HW ≤ LEO.
type Offsets struct {
	LogStart      int64 `json:"log_start_offset"`
	LSO           int64 `json:"last_stable_offset"`
	HW            int64 `json:"high_watermark"`
	LEO           int64 `json:"log_end_offset"`
	RecoveryPoint int64 `json:"recovery_point"`
}

// PartitionSummary is one row of a topic's partition table.
type PartitionSummary struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	Offsets
	SizeBytes  int64   `json:"size_bytes"`
	Segments   int     `json:"segments"`
	Compacted  bool    `json:"compacted"`
	DirtyRatio float64 `json:"dirty_ratio"` // 0 unless compacted
	// UncleanElection is the partition's unacknowledged unclean or
	// last-known-leader election, nil when there is none.
	UncleanElection *UncleanElectionView `json:"unclean_election,omitempty"`
}

// PartitionView is one partition in full: everything the offsets bar draws.
type PartitionView struct {
	Topic     string `json:"topic"`
	TopicID   string `json:"topic_id"`
	Partition int32  `json:"partition"`
	Dir       string `json:"dir"`
	PartitionSummary
	// ReplicaState is each replica's view: its LEO and whether it is in the
	// ISR (on a single node, the leader alone).
	ReplicaState []ReplicaView `json:"replica_state"`
	// SegmentList is every segment, oldest first; the last is the active one.
	SegmentList []SegmentView `json:"segment_list"`
	// Cleaner is the cleaner's status; nil when the topic is not compacted
	// and the cleaner has nothing to say.
	Cleaner   *cleaner.PartitionStatus `json:"cleaner,omitempty"`
	Retention RetentionView            `json:"retention"`
	// Groups are the consumer groups with an offset committed on this
	// partition: their committed offset and lag (HW − committed).
	Groups []GroupOffset `json:"groups"`
	// Configs that shape this partition's log (segment.bytes, retention.*,
	// cleanup.policy, min.cleanable.dirty.ratio, …), effective values.
	Configs []ConfigView `json:"configs"`
	// Transactions hold the last stable offset back: every transaction open
	// on the partition, or decided with its marker not yet under the high
	// watermark, earliest first, with the detector's verdict.
	Transactions []TransactionView `json:"transactions"`
}

// TransactionView is one transaction holding a partition's last stable
// offset back, classified by the hanging-transaction detector: open,
// timing_out, completing, unreplicated, orphan (hanging: no coordinator will
// ever end it) or unknown (the coordinator cannot be asked).
type TransactionView struct {
	ProducerID       int64 `json:"producer_id"`
	ProducerEpoch    int16 `json:"producer_epoch"`
	CoordinatorEpoch int32 `json:"coordinator_epoch"`
	FirstOffset      int64 `json:"first_offset"`
	// StartMs is the broker's clock at the transaction's first batch here
	// (-1 when it began before the log was loaded); AgeMs counts from it
	// (from the producer's last batch timestamp when it is unknown).
	StartMs         int64  `json:"start_ms"`
	AgeMs           int64  `json:"age_ms"`
	Class           string `json:"class"`
	TransactionalID string `json:"transactional_id,omitempty"`
	State           string `json:"state,omitempty"` // the coordinator's
	TimeoutMs       int32  `json:"timeout_ms,omitempty"`
	Explanation     string `json:"explanation"`
	// Action is what ends it when someone must act.
	Action string `json:"action,omitempty"`
}

// HeldPartition is a partition whose last stable offset transactions hold
// back (HW − LSO records are invisible to read_committed consumers).
type HeldPartition struct {
	Topic            string            `json:"topic"`
	Partition        int32             `json:"partition"`
	LastStableOffset int64             `json:"last_stable_offset"`
	HighWatermark    int64             `json:"high_watermark"`
	Transactions     []TransactionView `json:"transactions"`
}

// ReplicaView is one replica's state as the leader sees it.
type ReplicaView struct {
	BrokerID int32 `json:"broker_id"`
	// LogEndOffset is -1 while the leader has no fetch from it yet.
	LogEndOffset   int64 `json:"log_end_offset"`
	InISR          bool  `json:"in_isr"`
	Leader         bool  `json:"leader"`
	LastCaughtUpMs int64 `json:"last_caught_up_ms"` // unix ms; the leader: now
	// LagOffsets is how far its log end is behind the leader's; LagMs how
	// long ago it was last caught up (replica.lag.time.max.ms counts it).
	LagOffsets int64 `json:"lag_offsets"`
	LagMs      int64 `json:"lag_ms"`
	// OutOfISR is why it left the ISR (nil for members, or unknown).
	OutOfISR *ISRDeparture `json:"out_of_isr,omitempty"`
	// WaitsFor are the conditions it must meet to rejoin the ISR.
	WaitsFor []string `json:"waits_for,omitempty"`
}

// ISRDeparture is why and when a replica left the ISR.
type ISRDeparture struct {
	// Cause: lagged, fenced, controlled-shutdown, ...
	Cause  string `json:"cause"`
	Detail string `json:"detail"`
	AtMs   int64  `json:"at_ms"`
}

// SegmentView is one segment file of a partition.
type SegmentView struct {
	BaseOffset int64 `json:"base_offset"`
	// EndOffset is one past the last offset the segment may hold: the next
	// segment's base offset, or the LEO for the active segment.
	EndOffset          int64 `json:"end_offset"`
	SizeBytes          int64 `json:"size_bytes"`
	LargestTimestampMs int64 `json:"largest_timestamp_ms"`
	Active             bool  `json:"active"`
	// Clean: wholly below the cleaner point (compacted topics only).
	Clean bool `json:"clean"`
	// DeleteNext: the next retention pass would remove it.
	DeleteNext bool `json:"delete_next"`
}

// RetentionView says what retention will delete next and when — the same
// rule DeleteOldSegments applies.
type RetentionView struct {
	CleanupPolicy  string `json:"cleanup_policy"`
	RetentionMs    int64  `json:"retention_ms"`
	RetentionBytes int64  `json:"retention_bytes"`
	// CheckIntervalMs is log.retention.check.interval.ms; a deletion that is
	// due happens at the next check.
	CheckIntervalMs int64 `json:"check_interval_ms"`
	// Next is the prefix of segments the next retention pass would delete,
	// or that would be deleted first once time passes; nil when none ever
	// will without more data (e.g. the log is empty). It may end with the
	// active segment: the pass then rolls a new empty one at the log end
	// offset first, and ToOffset is the log end offset.
	Next *RetentionNext `json:"next,omitempty"`
	// Why is a plain sentence, e.g. "the active segment (offsets 0–9,
	// largest timestamp …) passes retention.ms=604800000 at …; the
	// retention check after that deletes 1 segment (1024 bytes), rolling the
	// active segment first, …".
	Why string `json:"why"`
}

// RetentionNext is a range retention will delete.
type RetentionNext struct {
	FromOffset int64  `json:"from_offset"`
	ToOffset   int64  `json:"to_offset"` // exclusive: the new log start offset
	Segments   int    `json:"segments"`
	Bytes      int64  `json:"bytes"`
	Reason     string `json:"reason"` // "retention.ms", "retention.bytes", "log start offset"
	// DueMs is the unix ms at which the range becomes deletable (≤ now: at
	// the next check).
	DueMs int64 `json:"due_ms"`
}

// GroupSummary is one row of the groups list.
type GroupSummary struct {
	ID           string   `json:"id"`
	State        string   `json:"state"` // Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
	ProtocolType string   `json:"protocol_type"`
	Protocol     string   `json:"protocol"`
	Members      int      `json:"members"`
	Coordinator  int32    `json:"coordinator"`
	Topics       []string `json:"topics"`
	// Lag is HW − committed summed over every committed partition.
	Lag int64 `json:"lag"`
}

// GroupView is one group in full.
type GroupView struct {
	GroupSummary
	MemberList []MemberView  `json:"member_list"`
	Offsets    []GroupOffset `json:"offsets"`
}

// MemberView is one group member and its assignment.
type MemberView struct {
	MemberID   string            `json:"member_id"`
	InstanceID string            `json:"instance_id,omitempty"`
	ClientID   string            `json:"client_id"`
	ClientHost string            `json:"client_host"`
	Assignment []TopicPartitions `json:"assignment"`
}

// TopicPartitions is a topic and some of its partitions.
type TopicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// GroupOffset is one committed offset of a group and the lag behind it.
type GroupOffset struct {
	Group       string `json:"group"`
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Committed   int64  `json:"committed"`
	LeaderEpoch int32  `json:"leader_epoch"`
	Metadata    string `json:"metadata,omitempty"`
	HW          int64  `json:"high_watermark"`
	Lag         int64  `json:"lag"`
}

// RecordQuery asks for a page of records. Exactly one of Offset and
// TimestampMs is used: TimestampMs when ≥ 0 (the first record with a
// timestamp ≥ it, as ListOffsets finds it), else Offset (clamped up to the
// log start offset).
type RecordQuery struct {
	Topic       string
	Partition   int32
	Offset      int64
	TimestampMs int64
	MaxRecords  int // capped at 1000; ≤ 0 means 50
	// MaxBytes bounds the bytes of batches scanned and the bytes of keys,
	// values and headers returned (a compressed batch may hold far more
	// than it takes on disk; the first record is returned whatever its
	// size); capped at 4 MiB, ≤ 0 means 1 MiB.
	MaxBytes      int
	ReadCommitted bool
}

// RecordPage is what a scan found.
type RecordPage struct {
	Topic        string       `json:"topic"`
	Partition    int32        `json:"partition"`
	StartOffset  int64        `json:"start_offset"` // where the scan began
	NextOffset   int64        `json:"next_offset"`  // where the next page begins
	Bound        int64        `json:"bound"`        // HW or LSO the scan stopped at
	Records      []RecordView `json:"records"`
	ScannedBytes int64        `json:"scanned_bytes"`
	// StopReason: "max_records", "max_bytes", "end" (reached the bound),
	// "canceled" (the client went away or the deadline passed).
	StopReason string `json:"stop_reason"`
}

// RecordView is one record. Key and Value are the bytes as text when they
// are valid UTF-8, else base64 with KeyEncoding/ValueEncoding "base64";
// a null key or value (a tombstone) has *Null true.
type RecordView struct {
	Offset        int64        `json:"offset"`
	TimestampMs   int64        `json:"timestamp_ms"`
	TimestampType string       `json:"timestamp_type"` // CreateTime or LogAppendTime
	LeaderEpoch   int32        `json:"leader_epoch"`
	ProducerID    int64        `json:"producer_id"`
	Transactional bool         `json:"transactional"`
	Compression   string       `json:"compression"`
	KeyNull       bool         `json:"key_null"`
	Key           string       `json:"key"`
	KeyEncoding   string       `json:"key_encoding"` // "utf8" or "base64"
	ValueNull     bool         `json:"value_null"`
	Value         string       `json:"value"`
	ValueEncoding string       `json:"value_encoding"`
	Headers       []HeaderView `json:"headers"`
}

// HeaderView is one record header, encoded as RecordView's key is.
type HeaderView struct {
	Key           string `json:"key"`
	ValueNull     bool   `json:"value_null"`
	Value         string `json:"value"`
	ValueEncoding string `json:"value_encoding"`
}
