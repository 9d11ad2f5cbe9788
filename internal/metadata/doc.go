// Package metadata is the cluster metadata as a log of records: the record
// types, their binary encoding, the immutable Image they build, and Apply,
// the pure function from (image, entry) to the next image. It is Kafka's
// metadata image and delta (MetadataImage, MetadataDelta and the records of
// metadata/src/main/resources/common/metadata) for Gregor's metadata log,
// which etcd raft replicates (package quorum) and the active controller
// writes (package controller).
//
// # Records and entries
//
// A raft entry carries one Entry: the records of one controller write, the
// proposing node, the raft term it was proposed in and a sequence number
// within that term. Records mirror Kafka's (TopicRecord, PartitionRecord,
// PartitionChangeRecord, RegisterBrokerRecord, BrokerRegistrationChange,
// ConfigRecord, ProducerIdsRecord, FeatureLevelRecord, RemoveTopicRecord,
// UnregisterBrokerRecord, AccessControlEntryRecord,
// RemoveAccessControlEntryRecord, UserScramCredentialRecord,
// RemoveUserScramCredentialRecord) plus ClusterID (the bootstrap snapshot's
// first record), Activation (a controller claiming its term), and
// UncleanElection / AckUncleanElection (unclean.go: a partition whose leader
// came from outside its ISR and ELR, kept on PartitionImage.Unclean until
// an operator acknowledges it; Kafka only logs such elections). ACLs and
// SCRAM credentials (security.go) keep Kafka's enumeration codes; a SCRAM
// credential is salt, stored key, server key and iterations, never a
// password.
//
// Encoding (big-endian, franz-go's kbin primitives): an entry is a format
// byte (1), proposer int32, term int64, seq int64, a record count int32 and
// the records; a record is its type byte, a version byte (0) and its fields
// in declaration order: strings and nullable strings with varint lengths,
// broker id lists as int32 counts (-1 for nil, which in a PartitionChange
// means "no change"), UUIDs as 16 bytes, byte strings (SCRAM salts and
// keys) with varint lengths. A snapshot is a format byte (1), the index and
// term of the last entry it covers, a count and the image's records
// (Image.Records), ACLs and SCRAM credentials among them. Anything that
// does not decode is ErrCorrupt: lengths are checked against the bytes
// left before anything is allocated.
//
// # Apply
//
// Apply is deterministic: it reads nothing but the image and the entry (no
// clock, no node id), so every node that applies the same entries holds the
// same images. Its rules:
//   - an entry whose proposer term differs from the term raft committed it
//     in is skipped whole (only a controller in its own term proposes);
//   - a RegisterBroker's broker epoch is the index of its entry (explicit in
//     snapshots), so a broker's epoch grows with each registration;
//   - a PartitionChange applies only at its expected partition epoch; it
//     bumps the partition epoch, and the leader epoch when it sets a leader
//     (Kafka's PartitionRegistration.merge);
//   - BrokerRegistrationChange and UnregisterBroker apply only to the broker
//     epoch they name; ProducerIDs only when the next block start grows;
//   - RemoveTopic removes the topic's partitions and configs;
//   - an UncleanElection applies to a partition at its leader epoch with
//     its leader (it follows the change that elected it, in the same
//     entry) or at a later epoch (in a snapshot), when newer than the one
//     held; an AckUncleanElection only to the election of its leader epoch;
//   - an AccessControlEntry applies under an id not taken and for an ACL
//     not already present; RemoveAccessControlEntry and
//     RemoveUserScramCredential only to what exists.
//
// A record whose guard fails is skipped and counted in Image.Skipped. The
// controller builds every record against the image it will apply to, so a
// skip means a bug or a late commit of a write that was already superseded;
// tests assert the count stays zero where neither can happen.
//
// # Immutability
//
// An Image is never changed after Apply returns it: Apply copies each map
// at its first change within the entry and each changed topic's partition
// list, and shares everything else with the previous image. The topic maps
// are split into 256 shards (cowmap.go) of which an entry copies only those
// it changes, so an entry's cost does not grow with the number of topics
// (BenchmarkApplyCreateTopic: about 20 KB copied per topic created next to
// 30,000 others, where copying whole maps cost about 3.4 MB and 8 ms). Readers may hold
// any image for as long as they like without locks.
package metadata
