// Package wal is the write-ahead log under Gregor's metadata quorum: the raft
// HardState and log entries that etcd raft asks its application to make
// durable, written to segment files through vfs so tests can crash it at any
// step.
//
// # On-disk format
//
// A WAL directory holds segment files named <seq>-<index>.wal, both 16 hex
// digits: seq orders the segments (it only grows), index is informational
// (the snapshot index for a segment that starts with a snapshot marker, else
// the index of the next entry expected when the segment was created). A
// segment is a sequence of records
//
//	u32 length | u32 crc32c | u8 type | payload
//
// all big-endian, where length counts the payload only and the CRC-32C
// (Castagnoli) covers the type byte and the payload. Types:
//
//   - 1 Entry: proto.Marshal(raftpb.Entry) (term, index, type, data);
//   - 2 HardState: proto.Marshal(raftpb.HardState) (term, vote, commit);
//   - 3 SnapshotMarker: u32 n | proto.Marshal(raftpb.SnapshotMetadata) (n
//     bytes: index, term, ConfState), then u32 m | proto.Marshal(HardState)
//     (m = 0: none), then u32 k and k times u32 len | proto.Marshal(Entry):
//     the HardState current when the marker was written and every entry
//     after the snapshot index that the log held then.
//
// A SnapshotMarker is always the first record of a segment, and the segment
// it starts is self-contained: it says "the log is snapshot index..term, then
// these entries, with this HardState". Because it is one record with one CRC,
// a segment whose marker was torn is recognisably incomplete, never half
// applied. Segments are rolled (a new segment without a marker) when the
// active one passes Options.SegmentBytes.
//
// # Replay
//
// Open replays from the newest segment that starts with a valid marker (all
// older segments are superseded and are deleted). The marker resets the log
// to its snapshot, HardState and entries; then each later record applies in
// order: an Entry at index i discards every entry ≥ i and appends (an index
// above last+1 is a gap: ErrCorrupt); a HardState replaces the previous one.
// The first short, oversized or CRC-bad record of the last segment is a torn
// tail: the file is truncated there (and synced). The same in any earlier
// segment is ErrCorrupt, since a segment is synced before the next one is
// created. A newest segment whose marker itself is torn is an interrupted
// rotation: it is removed and the previous marker segment is used.
//
// After replay HardState.Commit must not exceed the last index (ErrCorrupt
// otherwise: a commit index that was made durable before the entries it
// covers means lost writes). A Commit below the snapshot index is raised to
// it: the snapshot holds only committed entries.
//
// # Durability
//
//   - Save writes the entries, then the HardState, in one write, and fsyncs
//     iff asked (raft's Ready.MustSync: entries, a new term or a new vote; a
//     commit-only change need not be synced).
//   - Rolling to a new segment fsyncs the old one first, and fsyncs the
//     directory after creating the new one.
//   - Rotate writes a new segment holding only a marker, fsyncs it and the
//     directory, and only then removes every older segment (and fsyncs the
//     directory again). The caller must have made the snapshot the marker
//     names durable before calling Rotate (etcd #10219: never release old
//     log before the state that replaces it is on disk).
//
// # Concurrency
//
// A WAL is used by one goroutine (the raft loop); it has no locks.
package wal
