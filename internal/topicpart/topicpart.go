// Package topicpart names a partition: Kafka's TopicPartition, the one type
// every layer uses for "partition P of topic T", the partition directory
// name <topic>-<partition> that Kafka's log dirs use for it, and the name
// <topic>-<partition>.<unique id>-stray a log is moved to when the metadata
// does not know it (KIP-858), and <topic>-<partition>.<unique id>-delete, the
// name a deleted partition's directory takes until its files are removed;
// ByTopic groups partitions under their topics, as Kafka's messages list
// them; Internal tells Kafka's internal topics.
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

// Topic is one topic's partitions, the shape of Kafka's requests and
// records that list partitions under their topic.
type Topic struct {
	Topic      string
	Partitions []int32
}

// ByTopic groups tps under their topics, in the order each topic first
// appears, each topic's partitions in their order in tps.
func ByTopic(tps []TopicPartition) []Topic {
	var out []Topic
	at := map[string]int{}
	for _, tp := range tps {
		i, ok := at[tp.Topic]
		if !ok {
			i = len(out)
			at[tp.Topic] = i
			out = append(out, Topic{Topic: tp.Topic})
		}
		out[i].Partitions = append(out[i].Partitions, tp.Partition)
	}
	return out
}

// Kafka's internal topics: they are marked internal whoever creates them
// (Kafka's Topic.isInternal), so clients cannot produce to them; their
// leaders' appends are the coordinators'.
const (
	GroupMetadataTopic    = "__consumer_offsets"
	TransactionStateTopic = "__transaction_state"
	ShareGroupStateTopic  = "__share_group_state"
)

// Internal reports whether topic is one of Kafka's internal topics.
func Internal(topic string) bool {
	return topic == GroupMetadataTopic || topic == TransactionStateTopic || topic == ShareGroupStateTopic
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

// StraySuffix ends the directory name of a stray log.
const StraySuffix = "-stray"

// maxDirName is the longest file name most filesystems accept.
const maxDirName = 255

// DeleteSuffix ends the directory name of a deleted partition's log whose
// files are being removed.
const DeleteSuffix = "-delete"

// StrayDirName is Kafka's name for tp's log set aside as stray:
// "<topic>-<partition>.<uniqueID>-stray", the topic cut short when the whole
// name would pass 255 bytes (LocalLog.logStrayDirName). uniqueID is a UUID's
// 32 hex digits.
func StrayDirName(tp TopicPartition, uniqueID string) string {
	return dirNameWithSuffix(tp, uniqueID, StraySuffix)
}

// DeleteDirName is Kafka's name for tp's log while its deletion removes its
// files: "<topic>-<partition>.<uniqueID>-delete", cut short as StrayDirName
// is (LocalLog.logDeleteDirName).
func DeleteDirName(tp TopicPartition, uniqueID string) string {
	return dirNameWithSuffix(tp, uniqueID, DeleteSuffix)
}

func dirNameWithSuffix(tp TopicPartition, uniqueID, kind string) string {
	suffix := "-" + strconv.FormatInt(int64(tp.Partition), 10) + "." + uniqueID + kind
	topic := tp.Topic
	if n := maxDirName - len(suffix); len(topic) > n {
		topic = topic[:max(n, 0)]
	}
	return topic + suffix
}

// ParseStrayDirName reads the partition out of a stray log's directory name
// ("<topic>-<partition>.<id>-stray"); the topic is the one the name holds,
// which is cut short for very long topic names.
func ParseStrayDirName(name string) (TopicPartition, bool) {
	return parseDirNameWithSuffix(name, StraySuffix)
}

// ParseDeleteDirName reads the partition out of a deleted log's directory
// name ("<topic>-<partition>.<id>-delete"), as ParseStrayDirName does.
func ParseDeleteDirName(name string) (TopicPartition, bool) {
	return parseDirNameWithSuffix(name, DeleteSuffix)
}

func parseDirNameWithSuffix(name, kind string) (TopicPartition, bool) {
	rest, ok := strings.CutSuffix(name, kind)
	if !ok {
		return TopicPartition{}, false
	}
	dot := strings.LastIndexByte(rest, '.')
	if dot <= 0 || dot == len(rest)-1 || strings.ContainsAny(rest, " \t\n") {
		return TopicPartition{}, false
	}
	return ParseDirName(rest[:dot])
}
