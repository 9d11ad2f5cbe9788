package metadata

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"
)

func apply(t testing.TB, im *Image, index uint64, recs ...Record) (*Image, *Delta) {
	t.Helper()
	return Apply(im, index, 1, &Entry{Term: 1, Records: recs})
}

var tid = TopicID{1: 1}

func strp(s string) *string { return &s }

func TestApplyBrokers(t *testing.T) {
	im, d := apply(t, Empty(), 7, RegisterBroker{ID: 2, Fenced: true})
	if b := im.Brokers[2]; b == nil || b.Epoch != 7 || !b.Fenced || !d.Brokers[2] {
		t.Fatalf("registered broker %+v, delta %+v; want epoch 7 (the entry index), fenced", b, d)
	}
	// A change for an older incarnation's epoch is skipped.
	im2, _ := apply(t, im, 8, BrokerRegistrationChange{ID: 2, Epoch: 3, Fenced: Unfence})
	if !im2.Brokers[2].Fenced || im2.Skipped != 1 {
		t.Fatalf("stale-epoch unfence applied: %+v, skipped %d", im2.Brokers[2], im2.Skipped)
	}
	im3, _ := apply(t, im2, 9, BrokerRegistrationChange{ID: 2, Epoch: 7, Fenced: Unfence},
		BrokerRegistrationChange{ID: 2, Epoch: 7, InControlledShutdown: true})
	if b := im3.Brokers[2]; b.Fenced || !b.InControlledShutdown || im3.Usable(2) {
		t.Fatalf("after unfence + controlled shutdown: %+v", b)
	}
	if !im2.Brokers[2].Fenced || im2.Brokers[2].InControlledShutdown {
		t.Fatal("applying changed the previous image")
	}
	im4, _ := apply(t, im3, 10, RegisterBroker{ID: 2})
	if im4.Brokers[2].Epoch != 10 || im4.Brokers[2].InControlledShutdown {
		t.Fatalf("re-registration: %+v; want epoch 10, a fresh state", im4.Brokers[2])
	}
	im5, _ := apply(t, im4, 11, UnregisterBroker{ID: 2, Epoch: 7})
	if im5.Brokers[2] == nil {
		t.Fatal("unregistered by a stale epoch")
	}
	if im6, _ := apply(t, im5, 12, UnregisterBroker{ID: 2, Epoch: 10}); im6.Brokers[2] != nil {
		t.Fatal("not unregistered")
	}
}

func TestApplyPartitionChange(t *testing.T) {
	im, d := apply(t, Empty(), 1, Topic{Name: "t", ID: tid},
		Partition{Topic: tid, Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1},
		Partition{Topic: tid, Partition: 1, Replicas: []int32{2, 3, 1}, ISR: []int32{2, 3, 1}, Leader: 2},
		Config{Resource: ConfigResource{Type: ResourceTopic, Name: "t"}, Name: "retention.ms", Value: strp("1")})
	if len(d.TopicsCreated) != 1 || len(d.Partitions[tid]) != 2 || !d.Configs[ConfigResource{ResourceTopic, "t"}] {
		t.Fatalf("delta %+v", d)
	}
	// An ISR shrink keeps the leader epoch; a leader change bumps it, even
	// to the same leader.
	im2, d2 := apply(t, im, 2, PartitionChange{Topic: tid, Partition: 0, ExpectedPartitionEpoch: 0,
		Leader: NoLeaderChange, ISR: []int32{1, 2}, LeaderRecoveryState: NoRecoveryChange})
	p := im2.Partition("t", 0)
	if p.PartitionEpoch != 1 || p.LeaderEpoch != 0 || !cmp.Equal(p.ISR, []int32{1, 2}) || !d2.Partitions[tid][0] || d2.Partitions[tid][1] {
		t.Fatalf("after shrink: %+v, delta %+v", p, d2)
	}
	im3, _ := apply(t, im2, 3, PartitionChange{Topic: tid, Partition: 0, ExpectedPartitionEpoch: 1, Leader: 1,
		LeaderRecoveryState: NoRecoveryChange})
	if p := im3.Partition("t", 0); p.PartitionEpoch != 2 || p.LeaderEpoch != 1 || p.Leader != 1 {
		t.Fatalf("after same-leader election: %+v", p)
	}
	// A change computed against epoch 1 after the partition moved to 2 is
	// skipped.
	im4, _ := apply(t, im3, 4, PartitionChange{Topic: tid, Partition: 0, ExpectedPartitionEpoch: 1, Leader: 3,
		LeaderRecoveryState: NoRecoveryChange})
	if im4.Partition("t", 0).Leader != 1 || im4.Skipped != 1 {
		t.Fatalf("stale change applied: %+v", im4.Partition("t", 0))
	}
	if im.Partition("t", 0).PartitionEpoch != 0 || len(im.Partition("t", 0).ISR) != 3 {
		t.Fatal("applying changed an earlier image")
	}
	im5, d5 := apply(t, im4, 5, RemoveTopic{ID: tid})
	if im5.Topic("t") != nil || im5.TopicByID(tid) != nil || im5.TopicConfigs("t") != nil ||
		len(d5.TopicsRemoved) != 1 || !d5.Configs[ConfigResource{ResourceTopic, "t"}] {
		t.Fatalf("after RemoveTopic: topic %v, configs %v, delta %+v", im5.Topic("t"), im5.TopicConfigs("t"), d5)
	}
	if d5.Prev.Topic("t") == nil {
		t.Fatal("the delta's previous image lost the removed topic")
	}
}

