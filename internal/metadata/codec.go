package metadata

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Entry is what one raft entry carries: the records of one controller write,
// applied atomically, tagged with who proposed them. Proposer and Term let
// the proposer recognise its own entries when they apply (Seq numbers its
// writes within the term), and let Apply refuse an entry proposed in another
// term than the one raft committed it in.
type Entry struct {
	Proposer int32
	Term     uint64
	Seq      uint64
	Records  []Record
}

// entryFormat is the first byte of an encoded entry.
const entryFormat = 1

// recordVersion is the version byte of every record type so far.
const recordVersion = 0

// ErrCorrupt is an entry or snapshot that does not decode.
var ErrCorrupt = errors.New("metadata: corrupt record")

// EncodeEntry appends e's encoding to dst.
func EncodeEntry(dst []byte, e *Entry) []byte {
	dst = append(dst, entryFormat)
	dst = kbin.AppendInt32(dst, e.Proposer)
	dst = kbin.AppendInt64(dst, int64(e.Term))
	dst = kbin.AppendInt64(dst, int64(e.Seq))
	dst = kbin.AppendInt32(dst, int32(len(e.Records)))
	for _, r := range e.Records {
		dst = AppendRecord(dst, r)
	}
	return dst
}

// DecodeEntry decodes an entry encoded by EncodeEntry.
func DecodeEntry(b []byte) (*Entry, error) {
	if len(b) == 0 || b[0] != entryFormat {
		return nil, fmt.Errorf("%w: entry format byte", ErrCorrupt)
	}
	r := &kbin.Reader{Src: b[1:]}
	e := &Entry{Proposer: r.Int32(), Term: uint64(r.Int64()), Seq: uint64(r.Int64())}
	n := r.Int32()
	if !r.Ok() || n < 0 || int(n) > len(r.Src) {
		return nil, fmt.Errorf("%w: entry header", ErrCorrupt)
	}
	e.Records = make([]Record, 0, n)
	for i := int32(0); i < n; i++ {
		rec, err := readRecord(r)
		if err != nil {
			return nil, err
		}
		e.Records = append(e.Records, rec)
	}
	if err := r.Complete(); err != nil || len(r.Src) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last record", ErrCorrupt, len(r.Src))
	}
	return e, nil
}

