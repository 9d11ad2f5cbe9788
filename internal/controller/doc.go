// Package controller owns the cluster metadata of a single-node Gregor:
// topics (name, topic id, partition count, config overrides), the dynamic
// broker configs (cluster default and this node's own), and the cluster id.
//
// Until the etcd-raft metadata quorum exists, the metadata image is kept in
// one JSON file, gregor-metadata.json, in the metadata log dir (the first of
// log.dirs), rewritten atomically (temp file, fsync, rename, directory fsync)
// on every change before the change is acknowledged. Each log dir also gets
// Kafka's meta.properties (version 1, cluster.id, node.id, directory.id) when
// it is formatted.
//
// Every mutation is validated the way Kafka's controller validates it and
// fails with the Kafka error (kerr) a client expects: INVALID_TOPIC_EXCEPTION,
// TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR,
// INVALID_CONFIG, UNKNOWN_TOPIC_OR_PARTITION, ... — with Kafka's messages,
// and in Kafka's order, so a request with several problems gets the error
// Kafka would give. Topics named like Kafka's internal topics
// (__consumer_offsets, __transaction_state, __share_group_state) are
// internal whoever creates them, as in Kafka.
//
// Concurrency: mutations are serialised by mu; readers load the current
// immutable *Image atomically. A mutation changes a clone and indexes it
// (topics by id, for the requests that name topics by id) just before it is
// published. Listeners registered with OnChange are called
// synchronously, in order, after each change is durable, while mu is held, so
// they see changes one at a time and must not call back into mutations.
package controller