// An unclean election is kept on its partition, in snapshots too, until
// the acknowledgement of its leader epoch; records that do not match the
// partition's leader epoch and leader are skipped.
func TestApplyUncleanElection(t *testing.T) {
	im, _ := apply(t, Empty(), 1, Topic{Name: "t", ID: tid},
		Partition{Topic: tid, Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: 1})
	u := UncleanElection{Topic: tid, Partition: 0, LeaderEpoch: 1, Leader: 3, AtMs: 1234, PreviousLeader: 1,
		PreviousISR: []int32{1}, PreviousELR: []int32{}, Count: 1}
	im2, _ := apply(t, im, 2, PartitionChange{Topic: tid, Partition: 0, ExpectedPartitionEpoch: 0, Leader: 3,
		ISR: []int32{3}, LeaderRecoveryState: Recovering}, u)
	p := im2.Partition("t", 0)
	if im2.Skipped != 0 || p.Unclean == nil || !cmp.Equal(*p.Unclean, u) || p.LeaderRecoveryState != Recovering {
		t.Fatalf("after the unclean election: %+v (skipped %d)", p, im2.Skipped)
	}
	if im.Partition("t", 0).Unclean != nil {
		t.Fatal("applying changed an earlier image")
	}
	// A snapshot carries it, also once the partition has moved on to
	// another leader epoch.
	moved, _ := apply(t, im2, 3, PartitionChange{Topic: tid, Partition: 0, ExpectedPartitionEpoch: 1, Leader: 1,
		ISR: []int32{1}, LeaderRecoveryState: Recovered})
	for _, src := range []*Image{im2, moved} {
		re, _ := apply(t, Empty(), 1, src.Records()...)
		if got := re.Partition("t", 0).Unclean; re.Skipped != 0 || got == nil || !cmp.Equal(*got, u, cmpopts.EquateEmpty()) {
			t.Fatalf("from the snapshot at leader epoch %d: %+v (skipped %d)", src.Partition("t", 0).LeaderEpoch, got, re.Skipped)
		}
	}
	// A future epoch, another leader in its epoch, one not newer than the
	// one held: skipped; an acknowledgement of another epoch too.
	bad, _ := apply(t, im2, 3, UncleanElection{Topic: tid, Partition: 0, LeaderEpoch: 2, Leader: 3},
		UncleanElection{Topic: tid, Partition: 0, LeaderEpoch: 1, Leader: 2}, UncleanElection{Topic: tid, Partition: 0, LeaderEpoch: 0, Leader: 1},
		AckUncleanElection{Topic: tid, Partition: 0, LeaderEpoch: 0})
	if bad.Skipped != 4 || bad.Partition("t", 0).Unclean == nil || bad.Partition("t", 0).Unclean.Leader != 3 {
		t.Fatalf("mismatched records: skipped %d, unclean %+v", bad.Skipped, bad.Partition("t", 0).Unclean)
	}
	acked, _ := apply(t, im2, 3, AckUncleanElection{Topic: tid, Partition: 0, LeaderEpoch: 1})
	if acked.Skipped != 0 || acked.Partition("t", 0).Unclean != nil {
		t.Fatalf("after the acknowledgement: %+v", acked.Partition("t", 0))
	}
}

func TestApplyTermMismatchSkipsEntry(t *testing.T) {
	next, d := Apply(Empty(), 1, 2, &Entry{Term: 1, Records: []Record{Topic{Name: "t", ID: tid}}})
	if next.Topic("t") != nil || next.Skipped != 1 || !d.Empty() || next.Index != 1 {
		t.Fatalf("an entry proposed in term 1 but committed in term 2 applied: %+v", next)
	}
}