// AppendRecord appends one record: type, version, then its fields.
func AppendRecord(dst []byte, rec Record) []byte {
	dst = append(dst, byte(rec.Type()), recordVersion)
	switch r := rec.(type) {
	case ClusterID:
		dst = kbin.AppendVarintString(dst, r.ID)
	case Activation:
		dst = kbin.AppendInt32(dst, r.Node)
		dst = kbin.AppendInt64(dst, int64(r.Term))
	case FeatureLevel:
		dst = kbin.AppendVarintString(dst, r.Name)
		dst = kbin.AppendInt16(dst, r.Level)
	case RegisterBroker:
		dst = kbin.AppendInt32(dst, r.ID)
		dst = kbin.AppendInt64(dst, r.Epoch)
		dst = kbin.AppendUuid(dst, r.Incarnation)
		dst = kbin.AppendArrayLen(dst, len(r.Endpoints))
		for _, ep := range r.Endpoints {
			dst = kbin.AppendVarintString(dst, ep.Name)
			dst = kbin.AppendVarintString(dst, ep.Host)
			dst = kbin.AppendInt32(dst, ep.Port)
			dst = kbin.AppendInt16(dst, ep.SecurityProtocol)
		}
		dst = kbin.AppendVarintString(dst, r.Rack)
		dst = kbin.AppendBool(dst, r.Fenced)
		dst = kbin.AppendBool(dst, r.InControlledShutdown)
		dst = kbin.AppendArrayLen(dst, len(r.LogDirs))
		for _, d := range r.LogDirs {
			dst = kbin.AppendUuid(dst, d)
		}
	case BrokerRegistrationChange:
		dst = kbin.AppendInt32(dst, r.ID)
		dst = kbin.AppendInt64(dst, r.Epoch)
		dst = kbin.AppendInt8(dst, int8(r.Fenced))
		dst = kbin.AppendBool(dst, r.InControlledShutdown)
	case UnregisterBroker:
		dst = kbin.AppendInt32(dst, r.ID)
		dst = kbin.AppendInt64(dst, r.Epoch)
	case Topic:
		dst = kbin.AppendVarintString(dst, r.Name)
		dst = kbin.AppendUuid(dst, r.ID)
	case Partition:
		dst = kbin.AppendUuid(dst, r.Topic)
		dst = kbin.AppendInt32(dst, r.Partition)
		dst = appendIDs(dst, r.Replicas)
		dst = appendIDs(dst, r.ISR)
		dst = appendIDs(dst, r.ELR)
		dst = appendIDs(dst, r.LastKnownELR)
		dst = kbin.AppendInt32(dst, r.Leader)
		dst = kbin.AppendInt8(dst, int8(r.LeaderRecoveryState))
		dst = kbin.AppendInt32(dst, r.LeaderEpoch)
		dst = kbin.AppendInt32(dst, r.PartitionEpoch)
		dst = appendIDs(dst, r.Adding)
		dst = appendIDs(dst, r.Removing)
	case PartitionChange:
		dst = kbin.AppendUuid(dst, r.Topic)
		dst = kbin.AppendInt32(dst, r.Partition)
		dst = kbin.AppendInt32(dst, r.ExpectedPartitionEpoch)
		dst = kbin.AppendInt32(dst, r.Leader)
		dst = appendIDs(dst, r.ISR)
		dst = appendIDs(dst, r.ELR)
		dst = appendIDs(dst, r.LastKnownELR)
		dst = appendIDs(dst, r.Replicas)
		dst = appendIDs(dst, r.Adding)
		dst = appendIDs(dst, r.Removing)
		dst = kbin.AppendInt8(dst, int8(r.LeaderRecoveryState))
	case RemoveTopic:
		dst = kbin.AppendUuid(dst, r.ID)
	case Config:
		dst = kbin.AppendInt8(dst, r.Resource.Type)
		dst = kbin.AppendVarintString(dst, r.Resource.Name)
		dst = kbin.AppendVarintString(dst, r.Name)
		dst = appendNullableString(dst, r.Value)
	case ProducerIDs:
		dst = kbin.AppendInt32(dst, r.BrokerID)
		dst = kbin.AppendInt64(dst, r.BrokerEpoch)
		dst = kbin.AppendInt64(dst, r.NextBlockStart)
	case AccessControlEntry:
		dst = kbin.AppendUuid(dst, r.ID)
		dst = kbin.AppendInt8(dst, r.ACL.ResourceType)
		dst = kbin.AppendVarintString(dst, r.ACL.ResourceName)
		dst = kbin.AppendInt8(dst, r.ACL.PatternType)
		dst = kbin.AppendVarintString(dst, r.ACL.Principal)
		dst = kbin.AppendVarintString(dst, r.ACL.Host)
		dst = kbin.AppendInt8(dst, r.ACL.Operation)
		dst = kbin.AppendInt8(dst, r.ACL.Permission)
	case RemoveAccessControlEntry:
		dst = kbin.AppendUuid(dst, r.ID)
	case UserScramCredential:
		dst = kbin.AppendVarintString(dst, r.Key.User)
		dst = kbin.AppendInt8(dst, r.Key.Mechanism)
		dst = kbin.AppendVarintBytes(dst, r.Credential.Salt)
		dst = kbin.AppendVarintBytes(dst, r.Credential.StoredKey)
		dst = kbin.AppendVarintBytes(dst, r.Credential.ServerKey)
		dst = kbin.AppendInt32(dst, r.Credential.Iterations)
	case RemoveUserScramCredential:
		dst = kbin.AppendVarintString(dst, r.Key.User)
		dst = kbin.AppendInt8(dst, r.Key.Mechanism)
	case UncleanElection:
		dst = appendUnclean(dst, r)
	case AckUncleanElection:
		dst = kbin.AppendUuid(dst, r.Topic)
		dst = kbin.AppendInt32(dst, r.Partition)
		dst = kbin.AppendInt32(dst, r.LeaderEpoch)
	default:
		panic(fmt.Sprintf("metadata: no encoding for %T", rec))
	}
	return dst
}

// appendIDs writes a nullable list of broker ids: nil and empty differ
// (nil means "no change" in a PartitionChange).
func appendIDs(dst []byte, ids []int32) []byte {
	dst = kbin.AppendNullableArrayLen(dst, len(ids), ids == nil)
	for _, id := range ids {
		dst = kbin.AppendInt32(dst, id)
	}
	return dst
}

// readIDs reads appendIDs' list. ArrayLen refuses a length above the bytes
// left, so the allocation is bounded by the input.
func readIDs(r *kbin.Reader) []int32 {
	n := r.ArrayLen()
	if n < 0 {
		return nil
	}
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = r.Int32()
	}
	return ids
}

