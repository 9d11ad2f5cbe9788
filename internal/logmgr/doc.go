// Package logmgr owns every partition log of a broker: Kafka's LogManager.
//
// It spreads partitions over the log.dirs, loads them in parallel at start
// (num.recovery.threads.per.data.dir per directory), runs the background
// jobs (retention every log.retention.check.interval.ms, flush by
// flush.ms/flush.messages, checkpoint writers, producer id expiration every
// producer.id.expiration.check.interval.ms) and closes everything cleanly.
//
// # On-disk format, per log dir (Kafka's names and layouts)
//
//   - <topic>-<partition>/: one directory per partition log (see package log),
//     with Kafka's partition.metadata ("version: 0", "topic_id: <id>")
//     naming the topic id it belongs to;
//   - <topic>-<partition>.<32 hex digits>-stray/: a stray log (KIP-858): a
//     partition log found at load that the metadata does not know (Options.
//     Stray: no such topic or partition, or partition.metadata names another
//     topic id or none). It is renamed so, durably, instead of being
//     deleted, since the metadata may be what is wrong; it is never loaded,
//     served or deleted by Gregor, and Strays lists it (with its size at
//     load) for /metrics, the admin API and the console. An operator deletes
//     it, or renames it back, by hand.
//   - recovery-point-offset-checkpoint, log-start-offset-checkpoint,
//     replication-offset-checkpoint: version 0, a count, then
//     "topic partition offset" lines; each rewritten atomically (temp file,
//     fsync, rename, directory fsync);
//   - cleaner-offset-checkpoint: the same layout, one line per compacted
//     partition the cleaner has cleaned: its cleaner point (below it the log
//     is clean). Rewritten atomically by SetCleanerOffset after each cleaning
//     and when a partition is deleted; read once, on first use;
//   - .kafka_cleanshutdown: present only between a clean Close and the next
//     Open; its presence lets Open skip the rescan of unflushed segments. Open
//     removes it (durably) before any log is written.
//
// # Concurrency
//
// The partition map is guarded by mu; logs themselves are safe for
// concurrent use. Background jobs run on the injected clock's timers and stop
// on Close. Checkpoint files of one dir are written under ckMu.
package logmgr
