package group

import (
	"github.com/gregor-broker/gregor/internal/coord"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// OffsetsTopic is the internal topic holding committed offsets and group
// metadata.
const OffsetsTopic = topicpart.GroupMetadataTopic

// PartitionFor is the __consumer_offsets partition of a group
// (coord.PartitionFor).
func PartitionFor(groupID string, partitions int32) int32 {
	return coord.PartitionFor(groupID, partitions)
}
