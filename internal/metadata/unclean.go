package metadata

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Unclean elections: Gregor's own records (Kafka keeps no such record; its
// controller only logs and counts them). The controller writes an
// UncleanElection in the same entry as the PartitionChange that elected a
// leader from outside the ISR and ELR (an unclean or a last-known-leader
// election, KIP-966), so every node and every restart knows which
// partitions may have lost acknowledged records, until an operator
// acknowledges it (AckUncleanElection).
const (
	TypeUncleanElection    RecordType = 17
	TypeAckUncleanElection RecordType = 18
)

// UncleanElection says partition Partition of Topic got Leader in
// LeaderEpoch from outside its ISR and ELR. It applies to a partition at
// that leader epoch with that leader (the change that made the election is
// in the same entry, before it) or at a later leader epoch (a snapshot
// writes it after the partition, which may have moved on since), and only
// when it is newer than the one the partition holds, which it replaces.
type UncleanElection struct {
	Topic       TopicID
	Partition   int32
	LeaderEpoch int32
	Leader      int32
	// AtMs is the controller's clock when it decided the election (unix ms).
	AtMs int64
	// LastKnownLeader: the leader was the partition's last known leader
	// (KIP-966: ISR and ELR empty); otherwise any live replica was chosen
	// because unclean.leader.election.enable allowed it.
	LastKnownLeader bool
	// Previous* are the partition's state before the election: its leader
	// (the last known leader when it had none), ISR and ELR.
	PreviousLeader int32
	PreviousISR    []int32
	PreviousELR    []int32
	// Count is how many unclean elections the partition has had since the
	// last acknowledgement, this one included.
	Count int32
}

// AckUncleanElection clears the partition's unclean election recorded for
// LeaderEpoch: it applies only to that one, so acknowledging a warning
// never clears a newer election the operator has not seen.
type AckUncleanElection struct {
	Topic       TopicID
	Partition   int32
	LeaderEpoch int32
}

func (UncleanElection) Type() RecordType    { return TypeUncleanElection }
func (AckUncleanElection) Type() RecordType { return TypeAckUncleanElection }

func appendUnclean(dst []byte, r UncleanElection) []byte {
	dst = kbin.AppendUuid(dst, r.Topic)
	dst = kbin.AppendInt32(dst, r.Partition)
	dst = kbin.AppendInt32(dst, r.LeaderEpoch)
	dst = kbin.AppendInt32(dst, r.Leader)
	dst = kbin.AppendInt64(dst, r.AtMs)
	dst = kbin.AppendBool(dst, r.LastKnownLeader)
	dst = kbin.AppendInt32(dst, r.PreviousLeader)
	dst = appendIDs(dst, r.PreviousISR)
	dst = appendIDs(dst, r.PreviousELR)
	return kbin.AppendInt32(dst, r.Count)
}

func readUnclean(r *kbin.Reader) UncleanElection {
	u := UncleanElection{Topic: r.Uuid(), Partition: r.Int32(), LeaderEpoch: r.Int32(), Leader: r.Int32(), AtMs: r.Int64(),
		LastKnownLeader: r.Bool(), PreviousLeader: r.Int32()}
	u.PreviousISR, u.PreviousELR = readIDs(r), readIDs(r)
	u.Count = r.Int32()
	return u
}

// setUnclean records an unclean election on its partition.
func (a *applier) setUnclean(r UncleanElection) {
	old := a.next.byID.get(r.Topic)
	if old == nil || r.Partition < 0 || int(r.Partition) >= len(old.Partitions) {
		a.next.Skipped++
		return
	}
	p := old.Partitions[r.Partition]
	if r.LeaderEpoch > p.LeaderEpoch || (r.LeaderEpoch == p.LeaderEpoch && r.Leader != p.Leader) ||
		(p.Unclean != nil && p.Unclean.LeaderEpoch >= r.LeaderEpoch) {
		a.next.Skipped++
		return
	}
	t := a.ownTopic(r.Topic)
	np := *t.Partitions[r.Partition]
	u := r
	u.PreviousISR, u.PreviousELR = slices.Clone(r.PreviousISR), slices.Clone(r.PreviousELR)
	np.Unclean = &u
	t.Partitions[r.Partition] = &np
}

// ackUnclean clears the partition's unclean election of r.LeaderEpoch.
func (a *applier) ackUnclean(r AckUncleanElection) {
	old := a.next.byID.get(r.Topic)
	if old == nil || r.Partition < 0 || int(r.Partition) >= len(old.Partitions) {
		a.next.Skipped++
		return
	}
	if u := old.Partitions[r.Partition].Unclean; u == nil || u.LeaderEpoch != r.LeaderEpoch {
		a.next.Skipped++
		return
	}
	t := a.ownTopic(r.Topic)
	p := *t.Partitions[r.Partition]
	p.Unclean = nil
	t.Partitions[r.Partition] = &p
}
