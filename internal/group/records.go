package group

// This file is the group coordinator's serialisation: Kafka's
// __consumer_offsets key and value schemas (kmsg's OffsetCommitKey/Value and
// GroupMetadataKey/Value) and the consumer protocol's subscription. It is the
// only file of the package that imports kmsg.

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/coord"
)

// Key versions of __consumer_offsets records. 0 and 1 are offset commits, 2
// is classic group metadata; 3 and above belong to the consumer (KIP-848)
// and share group protocols, which Gregor does not write.
const (
	offsetCommitKeyVersion  = 1
	groupMetadataKeyVersion = 2
	// Values: OffsetCommitValue v3 (leader epoch; no expire timestamp), v1
	// when a v2-v4 OffsetCommit set a retention time; GroupMetadataValue v3
	// (static membership), what Kafka 4.x writes.
	offsetValueVersion           = 3
	offsetValueVersionWithExpiry = 1
	groupValueVersion            = 3
)

type recordKind int8

const (
	kindOffset recordKind = iota
	kindGroup
	kindOther
)

// decodedKey is a parsed __consumer_offsets key.
type decodedKey struct {
	kind      recordKind
	version   int16
	group     string
	topic     string
	partition int32
}

func decodeKey(b []byte) (decodedKey, error) {
	if len(b) < 2 {
		return decodedKey{}, fmt.Errorf("__consumer_offsets key of %d bytes", len(b))
	}
	v := int16(binary.BigEndian.Uint16(b))
	switch v {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(b); err != nil {
			return decodedKey{}, fmt.Errorf("offset commit key: %w", err)
		}
		return decodedKey{kind: kindOffset, version: v, group: k.Group, topic: k.Topic, partition: k.Partition}, nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(b); err != nil {
			return decodedKey{}, fmt.Errorf("group metadata key: %w", err)
		}
		return decodedKey{kind: kindGroup, version: v, group: k.Group}, nil
	default:
		return decodedKey{kind: kindOther, version: v}, nil
	}
}

func offsetCommitKey(group, topic string, partition int32) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = offsetCommitKeyVersion, group, topic, partition
	return k.AppendTo(nil)
}

func groupMetadataKey(group string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = groupMetadataKeyVersion, group
	return k.AppendTo(nil)
}

func offsetCommitRecord(group, topic string, partition int32, o *Offset) coord.Record {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	if o.ExpireTimestamp >= 0 {
		v.Version = offsetValueVersionWithExpiry
		v.ExpireTimestamp = o.ExpireTimestamp
	}
	v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = o.Offset, o.LeaderEpoch, o.Metadata, o.CommitTimestamp
	return coord.Record{Key: offsetCommitKey(group, topic, partition), Value: v.AppendTo(nil)}
}

func offsetTombstone(group, topic string, partition int32) coord.Record {
	return coord.Record{Key: offsetCommitKey(group, topic, partition)}
}

func decodeOffsetValue(b []byte) (Offset, error) {
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(b); err != nil {
		return Offset{}, fmt.Errorf("offset commit value: %w", err)
	}
	o := Offset{Offset: v.Offset, LeaderEpoch: -1, Metadata: v.Metadata, CommitTimestamp: v.CommitTimestamp, ExpireTimestamp: -1}
	if v.Version >= 3 {
		o.LeaderEpoch = v.LeaderEpoch
	}
	if v.Version == 1 {
		o.ExpireTimestamp = v.ExpireTimestamp
	}
	return o, nil
}

// groupMetadataRecord is g's current metadata, with assignment overriding
// the members' stored assignments when non-nil (the leader's SyncGroup).
func groupMetadataRecord(g *group, assignment map[string][]byte) coord.Record {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocol != "" {
		v.Protocol = strPtr(g.protocol)
	}
	if g.leader != "" {
		v.Leader = strPtr(g.leader)
	}
	v.CurrentStateTimestamp = g.stateTimestamp
	for _, m := range g.sortedMembers() {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID = m.id, m.instanceID
		vm.ClientID, vm.ClientHost = m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis, vm.SessionTimeoutMillis = m.rebalanceTimeoutMs, m.sessionTimeoutMs
		vm.Subscription = m.metadata(g.protocol)
		vm.Assignment = m.assignment
		if assignment != nil {
			vm.Assignment = assignment[m.id]
		}
		if vm.Subscription == nil {
			vm.Subscription = []byte{}
		}
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		v.Members = append(v.Members, vm)
	}
	return coord.Record{Key: groupMetadataKey(g.id), Value: v.AppendTo(nil)}
}

func groupTombstone(id string) coord.Record { return coord.Record{Key: groupMetadataKey(id)} }

// storedGroup is a decoded GroupMetadataValue.
type storedGroup struct {
	protocolType   string
	generation     int32
	protocol       string
	leader         string
	stateTimestamp int64
	members        []storedMember
}

type storedMember struct {
	id, clientID, clientHost string
	instanceID               *string
	rebalanceTimeoutMs       int32
	sessionTimeoutMs         int32
	subscription, assignment []byte
}

func decodeGroupValue(b []byte) (storedGroup, error) {
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(b); err != nil {
		return storedGroup{}, fmt.Errorf("group metadata value: %w", err)
	}
	sg := storedGroup{protocolType: v.ProtocolType, generation: v.Generation, stateTimestamp: -1}
	if v.Protocol != nil {
		sg.protocol = *v.Protocol
	}
	if v.Leader != nil {
		sg.leader = *v.Leader
	}
	if v.Version >= 2 {
		sg.stateTimestamp = v.CurrentStateTimestamp
	}
	for _, m := range v.Members {
		sm := storedMember{id: m.MemberID, clientID: m.ClientID, clientHost: m.ClientHost, instanceID: m.InstanceID,
			rebalanceTimeoutMs: m.RebalanceTimeoutMillis, sessionTimeoutMs: m.SessionTimeoutMillis,
			subscription: m.Subscription, assignment: m.Assignment}
		if v.Version < 1 {
			sm.rebalanceTimeoutMs = m.SessionTimeoutMillis
		}
		sg.members = append(sg.members, sm)
	}
	return sg, nil
}

// subscribedTopics parses a consumer protocol subscription (ConsumerProtocol
// Subscription v0-v3); ok is false when it does not parse.
func subscribedTopics(metadata []byte) (topics []string, ok bool) {
	var m kmsg.ConsumerMemberMetadata
	if err := m.ReadFrom(metadata); err != nil {
		return nil, false
	}
	return m.Topics, true
}

// AssignedPartitions parses a consumer protocol member assignment
// (ConsumerProtocolAssignment v0-v3, as MemberDescription.Assignment holds it
// for protocol type "consumer"); ok is false when it does not parse.
func AssignedPartitions(assignment []byte) (tps []TopicPartitions, ok bool) {
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(assignment); err != nil {
		return nil, false
	}
	for _, t := range a.Topics {
		tps = append(tps, TopicPartitions{Topic: t.Topic, Partitions: t.Partitions})
	}
	return tps, true
}

func strPtr(s string) *string { return &s }