// genEntry draws records that mostly apply to im: registrations, topics with
// partitions, changes at the right or a wrong epoch, configs, removals.
func genEntry(t *rapid.T, im *Image) []Record {
	var recs []Record
	names := im.TopicNames()
	for i := rapid.IntRange(1, 4).Draw(t, "n"); i > 0; i-- {
		switch rapid.IntRange(0, 9).Draw(t, "kind") {
		case 0:
			recs = append(recs, RegisterBroker{ID: rapid.Int32Range(0, 3).Draw(t, "id"), Fenced: rapid.Bool().Draw(t, "f"),
				Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "h", Port: 1}}})
		case 1:
			if b := im.SortedBrokers(); len(b) > 0 {
				x := rapid.SampledFrom(b).Draw(t, "b")
				recs = append(recs, BrokerRegistrationChange{ID: x.ID, Epoch: x.Epoch, Fenced: FencingChange(rapid.Int8Range(-1, 1).Draw(t, "fc"))})
			}
		case 2:
			id := TopicID(uuid(t, "tid"))
			name := rapid.StringMatching(`[a-c]`).Draw(t, "name")
			recs = append(recs, Topic{Name: name, ID: id})
			for p := int32(0); p < int32(rapid.IntRange(0, 3).Draw(t, "parts")); p++ {
				recs = append(recs, Partition{Topic: id, Partition: p, Replicas: []int32{p, p + 1}, ISR: []int32{p}, Leader: p})
			}
		case 3, 4:
			if len(names) > 0 {
				top := im.Topic(rapid.SampledFrom(names).Draw(t, "topic"))
				if len(top.Partitions) > 0 {
					p := rapid.IntRange(0, len(top.Partitions)-1).Draw(t, "p")
					epoch := top.Partitions[p].PartitionEpoch - int32(rapid.IntRange(0, 1).Draw(t, "stale"))
					recs = append(recs, PartitionChange{Topic: top.ID, Partition: int32(p), ExpectedPartitionEpoch: epoch,
						Leader: rapid.Int32Range(-2, 3).Draw(t, "leader"), ISR: nullableIDs(t, "isr"),
						LeaderRecoveryState: LeaderRecoveryState(rapid.Int8Range(-1, 1).Draw(t, "lrs"))})
				}
			}
		case 5:
			res := ConfigResource{Type: ResourceBroker, Name: rapid.SampledFrom([]string{"", "1"}).Draw(t, "bn")}
			if len(names) > 0 && rapid.Bool().Draw(t, "topiccfg") {
				res = ConfigResource{Type: ResourceTopic, Name: rapid.SampledFrom(names).Draw(t, "cfgtopic")}
			}
			c := Config{Resource: res, Name: rapid.SampledFrom([]string{"x", "y"}).Draw(t, "key")}
			if rapid.Bool().Draw(t, "set") {
				c.Value = strp(rapid.StringMatching(`[0-9]{1,3}`).Draw(t, "v"))
			}
			recs = append(recs, c)
		case 6:
			if len(names) > 0 {
				recs = append(recs, RemoveTopic{ID: im.Topic(rapid.SampledFrom(names).Draw(t, "rm")).ID})
			}
		case 8:
			if acls := im.ACLs(); len(acls) > 0 && rapid.Bool().Draw(t, "rmacl") {
				for id := range acls {
					recs = append(recs, RemoveAccessControlEntry{ID: id})
					break
				}
			} else {
				recs = append(recs, AccessControlEntry{ID: uuid(t, "aclid"), ACL: genACL(t)})
			}
		case 9:
			if keys := im.ScramKeys(); len(keys) > 0 && rapid.Bool().Draw(t, "rmscram") {
				recs = append(recs, RemoveUserScramCredential{Key: rapid.SampledFrom(keys).Draw(t, "rmkey")})
			} else {
				recs = append(recs, UserScramCredential{Key: genScramKey(t), Credential: ScramCredential{Salt: []byte("salt"),
					StoredKey: []byte{1}, ServerKey: []byte{2}, Iterations: 4096}})
			}
		case 7:
			recs = append(recs, ProducerIDs{BrokerID: 1, BrokerEpoch: 1, NextBlockStart: im.NextProducerID + 1000},
				FeatureLevel{Name: "f", Level: rapid.Int16Range(0, 2).Draw(t, "lvl")})
		}
	}
	return recs
}

var imageCmp = []cmp.Option{cmp.AllowUnexported(Image{}), cmpopts.EquateEmpty(), cmpopts.IgnoreFields(Image{}, "Skipped"),
	cmp.Transformer("byName", plain[string, *TopicImage]), cmp.Transformer("byID", plain[TopicID, *TopicImage])}

func plain[K comparable, V any](m cowMap[K, V]) map[K]V {
	out := map[K]V{}
	m.each(func(k K, v V) { out[k] = v })
	if len(out) != m.len() {
		panic("cowMap count is off")
	}
	return out
}

