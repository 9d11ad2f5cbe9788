// Package logdirs decides whether a broker may use its dirs, before it
// reads or writes anything else in them: Kafka's MetaPropertiesEnsemble,
// the lock LogManager takes on each log dir, and kafka-storage format and
// info.
//
// # What is read and written, per dir
//
// The dirs are log.dirs (or log.dir) in order, then metadata.log.dir when it
// is not one of them. Each holds:
//
//   - .lock: locked (vfs.FS.Lock, flock on Linux) by Open and Format for as
//     long as the process uses the dir. A second broker on the same dir, in
//     another process or this one, gets InUseError ("Failed to acquire lock
//     on file .lock in DIR. A Gregor instance in another process or thread
//     is using this directory."). Locks are taken before anything in the dir
//     is read; a dir that does not exist is locked when it is created.
//   - meta.properties: Kafka's version 1 file (cluster.id, node.id,
//     directory.id), written atomically (vfs.WriteFileAtomic) when the dir
//     is formatted and never rewritten after that.
//   - in the metadata dir only, the metadata log (Config.MetadataFile: the
//     directory __cluster_metadata-0, see package quorum), or, from a
//     Gregor older than the metadata quorum, its metadata file
//     (Config.LegacyMetadataFile, gregor-metadata.json), which marks the
//     metadata dir as well; Verdict.Legacy then tells the broker to convert
//     it into the metadata log before it starts.
//
// # Start rules (Ensemble.Check)
//
// A broker starts only when every one of these holds; otherwise Open
// returns an *Error that lists each dir with what it holds (meta.properties
// values, partition and stray dir counts, the metadata) and, per problem,
// what to do. Nothing has been written when it refuses.
//
//   - Every dir can be read, and every meta.properties parses (version 1,
//     with cluster.id and node.id).
//   - All meta.properties name one cluster.id (the metadata dir's) and the
//     configured node.id, and no two share a directory.id (a copied dir).
//   - The metadata is in at most one dir. Where it lives does not make any
//     log dir special: with metadata.log.dir unset it is found in whichever
//     log dir holds it, so reordering log.dirs starts the same cluster (Kafka
//     instead takes the first log dir and refuses when the metadata is
//     elsewhere). With metadata.log.dir set, it must be there and nowhere
//     else (Kafka's "Found unexpected metadata location" check).
//   - When a dir holds the metadata, every dir has a meta.properties, as
//     Kafka 4 requires ("No `meta.properties` found in DIR (have you run
//     ... format ...)"). An empty dir next to formatted ones is a disk that
//     is not mounted or a new one nobody formatted; the broker cannot tell
//     which, so it refuses, and `gregor storage format --ignore-formatted`
//     formats the new disk. This is what makes the failure of issue #11
//     (an empty dir put in front of the data formatted a new cluster and
//     deleted every partition) impossible.
//   - When no dir holds the metadata, every dir must be empty (no
//     meta.properties, no partition or stray dir); Open then formats them
//     for a new cluster (Config.NewClusterID's cluster id, random by
//     default, meta.properties in each dir, then the new metadata log
//     through Bootstrap, last, so
//     a crash part way leaves formatted dirs without metadata, which Check
//     refuses and Format completes). Data or meta.properties without the
//     metadata means the metadata dir is missing or not mounted: refused.
//
// # Format and Info
//
// Format is kafka-storage format: --cluster-id (validated as a Kafka Uuid;
// when omitted, the formatted dirs' cluster id or a new one), refuses a
// formatted dir unless --ignore-formatted, which skips it; refuses dirs of
// another cluster or node; writes meta.properties into every other dir and
// the empty metadata into the metadata dir when no dir holds one. Info is
// kafka-storage info: every dir with what it holds, the metadata's place,
// and the problems Open would refuse with.
//
// # Concurrency
//
// Functions here are called once per process at start (and by the storage
// CLI); a Held is not safe for concurrent Close.
package logdirs
