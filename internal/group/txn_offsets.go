package group

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/coord"
)

// Transactional offset commits (KIP-98, KIP-447): a TxnOffsetCommit writes
// ordinary OffsetCommit records in a transactional batch of the producer;
// they stay pending — invisible to OffsetFetch, UNSTABLE_OFFSET_COMMIT to a
// fetch that requires stable offsets — until the transaction's marker lands
// on this partition: COMMIT materialises each one unless a newer plain commit
// of the partition was written after it (newer by position in the log, so
// that replay decides the same way), ABORT drops them. Kafka's
// OffsetMetadataManager.replayEndTransactionMarker.

// pendingOffsets are one producer's uncommitted offsets by group, topic and
// partition.
type pendingOffsets map[string]map[string]map[int32]*Offset

// TxnCommitRequest is a TxnOffsetCommit.
type TxnCommitRequest struct {
	Group           string
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	// Generation, MemberID and InstanceID (v3+, KIP-447) fence zombies;
	// -1, "" and nil before v3.
	Generation int32
	MemberID   string
	InstanceID *string
	Topics     []CommitTopic
}

// nextSeq orders records in log order (see Offset.seq).
func (s *Shard) nextSeq() int64 {
	s.seq++
	return s.seq
}

// TxnCommit handles a TxnOffsetCommit: the group checks of Kafka's
// validateTransactionalOffsetCommit, then one record per partition in a
// transactional batch of the producer; the offsets stay pending.
func (s *Shard) TxnCommit(now time.Time, req *TxnCommitRequest, out *coord.Output) *CommitResult {
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
	nowMs := now.UnixMilli()
	g := s.groups[req.Group]
	if g == nil {
		if req.Generation >= 0 {
			return failAll(errIllegalGeneration(req.Generation, -1))
		}
		g = newGroup(req.Group, nowMs)
		s.groups[req.Group] = g
	}
	if err := s.validateTxnCommit(g, req); err != nil {
		return failAll(err)
	}
	cfg := s.cfg()
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			md := derefOr(p.Metadata, "")
			if int32(len(md)) > cfg.OffsetMetadataMaxBytes {
				res.Errs[i][j] = fmt.Errorf("%w: %d bytes of metadata exceed offset.metadata.max.bytes %d",
					kerr.OffsetMetadataTooLarge, len(md), cfg.OffsetMetadataMaxBytes)
				continue
			}
			o := Offset{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: md, CommitTimestamp: nowMs,
				ExpireTimestamp: -1, seq: s.nextSeq()}
			s.setPending(req.ProducerID, g.id, t.Topic, p.Partition, o)
			out.WriteTxn(req.ProducerID, req.ProducerEpoch, offsetCommitRecord(g.id, t.Topic, p.Partition, &o))
		}
	}
	return res
}

// validateTxnCommit is Kafka's ClassicGroup.validateOffsetCommit for a
// transactional commit: without member or generation (TxnOffsetCommit
// before v3) any state is accepted, and no rebalance refuses it.
func (s *Shard) validateTxnCommit(g *group, req *TxnCommitRequest) error {
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
	}
	return nil
}

func (s *Shard) setPending(pid int64, group, topic string, partition int32, o Offset) {
	if s.pending == nil {
		s.pending = map[int64]pendingOffsets{}
	}
	p := s.pending[pid]
	if p == nil {
		p = pendingOffsets{}
		s.pending[pid] = p
	}
	if p[group] == nil {
		p[group] = map[string]map[int32]*Offset{}
	}
	if p[group][topic] == nil {
		p[group][topic] = map[int32]*Offset{}
	}
	p[group][topic][partition] = &o
}

// hasPending reports whether a transaction has an offset of the partition
// pending for the group.
func (s *Shard) hasPending(group, topic string, partition int32) bool {
	for _, p := range s.pending {
		if p[group][topic][partition] != nil {
			return true
		}
	}
	return false
}

// groupHasPending reports whether any transaction has offsets of the group
// pending: such a group is not expired or deleted.
func (s *Shard) groupHasPending(group string) bool {
	for _, p := range s.pending {
		if len(p[group]) > 0 {
			return true
		}
	}
	return false
}

// endTxn applies a transaction marker for producer pid.
func (s *Shard) endTxn(pid int64, commit bool) {
	p := s.pending[pid]
	delete(s.pending, pid)
	if !commit {
		return
	}
	for gid, topics := range p {
		g := s.groups[gid]
		if g == nil {
			g = newGroup(gid, -1)
			s.groups[gid] = g
		}
		for topic, parts := range topics {
			for partition, o := range parts {
				if cur := g.offsets[topic][partition]; cur == nil || cur.seq < o.seq {
					g.setOffset(topic, partition, *o)
				}
			}
		}
	}
}

// CompleteTransaction writes a transaction marker to this partition and
// applies it (WriteTxnMarkers for a __consumer_offsets partition: the group
// coordinator writes it, so its state and its log agree). The log checks the
// marker; if it refuses it, the write fails and the shard is rebuilt from
// the log.
func (s *Shard) CompleteTransaction(m coord.Marker, out *coord.Output) {
	s.endTxn(m.ProducerID, m.Commit)
	s.nextSeq()
	out.WriteMarker(m)
}

// ReplayTxn applies one record of a transactional batch: an offset commit
// becomes pending for the producer.
func (s *Shard) ReplayTxn(offset, producerID int64, r coord.Record) error {
	s.seq = max(s.seq, offset)
	k, err := decodeKey(r.Key)
	if err != nil {
		return fmt.Errorf("record at offset %d: %w", offset, err)
	}
	if k.kind != kindOffset || r.Value == nil {
		return nil
	}
	o, err := decodeOffsetValue(r.Value)
	if err != nil {
		return fmt.Errorf("record at offset %d: %w", offset, err)
	}
	o.seq = offset
	s.setPending(producerID, k.group, k.topic, k.partition, o)
	return nil
}

// ReplayMarker applies a transaction marker read from the log.
func (s *Shard) ReplayMarker(offset, producerID int64, commit bool) error {
	s.seq = max(s.seq, offset)
	s.endTxn(producerID, commit)
	return nil
}
