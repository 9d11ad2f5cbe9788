package source

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/replica"
)

// AckUnclean sends an acknowledgement to the active controller when it runs
// in this process; it answers ok false when this node is not it.
type AckUnclean func(ctx context.Context, r *controller.AckUncleanElectionRequest) (resp *controller.AckUncleanElectionResponse, ok bool, err error)

// uncleanView describes partition p's recorded unclean election, nil when
// none; part is this node's replica of it (nil when not hosted).
func uncleanView(t *metadata.TopicImage, p int32, part *replica.Partition) *admin.UncleanElectionView {
	pi := t.Partitions[p]
	if pi.Unclean == nil {
		return nil
	}
	v := electionView(t.Name, pi.Unclean)
	v.Recovering = pi.LeaderRecoveryState == metadata.Recovering
	if part != nil {
		for _, e := range part.Log.Epochs() {
			if e.Epoch == v.LeaderEpoch {
				v.EpochStartOffset = e.StartOffset
			}
		}
		if tr := part.LastTruncation(); tr != nil && tr.LeaderEpoch >= v.LeaderEpoch {
			v.TruncatedHere = &admin.TruncationView{At: tr.At.UTC(), LeaderEpoch: tr.LeaderEpoch, FromLogEnd: tr.FromLogEnd,
				FromHighWatermark: tr.FromHighWatermark, ToOffset: tr.To, Dropped: tr.FromLogEnd - tr.To,
				AcknowledgedDropped: max(tr.FromHighWatermark-tr.To, 0)}
		}
	}
	v.Explanation = explainUnclean(&v)
	return &v
}

func electionView(topic string, u *metadata.UncleanElection) admin.UncleanElectionView {
	v := admin.UncleanElectionView{Topic: topic, Partition: u.Partition, Kind: "unclean", LeaderEpoch: u.LeaderEpoch,
		Leader: u.Leader, At: time.UnixMilli(u.AtMs).UTC(), PreviousLeader: u.PreviousLeader,
		PreviousISR: nonNil(u.PreviousISR), PreviousELR: nonNil(u.PreviousELR), Count: u.Count, EpochStartOffset: -1,
		Acknowledge: fmt.Sprintf("gregor partition ack-unclean %s/%d --leader-epoch %d", topic, u.Partition, u.LeaderEpoch)}
	if u.LastKnownLeader {
		v.Kind = "last-known-leader"
	}
	return v
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return slices.Clone(ids)
}

// explainUnclean is the view's sentence for people.
func explainUnclean(v *admin.UncleanElectionView) string {
	why := "unclean.leader.election.enable allowed electing a replica outside the ISR (or an operator asked for an unclean election)"
	if v.Kind == "last-known-leader" {
		why = "the ISR and the eligible leader replicas (KIP-966) were empty, and the last known leader came back; " +
			"it may have missed records the ISR acknowledged after it left"
	}
	s := fmt.Sprintf("Possible data loss: broker %d was elected leader of %s-%d in leader epoch %d at %s from outside the in-sync replicas "+
		"(previous leader %d, ISR %v, ELR %v): %s. Records the previous ISR acknowledged that broker %d did not have are gone",
		v.Leader, v.Topic, v.Partition, v.LeaderEpoch, v.At.Format(time.RFC3339), v.PreviousLeader, v.PreviousISR, v.PreviousELR,
		why, v.Leader)
	if v.EpochStartOffset >= 0 {
		s += fmt.Sprintf(": everything acknowledged at or after offset %d (where epoch %d begins, broker %d's log end then); "+
			"the previous replicas cut their logs back to it when they rejoin, and consumers may read those offsets again holding other records",
			v.EpochStartOffset, v.LeaderEpoch, v.Leader)
	}
	s += "."
	if tr := v.TruncatedHere; tr != nil {
		s += fmt.Sprintf(" This node's replica cut its log from offset %d back to %d to follow the new leader: %d record(s) dropped here, "+
			"%d of them below its high watermark (%d), that is acknowledged.", tr.FromLogEnd, tr.ToOffset, tr.Dropped,
			tr.AcknowledgedDropped, tr.FromHighWatermark)
	}
	if v.Count > 1 {
		s += fmt.Sprintf(" This is the partition's %d-th unclean election since the last acknowledgement.", v.Count)
	}
	return s + " Check the consumers and producers of this partition, then acknowledge with `" + v.Acknowledge + "`."
}

// uncleanElections lists every partition's recorded election, by topic and
// partition.
func uncleanElections(im *metadata.Image, partOf func(t *metadata.TopicImage, p int32) *replica.Partition) []admin.UncleanElectionView {
	out := []admin.UncleanElectionView{}
	for _, t := range im.SortedTopics() {
		for p, pi := range t.Partitions {
			if pi.Unclean != nil {
				out = append(out, *uncleanView(t, int32(p), partOf(t, int32(p))))
			}
		}
	}
	return out
}

// AckUncleanElection acknowledges a partition's recorded unclean election
// through the active controller, which must run in this process.
func (s *Source) AckUncleanElection(ctx context.Context, topic string, partition, leaderEpoch int32) (admin.UncleanElectionView, error) {
	t, err := s.topic(topic)
	if err != nil {
		return admin.UncleanElectionView{}, err
	}
	if partition < 0 || int(partition) >= len(t.Partitions) {
		return admin.UncleanElectionView{}, fmt.Errorf("partition %s-%d: %w", topic, partition, admin.ErrNotFound)
	}
	if s.d.AckUnclean == nil {
		return admin.UncleanElectionView{}, &admin.NotControllerError{Controller: s.d.Metadata.Image().Controller.Node}
	}
	resp, ok, err := s.d.AckUnclean(ctx, &controller.AckUncleanElectionRequest{Topic: topic, Partition: partition, LeaderEpoch: leaderEpoch})
	switch {
	case !ok || errors.Is(err, kerr.NotController):
		return admin.UncleanElectionView{}, &admin.NotControllerError{Controller: s.d.Metadata.Image().Controller.Node}
	case errors.Is(err, controller.ErrNoUncleanElection):
		return admin.UncleanElectionView{}, fmt.Errorf("%w: %v", admin.ErrNoUncleanElection, err)
	case errors.Is(err, controller.ErrUncleanElectionEpoch):
		return admin.UncleanElectionView{}, fmt.Errorf("%w: %v", admin.ErrUncleanEpoch, err)
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return admin.UncleanElectionView{}, fmt.Errorf("%v: %w", err, admin.ErrNotFound)
	case err != nil:
		return admin.UncleanElectionView{}, err
	}
	return electionView(topic, &resp.Election), nil
}
