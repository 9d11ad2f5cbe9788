package metadata

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"
)

var ids = rapid.SliceOfN(rapid.Int32Range(0, 5), 0, 4)

func nullableIDs(t *rapid.T, label string) []int32 {
	if rapid.Bool().Draw(t, label+"_nil") {
		return nil
	}
	return ids.Draw(t, label)
}

func uuid(t *rapid.T, label string) [16]byte {
	var u [16]byte
	copy(u[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, label))
	return u
}

func genRecord(t *rapid.T) Record {
	str := rapid.StringMatching(`[a-z0-9._-]{0,12}`)
	topic := TopicID(uuid(t, "topic"))
	switch rapid.IntRange(1, 18).Draw(t, "type") {
	case 1:
		return Activation{Node: rapid.Int32().Draw(t, "node"), Term: rapid.Uint64().Draw(t, "term")}
	case 2:
		return FeatureLevel{Name: str.Draw(t, "name"), Level: rapid.Int16().Draw(t, "level")}
	case 3:
		r := RegisterBroker{ID: rapid.Int32().Draw(t, "id"), Epoch: rapid.Int64().Draw(t, "epoch"),
			Incarnation: uuid(t, "inc"), Rack: str.Draw(t, "rack"), Fenced: rapid.Bool().Draw(t, "fenced"),
			InControlledShutdown: rapid.Bool().Draw(t, "cs")}
		for i := rapid.IntRange(0, 3).Draw(t, "neps"); i > 0; i-- {
			r.Endpoints = append(r.Endpoints, Endpoint{Name: str.Draw(t, "ln"), Host: str.Draw(t, "host"),
				Port: rapid.Int32().Draw(t, "port"), SecurityProtocol: rapid.Int16().Draw(t, "sp")})
		}
		for i := rapid.IntRange(0, 2).Draw(t, "ndirs"); i > 0; i-- {
			r.LogDirs = append(r.LogDirs, uuid(t, "dir"))
		}
		return r
	case 4:
		return BrokerRegistrationChange{ID: rapid.Int32().Draw(t, "id"), Epoch: rapid.Int64().Draw(t, "epoch"),
			Fenced: FencingChange(rapid.Int8Range(-1, 1).Draw(t, "f")), InControlledShutdown: rapid.Bool().Draw(t, "cs")}
	case 5:
		return UnregisterBroker{ID: rapid.Int32().Draw(t, "id"), Epoch: rapid.Int64().Draw(t, "epoch")}
	case 6:
		return Topic{Name: str.Draw(t, "name"), ID: topic}
	case 7:
		return Partition{Topic: topic, Partition: rapid.Int32().Draw(t, "p"), Replicas: nullableIDs(t, "r"),
			ISR: nullableIDs(t, "isr"), ELR: nullableIDs(t, "elr"), LastKnownELR: nullableIDs(t, "lke"),
			Leader: rapid.Int32().Draw(t, "leader"), LeaderRecoveryState: LeaderRecoveryState(rapid.Int8Range(0, 1).Draw(t, "lrs")),
			LeaderEpoch: rapid.Int32().Draw(t, "le"), PartitionEpoch: rapid.Int32().Draw(t, "pe"),
			Adding: nullableIDs(t, "add"), Removing: nullableIDs(t, "rm")}
	case 8:
		return PartitionChange{Topic: topic, Partition: rapid.Int32().Draw(t, "p"),
			ExpectedPartitionEpoch: rapid.Int32().Draw(t, "epe"), Leader: rapid.Int32Range(-2, 5).Draw(t, "leader"),
			ISR: nullableIDs(t, "isr"), ELR: nullableIDs(t, "elr"), LastKnownELR: nullableIDs(t, "lke"),
			Replicas: nullableIDs(t, "r"), Adding: nullableIDs(t, "add"), Removing: nullableIDs(t, "rm"),
			LeaderRecoveryState: LeaderRecoveryState(rapid.Int8Range(-1, 1).Draw(t, "lrs"))}
	case 9:
		return RemoveTopic{ID: topic}
	case 10:
		c := Config{Resource: ConfigResource{Type: rapid.SampledFrom([]int8{ResourceTopic, ResourceBroker}).Draw(t, "rt"),
			Name: str.Draw(t, "rn")}, Name: str.Draw(t, "name")}
		if rapid.Bool().Draw(t, "set") {
			v := str.Draw(t, "value")
			c.Value = &v
		}
		return c
	case 11:
		return ProducerIDs{BrokerID: rapid.Int32().Draw(t, "b"), BrokerEpoch: rapid.Int64().Draw(t, "be"),
			NextBlockStart: rapid.Int64().Draw(t, "next")}
	case 13:
		return AccessControlEntry{ID: uuid(t, "acl"), ACL: genACL(t)}
	case 14:
		return RemoveAccessControlEntry{ID: uuid(t, "acl")}
	case 15:
		return UserScramCredential{Key: genScramKey(t), Credential: ScramCredential{
			Salt: rapid.SliceOfN(rapid.Byte(), 0, 32).Draw(t, "salt"), StoredKey: rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "sk"),
			ServerKey: rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "srv"), Iterations: rapid.Int32().Draw(t, "iter")}}
	case 16:
		return RemoveUserScramCredential{Key: genScramKey(t)}
	case 17:
		return UncleanElection{Topic: topic, Partition: rapid.Int32().Draw(t, "p"), LeaderEpoch: rapid.Int32().Draw(t, "le"),
			Leader: rapid.Int32().Draw(t, "leader"), AtMs: rapid.Int64().Draw(t, "at"), LastKnownLeader: rapid.Bool().Draw(t, "lkl"),
			PreviousLeader: rapid.Int32().Draw(t, "pl"), PreviousISR: nullableIDs(t, "pisr"), PreviousELR: nullableIDs(t, "pelr"),
			Count: rapid.Int32().Draw(t, "count")}
	case 18:
		return AckUncleanElection{Topic: topic, Partition: rapid.Int32().Draw(t, "p"), LeaderEpoch: rapid.Int32().Draw(t, "le")}
	default:
		return ClusterID{ID: str.Draw(t, "cluster")}
	}
}

