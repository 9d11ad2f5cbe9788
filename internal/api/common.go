package api

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/replica"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// partition finds a partition this broker leads. One the metadata does not
// have is UNKNOWN_TOPIC_OR_PARTITION; one it has that another broker leads,
// or nobody, is NOT_LEADER_OR_FOLLOWER (clients then refresh their
// metadata; KIP-951 answers carry the leader, see leaderHint); one in an
// offline log dir is KAFKA_STORAGE_ERROR.
func (h *Handler) partition(topic string, p int32) (*replica.Partition, error) {
	part, err := h.localPartition(topic, p)
	if err != nil {
		return nil, err
	}
	if role := part.Role(); !role.Leader {
		return nil, replica.NotLeaderError(role)
	}
	return part, nil
}

// localPartition is this broker's replica of topic-p, leader or follower
// (Kafka's getPartitionOrException with fetchOnlyFromLeader false).
func (h *Handler) localPartition(topic string, p int32) (*replica.Partition, error) {
	part, ok := h.d.Replicas.Get(topicpart.TopicPartition{Topic: topic, Partition: p})
	if !ok {
		if h.d.Metadata.Image().Partition(topic, p) != nil {
			return nil, fmt.Errorf("%w: this broker is not a replica of %s-%d", kerr.NotLeaderForPartition, topic, p)
		}
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
	t := h.d.Metadata.Image().TopicByID(metadata.TopicID(id))
	if t == nil {
		return "", kerr.UnknownTopicID
	}
	return t.Name, nil
}

// isInternal reports whether a topic is one of Kafka's internal topics,
// which clients may not produce to or delete records from.
func isInternal(name string) bool { return topicpart.Internal(name) }

// leaderHint is KIP-951's CurrentLeader of topic-p, from the metadata this
// broker has: the leader and its epoch, -1 for both when unknown.
func (h *Handler) leaderHint(im *metadata.Image, topic string, p int32) (int32, int32) {
	if pi := im.Partition(topic, p); pi != nil {
		return pi.Leader, pi.LeaderEpoch
	}
	return -1, -1
}

// endpoint is a live broker's address on the first client listener; false
// when the broker is unknown, fenced or has no such listener.
func (h *Handler) endpoint(im *metadata.Image, id int32) (metadata.Endpoint, *string, bool) {
	return h.endpointOn(im, id, h.d.Listener)
}

// endpointOn is a live broker's address on the named listener (as Kafka
// answers a request with the endpoints of the listener it came on; ""
// means the first client listener).
func (h *Handler) endpointOn(im *metadata.Image, id int32, listener string) (metadata.Endpoint, *string, bool) {
	b := im.Brokers[id]
	if b == nil || b.Fenced {
		return metadata.Endpoint{}, nil, false
	}
	if listener == "" {
		listener = h.d.Listener
	}
	ep, ok := b.Endpoint(listener)
	var rack *string
	if b.Rack != "" {
		rack = strp(b.Rack)
	}
	return ep, rack, ok
}

// checkLeaderEpoch compares a client's current leader epoch with ours.
func checkLeaderEpoch(p *replica.Partition, clientEpoch int32) error {
	epoch := p.LeaderEpoch()
	switch {
	case clientEpoch < 0 || clientEpoch == epoch:
		return nil
	case clientEpoch < epoch:
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

// leaderHints gathers KIP-951's hints: the current leader of each partition
// answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH, so the client can
// go there without a Metadata round trip, and the endpoints of those
// leaders (NodeEndpoints). Both come from the metadata as it is when the
// answer is made, as Kafka's response callbacks read it: a produce that
// waited for acks=all while its leadership moved must name the new leader
// and epoch, not the image its request arrived under (a client ignores a
// hint of an epoch it already knows and waits for a Metadata refresh).
type leaderHints struct {
	h        *Handler
	listener string
	seen     map[int32]bool
	ids      []int32
}

// newLeaderHints gathers hints for a request that came on listener.
func (h *Handler) newLeaderHints(listener string) *leaderHints {
	return &leaderHints{h: h, listener: listener}
}

// wants reports whether an answer with code carries a leader hint.
func (l *leaderHints) wants(code int16) bool {
	return code == kerr.NotLeaderForPartition.Code || code == kerr.FencedLeaderEpoch.Code
}

// leader is topic-p's current leader and epoch (-1, -1 when unknown).
func (l *leaderHints) leader(topic string, p int32) (int32, int32) {
	id, epoch := l.h.leaderHint(l.h.d.Metadata.Image(), topic, p)
	if id >= 0 {
		if l.seen == nil {
			l.seen = map[int32]bool{}
		}
		if !l.seen[id] {
			l.seen[id] = true
			l.ids = append(l.ids, id)
		}
	}
	return id, epoch
}

// each calls f with every hinted leader's endpoint.
func (l *leaderHints) each(f func(id int32, ep metadata.Endpoint, rack *string)) {
	im := l.h.d.Metadata.Image()
	for _, id := range l.ids {
		if ep, rack, ok := l.h.endpointOn(im, id, l.listener); ok {
			f(id, ep, rack)
		}
	}
}

// listenerOr is a request's listener name, or def when it has none.
func listenerOr(name, def string) string {
	if name == "" {
		return def
	}
	return name
}
