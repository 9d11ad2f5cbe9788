package election

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gregor-broker/gregor/internal/metadata"
)

const keep = metadata.NoLeaderChange

func part(replicas, isr []int32, leader int32) *metadata.PartitionImage {
	return &metadata.PartitionImage{Replicas: replicas, ISR: isr, Leader: leader, LeaderEpoch: 5, PartitionEpoch: 9}
}

func alive(ids ...int32) func(int32) bool {
	return func(id int32) bool { return slices.Contains(ids, id) }
}

// change is the expected record with defaults filled in.
func change(f func(c *metadata.PartitionChange)) metadata.PartitionChange {
	c := metadata.PartitionChange{ExpectedPartitionEpoch: 9, Leader: keep, LeaderRecoveryState: metadata.NoRecoveryChange}
	f(&c)
	return c
}

func TestBuild(t *testing.T) {
	for _, c := range []struct {
		name    string
		req     Request
		want    *metadata.PartitionChange // nil: no record
		unclean bool
		fromELR bool
	}{
		{name: "nothing changes",
			req: Request{Current: part([]int32{1, 2, 3}, []int32{1, 2, 3}, 1), Acceptable: alive(1, 2, 3)}},
		{name: "ISR shrink keeps the leader and its epoch",
			req:  Request{Current: part([]int32{1, 2, 3}, []int32{1, 2, 3}, 1), Acceptable: alive(1, 2, 3), TargetISR: []int32{1, 2}},
			want: ptr(change(func(c *metadata.PartitionChange) { c.ISR = []int32{1, 2} }))},
		{name: "leader removed from the ISR: the next ISR member in assignment order leads",
			req: Request{Current: part([]int32{1, 2, 3}, []int32{1, 2, 3}, 1), Acceptable: alive(2, 3), TargetISR: []int32{3, 2}},
			want: ptr(change(func(c *metadata.PartitionChange) {
				c.Leader, c.ISR = 2, []int32{3, 2}
			}))},
		{name: "last replica standing: ELR off, the ISR is not emptied and the partition goes offline",
			req:  Request{Current: part([]int32{1, 2}, []int32{1}, 1), Acceptable: alive(2), TargetISR: []int32{}},
			want: ptr(change(func(c *metadata.PartitionChange) { c.Leader = metadata.NoLeader }))},
		{name: "no valid leader and not unclean: offline",
			req:  Request{Current: part([]int32{1, 2}, []int32{1}, 1), Acceptable: alive(2)},
			want: ptr(change(func(c *metadata.PartitionChange) { c.Leader = metadata.NoLeader }))},
		{name: "unclean election: ISR is the leader alone, RECOVERING",
			req: Request{Current: part([]int32{1, 2}, []int32{1}, 1), Acceptable: alive(2), Kind: Unclean},
			want: ptr(change(func(c *metadata.PartitionChange) {
				c.Leader, c.ISR, c.LeaderRecoveryState = 2, []int32{2}, metadata.Recovering
			})), unclean: true},
		{name: "preferred election moves leadership to the first replica",
			req:  Request{Current: part([]int32{1, 2, 3}, []int32{1, 2, 3}, 2), Acceptable: alive(1, 2, 3), Kind: Preferred},
			want: ptr(change(func(c *metadata.PartitionChange) { c.Leader = 1 }))},
		{name: "preferred election keeps a valid leader when the preferred replica is out of the ISR",
			req: Request{Current: part([]int32{1, 2, 3}, []int32{2, 3}, 2), Acceptable: alive(1, 2, 3), Kind: Preferred}},
		{name: "ELR: shrinking below min ISR moves the removed members to the ELR",
			req: Request{Current: part([]int32{1, 2, 3}, []int32{1, 2, 3}, 1), Acceptable: alive(1, 2, 3), ELR: true, MinISR: 2,
				TargetISR: []int32{1}},
			want: ptr(change(func(c *metadata.PartitionChange) { c.ISR, c.ELR = []int32{1}, []int32{2, 3} }))},
		{name: "ELR: a replica back from an unclean shutdown is not eligible",
			req: Request{Current: part([]int32{1, 2, 3}, []int32{1, 2, 3}, 1), Acceptable: alive(1, 2, 3), ELR: true, MinISR: 2,
				TargetISR: []int32{1}, UncleanShutdown: []int32{3}},
			want: ptr(change(func(c *metadata.PartitionChange) { c.ISR, c.ELR = []int32{1}, []int32{2} }))},
		{name: "ELR: a replica a completed reassignment removes leaves the ELR too",
			req: Request{Current: &metadata.PartitionImage{Replicas: []int32{1, 4}, ISR: []int32{1}, ELR: []int32{4}, Removing: []int32{4},
				Adding: []int32{}, Leader: 1, PartitionEpoch: 9}, Acceptable: alive(1), ELR: true, MinISR: 2},
			want: ptr(change(func(c *metadata.PartitionChange) {
				c.Leader, c.Replicas, c.ELR, c.Removing = 1, []int32{1}, []int32{}, []int32{}
			}))},
		{name: "ELR: the last ISR member fenced, an ELR member leads and is the ISR",
			req: Request{Current: &metadata.PartitionImage{Replicas: []int32{1, 2, 3}, ISR: []int32{1}, ELR: []int32{2, 3},
				Leader: 1, PartitionEpoch: 9}, Acceptable: alive(2, 3), ELR: true, MinISR: 2, TargetISR: []int32{}},
			want: ptr(change(func(c *metadata.PartitionChange) {
				c.Leader, c.ISR, c.ELR = 2, []int32{2}, []int32{1, 3}
			})), fromELR: true},
		{name: "ELR: ISR and ELR empty, the partition remembers its last leader",
			req: Request{Current: &metadata.PartitionImage{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, PartitionEpoch: 9},
				Acceptable: alive(), ELR: true, MinISR: 2, TargetISR: []int32{}, UncleanShutdown: []int32{1}},
			want: ptr(change(func(c *metadata.PartitionChange) {
				c.Leader, c.ISR, c.LastKnownELR = metadata.NoLeader, []int32{}, []int32{1}
			}))},
		{name: "ELR: the last known leader comes back and is elected (a possible data loss)",
			req: Request{Current: &metadata.PartitionImage{Replicas: []int32{1, 2}, ISR: []int32{}, LastKnownELR: []int32{1},
				Leader: metadata.NoLeader, PartitionEpoch: 9}, Acceptable: alive(1), ELR: true, MinISR: 2},
			want: ptr(change(func(c *metadata.PartitionChange) {
				c.Leader, c.ISR, c.LastKnownELR, c.LeaderRecoveryState = 1, []int32{1}, []int32{}, metadata.Recovering
			})), unclean: true},
		{name: "reassignment completes once every adding replica is in the ISR; the removed leader hands over",
			req: Request{Current: &metadata.PartitionImage{Replicas: []int32{1, 2, 3, 4}, ISR: []int32{1, 2, 3}, Adding: []int32{4},
				Removing: []int32{1}, Leader: 1, PartitionEpoch: 9}, Acceptable: alive(1, 2, 3, 4), TargetISR: []int32{1, 2, 3, 4}},
			want: ptr(change(func(c *metadata.PartitionChange) {
				c.Leader, c.ISR, c.Replicas, c.Adding, c.Removing = 2, []int32{2, 3, 4}, []int32{2, 3, 4}, []int32{}, []int32{}
			}))},
		{name: "a reassignment that drops a follower bumps the leader epoch",
			req: Request{Current: part([]int32{1, 2, 3}, []int32{1, 2, 3}, 1), Acceptable: alive(1, 2, 3),
				TargetReplicas: []int32{1, 2}, TargetISR: []int32{1, 2}},
			want: ptr(change(func(c *metadata.PartitionChange) {
				c.Leader, c.ISR, c.Replicas = 1, []int32{1, 2}, []int32{1, 2}
			}))},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := *c.req.Current
			before.ISR = slices.Clone(before.ISR)
			got := Build(c.req)
			if c.want == nil {
				if got.Changed {
					t.Fatalf("want no record, got %+v", got.Change)
				}
			} else if diff := cmp.Diff(*c.want, got.Change); !got.Changed || diff != "" {
				t.Fatalf("changed=%v, record (-want +got):\n%s", got.Changed, diff)
			}
			if got.Unclean != c.unclean || got.FromELR != c.fromELR {
				t.Fatalf("unclean=%v fromELR=%v, want %v %v", got.Unclean, got.FromELR, c.unclean, c.fromELR)
			}
			if !cmp.Equal(before.ISR, c.req.Current.ISR) {
				t.Fatal("Build changed its input")
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// Whatever the request (of the kinds callers make), applying the record gives a partition whose leader
// is in its ISR (or there is no leader), whose ISR is within its replicas,
// and whose leader epoch moved exactly when the leader field was set.
func TestBuildInvariants(t *testing.T) {
	replicas := []int32{1, 2, 3}
	subsets := [][]int32{{}, {1}, {2}, {3}, {1, 2}, {2, 3}, {1, 3}, {1, 2, 3}}
	for _, isr := range subsets[1:] {
		for _, target := range subsets {
			for _, up := range subsets {
				for _, kind := range []Kind{Online, Preferred, Unclean} {
					for _, elr := range []bool{false, true} {
						if slices.Contains(up, isr[0]) && !slices.Contains(target, isr[0]) {
							// Callers remove a leader from the ISR only once it
							// is unusable (AlterPartition keeps the sender in it).
							continue
						}
						cur := &metadata.PartitionImage{Replicas: replicas, ISR: isr, Leader: isr[0], PartitionEpoch: 9}
						res := Build(Request{Current: cur, Acceptable: alive(up...), Kind: kind, ELR: elr, MinISR: 2, TargetISR: target})
						if !res.Changed {
							continue
						}
						tid := metadata.TopicID{1}
						im, _ := metadata.Apply(metadata.Empty(), 1, 1, &metadata.Entry{Term: 1, Records: []metadata.Record{
							metadata.Topic{Name: "t", ID: tid},
							metadata.Partition{Topic: tid, Replicas: replicas, ISR: isr, Leader: isr[0], PartitionEpoch: 9}}})
						ch := res.Change
						ch.Topic = tid
						im, _ = metadata.Apply(im, 2, 1, &metadata.Entry{Term: 1, Records: []metadata.Record{ch}})
						p := im.Partition("t", 0)
						if im.Skipped != 0 || p.Leader != res.Leader {
							t.Fatalf("isr %v target %v up %v kind %v elr %v: record did not apply (%+v)", isr, target, up, kind, elr, ch)
						}
						if p.Leader != metadata.NoLeader && (!slices.Contains(p.ISR, p.Leader) || !slices.Contains(up, p.Leader)) {
							t.Fatalf("isr %v target %v up %v kind %v elr %v: leader %d, ISR %v", isr, target, up, kind, elr, p.Leader, p.ISR)
						}
						if res.Unclean && kind != Unclean && !elr {
							t.Fatalf("unclean election without asking for one: %+v", res)
						}
						for _, id := range p.ISR {
							if !slices.Contains(replicas, id) {
								t.Fatalf("ISR %v outside replicas", p.ISR)
							}
						}
						if len(p.ISR) == 0 && !elr {
							t.Fatalf("isr %v target %v: the ISR emptied with ELR off", isr, target)
						}
					}
				}
			}
		}
	}
}
