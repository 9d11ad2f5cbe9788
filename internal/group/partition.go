package group

import "unicode/utf16"

// OffsetsTopic is the internal topic holding committed offsets and group
// metadata.
const OffsetsTopic = "__consumer_offsets"

// PartitionFor is the __consumer_offsets partition of a group, as Kafka
// computes it: Utils.abs(groupId.hashCode()) % partitions, where hashCode is
// Java's String.hashCode over UTF-16 code units and Utils.abs maps
// Integer.MIN_VALUE to 0.
func PartitionFor(groupID string, partitions int32) int32 {
	h := javaStringHashCode(groupID)
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}

func javaStringHashCode(s string) int32 {
	var h int32
	for _, c := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(c)
	}
	return h
}
