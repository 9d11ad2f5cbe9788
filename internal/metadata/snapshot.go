package metadata

import (
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
)

// snapshotFormat is the first byte of an encoded snapshot.
const snapshotFormat = 1

// Records writes the image out as the records that rebuild it from Empty,
// in a deterministic order: cluster id, features, brokers, topics each
// followed by its partitions (each with its unacknowledged unclean election
// right after it) and configs, broker configs, the producer id block, the
// ACLs by id, the SCRAM credentials by user and mechanism, the controller's
// activation. Broker epochs and partition epochs are carried
// explicitly.
func (im *Image) Records() []Record {
	var out []Record
	if im.ClusterID != "" {
		out = append(out, ClusterID{ID: im.ClusterID})
	}
	for _, name := range slices.Sorted(maps.Keys(im.Features)) {
		out = append(out, FeatureLevel{Name: name, Level: im.Features[name]})
	}
	for _, b := range im.SortedBrokers() {
		out = append(out, RegisterBroker{ID: b.ID, Epoch: b.Epoch, Incarnation: b.Incarnation, Endpoints: b.Endpoints,
			Rack: b.Rack, Fenced: b.Fenced, InControlledShutdown: b.InControlledShutdown, LogDirs: b.LogDirs})
	}
	for _, t := range im.SortedTopics() {
		out = append(out, Topic{Name: t.Name, ID: t.ID})
		for i, p := range t.Partitions {
			out = append(out, Partition{Topic: t.ID, Partition: int32(i), Replicas: p.Replicas, ISR: p.ISR, ELR: p.ELR,
				LastKnownELR: p.LastKnownELR, Leader: p.Leader, LeaderRecoveryState: p.LeaderRecoveryState,
				LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, Adding: p.Adding, Removing: p.Removing})
			if p.Unclean != nil {
				out = append(out, *p.Unclean)
			}
		}
		out = appendConfigs(out, ConfigResource{Type: ResourceTopic, Name: t.Name}, im.configs)
	}
	var brokerRes []ConfigResource
	for r := range im.configs {
		if r.Type != ResourceTopic {
			brokerRes = append(brokerRes, r)
		}
	}
	slices.SortFunc(brokerRes, func(a, b ConfigResource) int {
		if a.Type != b.Type {
			return int(a.Type) - int(b.Type)
		}
		return compareStrings(a.Name, b.Name)
	})
	for _, r := range brokerRes {
		out = appendConfigs(out, r, im.configs)
	}
	if im.NextProducerID > 0 {
		out = append(out, ProducerIDs{BrokerID: -1, BrokerEpoch: -1, NextBlockStart: im.NextProducerID})
	}
	out = append(out, im.securityRecords()...)
	if im.Controller.Node >= 0 {
		out = append(out, im.Controller)
	}
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func appendConfigs(out []Record, r ConfigResource, configs map[ConfigResource]map[string]string) []Record {
	m := configs[r]
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		out = append(out, Config{Resource: r, Name: k, Value: &v})
	}
	return out
}

// EncodeSnapshot writes the image as a snapshot: its index and term, then
// its records.
func EncodeSnapshot(im *Image) []byte {
	recs := im.Records()
	dst := []byte{snapshotFormat}
	dst = kbin.AppendInt64(dst, int64(im.Index))
	dst = kbin.AppendInt64(dst, int64(im.Term))
	dst = kbin.AppendInt32(dst, int32(len(recs)))
	for _, r := range recs {
		dst = AppendRecord(dst, r)
	}
	return dst
}

// DecodeSnapshot rebuilds the image a snapshot holds. A record the snapshot's
// own earlier records make invalid (a partition of an unknown topic, …) is
// corruption, not something to skip.
func DecodeSnapshot(b []byte) (*Image, error) {
	if len(b) == 0 || b[0] != snapshotFormat {
		return nil, fmt.Errorf("%w: snapshot format byte", ErrCorrupt)
	}
	r := &kbin.Reader{Src: b[1:]}
	index, term, n := uint64(r.Int64()), uint64(r.Int64()), r.Int32()
	if !r.Ok() || n < 0 || int(n) > len(r.Src) {
		return nil, fmt.Errorf("%w: snapshot header", ErrCorrupt)
	}
	a := applier{next: Empty(), d: &Delta{}}
	a.brokersCopied, a.configsCopied, a.featuresCopied = true, true, true
	a.next.acls, a.next.scram = map[[16]byte]ACL{}, map[ScramKey]ScramCredential{}
	a.aclsCopied, a.scramCopied = true, true
	for i := int32(0); i < n; i++ {
		rec, err := readRecord(r)
		if err != nil {
			return nil, err
		}
		a.apply(index, rec)
		if a.next.Skipped != 0 {
			return nil, fmt.Errorf("%w: snapshot record %d (%v) does not apply", ErrCorrupt, i, rec.Type())
		}
	}
	if len(r.Src) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the snapshot's records", ErrCorrupt, len(r.Src))
	}
	a.next.Index, a.next.Term = index, term
	return a.next, nil
}
