// Package logmgr owns every partition log of a broker: Kafka's LogManager.
//
// It spreads partitions over the log.dirs, loads them in parallel at start
// (num.recovery.threads.per.data.dir per directory), runs the background
// jobs (retention every log.retention.check.interval.ms, flush by
// flush.ms/flush.messages, checkpoint writers, producer id expiration every
// producer.id.expiration.check.interval.ms) and closes everything cleanly.
//
// # Many partitions
//
// No step costs an fsync per partition unless the partition has records to
// make durable (see package log, Durability). GetOrCreate creates a log with
// no fsync; a background pass (syncFresh, freshSyncDelay after the last of a
// burst of creations, syncFanOut logs at once) makes the new logs durable,
// and a log whose first record comes before it makes itself durable with
// that record's sync. A start syncs
// each log dir once, loads its logs (log.Open syncs nothing), then makes
// durable, in one pass with syncFanOut logs syncing at once, what the loads
// recovered or rebuilt (log.NeedsSync: after a clean shutdown nothing; after
// a crash, the logs with records above their checkpointed recovery point),
// and only then writes the checkpoints. Close closes the logs of each dir
// syncFanOut at once; a log whose records are all synced closes without an
// fsync. A checkpoint file whose entries have not changed since it was
// last written is not rewritten. So a start after a clean shutdown and a
// clean stop cost a few fsyncs per log dir whatever the number of
// partitions, and a start after a crash one pass of fsyncs over the logs
// with unsynced records. Each log keeps one open file per segment.
//
// # On-disk format, per log dir (Kafka's names and layouts)
//
//   - <topic>-<partition>/: one directory per partition log (see package log),
//     with Kafka's partition.metadata ("version: 0", "topic_id: <id>")
//     naming the topic id it belongs to (written by the log,
//     log.Log.AssignTopicID). One that holds neither records nor
//     partition.metadata, and that the metadata does not know, is what a
//     crash left of its creation (partition.metadata is durable before any
//     record is acknowledged): a start removes it rather than setting it
//     aside.
//   - <topic>-<partition>.<32 hex digits>-delete/: a deleted partition's log
//     (log.Log.Delete renames it so, durably, before removing its files). A
//     start that finds one removes it, as Kafka does: a deletion a crash cut
//     off.
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
//   - __cluster_metadata-0/: the metadata log (package quorum), in the
//     metadata log dir; its name parses as a partition's but it is skipped;
//   - .kafka_cleanshutdown: present only between a clean Close and the next
//     Open; its presence lets Open skip the rescan of unflushed segments. Open
//     removes it (durably) before any log is written.
//
// # Failed and full log dirs (logdir.go, dirfs.go)
//
// Every file of every log dir is written through one FS (dirFS), Kafka's
// LogDirFailureChannel at the place every write passes: a failed write,
// truncate or fsync of a file under a dir, or a failed fsync of a directory
// there, is reported to that dir's LogDir. Any failed fsync, whatever its
// errno, and any failed write other than for want of space takes the dir
// offline for good: its log.FailureDomain fails, so every log in it refuses
// appends and acknowledges nothing more (see package log), no checkpoint or
// clean-shutdown marker is written to it again, new partitions are placed
// in the online dirs, the retention and flush jobs pass its logs by, and
// OnDirChange is told (once; the broker stops when no dir is left online).
// A restart recovers the dir's logs from the recovery points checkpointed
// before the failure.
//
// A full dir is not a failed one. Each dir keeps a free-space reserve,
// gregor.log.dir.min.free.bytes (MinFreeBytes; -1 is min(256 MiB, 1% of the
// volume), read at each check). LogDir.Admit accounts each client append,
// and each follower append (package replica; not those of an internal
// topic, whose leader's appends are the coordinators' the reserve is kept
// for), against the headroom the last reading of the volume left (usable
// bytes less the reserve) and reads the volume again (statfs) only once
// that is used up, so a dir with room costs two atomic operations per
// append. An
// append that would cross the reserve is refused with log.ErrNoSpace and
// the dir is full; so it is when a write fails for want of space anyway
// (the log cuts it back). The DiskCheckInterval job reads every dir: a full
// one takes appends again once the reserve plus max(reserve/4, 1 MiB) is
// free, and while any dir is full the job also runs a retention pass, so
// segments due for deletion (retention, DeleteRecords) free their space
// without waiting for log.retention.check.interval.ms (their files go after
// file.delete.delay.ms, as always). Fetches are never refused for space.
//
// # Concurrency
//
// The partition map is guarded by mu; logs themselves are safe for
// concurrent use. The log dirs are fixed at Open; a LogDir's state is atomic
// fields plus its own mutex, never held while calling out, so DirStates
// takes no manager lock and OnDirChange (run on the goroutine that saw the
// change, perhaps holding a log's locks, or mu inside GetOrCreate) may call
// it. Background jobs run on the injected clock's timers and stop
// on Close (the pass over new logs too: its timer is under mu).
// Checkpoint files of one dir are written under ckMu. Loading, the sync
// pass after it, the pass over new logs and Close run many logs at once
// (forEach), each log from one goroutine at a time.
package logmgr
