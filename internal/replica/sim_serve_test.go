package replica

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// The leader's side of the simulated wire: what api's Fetch,
// OffsetForLeaderEpoch and ListOffsets do for a follower, over the same
// replica calls (h.partition, checkLeaderEpoch, DivergingEpoch, a read up
// to the log end offset, FollowerFetched), without sessions, byte limits
// beyond the partition's, or long polls (the simulation's fetch rounds are
// events).

// leaderPartition is api's Handler.partition plus checkLeaderEpoch.
func leaderPartition(m *Manager, key PartitionKey, currentLeaderEpoch int32) (*Partition, error) {
	p, ok := m.Get(topicpart.TopicPartition{Topic: key.Topic, Partition: key.Partition})
	if !ok {
		return nil, kerr.UnknownTopicOrPartition
	}
	if err := p.Offline(); err != nil {
		return nil, kerr.KafkaStorageError
	}
	role := p.Role()
	if !role.Leader {
		return nil, NotLeaderError(role)
	}
	switch {
	case currentLeaderEpoch < 0 || currentLeaderEpoch == role.LeaderEpoch:
		return p, nil
	case currentLeaderEpoch < role.LeaderEpoch:
		return nil, kerr.FencedLeaderEpoch
	}
	return nil, kerr.UnknownLeaderEpoch
}

// serveFetch answers a follower's fetch as api's handleFetch does.
func serveFetch(m *Manager, req *FetchRequest) []FetchedPartition {
	out := make([]FetchedPartition, 0, len(req.Partitions))
	for _, fp := range req.Partitions {
		res := FetchedPartition{Key: fp.Key, HighWatermark: -1, LogStartOffset: -1}
		p, err := leaderPartition(m, fp.Key, fp.CurrentLeaderEpoch)
		if err == nil {
			var div *EpochEndOffset
			if div, err = p.DivergingEpoch(fp.LastFetchedEpoch, fp.FetchOffset); err == nil {
				res.HighWatermark, res.LogStartOffset = p.Log.HighWatermark(), p.Log.LogStartOffset()
				if div != nil {
					res.Diverging = div
				} else {
					err = readForFollower(m, p, req, fp, &res)
				}
			}
		}
		if err != nil {
			res.Err, res.Records = err, nil
		}
		out = append(out, res)
	}
	return out
}

func readForFollower(m *Manager, p *Partition, req *FetchRequest, fp FetchPartition, res *FetchedPartition) error {
	leo := p.Log.LogEndOffset()
	if fp.FetchOffset > leo || fp.FetchOffset < p.Log.LogStartOffset() {
		return fmt.Errorf("%w: fetch offset %d outside [%d, %d]", kerr.OffsetOutOfRange, fp.FetchOffset, p.Log.LogStartOffset(), leo)
	}
	data, err := p.Log.Read(nil, fp.FetchOffset, int(fp.MaxBytes), leo, true)
	if errors.Is(err, log.ErrOffsetOutOfRange) {
		return fmt.Errorf("%w: %w", kerr.OffsetOutOfRange, err)
	}
	if err != nil {
		return err
	}
	res.Records = data
	return m.FollowerFetched(p, FollowerFetch{ReplicaID: req.ReplicaID, BrokerEpoch: req.BrokerEpoch,
		FetchOffset: fp.FetchOffset, LogStart: fp.LogStartOffset, LeaderLEO: leo, CurrentLeaderEpoch: fp.CurrentLeaderEpoch})
}

// simEndpoint is a follower's synchronous line to a leader for the calls a
// fetch answer leads to (ListOffsets, OffsetForLeaderEpoch); fetches
// themselves travel as simulated messages.
type simEndpoint struct {
	s        *sim
	from, to int32
}

func (e *simEndpoint) reach() (*Manager, error) {
	if !e.s.linked(e.from, e.to) {
		return nil, errors.New("sim: no connection")
	}
	return e.s.brokers[e.to-1].m, nil
}

func (e *simEndpoint) Fetch(context.Context, *FetchRequest) ([]FetchedPartition, error) {
	panic("sim: fetches are messages")
}

func (e *simEndpoint) OffsetForLeaderEpoch(_ context.Context, _ int32, qs []EpochQuery) ([]EpochAnswer, error) {
	m, err := e.reach()
	if err != nil {
		return nil, err
	}
	var out []EpochAnswer
	for _, q := range qs {
		a := EpochAnswer{Key: q.Key, EpochEndOffset: EpochEndOffset{Epoch: -1, EndOffset: -1}}
		if p, err := leaderPartition(m, q.Key, q.CurrentLeaderEpoch); err != nil {
			a.Err = err
		} else {
			a.Epoch, a.EndOffset = p.Log.EndOffsetForEpoch(q.LeaderEpoch)
		}
		out = append(out, a)
	}
	return out, nil
}

func (e *simEndpoint) ListOffset(_ context.Context, _ int32, key PartitionKey, epoch int32, ts int64) (int64, error) {
	m, err := e.reach()
	if err != nil {
		return -1, err
	}
	p, err := leaderPartition(m, key, epoch)
	if err != nil {
		return -1, err
	}
	if ts == -2 {
		return p.Log.LogStartOffset(), nil
	}
	return p.Log.LogEndOffset(), nil
}

func (e *simEndpoint) Close() {}
