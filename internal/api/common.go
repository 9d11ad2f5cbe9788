package api

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/replica"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// partition finds a hosted partition; a missing topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION, one in an offline log dir KAFKA_STORAGE_ERROR.
func (h *Handler) partition(topic string, p int32) (*replica.Partition, error) {
	part, ok := h.d.Replicas.Get(topicpart.TopicPartition{Topic: topic, Partition: p})
	if !ok {
		return nil, kerr.UnknownTopicOrPartition
	}
	if err := part.Offline(); err != nil {
		// Kafka's ReplicaManager answers an offline partition so.
		return nil, fmt.Errorf("%w: partition %s-%d is in an offline log dir: %w", kerr.KafkaStorageError, topic, p, err)
	}
	return part, nil
}

// topicName resolves a request's topic by id (v13+ Produce/Fetch) or name.
// An unknown id is UNKNOWN_TOPIC_ID.
func (h *Handler) topicName(name string, id [16]byte, byID bool) (string, error) {
	if !byID {
		return name, nil
	}
	t := h.d.Controller.Image().TopicByID(controller.TopicID(id))
	if t == nil {
		return "", kerr.UnknownTopicID
	}
	return t.Name, nil
}

// checkLeaderEpoch compares a client's current leader epoch with ours.
func checkLeaderEpoch(p *replica.Partition, clientEpoch int32) error {
	switch {
	case clientEpoch < 0 || clientEpoch == p.LeaderEpoch():
		return nil
	case clientEpoch < p.LeaderEpoch():
		return kerr.FencedLeaderEpoch
	default:
		return kerr.UnknownLeaderEpoch
	}
}

func strp(s string) *string { return &s }

// clientID is the request's client id ("" when null), for log lines.
func clientID(r *server.Request) string {
	if r.ClientID == nil {
		return ""
	}
	return *r.ClientID
}
