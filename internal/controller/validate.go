package controller

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/config"
)

// The checks of new topics and partitions, with Kafka's wording.

// validateNewTopic makes CreateTopics' checks that come before partitions,
// in Kafka's order: the name, that it does not exist, that it does not
// collide with an existing name ('.' and '_' are the same in metric names),
// null config values, the config values. names lists the existing topics
// in order; it is called only for a name that can collide.
func validateNewTopic(name string, exists bool, names func() []string, configs map[string]string, nulls []string, b *config.Broker) error {
	if err := ValidateTopicName(name); err != nil {
		return err
	}
	if exists {
		return fmt.Errorf("%w: Topic '%s' already exists.", kerr.TopicAlreadyExists, name)
	}
	// A name without '.' or '_' is its own collision key, so only an
	// existing topic of that very name could collide with it.
	if strings.ContainsAny(name, "._") {
		for _, n := range names() {
			if collisionKey(n) == collisionKey(name) {
				return fmt.Errorf("%w: Topic '%s' collides with existing topic: %s", kerr.InvalidTopicException, name, n)
			}
		}
	}
	if len(nulls) > 0 {
		return fmt.Errorf("%w: Null value not supported for topic configs: %s", kerr.InvalidConfig, strings.Join(nulls, ","))
	}
	if _, err := config.ResolveTopic(b, configs); err != nil {
		return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
	}
	return nil
}

// checkManualAssignmentShape: with a manual assignment, the replication
// factor and partition count must be left to it (-1).
func checkManualAssignmentShape(rf int16, partitions int32) error {
	if rf != -1 {
		return fmt.Errorf("%w: A manual partition assignment was specified, but replication factor was not set to -1.", kerr.InvalidRequest)
	}
	if partitions != -1 {
		return fmt.Errorf("%w: A manual partition assignment was specified, but numPartitions was not set to -1.", kerr.InvalidRequest)
	}
	return nil
}

// checkCounts: without a manual assignment, the replication factor and
// partition count are positive or -1 (the broker default).
func checkCounts(rf int16, partitions int32) error {
	if rf < -1 || rf == 0 {
		return fmt.Errorf("%w: Replication factor must be larger than 0, or -1 to use the default value.", kerr.InvalidReplicationFactor)
	}
	if partitions < -1 || partitions == 0 {
		return fmt.Errorf("%w: Number of partitions was set to an invalid non-positive value.", kerr.InvalidPartitions)
	}
	return nil
}

// checkReplicaAssignment is Kafka's validateManualPartitionAssignment: a
// non-empty list of distinct registered brokers, as many as rf when rf >= 0.
func checkReplicaAssignment(replicas []int32, rf int, registered func(int32) bool) error {
	if len(replicas) == 0 {
		return fmt.Errorf("%w: The manual partition assignment includes an empty replica list.", kerr.InvalidReplicaAssignment)
	}
	sorted := slices.Sorted(slices.Values(replicas))
	for i, id := range sorted {
		if !registered(id) {
			return fmt.Errorf("%w: The manual partition assignment includes broker %d, but no such broker is registered.", kerr.InvalidReplicaAssignment, id)
		}
		if i > 0 && sorted[i-1] == id {
			return fmt.Errorf("%w: The manual partition assignment includes the broker %d more than once.", kerr.InvalidReplicaAssignment, id)
		}
	}
	if rf >= 0 && len(sorted) != rf {
		return fmt.Errorf("%w: The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).",
			kerr.InvalidReplicaAssignment, len(sorted), rf)
	}
	return nil
}

// checkPartitionIncrease is CreatePartitions' check of the new count against
// the current one, and of the assignment count against the increase.
func checkPartitionIncrease(topic string, current, count int32, assignments int, manual bool) error {
	switch {
	case count == current:
		return fmt.Errorf("%w: Topic already has %d partition(s).", kerr.InvalidPartitions, current)
	case count < current:
		return fmt.Errorf("%w: The topic %s currently has %d partition(s); %d would not be an increase.", kerr.InvalidPartitions, topic, current, count)
	case manual && int32(assignments) != count-current:
		return fmt.Errorf("%w: Attempted to add %d additional partition(s), but only %d assignment(s) were specified.",
			kerr.InvalidReplicaAssignment, count-current, assignments)
	case count-current > MaxPartitionsPerRequest:
		return fmt.Errorf("%w: %d new partitions exceed the %d a single request may create", kerr.InvalidPartitions, count-current, MaxPartitionsPerRequest)
	}
	return nil
}

// checkPartitionLimit bounds the partitions one request may create.
func checkPartitionLimit(partitions int32) error {
	if partitions > MaxPartitionsPerRequest {
		return fmt.Errorf("%w: %d partitions exceed the %d a single request may create", kerr.InvalidPartitions, partitions, MaxPartitionsPerRequest)
	}
	return nil
}
