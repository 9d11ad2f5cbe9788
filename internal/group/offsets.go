package group

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/coord"
)

// Commit handles an OffsetCommit. Each accepted partition becomes one
// OffsetCommit record; the reply waits for the records to be durable.
func (s *Shard) Commit(now time.Time, req *CommitRequest, out *coord.Output) *CommitResult {
	nowMs := now.UnixMilli()
	cfg := s.cfg()
	res := &CommitResult{Errs: make([][]error, len(req.Topics))}
	for i, t := range req.Topics {
		res.Errs[i] = make([]error, len(t.Partitions))
	}
	failAll := func(err error) *CommitResult {
		for i := range res.Errs {
			for j := range res.Errs[i] {
				res.Errs[i][j] = err
			}
		}
		return res
	}
	if req.Group == "" {
		return failAll(fmt.Errorf("%w: the group id is empty", kerr.InvalidGroupID))
	}
	g := s.groups[req.Group]
	if g == nil {
		if req.Generation >= 0 {
			if req.ReportUnknownGroup {
				return failAll(errGroupNotFound(req.Group))
			}
			return failAll(errIllegalGeneration(req.Generation, -1))
		}
		// A commit from outside group management (generation -1) creates a
		// "simple" group.
		g = newGroup(req.Group, nowMs)
		s.groups[req.Group] = g
	}
	if err := s.validateCommit(g, req); err != nil {
		return failAll(err)
	}
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			md := derefOr(p.Metadata, "")
			if int32(len(md)) > cfg.OffsetMetadataMaxBytes {
				res.Errs[i][j] = fmt.Errorf("%w: %d bytes of metadata exceed offset.metadata.max.bytes %d",
					kerr.OffsetMetadataTooLarge, len(md), cfg.OffsetMetadataMaxBytes)
				continue
			}
			o := Offset{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: md, CommitTimestamp: nowMs, ExpireTimestamp: -1,
				seq: s.nextSeq()}
			if req.RetentionMs >= 0 {
				o.ExpireTimestamp = nowMs + req.RetentionMs
			}
			g.setOffset(t.Topic, p.Partition, o)
			out.Write(offsetCommitRecord(g.id, t.Topic, p.Partition, &o))
		}
	}
	return res
}

func (s *Shard) validateCommit(g *group, req *CommitRequest) error {
	if g.state == Dead {
		return fmt.Errorf("%w: group %s is being deleted", kerr.CoordinatorNotAvailable, g.id)
	}
	if req.Generation < 0 && g.state == Empty {
		return nil
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
			return err
		}
		if req.Generation != g.generation {
			return errIllegalGeneration(req.Generation, g.generation)
		}
	} else if g.state != Empty {
		return fmt.Errorf("%w: only members may commit offsets of non-empty group %s", kerr.UnknownMemberID, g.id)
	}
	if g.state == CompletingRebalance {
		return fmt.Errorf("%w: group %s is completing a rebalance", kerr.RebalanceInProgress, g.id)
	}
	return nil
}

// Fetch handles one group of an OffsetFetch. An unknown group has no
// offsets (-1), as in Kafka. With RequireStable a partition with a
// transactional offset still pending answers UNSTABLE_OFFSET_COMMIT (the
// consumer retries until the transaction ends).
func (s *Shard) Fetch(req *FetchRequest) *FetchResult {
	res := s.fetch(req)
	if !req.RequireStable || len(s.pending) == 0 {
		return res
	}
	for i := range res.Topics {
		ft := &res.Topics[i]
		for j := range ft.Partitions {
			if fp := &ft.Partitions[j]; s.hasPending(req.Group, ft.Topic, fp.Partition) {
				fp.Err = fmt.Errorf("%w: group %s has a transactional offset of %s-%d pending",
					kerr.UnstableOffsetCommit, req.Group, ft.Topic, fp.Partition)
			}
		}
	}
	return res
}

func (s *Shard) fetch(req *FetchRequest) *FetchResult {
	g := s.groups[req.Group]
	res := &FetchResult{}
	if req.Topics == nil {
		if g == nil {
			return res
		}
		for _, t := range sortedKeys(g.offsets) {
			ft := FetchTopic{Topic: t}
			for _, p := range sortedPartitions(g.offsets[t]) {
				ft.Partitions = append(ft.Partitions, fetchPartition(p, g.offsets[t][p]))
			}
			res.Topics = append(res.Topics, ft)
		}
		return res
	}
	for _, t := range req.Topics {
		ft := FetchTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			var o *Offset
			if g != nil {
				o = g.offsets[t.Topic][p]
			}
			ft.Partitions = append(ft.Partitions, fetchPartition(p, o))
		}
		res.Topics = append(res.Topics, ft)
	}
	return res
}

