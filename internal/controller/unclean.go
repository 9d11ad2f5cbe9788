package controller

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/metadata"
)

// AckUncleanElectionRequest acknowledges a partition's recorded unclean or
// last-known-leader election (metadata.UncleanElection), which the admin
// API and console show as a possible data loss until then. Kafka has no
// such request (it records nothing); Gregor's admin listener sends it to
// the active controller in process. LeaderEpoch names the election seen
// (-1: whichever is recorded), so a newer election is never cleared
// unseen.
type AckUncleanElectionRequest struct {
	Topic       string
	Partition   int32
	LeaderEpoch int32
}

// AckUncleanElectionResponse names the election acknowledged.
type AckUncleanElectionResponse struct {
	Election metadata.UncleanElection
}

func (*AckUncleanElectionRequest) request() {}

// Errors of AckUncleanElection besides UNKNOWN_TOPIC_OR_PARTITION.
var (
	// ErrNoUncleanElection: the partition has no unacknowledged unclean
	// election.
	ErrNoUncleanElection = errors.New("no unacknowledged unclean election recorded")
	// ErrUncleanElectionEpoch: the recorded election is not the one named.
	ErrUncleanElectionEpoch = errors.New("the recorded unclean election is another one")
)

// ackUncleanElection writes the acknowledgement of the election named.
func (c *Core) ackUncleanElection(w *write, r *AckUncleanElectionRequest) built {
	t := w.im.Topic(r.Topic)
	if t == nil || r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
		return answer(nil, fmt.Errorf("%w: no partition %s-%d", kerr.UnknownTopicOrPartition, r.Topic, r.Partition))
	}
	u := t.Partitions[r.Partition].Unclean
	switch {
	case u == nil:
		return answer(nil, fmt.Errorf("%w: %s-%d", ErrNoUncleanElection, r.Topic, r.Partition))
	case r.LeaderEpoch >= 0 && r.LeaderEpoch != u.LeaderEpoch:
		return answer(nil, fmt.Errorf("%w: %s-%d's is leader epoch %d, not %d", ErrUncleanElectionEpoch,
			r.Topic, r.Partition, u.LeaderEpoch, r.LeaderEpoch))
	}
	acked := *u
	w.emit(metadata.AckUncleanElection{Topic: t.ID, Partition: r.Partition, LeaderEpoch: u.LeaderEpoch})
	return built{reply: func(*metadata.Image, uint64) (any, error) {
		return &AckUncleanElectionResponse{Election: acked}, nil
	}, applied: func(index uint64) {
		c.log.Warn("unclean leader election acknowledged by an operator", "topic", r.Topic, "partition", r.Partition,
			"leader_epoch", acked.LeaderEpoch, "leader", acked.Leader, "index", index)
	}}
}
