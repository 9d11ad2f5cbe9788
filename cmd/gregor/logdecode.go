package main

// Decoders for the records of Kafka's internal topics, for `log dump`:
// __consumer_offsets (offset commits and classic group metadata) and
// __transaction_state, and for transaction control records. The schemas
// come from kmsg; the output uses Kafka's JSON field names.

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// decoded is a record key or value decoded for display.
type decoded map[string]any

// decodeOffsetsKey decodes a __consumer_offsets key. Key versions 0 and 1
// are offset commits, 2 classic group metadata; later versions are the
// KIP-848 consumer group records, shown by version only.
func decodeOffsetsKey(key []byte) (kind string, d decoded, err error) {
	if len(key) < 2 {
		return "", nil, fmt.Errorf("key of %d bytes has no version", len(key))
	}
	switch v := int16(binary.BigEndian.Uint16(key)); v {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return "", nil, fmt.Errorf("offset commit key: %w", err)
		}
		return "offset_commit", decoded{"type": "offset_commit", "version": k.Version, "group": k.Group, "topic": k.Topic, "partition": k.Partition}, nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return "", nil, fmt.Errorf("group metadata key: %w", err)
		}
		return "group_metadata", decoded{"type": "group_metadata", "version": k.Version, "group": k.Group}, nil
	default:
		return "unknown", decoded{"type": "unknown", "version": v, "hex": hex.EncodeToString(key)}, nil
	}
}

// decodeOffsetsValue decodes a __consumer_offsets value of the given kind;
// a null value is a tombstone.
func decodeOffsetsValue(kind string, value []byte) (decoded, error) {
	if value == nil {
		return nil, nil
	}
	switch kind {
	case "offset_commit":
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(value); err != nil {
			return nil, fmt.Errorf("offset commit value: %w", err)
		}
		d := decoded{"version": v.Version, "offset": v.Offset, "metadata": v.Metadata, "commitTimestamp": v.CommitTimestamp}
		if v.Version >= 3 {
			d["leaderEpoch"] = v.LeaderEpoch
		}
		if v.Version == 1 {
			d["expireTimestamp"] = v.ExpireTimestamp
		}
		if v.TopicID != [16]byte{} {
			d["topicId"] = hex.EncodeToString(v.TopicID[:])
		}
		return d, nil
	case "group_metadata":
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(value); err != nil {
			return nil, fmt.Errorf("group metadata value: %w", err)
		}
		d := decoded{"version": v.Version, "protocolType": v.ProtocolType, "generation": v.Generation,
			"protocol": v.Protocol, "leader": v.Leader, "currentStateTimestamp": v.CurrentStateTimestamp}
		members := []decoded{}
		for _, m := range v.Members {
			dm := decoded{"memberId": m.MemberID, "groupInstanceId": m.InstanceID, "clientId": m.ClientID,
				"clientHost": m.ClientHost, "rebalanceTimeout": m.RebalanceTimeoutMillis, "sessionTimeout": m.SessionTimeoutMillis}
			if v.ProtocolType == "consumer" {
				dm["subscription"] = decodeSubscription(m.Subscription)
				dm["assignment"] = decodeAssignment(m.Assignment)
			} else {
				dm["subscription"] = hex.EncodeToString(m.Subscription)
				dm["assignment"] = hex.EncodeToString(m.Assignment)
			}
			members = append(members, dm)
		}
		d["members"] = members
		return d, nil
	}
	return decoded{"hex": hex.EncodeToString(value)}, nil
}

func decodeSubscription(b []byte) any {
	var m kmsg.ConsumerMemberMetadata
	if err := m.ReadFrom(b); err != nil {
		return decoded{"error": err.Error(), "hex": hex.EncodeToString(b)}
	}
	d := decoded{"version": m.Version, "topics": m.Topics}
	if len(m.OwnedPartitions) > 0 {
		owned := decoded{}
		for _, t := range m.OwnedPartitions {
			owned[t.Topic] = t.Partitions
		}
		d["ownedPartitions"] = owned
	}
	return d
}

func decodeAssignment(b []byte) any {
	if len(b) == 0 {
		return decoded{}
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return decoded{"error": err.Error(), "hex": hex.EncodeToString(b)}
	}
	parts := decoded{}
	for _, t := range a.Topics {
		parts[t.Topic] = t.Partitions
	}
	return decoded{"version": a.Version, "partitions": parts}
}

// decodeTxnKey and decodeTxnValue decode __transaction_state records.
func decodeTxnKey(key []byte) (decoded, error) {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return nil, fmt.Errorf("transaction metadata key: %w", err)
	}
	return decoded{"type": "transaction_metadata", "version": k.Version, "transactionalId": k.TransactionalID}, nil
}

func decodeTxnValue(value []byte) (decoded, error) {
	if value == nil {
		return nil, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return nil, fmt.Errorf("transaction metadata value: %w", err)
	}
	parts := decoded{}
	for _, t := range v.Topics {
		parts[t.Topic] = t.Partitions
	}
	return decoded{"version": v.Version, "producerId": v.ProducerID, "producerEpoch": v.ProducerEpoch,
		"previousProducerId": v.PreviousProducerID, "nextProducerId": v.NextProducerID,
		"transactionTimeoutMs": v.TimeoutMillis, "state": v.State.String(), "partitions": parts,
		"txnLastUpdateTimestamp": v.LastUpdateTimestamp, "txnStartTimestamp": v.StartTimestamp}, nil
}

// decodeControl decodes a control record (transaction marker or other).
func decodeControl(key, value []byte) (decoded, error) {
	var k kmsg.ControlRecordKey
	if err := k.ReadFrom(key); err != nil {
		return nil, fmt.Errorf("control record key: %w", err)
	}
	d := decoded{"type": k.Type.String(), "version": k.Version}
	if k.Type == kmsg.ControlRecordKeyTypeAbort || k.Type == kmsg.ControlRecordKeyTypeCommit {
		var m kmsg.EndTxnMarker
		if err := m.ReadFrom(value); err != nil {
			return nil, fmt.Errorf("transaction marker: %w", err)
		}
		d["coordinatorEpoch"] = m.CoordinatorEpoch
	}
	return d, nil
}