// Applying never changes an earlier image, and a snapshot of any image
// rebuilds it exactly.
func TestApplyModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		im := Empty()
		var history []*Image
		var frozen [][]byte // each earlier image's snapshot, taken when it was current
		for i := uint64(1); i <= uint64(rapid.IntRange(1, 30).Draw(t, "entries")); i++ {
			history = append(history, im)
			frozen = append(frozen, EncodeSnapshot(im))
			im, _ = Apply(im, i, 1, &Entry{Term: 1, Records: genEntry(t, im)})
			got, err := DecodeSnapshot(EncodeSnapshot(im))
			if err != nil {
				t.Fatalf("entry %d: snapshot does not decode: %v", i, err)
			}
			if diff := cmp.Diff(im, got, imageCmp...); diff != "" {
				t.Fatalf("entry %d: snapshot round trip (-image +decoded):\n%s", i, diff)
			}
		}
		for i, old := range history {
			if s := EncodeSnapshot(old); string(s) != string(frozen[i]) {
				t.Fatalf("image %d changed after later entries applied", i)
			}
		}
	})
}

// BenchmarkApplyCreateTopic applies one entry per topic (a topic of three
// partitions) to an image already holding 30,000 topics: the cost must not
// grow with the image.
func BenchmarkApplyCreateTopic(b *testing.B) {
	im := Empty()
	id := func(i int) TopicID { return TopicID{0: byte(i), 1: byte(i >> 8), 2: byte(i >> 16), 15: 7} }
	entry := func(i int) *Entry {
		t := Topic{Name: "t" + string(rune('a'+i%26)) + strconv.Itoa(i), ID: id(i)}
		recs := []Record{t}
		for p := int32(0); p < 3; p++ {
			recs = append(recs, Partition{Topic: t.ID, Partition: p, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1})
		}
		return &Entry{Term: 1, Records: recs}
	}
	for i := 0; i < 30000; i++ {
		im, _ = Apply(im, uint64(i+1), 1, entry(i))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		im, _ = Apply(im, uint64(30001+i), 1, entry(30000+i))
	}
}

// ACLs are added under fresh ids, once each, and removed by id; SCRAM
// credentials are set and removed by user and mechanism. Each change shows
// in the delta, and a record that cannot apply is skipped.
func TestApplySecurity(t *testing.T) {
	a1 := ACL{ResourceType: 2, ResourceName: "t", PatternType: 3, Principal: "User:a", Host: "*", Operation: 3, Permission: 3}
	a2 := a1
	a2.Permission = 2
	im, d := apply(t, Empty(), 1, AccessControlEntry{ID: [16]byte{1}, ACL: a1}, AccessControlEntry{ID: [16]byte{2}, ACL: a2})
	if !d.ACLs || im.NumACLs() != 2 || im.Skipped != 0 {
		t.Fatalf("add: %v %d %d", d.ACLs, im.NumACLs(), im.Skipped)
	}
	prev := im
	im, _ = apply(t, im, 2, AccessControlEntry{ID: [16]byte{3}, ACL: a1}, AccessControlEntry{ID: [16]byte{2}, ACL: a1},
		RemoveAccessControlEntry{ID: [16]byte{9}})
	if im.Skipped != 3 || im.NumACLs() != 2 {
		t.Errorf("a duplicate ACL, a taken id and an unknown removal: skipped %d, %d ACLs", im.Skipped, im.NumACLs())
	}
	im, d = apply(t, im, 3, RemoveAccessControlEntry{ID: [16]byte{1}})
	if !d.ACLs || im.NumACLs() != 1 || prev.NumACLs() != 2 {
		t.Errorf("remove: %d ACLs, the earlier image %d", im.NumACLs(), prev.NumACLs())
	}
	k := ScramKey{User: "alice", Mechanism: 1}
	im, d = apply(t, im, 4, UserScramCredential{Key: k, Credential: ScramCredential{Salt: []byte("s"), Iterations: 4096}})
	if c, ok := im.ScramCredential("alice", 1); !d.Scram || !ok || c.Iterations != 4096 {
		t.Errorf("set: %+v %v", c, ok)
	}
	if _, ok := im.ScramCredential("alice", 2); ok {
		t.Error("the other mechanism has a credential")
	}
	im, d = apply(t, im, 5, RemoveUserScramCredential{Key: k}, RemoveUserScramCredential{Key: k})
	if _, ok := im.ScramCredential("alice", 1); !d.Scram || ok || im.Skipped != 4 {
		t.Errorf("remove: %v, skipped %d", ok, im.Skipped)
	}
}
