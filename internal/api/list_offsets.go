package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/server"
)

// ListOffsets, versions 1-11 (Kafka 4.2; v0 was removed in Kafka 4.0).
//
// Special timestamps: -2 earliest (the log start offset), -1 latest (the
// high watermark for read_uncommitted, the last stable offset for
// read_committed), -3 the record with the largest timestamp, -4 earliest
// local (the log start offset: Gregor has no tiered storage), -5 latest
// tiered and -6 earliest pending upload (no tiered storage: -1). A client
// asking a new leader whose high watermark is still below where its leader
// epoch began gets OFFSET_NOT_AVAILABLE (but for the earliest offsets), so
// "latest" never goes backwards across a leader change. A request with
// Kafka's debugging replica id (-2) is answered by followers too, with the
// replica's own log end offset for "latest". A timestamp
// >= 0 finds the first record at or after it; an answer at or beyond the
// fetchable bound (HW or LSO) is "none" (-1), as in Kafka.
func init() { register(kmsg.ListOffsets.Int16(), 1, 11, handleListOffsets) }

const (
	listLatest          = -1
	listEarliest        = -2
	listMaxTimestamp    = -3
	listEarliestLocal   = -4
	listLatestTiered    = -5
	listEarliestPending = -6

	// debuggingReplicaID is Kafka's ListOffsetsRequest.DEBUGGING_REPLICA_ID.
	debuggingReplicaID = -2
)

func handleListOffsets(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	seen := map[string]map[int32]int{}
	z := h.authz(r)
	for _, rt := range req.Topics {
		allowed := z.allowed(auth.OpDescribe, auth.ResourceTopic, rt.Topic)
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		if seen[rt.Topic] == nil {
			seen[rt.Topic] = map[int32]int{}
		}
		for _, rp := range rt.Partitions {
			seen[rt.Topic][rp.Partition]++
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			var err error
			if !allowed {
				err = kerr.TopicAuthorizationFailed
			} else if seen[rt.Topic][rp.Partition] > 1 {
				err = fmt.Errorf("%w: partition %d listed twice", kerr.InvalidRequest, rp.Partition)
			} else {
				err = h.listOffset(req, rt.Topic, rp, &sp)
			}
			sp.ErrorCode = errCode(h.d.Logger, err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (h *Handler) listOffset(req *kmsg.ListOffsetsRequest, topic string, rp kmsg.ListOffsetsRequestTopicPartition,
	sp *kmsg.ListOffsetsResponseTopicPartition) error {
	get := h.partition
	if req.ReplicaID == debuggingReplicaID {
		// Kafka answers the debugging replica id from any replica
		// (fetchOnlyFromLeader = replicaId != DEBUGGING_REPLICA_ID), so a
		// tool can read each follower's own log end offset.
		get = h.localPartition
	}
	p, err := get(topic, rp.Partition)
	if err != nil {
		return err
	}
	if err := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); err != nil {
		return err
	}
	l := p.Log
	if leso := p.LeaderEpochStartOffset(); req.ReplicaID == -1 && leso > l.HighWatermark() &&
		rp.Timestamp != listEarliest && rp.Timestamp != listEarliestLocal {
		// A new leader whose high watermark has not yet reached where its
		// epoch began might answer an offset below one already served
		// (Kafka's fetchOffsetForTimestamp).
		return fmt.Errorf("%w: the high watermark %d has not reached the leader epoch's start offset %d yet",
			kerr.OffsetNotAvailable, l.HighWatermark(), leso)
	}
	bound := l.HighWatermark()
	if req.IsolationLevel == 1 {
		bound = l.LastStableOffset()
	}
	if req.ReplicaID != -1 {
		// A replica (id >= 0) or Kafka's debugging replica id (-2) asks for
		// the replica's own log end offset, with no isolation level.
		bound = l.LogEndOffset()
	}
	set := func(ts, off int64) {
		sp.Timestamp, sp.Offset = ts, off
		sp.LeaderEpoch = l.EpochForOffset(off)
		if off == l.LogEndOffset() {
			sp.LeaderEpoch = l.LatestEpoch()
		}
	}
	switch rp.Timestamp {
	case listEarliest, listEarliestLocal:
		set(-1, l.LogStartOffset())
	case listLatest:
		set(-1, bound)
	case listLatestTiered, listEarliestPending:
		// No tiered storage: nothing is tiered or pending.
	case listMaxTimestamp:
		to, ok, err := l.MaxTimestampOffset()
		if err != nil {
			return err
		}
		if ok && to.Offset < bound {
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = to.Timestamp, to.Offset, to.LeaderEpoch
		}
	default:
		if rp.Timestamp < 0 {
			return fmt.Errorf("%w: timestamp %d", kerr.InvalidRequest, rp.Timestamp)
		}
		to, ok, err := l.FindOffsetByTimestamp(rp.Timestamp)
		if err != nil {
			return err
		}
		if ok && to.Offset < bound {
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = to.Timestamp, to.Offset, to.LeaderEpoch
		}
	}
	return nil
}
