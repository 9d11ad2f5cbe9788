// Package log is one partition's log: Kafka's UnifiedLog/LocalLog with its
// segments, indexes, leader-epoch cache and producer state.
//
// # Offsets
//
// Every log has four offsets, logStartOffset ≤ LSO ≤ HW ≤ LEO:
//   - log start offset: the first offset readable; moved by retention and
//     DeleteRecords (IncrementLogStartOffset), never by compaction;
//   - last stable offset: min(first offset of an open transaction, HW);
//   - high watermark: a slot the partition layer drives (SetHighWatermark);
//   - log end offset: the offset the next record gets.
//
// Offsets are assigned once by Append and never reused: truncation (a
// follower matching its leader) is the only way the LEO moves back.
//
// # On-disk format (the same names and layouts as Kafka)
//
// A partition directory <topic>-<partition> holds, per segment with base
// offset B (20 digits, zero padded):
//   - B.log: v2 record batches, byte for byte as produced, with base offset
//     and partition leader epoch assigned;
//   - B.index: 8-byte entries (int32 offset relative to B, int32 byte position
//     of the batch), one per index.interval.bytes of log, keyed by the batch's
//     last offset; preallocated to segment.index.bytes while the segment is
//     active, trimmed when it rolls;
//   - B.timeindex: 12-byte entries (int64 timestamp, int32 relative offset of
//     the batch reaching it), added with index entries when the max timestamp
//     grows, plus a final entry when the segment rolls;
//   - B.snapshot: producer state as of offset B (Kafka's ProducerSnapshot v1),
//     written at every roll and at clean close;
//   - B.txnindex: reserved for the aborted-transaction index.
//
// plus leader-epoch-checkpoint (version 0, "epoch startOffset" lines). Files
// being replaced carry .cleaned (being written), .swap (complete, about to
// replace live segments) or .deleted (removed after file.delete.delay.ms).
//
// # Durability
//
// Append writes to the page cache. SyncTo(offset) is the group commit:
// concurrent callers share one fdatasync of the active segment (rolled
// segments, their indexes and new directory entries are synced first), and
// RecoveryPoint reports the offset below which everything is durable.
// Checkpoint and snapshot files are replaced atomically (temp file, fsync,
// rename, directory fsync). Open after an unclean stop rescans every segment
// holding offsets at or above the recovery point: each batch's length, CRC and
// offsets are checked, indexes are rebuilt, and the file is cut at the first
// bad byte (later segments are removed). A clean shutdown skips the rescan
// but index files are still sanity-checked. Interrupted swaps are completed,
// .cleaned/.deleted/.tmp leftovers removed.
//
// # Concurrency
//
// One appender at a time holds Log.mu (Append, roll, retention, truncation,
// log start changes). Readers never take it: they load the published segment
// list and offsets atomically and read only below a segment's published size;
// index lookups take the index's read lock. Segments removed while a reader
// may still hold them are renamed and closed only after file.delete.delay.ms.
// syncMu serialises fsyncs and is taken before Log.mu, never after.
package log
