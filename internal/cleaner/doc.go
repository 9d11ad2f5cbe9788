// Package cleaner is Gregor's log cleaner: it compacts logs whose
// cleanup.policy includes compact so that each keeps about one record per key
// (Kafka's LogCleaner, LogCleanerManager and Cleaner).
//
// # What a round does
//
// Every worker (log.cleaner.threads) repeats a round, sleeping
// log.cleaner.backoff.ms when there was nothing to clean:
//
//  1. Decide (assess.go, a pure function of a log snapshot and the time).
//     A log's cleaner point (cleaner-offset-checkpoint; the log start offset
//     if none or out of range) starts its dirty section. The cleanable range
//     ends at the first uncleanable offset: the smallest of the last stable
//     offset (open transactions, and the high watermark), the active segment's
//     base offset and the first dirty segment holding a record younger than
//     min.compaction.lag.ms, rounded down to a segment base. dirty ratio =
//     dirty bytes / (clean + dirty bytes). A log is a candidate when its
//     ratio is above min.cleanable.dirty.ratio (Kafka compares with >), when
//     a dirty closed segment's first batch is older than max.compaction.lag.ms,
//     or when a delete horizon the last cleaning left has passed (so expired
//     tombstones go without new writes). The candidate with the highest ratio
//     goes first; a partition another worker is cleaning, or one marked
//     uncleanable until its retry time, is skipped.
//  2. Pass 1 (clean.go) reads the dirty range and fills the worker's offset
//     map (offsetmap.go: open addressing, 128-bit key hash → last offset,
//     sized from log.cleaner.dedupe.buffer.size / threads and
//     log.cleaner.io.buffer.load.factor; the table grows up to that size as
//     keys come). When a record with a new key does not fit, the round's
//     range ends just before it (perhaps inside a batch): that prefix is
//     cleaned now, the rest next round. So a map too small for the keys
//     only means more rounds, never a failure.
//  3. Pass 2 recopies the log from its first segment to the new cleaner
//     point, in groups of consecutive segments whose sizes sum to at most
//     segment.bytes (and indexes to segment.index.bytes, offsets to 2^31),
//     into <base>.log.cleaned. A record stays if it is past the map's range
//     or the latest for its key; a tombstone (null value) stays until its
//     batch's delete horizon. Batches keep their base offset, last offset
//     delta, timestamps, producer fields and codec; a batch that lost
//     records is re-encoded (and re-compressed), one that lost none is copied
//     byte for byte. Offsets are never reassigned and the log start offset
//     never moves. Batches above the new cleaner point are copied verbatim.
//     When a group's last batch goes entirely, an empty batch with its
//     offsets ends the cleaned segment, so the segment covers the same
//     offsets as the group it replaces (consumers move past it to the next
//     segment; a crashed swap recovers exactly).
//  4. Each group is swapped in with log.ReplaceSegments (.cleaned → .swap →
//     old segments to .deleted → .swap → live, with directory fsyncs); a
//     one-segment group that came out byte-identical is left alone. Then
//     the cleaner point is written to cleaner-offset-checkpoint, and
//     compact,delete logs get their retention pass (Kafka applies retention
//     to such logs after cleaning).
//
// # Tombstones, markers and producer state (Kafka's rules, KIP-534)
//
// The first cleaning that keeps a tombstone, or a transaction marker whose
// transaction has no batch left, rewrites its batch with a delete horizon of
// now + delete.retention.ms: attribute bit 6 set and the base timestamp
// holding the horizon, record timestamps re-encoded relative to it, so the
// horizon survives restarts. A later round after the horizon drops the
// tombstones (and the marker). Records of aborted transactions are removed;
// a producer's last batch is kept, emptied of records if need be (Kafka's
// RETAIN_EMPTY), so its sequence and epoch survive. Records without a key
// are dropped, as Kafka drops them (produce refuses them on compacted
// topics; they can only predate a switch to compact). Outcomes come from the
// markers pass 1 reads, and a transaction whose marker lies beyond the
// cleanable range ends the round before its first batch (the last stable
// offset bounds the range too). Every ABORT marker a cleaned segment keeps
// keeps its aborted-transaction index entry (.txnindex) there, carried from
// the segment it came from; an abort marker that goes takes its entry.
//
// # Failures
//
// An error cleaning one partition (corrupt batch, I/O error, a panic) marks
// it uncleanable with the error, retried after twice log.cleaner.backoff.ms
// doubling per failure up to an hour; other partitions go on and the worker
// survives. A cleaning that finds its segments changed under it (retention,
// DeleteRecords, truncation, deletion) is abandoned and retried, not failed.
// A crash at any step leaves each group's old or new segments (package log
// recovers .cleaned/.swap/.deleted files); the cleaner point is written only
// after all groups, so a crashed round is simply done again.
//
// # Visibility
//
// Status reports per partition the clean, dirty and uncleanable bytes, the
// dirty ratio, the cleaner point, the first uncleanable offset and why, why
// the log is or is not a candidate and when it next becomes one, the last
// run's figures and any uncleanable error; Handler serves it as JSON
// (GET /v1/partitions/{topic}/{partition}/cleaner). Collector exports
// Kafka's gauges (max-dirty-percent, time-since-last-run-ms,
// uncleanable-partitions-count, uncleanable-bytes, cleaner-recopy-percent,
// max-clean-time-secs, max-compaction-delay-secs,
// max-buffer-utilization-percent, DeadThreadCount).
//
// log.cleaner.io.max.bytes.per.second throttles the reads and writes of all
// workers together (throttle.go); log.cleaner.enable=false means Start runs
// nothing (Status still explains each log). The log.cleaner.* settings are
// read again at each round, except log.cleaner.threads (at Start).
//
// # Concurrency
//
// Each worker owns its offset map and buffers. Cleaner.mu guards the
// per-partition state and gauges; it is never held across I/O. A log is
// cleaned by one worker at a time (in progress). The cleaner reads closed
// segments without the log's lock (they are immutable until removed) and
// takes it only inside ReplaceSegments, so appends and reads go on.
package cleaner
