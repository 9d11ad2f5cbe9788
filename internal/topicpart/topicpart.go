// Package topicpart names a partition: Kafka's TopicPartition, the one type
// every layer uses for "partition P of topic T", and the partition directory
// name <topic>-<partition> that Kafka's log dirs use for it.
//
// It is a leaf package: it imports nothing of Gregor's, so storage, the
// cleaner, the coordinators and the API layer can all share it.
package topicpart

import (
	"cmp"
	"strconv"
	"strings"
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String is the partition directory name, <topic>-<partition>.
func (tp TopicPartition) String() string {
	return tp.Topic + "-" + strconv.FormatInt(int64(tp.Partition), 10)
}

// Compare orders by topic, then partition.
func Compare(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// ParseDirName splits a partition directory name "topic-partition". Topic
// names may hold '-', so the partition is what follows the last one.
func ParseDirName(name string) (TopicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return TopicPartition{}, false
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, true
}
