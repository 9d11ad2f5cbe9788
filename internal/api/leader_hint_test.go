package api

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/quorum"
)

// swappable is the metadata a broker publishes, replaced by the test.
type swappable struct {
	im atomic.Pointer[metadata.Image]
}

func (s *swappable) Image() *metadata.Image                            { return s.im.Load() }
func (s *swappable) WaitPublished(ctx context.Context, _ uint64) error { return ctx.Err() }

// A produce that waited for acks=all while its leadership moved is answered
// NOT_LEADER_OR_FOLLOWER with the new leader and epoch (KIP-951), read when
// the answer is made: a hint of the epoch the client already knows is
// ignored, and the client waits for a Metadata refresh instead of going to
// the new leader at once (the tail of a controlled shutdown's
// unavailability).
func TestLeaderHintIsTheMetadataAtAnswerTime(t *testing.T) {
	id := metadata.NewTopicID()
	recs := controller.BootstrapRecords("hints")
	for b := int32(1); b <= 3; b++ {
		recs = append(recs, metadata.RegisterBroker{ID: b, Epoch: int64(b), Fenced: false,
			Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9000 + b}}})
	}
	recs = append(recs, metadata.Topic{Name: "t", ID: id},
		metadata.Partition{Topic: id, Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1,
			LeaderEpoch: 4, PartitionEpoch: 4})
	before, _ := metadata.Apply(metadata.Empty(), quorum.BootstrapIndex, quorum.BootstrapTerm,
		&metadata.Entry{Proposer: -1, Term: quorum.BootstrapTerm, Records: recs})
	moved, _ := metadata.Apply(before, quorum.BootstrapIndex+1, quorum.BootstrapTerm,
		&metadata.Entry{Proposer: -1, Term: quorum.BootstrapTerm, Records: []metadata.Record{metadata.PartitionChange{
			Topic: id, Partition: 0, ExpectedPartitionEpoch: 4, Leader: 2, ISR: []int32{2, 3},
			LeaderRecoveryState: metadata.NoRecoveryChange}}})
	want := moved.Partition("t", 0)
	if want.Leader != 2 || want.LeaderEpoch <= 4 {
		t.Fatalf("the move gave leader %d epoch %d", want.Leader, want.LeaderEpoch)
	}
	md := &swappable{}
	md.im.Store(before)
	h := &Handler{d: Deps{Metadata: md, Listener: "PLAINTEXT"}}
	hints := h.newLeaderHints("PLAINTEXT") // the request arrives
	md.im.Store(moved)                     // the leadership moves while it waits
	if l, e := hints.leader("t", 0); l != 2 || e != want.LeaderEpoch {
		t.Fatalf("hint %d@%d, want the new leader 2@%d", l, e, want.LeaderEpoch)
	}
	var eps []int32
	hints.each(func(id int32, ep metadata.Endpoint, _ *string) {
		if ep.Port != 9000+id {
			t.Errorf("broker %d at port %d", id, ep.Port)
		}
		eps = append(eps, id)
	})
	if len(eps) != 1 || eps[0] != 2 {
		t.Fatalf("node endpoints %v, want [2]", eps)
	}
}
