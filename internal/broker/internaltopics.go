package broker

import (
	"fmt"
	"strings"

	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/txn"
)

// internalTopic is a topic the broker creates by itself on first use, as
// its broker configs describe it.
type internalTopic struct {
	spec    group.TopicSpec
	from    []string // the broker configs spec is derived from
	without string   // what cannot work without it
}

func internalTopics(b *config.Broker) []internalTopic {
	return []internalTopic{
		{group.OffsetsTopicSpec(b),
			[]string{"offsets.topic.num.partitions", "offsets.topic.replication.factor", "offsets.topic.segment.bytes", "min.insync.replicas"},
			"no consumer group could ever join, commit or fetch offsets"},
		{group.TopicSpec(txn.StateTopicSpec(b)),
			[]string{"transaction.state.log.num.partitions", "transaction.state.log.replication.factor",
				"transaction.state.log.segment.bytes", "transaction.state.log.min.isr"},
			"no transactional producer could ever start"},
	}
}

// checkInternalTopics refuses to start a broker whose configuration could
// never create, or never write to, an internal topic the metadata (im, as
// this node has it from its own log) does not hold yet: Kafka would start
// and then answer every group (or transaction) request
// COORDINATOR_NOT_AVAILABLE, or NOT_ENOUGH_REPLICAS, for ever. The checks
// are the controller's that do not depend on the cluster's state: the
// topic's configs, its partition count, a replication factor no cluster of
// this one's voters can reach (nodes). An
// internal topic that exists keeps the configs it was created with, as in
// Kafka, so the broker configs that derive it no longer matter.
func checkInternalTopics(b *config.Broker, im *metadata.Image, nodes int) error {
	for _, it := range internalTopics(b) {
		if im.Topic(it.spec.Name) != nil {
			continue
		}
		if err := checkCreatable(b, it.spec, nodes); err != nil {
			return fmt.Errorf("%s could never be created and written with %s (%v); %s. Fix these settings and start again",
				it.spec.Name, settings(b, it.from), err, it.without)
		}
	}
	return nil
}

func checkCreatable(b *config.Broker, spec group.TopicSpec, nodes int) error {
	if _, err := config.ResolveTopic(b, spec.Configs); err != nil {
		return err
	}
	rf := int(spec.ReplicationFactor)
	switch {
	case spec.Partitions < 1:
		return fmt.Errorf("number of partitions %d is not positive", spec.Partitions)
	case rf < 1:
		return fmt.Errorf("replication factor %d is not positive", rf)
	case rf > nodes:
		return fmt.Errorf("the replication factor of %d cannot be reached: the cluster has %d node(s)", rf, nodes)
	}
	return nil
}

// settings renders names with their effective values: "a=1, b=2".
func settings(b *config.Broker, names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		v, _, _ := b.Value(n)
		out[i] = n + "=" + v
	}
	return strings.Join(out, ", ")
}
