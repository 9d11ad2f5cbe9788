package controller

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Names and limits the controller and the brokers' request handlers share.

// MaxTopicNameLength is Kafka's limit (249).
const MaxTopicNameLength = 249

// MaxPartitionsPerRequest bounds one create or expand, as Kafka's controller
// bounds one batch of metadata records.
const MaxPartitionsPerRequest = 10000

// ValidateTopicName applies Kafka's topic name rules (Topic.validate), with
// Kafka's wording.
func ValidateTopicName(name string) error {
	var reason string
	switch {
	case name == "":
		reason = "the empty string is not allowed"
	case name == ".":
		reason = "'.' is not allowed"
	case name == "..":
		reason = "'..' is not allowed"
	case len(name) > MaxTopicNameLength:
		reason = fmt.Sprintf("the length of '%s' is longer than the max allowed length %d", name, MaxTopicNameLength)
	default:
		for _, r := range name {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
				reason = fmt.Sprintf("'%s' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'", name)
				break
			}
		}
	}
	if reason != "" {
		return fmt.Errorf("%w: Topic name is invalid: %s", kerr.InvalidTopicException, reason)
	}
	return nil
}

// ClusterMetadataTopic is the metadata log's name, never created through the
// API (the internal topics clients see are topicpart.Internal's).
const ClusterMetadataTopic = "__cluster_metadata"

func collisionKey(name string) string { return strings.ReplaceAll(name, ".", "_") }

// ReplicaAssignment places one partition on brokers.
type ReplicaAssignment struct {
	Partition int32
	Replicas  []int32
}

// ProducerIDBlockSize is how many producer ids one allocation reserves, as
// Kafka's controller hands out blocks of 1000.
const ProducerIDBlockSize = 1000
