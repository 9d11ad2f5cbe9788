package replica

import (
	"context"
	"time"
)

// LeaderEndpoint is how a follower reaches the broker leading its partitions
// (Kafka's LeaderEndPoint): the api layer implements it over the Kafka wire
// (Fetch v17/v18, OffsetForLeaderEpoch v4, ListOffsets with a replica id),
// tests with anything. Errors for the whole request come back as error;
// per-partition errors are kerr errors in the answers. One fetcher uses an
// endpoint, one call at a time; the Records of a Fetch answer are valid
// only until its next Fetch (the endpoint may read every answer into the
// same buffer), so they are appended before the next round and not kept.
type LeaderEndpoint interface {
	Fetch(ctx context.Context, req *FetchRequest) ([]FetchedPartition, error)
	OffsetForLeaderEpoch(ctx context.Context, replicaID int32, parts []EpochQuery) ([]EpochAnswer, error)
	// ListOffset is ListOffsets with this broker's replica id, timestamp
	// -2 (earliest) or -1 (latest: the log end offset).
	ListOffset(ctx context.Context, replicaID int32, p PartitionKey, currentLeaderEpoch int32, timestamp int64) (int64, error)
	Close()
}

// PartitionKey names a partition on the wire: by topic id, with its name
// for protocol versions that need it.
type PartitionKey struct {
	Topic     string
	TopicID   [16]byte
	Partition int32
}

// FetchRequest is a follower's Fetch.
type FetchRequest struct {
	ReplicaID   int32
	BrokerEpoch int64
	MaxWait     time.Duration
	MinBytes    int32
	MaxBytes    int32
	Partitions  []FetchPartition
}

// FetchPartition is one partition of a follower's Fetch.
type FetchPartition struct {
	Key                PartitionKey
	FetchOffset        int64
	LogStartOffset     int64
	LastFetchedEpoch   int32
	CurrentLeaderEpoch int32
	MaxBytes           int32
}

// FetchedPartition is one partition of the leader's answer.
type FetchedPartition struct {
	Key            PartitionKey
	Err            error
	HighWatermark  int64
	LogStartOffset int64
	// Diverging is set when the follower's log diverged from the leader's
	// at LastFetchedEpoch (no records then).
	Diverging *EpochEndOffset
	Records   []byte
}

// EpochQuery asks where a leader epoch ends (OffsetForLeaderEpoch).
type EpochQuery struct {
	Key                PartitionKey
	CurrentLeaderEpoch int32
	LeaderEpoch        int32
}

// EpochAnswer is the leader's answer to an EpochQuery.
type EpochAnswer struct {
	Key PartitionKey
	Err error
	EpochEndOffset
}