func genACL(t *rapid.T) ACL {
	return ACL{ResourceType: rapid.Int8Range(2, 6).Draw(t, "rt"), ResourceName: rapid.StringMatching(`[a-c*]{1,3}`).Draw(t, "rn"),
		PatternType: rapid.Int8Range(3, 4).Draw(t, "pt"), Principal: rapid.SampledFrom([]string{"User:a", "User:b", "User:*"}).Draw(t, "pr"),
		Host: rapid.SampledFrom([]string{"*", "10.0.0.1"}).Draw(t, "host"), Operation: rapid.Int8Range(2, 14).Draw(t, "op"),
		Permission: rapid.Int8Range(2, 3).Draw(t, "perm")}
}

func genScramKey(t *rapid.T) ScramKey {
	return ScramKey{User: rapid.SampledFrom([]string{"alice", "bob", "c=d,e"}).Draw(t, "user"), Mechanism: rapid.Int8Range(1, 2).Draw(t, "mech")}
}

// Every record survives an encode/decode round trip, nil and empty lists
// kept apart.
func TestEntryRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := &Entry{Proposer: rapid.Int32().Draw(t, "proposer"), Term: rapid.Uint64().Draw(t, "term"),
			Seq: rapid.Uint64().Draw(t, "seq")}
		for i := rapid.IntRange(0, 8).Draw(t, "n"); i > 0; i-- {
			e.Records = append(e.Records, genRecord(t))
		}
		b := EncodeEntry(nil, e)
		got, err := DecodeEntry(b)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(e, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
		for i, r := range e.Records {
			if pc, ok := r.(PartitionChange); ok && (pc.ISR == nil) != (got.Records[i].(PartitionChange).ISR == nil) {
				t.Fatalf("record %d: nil ISR not kept apart from empty", i)
			}
		}
		// Every strict prefix is corrupt, never a panic or a shorter entry.
		for _, cut := range []int{0, 1, len(b) / 2, len(b) - 1} {
			if cut < len(b) {
				if _, err := DecodeEntry(b[:cut]); err == nil {
					t.Fatalf("a %d-byte prefix of a %d-byte entry decoded", cut, len(b))
				}
			}
		}
	})
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add(EncodeEntry(nil, &Entry{Records: []Record{Topic{Name: "a", ID: TopicID{1}}, Partition{Topic: TopicID{1}}}}))
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEntry(b)
		if err != nil {
			return
		}
		// Non-canonical varints decode too, so compare decoded values, not bytes.
		again, err := DecodeEntry(EncodeEntry(nil, e))
		if err != nil {
			t.Fatalf("re-encoded entry does not decode: %v", err)
		}
		if diff := cmp.Diff(e, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("re-encoding changed the entry:\n%s", diff)
		}
	})
}
