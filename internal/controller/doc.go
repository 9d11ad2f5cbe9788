// Package controller owns the cluster metadata of a single-node Gregor:
// topics (name, topic id, partition count, config overrides), the dynamic
// broker configs (cluster default and this node's own), and the cluster id.
//
// Until the etcd-raft metadata quorum exists, the metadata image is kept in
// one JSON file, gregor-metadata.json, in the metadata dir, rewritten
// atomically (temp file, fsync, rename, directory fsync) on every change
// before the change is acknowledged.
//
// # Where the metadata lives
//
// In one dir only, never copied: metadata.log.dir when it is set, else
// whichever log dir holds gregor-metadata.json, whatever its place in
// log.dirs; a new cluster's goes to the first log dir (Kafka's default for
// metadata.log.dir). Package logdirs finds it, with the cluster id of that
// dir's meta.properties, before the controller opens it; Bootstrap writes a
// new cluster's empty image when logdirs formats the dirs. Finding it
// instead of assuming the first dir is what lets a reordered log.dirs start
// the same cluster; one copy (rather than one per dir with an epoch) keeps a
// single place of truth that cannot diverge, and is the shape the
// etcd-raft log of the metadata quorum will have (#14): a
// __cluster_metadata-0 log in metadata.log.dir, found the same way. Open
// refuses an image whose cluster id or node id differs from the log dirs'
// meta.properties.
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