// readRecord decodes one record.
func readRecord(r *kbin.Reader) (Record, error) {
	t, v := RecordType(r.Int8()), r.Int8()
	if !r.Ok() {
		return nil, fmt.Errorf("%w: truncated record header", ErrCorrupt)
	}
	if v != recordVersion {
		return nil, fmt.Errorf("%w: %v record version %d (this build reads %d)", ErrCorrupt, t, v, recordVersion)
	}
	var rec Record
	switch t {
	case TypeClusterID:
		rec = ClusterID{ID: r.VarintString()}
	case TypeActivation:
		rec = Activation{Node: r.Int32(), Term: uint64(r.Int64())}
	case TypeFeatureLevel:
		rec = FeatureLevel{Name: r.VarintString(), Level: r.Int16()}
	case TypeRegisterBroker:
		rec = readRegisterBroker(r)
	case TypeBrokerRegistrationChange:
		rec = BrokerRegistrationChange{ID: r.Int32(), Epoch: r.Int64(), Fenced: FencingChange(r.Int8()), InControlledShutdown: r.Bool()}
	case TypeUnregisterBroker:
		rec = UnregisterBroker{ID: r.Int32(), Epoch: r.Int64()}
	case TypeTopic:
		rec = Topic{Name: r.VarintString(), ID: r.Uuid()}
	case TypePartition:
		p := Partition{Topic: r.Uuid(), Partition: r.Int32()}
		p.Replicas, p.ISR, p.ELR, p.LastKnownELR = readIDs(r), readIDs(r), readIDs(r), readIDs(r)
		p.Leader, p.LeaderRecoveryState = r.Int32(), LeaderRecoveryState(r.Int8())
		p.LeaderEpoch, p.PartitionEpoch = r.Int32(), r.Int32()
		p.Adding, p.Removing = readIDs(r), readIDs(r)
		rec = p
	case TypePartitionChange:
		c := PartitionChange{Topic: r.Uuid(), Partition: r.Int32(), ExpectedPartitionEpoch: r.Int32(), Leader: r.Int32()}
		c.ISR, c.ELR, c.LastKnownELR, c.Replicas = readIDs(r), readIDs(r), readIDs(r), readIDs(r)
		c.Adding, c.Removing = readIDs(r), readIDs(r)
		c.LeaderRecoveryState = LeaderRecoveryState(r.Int8())
		rec = c
	case TypeRemoveTopic:
		rec = RemoveTopic{ID: r.Uuid()}
	case TypeConfig:
		rec = Config{Resource: ConfigResource{Type: r.Int8(), Name: r.VarintString()}, Name: r.VarintString(), Value: readNullableString(r)}
	case TypeProducerIDs:
		rec = ProducerIDs{BrokerID: r.Int32(), BrokerEpoch: r.Int64(), NextBlockStart: r.Int64()}
	case TypeAccessControlEntry:
		rec = AccessControlEntry{ID: r.Uuid(), ACL: ACL{ResourceType: r.Int8(), ResourceName: r.VarintString(),
			PatternType: r.Int8(), Principal: r.VarintString(), Host: r.VarintString(), Operation: r.Int8(), Permission: r.Int8()}}
	case TypeRemoveAccessControlEntry:
		rec = RemoveAccessControlEntry{ID: r.Uuid()}
	case TypeUserScramCredential:
		k := ScramKey{User: r.VarintString(), Mechanism: r.Int8()}
		rec = UserScramCredential{Key: k, Credential: ScramCredential{Salt: readBytes(r), StoredKey: readBytes(r),
			ServerKey: readBytes(r), Iterations: r.Int32()}}
	case TypeRemoveUserScramCredential:
		rec = RemoveUserScramCredential{Key: ScramKey{User: r.VarintString(), Mechanism: r.Int8()}}
	case TypeUncleanElection:
		rec = readUnclean(r)
	case TypeAckUncleanElection:
		rec = AckUncleanElection{Topic: r.Uuid(), Partition: r.Int32(), LeaderEpoch: r.Int32()}
	default:
		return nil, fmt.Errorf("%w: unknown record type %d", ErrCorrupt, t)
	}
	if !r.Ok() {
		return nil, fmt.Errorf("%w: truncated %v record", ErrCorrupt, t)
	}
	return rec, nil
}

func readRegisterBroker(r *kbin.Reader) RegisterBroker {
	b := RegisterBroker{ID: r.Int32(), Epoch: r.Int64(), Incarnation: r.Uuid()}
	for i, n := int32(0), r.ArrayLen(); i < n; i++ {
		b.Endpoints = append(b.Endpoints, Endpoint{Name: r.VarintString(), Host: r.VarintString(), Port: r.Int32(), SecurityProtocol: r.Int16()})
	}
	b.Rack, b.Fenced, b.InControlledShutdown = r.VarintString(), r.Bool(), r.Bool()
	for i, n := int32(0), r.ArrayLen(); i < n; i++ {
		b.LogDirs = append(b.LogDirs, r.Uuid())
	}
	return b
}

// appendNullableString writes a varint-length string, -1 for nil.
func appendNullableString(dst []byte, s *string) []byte {
	if s == nil {
		return kbin.AppendVarint(dst, -1)
	}
	return kbin.AppendVarintString(dst, *s)
}

func readNullableString(r *kbin.Reader) *string {
	b := r.VarintBytes()
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// readBytes reads a varint-length byte string into its own copy (the
// entry's buffer is not kept).
func readBytes(r *kbin.Reader) []byte {
	b := r.VarintBytes()
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
