package txn

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/coord"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// This file is the serialisation of __transaction_state, Kafka's
// TransactionLogKey and TransactionLogValue, through kmsg: the package's only
// kmsg user (internal/lint holds it to that).

// keyVersion is TransactionLogKey's version (the newer coordinator record
// type TRANSACTION_LOG; the same bytes).
const keyVersion = 0

// valueExtra keeps what a stored value carried that Gregor does not
// interpret: tags of newer Kafka versions, written back unchanged when the
// value is rewritten.
type valueExtra struct {
	tags              kmsg.Tags
	nextProducerEpoch int16
	set               bool
}

func encodeKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version, k.TransactionalID = keyVersion, id
	return k.AppendTo(nil)
}

// decodeKey returns the transactional id of a key, ok false for a key of a
// version Gregor does not know (skipped, as Kafka skips them).
func decodeKey(b []byte) (string, bool, error) {
	k := kmsg.NewTxnMetadataKey()
	if err := k.ReadFrom(b); err != nil {
		return "", false, fmt.Errorf("transaction log key: %w", err)
	}
	return k.TransactionalID, k.Version == keyVersion, nil
}

// encodeValue writes t as TransactionLogValue of the given version: v1 (the
// flexible KIP-915 format) once transaction.version ≥ 1 is finalized, v0
// before. Empty writes a null partition list, as Kafka does. Deliberate
// deviation: PreviousProducerId and NextProducerId (tags 0 and 1) are
// written when set, where Kafka leaves them -1, so a coordinator that takes
// over during a producer id rotation completes it; Kafka readers accept
// them.
func encodeValue(t *Txn, version int16) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = version
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = t.ProducerID, t.ProducerEpoch, t.TimeoutMs
	v.State = kmsg.TransactionState(t.State)
	v.LastUpdateTimestamp, v.StartTimestamp = t.LastUpdateMs, t.StartMs
	v.PreviousProducerID, v.NextProducerID, v.ClientTransactionVersion = t.PrevProducerID, t.NextProducerID, t.ClientTV
	if t.extra.set {
		v.UnknownTags, v.NextProducerEpoch = t.extra.tags, t.extra.nextProducerEpoch
	}
	if t.State != Empty {
		v.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, g := range topicpart.ByTopic(t.Partitions) {
			vt := kmsg.NewTxnMetadataValueTopic()
			vt.Topic, vt.Partitions = g.Topic, g.Partitions
			v.Topics = append(v.Topics, vt)
		}
	}
	return v.AppendTo(nil)
}

func decodeValue(id string, b []byte) (*Txn, error) {
	v := kmsg.NewTxnMetadataValue()
	if err := v.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("transaction log value of %q: %w", id, err)
	}
	t := &Txn{ID: id, ProducerID: v.ProducerID, ProducerEpoch: v.ProducerEpoch, LastProducerEpoch: -1,
		PrevProducerID: v.PreviousProducerID, NextProducerID: v.NextProducerID, TimeoutMs: v.TimeoutMillis,
		State: State(v.State), StartMs: v.StartTimestamp, LastUpdateMs: v.LastUpdateTimestamp,
		ClientTV: v.ClientTransactionVersion}
	if t.State < Empty || t.State > PrepareEpochFence {
		return nil, fmt.Errorf("transaction log value of %q: unknown state %d", id, v.State)
	}
	if v.UnknownTags.Len() > 0 || v.NextProducerEpoch != -1 {
		t.extra = valueExtra{tags: v.UnknownTags, nextProducerEpoch: v.NextProducerEpoch, set: true}
	}
	for _, vt := range v.Topics {
		for _, p := range vt.Partitions {
			t.Partitions = append(t.Partitions, topicpart.TopicPartition{Topic: vt.Topic, Partition: p})
		}
	}
	sort.Slice(t.Partitions, func(i, j int) bool { return compareTP(t.Partitions[i], t.Partitions[j]) < 0 })
	return t, nil
}

// record is t's record in __transaction_state.
func record(t *Txn, version int16) coord.Record {
	return coord.Record{Key: encodeKey(t.ID), Value: encodeValue(t, version)}
}

// tombstone removes an expired transactional id.
func tombstone(id string) coord.Record { return coord.Record{Key: encodeKey(id)} }
