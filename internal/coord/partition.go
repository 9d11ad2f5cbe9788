package coord

import "unicode/utf16"

// PartitionFor is the internal-topic partition of a coordinator key (a
// group id in __consumer_offsets, a transactional id in
// __transaction_state), as Kafka computes it: Utils.abs(key.hashCode()) %
// partitions, where hashCode is Java's String.hashCode over UTF-16 code
// units and Utils.abs maps Integer.MIN_VALUE to 0.
func PartitionFor(key string, partitions int32) int32 {
	h := javaStringHashCode(key)
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
