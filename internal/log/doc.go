// Package log is one partition's log: Kafka's UnifiedLog/LocalLog with its
// segments, indexes, leader-epoch cache and producer state.
//
// # Offsets
//
// Every log has four offsets, logStartOffset ≤ LSO ≤ HW ≤ LEO:
//   - log start offset: the first offset readable; moved by retention and
//     DeleteRecords (IncrementLogStartOffset), never by compaction;
//   - last stable offset: min(first unstable offset, HW), never below the
//     log start offset (DeleteRecords may pass an open transaction's first
//     offset; Kafka then raises the LSO with it). The first unstable offset
//     is the smallest first offset among open transactions and decided ones
//     whose marker the HW has not passed yet (see Transactions). Published
//     atomically whenever it may change (appends, HW and log start moves,
//     truncation, load); read it before the HW to see LSO ≤ HW;
//   - high watermark: a slot the partition layer drives. A leader raises it
//     with MaybeIncrementHighWatermark, which never lowers it (concurrent
//     advances may arrive out of order); SetHighWatermark sets it outright
//     (loading, a follower); both clamp it to [log start, LEO] under Log.mu,
//     as retention and DeleteRecords move the log start offset under it;
//   - log end offset: the offset the next record gets.
//
// Offsets are assigned once by Append and never reused: truncation (a
// follower matching its leader) is the only way the LEO moves back.
// TruncateTo(o) cuts before the batch holding o, so the LEO becomes that
// batch's base offset; o below the first segment empties the log and restarts
// it at o (Kafka's truncateFullyAndStartAt); the log start offset is lowered
// to the new LEO if it was above it.
//
// # On-disk format (the same names and layouts as Kafka)
//
// A partition directory <topic>-<partition> holds, per segment with base
// offset B (20 digits, zero padded):
//   - B.log: v2 record batches, byte for byte as produced, with base offset
//     and partition leader epoch assigned; a client batch whose codec is not
//     the topic's compression.type (Config.Compression, unless producer) is
//     stored as record.Recompress rebuilt it, as Kafka's LogValidator does,
//     and must still fit max.message.bytes;
//   - with preallocate, a new B.log starts at segment.bytes (Kafka's
//     RandomAccessFile.setLength: a sparse file, no block written) and is
//     trimmed to its data when the segment rolls and when the log closes;
//     after a crash recovery cuts the zero-filled end like any bad tail;
//   - B.index: 8-byte entries (int32 offset relative to B, int32 byte position
//     of the batch), one per index.interval.bytes of log, keyed by the batch's
//     last offset, at most segment.index.bytes of them;
//   - B.timeindex: 12-byte entries (int64 timestamp, int32 relative offset of
//     the batch reaching it), added with index entries when the max timestamp
//     grows, plus a final entry when the segment is sealed;
//   - B.snapshot: producer state as of offset B (Kafka's ProducerSnapshot v1;
//     see Producer state), written at every roll and, when the log has more
//     than one segment, at clean close;
//   - B.txnindex: the aborted-transaction index (Kafka's TransactionIndex):
//     34-byte entries (int16 version 0, int64 producer id, first offset,
//     last offset = the ABORT marker's offset, last stable offset when the
//     abort was appended), one per transaction aborted by a marker in this
//     segment, in marker order; created by the first such abort, written
//     after the marker itself, fsynced with the segment, cut by truncation
//     and removed with the segment (before its .log: see completeSwap). A
//     segment holds it open only while it has entries, so a segment with
//     aborted transactions holds two open files, any other one.
//
// The index files hold exactly their entries. They are written when their
// segment is sealed: it rolls, recovery rebuilds it, or the cleaner writes
// it (see Memory and open files). The active segment's entries are in
// memory; its files are written at a clean close for Kafka's tools (unless
// they already hold those entries, or the segment is smaller than
// index.interval.bytes and has no offset index entry: many small partitions
// then stop without creating two files each), and Open never reads them: it
// rebuilds the active segment's entries from its batches, which it walks
// anyway. (Kafka preallocates the active segment's files and maps them;
// Gregor's active segment may have none, or stale ones after a crash, which
// Kafka too would rebuild.)
//
// plus leader-epoch-checkpoint (version 0, "epoch startOffset" lines) and
// partition.metadata ("version: 0", "topic_id: <base64url id>": the topic the
// log belongs to, AssignTopicID). Files being replaced carry .cleaned (being
// written), .swap (complete, about to replace live segments) or .deleted
// (removed after file.delete.delay.ms). Delete renames the directory to
// <topic>-<partition>.<id>-delete (durably) before removing it.
//
// # Replacing segments (.cleaned, .swap, .deleted)
//
// A writer replacing live segments G (consecutive, base offsets from B) with
// a rewrite follows Kafka's replaceSegments: write B.log.cleaned (and index
// .cleaned files) and fsync them; rename them to .swap (the .log last) and
// fsync the directory; rename every file of G to .deleted and fsync the
// directory; rename the .swap files to their final names and fsync the
// directory; then remove the .deleted files. Open undoes or completes a crash
// at any step: .cleaned and .deleted files are removed; a B.log.swap replaces
// every live segment whose base offset lies in [B, the offset after the
// swap's last batch) and its indexes are rebuilt. So a rewrite whose last
// batch comes from G's last segment recovers to exactly the old or the new
// set; one that drops G's last segment entirely can recover with that
// segment's old batches kept after the new ones (offsets still increase;
// Kafka has the same limit). A damaged .swap is dropped while B.log is there.
//
// clean.go is the log's side of compaction (package cleaner decides):
// CleanSnapshot hands out immutable views of the segments with the four
// offsets, NewCleanedSegment writes B.log.cleaned with its indexes, and
// ReplaceSegments runs the protocol above under Log.mu and publishes the new
// segment list at once. The cleaner ends every cleaned segment with a batch
// reaching into G's last segment (an empty one if need be), so its swaps
// always recover to exactly the old or the new set.
//
// # Retention
//
// Retention deletes a prefix of whole segments wholly below the high
// watermark: those below the log start offset (any cleanup.policy), then with
// cleanup.policy=delete those older than retention.ms (largest timestamp:
// the largest batch max timestamp, or the creation time when no batch has
// one), then those that keep the log over retention.bytes. As in Kafka's
// deletableSegments the active segment is a candidate too, once the high
// watermark is the log end offset, unless it has no bytes: an idle log whose
// data has all expired does not keep its last segment forever. When the
// prefix is every segment, DeleteOldSegments first rolls a new empty active
// segment at the log end offset, so the segments deleted are always closed
// ones, the log keeps one segment, the log end offset stays and the log
// start offset becomes it. The roll makes the new segment durable before the
// old ones are renamed to .deleted, and the leader-epoch checkpoint and
// producer snapshots are cut to the new log start offset only after that
// removal is durable, so a crash recovers either the old segments (plus,
// perhaps, the empty one) with their epochs or the empty log at the same log
// end offset; log start ≤ HW either way. (On reopening a log with no batch
// left, the epoch entry at the log end offset is dropped, as Kafka's load
// does: the next append's epoch starts there.)
//
// The decision is one pure function, PlanRetention(Snapshot, now), in
// retention_plan.go: DeleteOldSegments deletes exactly the prefix it names
// for the same Snapshot, and the admin API (`gregor why retention`, the
// console) applies it to a Snapshot of its own (Log.RetentionPlan does both
// steps) to show the same plan, with, when nothing is due, what goes first
// and when (largest timestamp + retention.ms + 1 ms), when the active segment
// goes, or why nothing will without more data. Snapshot is taken under
// Log.mu, so its offsets, segments and configuration are consistent with one
// another.
//
// # Producer state
//
// producer_state.go is Kafka's ProducerStateManager for the partition. Per
// producer id it keeps the epoch, the last five batches (sequence and offset
// ranges), the last timestamp (the max timestamp of the producer's last
// batch, control batches included), the coordinator epoch and the first
// offset of its open transaction. A client batch that repeats one of the last
// five is answered with its original offsets (AppendResult.Duplicate); a
// sequence that does not follow the last one is ErrOutOfOrderSequence; an
// older epoch is ErrInvalidProducerEpoch. A producer the log does not know
// (new, or expired) may start at any sequence, as in Kafka.
//
// Only time forgets a producer (Kafka since KIP-360): RemoveExpiredProducers,
// which logmgr runs every producer.id.expiration.check.interval.ms, removes
// each producer with no open transaction whose last timestamp is
// producer.id.expiration.ms or more before now. Retention and DeleteRecords
// moving the log start offset past a producer's batches remove nothing; an
// open transaction below the log start offset keeps holding the first
// unstable offset there, and LastStableOffset is raised to the log start
// offset (see Offsets).
//
// Snapshots keep every producer not yet expired, including those whose
// batches are deleted: the snapshot a roll writes at a segment's base offset
// holds everything appended before it. Retention and DeleteRecords remove the
// snapshots below the first remaining segment, so the one at its base offset
// carries the producers of the deleted segments. Open loads the newest usable
// snapshot (skipping producers expired by now, as Kafka does), replays batch
// headers from its offset, writes a snapshot at every segment base offset the
// replay passes (those lacked a usable one) while any producer is known, and
// then removes producers expired by now; TruncateTo reloads the same way. So
// a restart, clean or not, after retention deleted a producer's batches still
// answers its retry as a duplicate and checks its next sequence. (Kafka's
// reload drops snapshots at or below the log start offset, so there a
// restart after retention emptied the log forgets such producers.)
//
// # Transactions
//
// A transactional producer's first batch here opens a transaction (its
// first offset enters the producer state); a marker (AppendMarker: an
// uncompressed control batch of one record, key {0, type}, value {0,
// coordinator epoch}, taking its own offset) ends it. A marker whose producer
// has a transaction open yields a CompletedTxn: an abort gets an index entry,
// and either outcome keeps holding the first unstable offset until the high
// watermark passes the marker (Kafka's unreplicatedTxns: a leader that lost
// the marker must not have exposed the transaction as stable). A marker with
// no transaction open here only moves the producer's epoch and coordinator
// epoch.
//
// The checks are Kafka's, in Kafka's order. Client batches: a duplicate of
// the last five is answered with its offsets; an older epoch is
// ErrInvalidProducerEpoch before anything else (KAFKA-19690); a
// transactional batch that would open a transaction needs, with
// TransactionVerification on, the producer's current VerificationGuard
// (StartTransactionVerification, handed out before the coordinator is
// asked; a marker or the transaction's first batch voids it, so a verified
// batch overtaken by an abort cannot open a transaction nobody will end:
// ErrInvalidTxnState); then the sequence (a verified transactions v2
// producer with no batch here must start at 0, and of batches verified
// together the lowest sequence goes first); then a plain batch from a
// producer with a transaction open is ErrInvalidTxnState. Markers: an
// older producer epoch is ErrInvalidProducerEpoch (transactions v2: not
// newer, except a retry of a marker already written, KAFKA-19999); an older
// coordinator epoch ErrTransactionCoordinatorFenced. Coordinator appends of
// producer data (transactional offset commits) check the epoch and the
// transactional flag; replicated batches are applied unchecked.
//
// AbortedTransactions is Kafka's collectAbortedTransactions for a
// read_committed fetch: the entries overlapping [fetch offset, upper bound)
// from the segment of the fetch offset on, stopping at the first entry whose
// recorded last stable offset reaches the upper bound. Snapshots carry each
// producer's open transaction; a load replays batch headers (and control
// batches whole) from the snapshot and writes the index of every segment it
// replays again from the snapshot's offset, so a crash between a marker and
// its index entry, or in a truncation, leaves an index equal to a replay of
// the log. OpenTransactions and ActiveProducers show the state
// (DescribeProducers, the hanging-transaction detector).
//
// # Durability
//
// Append writes to the page cache; AppendProduced is Append for a client
// batch whose header the caller already decoded (record.ParseProduce), so
// the produce path decodes it once. SyncTo(offset) is the group commit:
// concurrent callers share one fdatasync of the active segment (rolled
// segments' logs and the files written since the last sync are synced with
// it, then the directory if its entries changed), and RecoveryPoint reports
// the offset below which everything is durable: the log's bytes and the
// indexes of every segment wholly below it (a segment rolled since the last
// sync holds it at that segment's base offset). TruncateTo syncs its result
// but lowers RecoveryPoint: the caller rewrites its recovery-point checkpoint
// after a truncation, as Kafka does. Checkpoint files truncations rewrite are
// replaced atomically (temp file, fsync, rename, directory fsync).
//
// Nothing else fsyncs a file as it writes it. What a record or its recovery
// relies on is written without an fsync and made durable by the next sync,
// before the recovery point can pass what it describes:
//   - a sealed segment's index files and the producer snapshot at a roll
//     (Log.pending, synced and closed by the next sync);
//   - a new leader epoch (Append, AssignLeaderEpoch): the epoch cache is
//     rewritten (temp file, fsync, rename) by the next sync;
//   - a new log: Open creates its directory and first segment without a sync,
//     and AssignTopicID writes partition.metadata without one; the sync of
//     its first record rewrites partition.metadata durably and syncs the
//     directory and its entry in the parent, as Kafka flushes
//     partition.metadata before the first append. So creating a partition
//     costs no fsync; a crash before its first record may lose it (logmgr
//     recreates it, and removes a directory left with neither records nor
//     partition.metadata). A log opened with a recovery point of 0 or less is
//     treated the same way (no sync may ever have covered a record of it).
//   - Open: what recovery cut, rebuilt or removed, and the records it found
//     above the recovery point, are made durable by the next sync; until
//     then RecoveryPoint stays at the one Open was given. NeedsSync says
//     whether there is any such thing; logmgr syncs the logs it loads that
//     need it, many at once, before it checkpoints their recovery points.
//
// Close syncs what is not yet durable (nothing, when acks=all traffic kept
// every record synced) and writes the active segment's index files and the
// snapshot at the log end offset without an fsync: a start rebuilds the
// active segment's entries and skips a snapshot it cannot read (an older one
// and a replay of batch headers give the same state). A snapshot already at
// the log end offset is kept, never replaced by an unsynced copy. Epoch
// entries no sync wrote then describe no record (a leader epoch assigned at
// the log end offset, entries a load dropped): Close does not write them,
// and the next load computes the same cache from the file as it is.
//
// # Failures: a failed disk and a full one
//
// A failed fsync is never retried (fsyncgate): after a writeback error Linux
// marks the pages it could not write clean, so the next fsync succeeds
// without writing them. Instead the log fails (failure.go): every log dir
// has one FailureDomain shared by its logs (Kafka takes the whole dir
// offline), and the first failed fsync or write of any of them fails it.
// (A failed create, rename or remove changed no file's contents: it is
// returned to the caller, which undoes or retries it, as before.) A failed
// log refuses appends and every other change of its files with
// ErrStorageFailed, never advances its recovery point again, and answers
// every SyncTo, including those waiting on the failed sync and those whose
// offsets an earlier sync covered, with the failure: however many appends
// are waiting, nothing is acknowledged after the failure. Close of a failed
// log writes nothing (no sync, no snapshot) and returns the failure. The
// logs come back only through a restart, whose recovery rescans everything
// past the last checkpointed recovery point; bytes whose writeback failed
// read back as damage (zeros, old bytes) and are cut off there.
//
// A write refused for want of space (vfs.IsNoSpace: ENOSPC or EDQUOT from a
// write, create or truncate, never from a sync) is not a failure: Append
// cuts the segment back to the end of its last whole batch and answers
// ErrNoSpace, and the log stays writable. A roll that runs out of space is
// retried by the next append. Only if cutting back fails does the log fail.
//
// Open after an unclean stop rescans every segment holding offsets at or
// above the recovery point (as Kafka recovers every segment from the one
// holding it): each batch's length, CRC and offsets (increasing, below the
// next segment's base offset) are checked, indexes are rebuilt (a rebuilt
// sealed segment gets its final time index entry and its files rewritten),
// and the file is cut at the first bad byte (later segments are removed).
// Producer snapshots above the recovery point (and above the first segment's
// base offset) are not trusted after an unclean stop (they may describe
// batches that never reached the disk): state is rebuilt from an older one by
// replaying batch headers. A clean shutdown skips the rescan: the active
// segment's batch headers are walked (a bad one means a rescan), and a
// sealed segment trusted without a rescan (after a clean shutdown, or below
// the recovery point) has its index files checked from their size and first
// and last entries and a few batch headers (segment.checkSealed): a file of
// the wrong size, cut short, padded, garbage, pointing past the log or
// missing fails, and the segment is rebuilt from its .log, as Kafka's sanity
// check has it rebuilt; the start goes on. Entries out of order in the middle
// of a file are found by the lookups that read them, which then ignore the
// index and scan the segment. Damage inside a trusted segment's .log is not
// looked for: readers meet it as ErrCorruptSegment. A crash can leave a
// closed segment shorter than the next segment's base offset (its unsynced
// tail lost while the next segment's reached the disk): the gap is kept, as
// Kafka keeps it, and readers skip it. Interrupted swaps are completed,
// .cleaned/.deleted/.tmp leftovers removed.
//
// # Memory and open files
//
// What a log keeps on the heap does not grow with the data it holds, and it
// keeps one open file per segment (its .log), as Kafka does (Kafka maps the
// index files and closes them). The active segment's index entries are in
// memory (at most segment.index.bytes per index: 5 MiB per GiB of active
// segment at the default index.interval.bytes); they are written to the index
// files when the segment is sealed. A sealed segment's entries live only in
// its .index and .timeindex files: the segment keeps their entry count and
// first and last entries, and a lookup binary-searches the files with
// positioned reads through a process-wide cache of 256 windows of 4 KiB
// (index_window.go), opening the file by path only when the cache misses
// and closing it before it returns; so a consumer reading a sealed segment
// front to back reads each window once. A sealed segment's files written by a
// roll stay open until the next sync has synced them. Truncation into a
// sealed segment reads the entries it keeps back into memory (the segment is
// the active one again). A lookup whose index file cannot be read (a deleted
// segment's, renamed to .deleted) scans the segment from its start.
// MemFS has no mmap, so these are positioned reads on any FS; the page cache
// holds the hot windows, the window cache saves the syscalls. Per segment the
// log holds a few hundred bytes; producer state grows with the number of
// producers, the leader-epoch cache with leader epochs.
//
// # Concurrency
//
// One appender at a time holds Log.mu (Append, roll, retention, truncation,
// log start and high watermark changes). Read never takes it (the timestamp
// lookups take it briefly for a segment's largest timestamp): Read loads
// the LEO, then the published segment list, and reads below a segment's
// published size, dropping any batch that reaches its maxOffset bound (sizes
// can run ahead of the LEO it loaded); index lookups take the index's read
// lock. Read is Locate (which batch, which segment, how many bytes at most)
// then Span.AppendTo (one positioned read into the caller's buffer, grown
// only if it lacks room, never cleared), so a caller can size or pool the
// buffer first. Span.Whole cuts a span to exactly the whole batches below
// its bound without reading them (batch headers from the last offset index
// entry before its end: a few KiB), and Span.ReadAt reads it in pieces, so a
// fetch response can be written from the file long after Locate: bytes below
// a published size never change while the segment is live (TruncateTo, a
// follower's, is the exception). Segments removed while a reader may still
// hold them are renamed and closed only after file.delete.delay.ms. syncMu
// serialises fsyncs and is taken before Log.mu, never after; Close and TruncateTo take both, so no
// append slips between Close's final sync and its closing the files. The
// epoch cache's writeMu (one write of its file at a time) comes after both;
// its mu, which Append takes to assign an epoch, is never held while the
// file is written, so no append waits for that fsync.
package log