func fetchPartition(p int32, o *Offset) FetchPartition {
	if o == nil {
		return FetchPartition{Partition: p, Offset: -1, LeaderEpoch: -1}
	}
	return FetchPartition{Partition: p, Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata}
}

// DeleteOffsets handles an OffsetDelete: offsets of topics the group is not
// subscribed to are tombstoned.
func (s *Shard) DeleteOffsets(req *FetchRequest, out *coord.Output) *OffsetDeleteResult {
	res := &OffsetDeleteResult{Errs: make([][]error, len(req.Topics))}
	if req.Group == "" {
		res.Err = fmt.Errorf("%w: the group id is empty", kerr.InvalidGroupID)
		return res
	}
	g := s.groups[req.Group]
	if g == nil || g.state == Dead {
		res.Err = errGroupNotFound(req.Group)
		return res
	}
	if g.state != Empty && g.protocolType != ConsumerProtocolType {
		res.Err = fmt.Errorf("%w: group %s is not empty; only empty groups can delete offsets of a non-consumer protocol type", kerr.NonEmptyGroup, g.id)
		return res
	}
	for i, t := range req.Topics {
		res.Errs[i] = make([]error, len(t.Partitions))
		subscribed := g.isSubscribedTo(t.Topic)
		for j, p := range t.Partitions {
			if subscribed {
				res.Errs[i][j] = fmt.Errorf("%w: group %s is subscribed to %s", kerr.GroupSubscribedToTopic, g.id, t.Topic)
				continue
			}
			if g.deleteOffset(t.Topic, p) {
				out.Write(offsetTombstone(g.id, t.Topic, p))
			}
		}
	}
	return res
}

// DeleteTopicOffsets removes every group's committed offsets for the
// partitions [0, partitions) of a deleted topic and writes their tombstones
// (Kafka's OffsetMetadataManager.onPartitionsDeleted), and returns how many
// it removed. Groups themselves stay; an empty group without offsets expires
// as any other.
func (s *Shard) DeleteTopicOffsets(topic string, partitions int32, out *coord.Output) int {
	n := 0
	for _, id := range sortedKeys(s.groups) {
		g := s.groups[id]
		for p := range partitions {
			if g.deleteOffset(topic, p) {
				out.Write(offsetTombstone(g.id, topic, p))
				n++
			}
		}
	}
	return n
}

// expirationBase returns, for groups whose offsets may expire now, the
// timestamp an offset's retention counts from (KIP-211): an empty group's
// offsets expire offsets.retention.minutes after the group became empty; a
// Stable consumer group's offsets of topics it no longer subscribes to, and
// a simple group's offsets, that long after their commit.
func (g *group) expirationBase() (func(o *Offset) int64, bool) {
	commit := func(o *Offset) int64 { return o.CommitTimestamp }
	switch {
	case g.protocolType == "":
		return commit, true
	case g.state == Empty:
		if g.stateTimestamp >= 0 {
			ts := g.stateTimestamp
			return func(*Offset) int64 { return ts }, true
		}
		return commit, true
	case g.protocolType == ConsumerProtocolType && g.subscribed != nil && g.state == Stable:
		return commit, true
	}
	return nil, false
}

// expireOffsets tombstones expired offsets, and deletes empty groups that no
// longer have any.
func (s *Shard) expireOffsets(nowMs int64, out *coord.Output) {
	retention := s.cfg().OffsetsRetentionMs
	for _, id := range sortedKeys(s.groups) {
		g := s.groups[id]
		allGone := true
		if base, ok := g.expirationBase(); ok {
			for _, t := range sortedKeys(g.offsets) {
				if g.isSubscribedTo(t) {
					allGone = false
					continue
				}
				for _, p := range sortedPartitions(g.offsets[t]) {
					o := g.offsets[t][p]
					expired := nowMs-base(o) >= retention
					if o.ExpireTimestamp >= 0 {
						expired = nowMs >= o.ExpireTimestamp
					}
					if !expired {
						allGone = false
						continue
					}
					g.deleteOffset(t, p)
					out.Write(offsetTombstone(g.id, t, p))
				}
			}
		} else if g.numOffsets() > 0 {
			allGone = false
		}
		if allGone && g.state == Empty && len(g.pending) == 0 && !s.groupHasPending(id) {
			s.logger.Info("deleting empty group without offsets", "group", id)
			s.deleteGroup(g, out)
		}
	}
}

func (s *Shard) deleteGroup(g *group, out *coord.Output) {
	for _, t := range sortedKeys(g.offsets) {
		for _, p := range sortedPartitions(g.offsets[t]) {
			out.Write(offsetTombstone(g.id, t, p))
		}
	}
	out.Write(groupTombstone(g.id))
	g.transition(Dead, g.stateTimestamp)
	delete(s.groups, g.id)
}
