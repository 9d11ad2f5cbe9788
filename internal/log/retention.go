package log

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// RetentionResult says what a retention pass removed.
type RetentionResult struct {
	Segments       int
	Bytes          int64
	LogStartOffset int64
	Reason         string // "retention.ms", "retention.bytes", "log start offset"
}

// DeleteOldSegments is one retention pass (log.retention.check.interval.ms):
// it deletes the prefix of segments PlanRetention names for now, so exactly
// what RetentionPlan reported. With cleanup.policy=delete that is the oldest
// segments whose largest timestamp is older than retention.ms, then those
// that keep the log over retention.bytes; with any policy, segments wholly
// below the log start offset. Every segment removed lies wholly below the
// high watermark. As in Kafka the active segment is a candidate too (unless
// it has no bytes): when the prefix is every segment, a new empty active
// segment is rolled at the log end offset first, so the log always keeps one
// segment, the segments deleted are all closed, and the log start offset
// becomes the log end offset.
//
// The roll makes the new segment's directory entry durable (its producer
// snapshot is written atomically) before the old segments are renamed to
// .deleted, so a crash in between recovers the old segments plus an empty
// active one at the same log end offset.
func (l *Log) DeleteOldSegments(now time.Time) (RetentionResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return RetentionResult{}, err
	}
	snap := l.snapshotLocked()
	plan := PlanRetention(&snap, now.UnixMilli())
	n := plan.Now.Segments
	if n == 0 {
		return RetentionResult{LogStartOffset: snap.LogStartOffset}, nil
	}
	res := RetentionResult{Segments: n, Bytes: plan.Now.Bytes, Reason: plan.Now.Reason}
	rolled := n == len(snap.Segments)
	if rolled {
		// The plan takes the active segment only when it has bytes, so it
		// ends above its base; checked, as a roll at its own base would
		// fail in the middle of the pass.
		leo := snap.LogEndOffset
		if act := l.active(); act.baseOffset >= leo {
			return res, fmt.Errorf("retention: active segment %d with %d bytes ends at the log end offset %d: cannot roll",
				act.baseOffset, act.size.Load(), leo)
		}
		if _, err := l.rollLocked(leo, l.nowMs()); err != nil {
			return res, l.ioErr(err)
		}
	}
	if err := l.dropPrefixLocked(n); err != nil {
		return res, l.ioErr(err)
	}
	res.LogStartOffset = l.logStart.Load()
	l.logger.Info("deleted segments by retention", "dir", l.dir, "segments", n, "bytes", res.Bytes,
		"reason", res.Reason, "log_start_offset", res.LogStartOffset, "rolled_active", rolled)
	return res, nil
}

// largestTimestamp is Kafka's LogSegment.largestTimestamp: the largest batch
// max timestamp, or the creation time when no batch has one (maxTimestamp is
// -1 then; a timestamp of 0 is a real one).
func (s *segment) largestTimestamp() int64 {
	if s.maxTimestamp >= 0 {
		return s.maxTimestamp
	}
	return s.createdMs
}

// dropPrefixLocked removes the first n segments and raises the log start
// offset to the first remaining one. Producer state is kept: as in Kafka
// (since KIP-360) only producer.id.expiration.ms forgets a producer, and the
// snapshot at the first remaining segment's base offset, which the roll that
// created that segment wrote, carries the producers of the deleted segments.
//
// The segments' removal is made durable before the leader-epoch checkpoint
// is cut to the new log start offset and the snapshots below the first
// remaining segment are removed (Kafka removes the segments, then increments
// the log start offset): a crash in between leaves epochs describing offsets
// that are gone, which Open trims to the log start offset, and older
// snapshots, which Open passes over for the newer one, never the old
// segments without the epochs of their batches.
func (l *Log) dropPrefixLocked(n int) error {
	segs := l.segments()
	gone := segs[:n]
	rest := append([]*segment(nil), segs[n:]...)
	if nb := rest[0].baseOffset; nb > l.logStart.Load() {
		l.logStart.Store(nb)
	}
	if l.hw.Load() < l.logStart.Load() {
		l.setHWLocked(l.logStart.Load())
	}
	l.updateLSOLocked()
	l.publish(rest)
	l.unsynced = without(l.unsynced, gone)
	l.noteSyncStateLocked()
	if err := l.deleteSegments(gone); err != nil {
		return err
	}
	if err := l.epochs.truncateFromStart(l.logStart.Load(), true); err != nil {
		return err
	}
	return l.deleteSnapshotsBelow(rest[0].baseOffset)
}

func without(list, gone []*segment) []*segment {
	out := list[:0]
	for _, s := range list {
		drop := false
		for _, g := range gone {
			drop = drop || s == g
		}
		if !drop {
			out = append(out, s)
		}
	}
	return out
}

func (l *Log) deleteSnapshotsBelow(off int64) error {
	offs, err := listSnapshots(l.fs, l.dir)
	if err != nil {
		return err
	}
	for _, o := range offs {
		if o < off {
			if err := l.fs.Remove(snapshotPath(l.dir, o)); err != nil && !vfs.IsNotExist(err) {
				return err
			}
		}
	}
	return nil
}

// deleteSegments renames the segments' files to .deleted (durably), then
// closes and removes them after file.delete.delay.ms, so readers holding an
// older view finish their reads.
func (l *Log) deleteSegments(segs []*segment) error {
	if len(segs) == 0 {
		return nil
	}
	for _, s := range segs {
		s.deleted.Store(true)
	}
	var renamed []string
	for _, s := range segs {
		for _, sfx := range segmentSuffixes() {
			p := s.path(sfx)
			if err := l.fs.Rename(p, p+DeletedSuffix); err != nil {
				if vfs.IsNotExist(err) {
					continue
				}
				return fmt.Errorf("delete segment %s: %w", p, err)
			}
			renamed = append(renamed, p+DeletedSuffix)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	// Readers of a removed segment need only its .log file: its index files,
	// renamed, cannot be opened by a lookup, which then scans the segment
	// from its start (correct, slower; only reads that began before the
	// removal get here).
	remove := func() {
		for _, s := range segs {
			s.close()
		}
		for _, p := range renamed {
			if err := l.fs.Remove(p); err != nil && !vfs.IsNotExist(err) {
				l.logger.Warn("could not remove deleted segment file", "path", p, "err", err)
			}
		}
	}
	if d := l.config().FileDeleteDelayMs; d > 0 {
		l.clock.AfterFunc(time.Duration(d)*time.Millisecond, remove)
	} else {
		remove()
	}
	return nil
}

// removeSegmentFiles removes segments' files at once (load-time cleanup).
func (l *Log) removeSegmentFiles(segs []*segment) error {
	for _, s := range segs {
		s.deleted.Store(true)
		s.close()
		for _, sfx := range segmentSuffixes() {
			if err := l.fs.Remove(s.path(sfx)); err != nil && !vfs.IsNotExist(err) {
				return err
			}
		}
	}
	return l.fs.SyncDir(l.dir)
}

// IncrementLogStartOffset moves the log start offset up to offset
// (DeleteRecords) and removes the segments wholly below it. offset may not
// pass the high watermark.
func (l *Log) IncrementLogStartOffset(offset int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return 0, err
	}
	if hw := l.hw.Load(); offset > hw {
		return l.logStart.Load(), fmt.Errorf("%w: cannot delete records up to %d beyond the high watermark %d",
			ErrOffsetOutOfRange, offset, hw)
	}
	if offset <= l.logStart.Load() {
		return l.logStart.Load(), nil
	}
	l.logStart.Store(offset)
	l.updateLSOLocked()
	segs := l.segments()
	n := 0
	for n < len(segs)-1 && segs[n+1].baseOffset <= offset {
		n++
	}
	if n > 0 {
		if err := l.dropPrefixLocked(n); err != nil {
			return offset, l.ioErr(err)
		}
	} else {
		if err := l.epochs.truncateFromStart(offset, true); err != nil {
			return offset, l.ioErr(err)
		}
	}
	l.logger.Info("log start offset moved", "dir", l.dir, "log_start_offset", offset, "segments_deleted", n)
	return offset, nil
}

// TruncateTo removes every batch at or above offset (a follower truncating
// to its leader's log). Segments starting above it are deleted; the segment
// holding it is cut before the batch containing offset, so the log end offset
// becomes that batch's base offset (offset itself when it is a batch
// boundary). An offset below the first segment empties the log and restarts
// it at offset, as Kafka's truncateFullyAndStartAt does. The log start offset
// is lowered to the new log end offset if it was above it. The result is
// synced before returning.
func (l *Log) TruncateTo(offset int64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	return l.ioErr(l.truncateToLocked(offset))
}

// truncateToLocked is TruncateTo with syncMu and Log.mu held.
func (l *Log) truncateToLocked(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: cannot truncate to %d", ErrOffsetOutOfRange, offset)
	}
	if leo := l.leo.Load(); offset >= leo {
		// Nothing to cut, but an epoch this replica began as leader and
		// never wrote may start at the log end (Kafka's truncateTo trims the
		// cache here too): left in place, a follower would keep naming it
		// as its last fetched epoch, which its leader never had.
		return l.epochs.truncateFromEnd(leo, true)
	}
	var err error
	if segs := l.segments(); offset < segs[0].baseOffset {
		err = l.truncateFullyLocked(offset)
	} else {
		err = l.truncateSegmentsLocked(offset)
	}
	if err != nil {
		return err
	}
	leo := l.leo.Load()
	if l.logStart.Load() > leo {
		l.logStart.Store(leo)
	}
	if l.hw.Load() > leo {
		l.hw.Store(leo)
	}
	if l.durable.Load() > leo {
		l.durable.Store(leo)
	}
	if err := l.epochs.truncateFromEnd(leo, true); err != nil {
		return err
	}
	offs, err := listSnapshots(l.fs, l.dir)
	if err != nil {
		return err
	}
	removed := false
	kept := offs[:0]
	for _, o := range offs {
		if o <= leo {
			kept = append(kept, o)
			continue
		}
		if err := l.fs.Remove(snapshotPath(l.dir, o)); err != nil && !vfs.IsNotExist(err) {
			return err
		}
		removed = true
	}
	// The removals must be durable before anything is appended again: a
	// snapshot past the truncation point that a crash brings back would,
	// once the log grows past its offset, be loaded as the producer state
	// there, with producers whose batches the truncation removed.
	if removed {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
	}
	l.producers = newProducerState()
	if err := l.loadProducerState(leo, kept); err != nil {
		return err
	}
	l.producers.onHighWatermark(l.hw.Load())
	l.updateLSOLocked()
	l.logger.Info("truncated log", "dir", l.dir, "log_end_offset", leo)
	return nil
}

// TruncateFullyAndStartAt empties the log and restarts it at offset, which
// may lie past the log end offset (Kafka's truncateFullyAndStartAt: a
// follower whose leader's log starts beyond everything it holds). The log
// start offset, high watermark and log end offset become offset.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%w: cannot restart the log at %d", ErrOffsetOutOfRange, offset)
	}
	if err := l.truncateFullyLocked(offset); err != nil {
		return l.ioErr(err)
	}
	l.hw.Store(offset)
	l.durable.Store(offset)
	l.producers = newProducerState()
	l.updateLSOLocked() // no transaction is left open: the LSO is offset
	l.logger.Info("truncated log fully", "dir", l.dir, "log_start_offset", offset)
	return nil
}

// truncateSegmentsLocked cuts the segment holding offset and deletes the
// segments after it.
func (l *Log) truncateSegmentsLocked(offset int64) error {
	segs := l.segments()
	keep := segmentFor(segs, offset)
	s := segs[keep]
	gone := segs[keep+1:]
	end := offset
	cut, ok, err := s.findBatch(offset, s.size.Load())
	if err != nil {
		return err
	}
	if ok {
		if err := s.file.Truncate(cut.pos); err != nil {
			return err
		}
		s.size.Store(cut.pos)
		s.preallocated = false // the file now ends at its size
		end = cut.hdr.BaseOffset
	}
	// Offset index entries are keyed by a batch's last offset, time index
	// entries point at a batch's base offset: both go from end on.
	if err := s.index.truncateTo(end); err != nil {
		return err
	}
	if err := s.timeIndex.truncateTo(end); err != nil {
		return err
	}
	if err := l.loadActiveStateAfterTruncate(s); err != nil {
		return err
	}
	l.publish(append([]*segment(nil), segs[:keep+1]...))
	l.unsynced = without(l.unsynced, gone)
	l.noteSyncStateLocked()
	if err := l.deleteSegments(gone); err != nil {
		return err
	}
	l.leo.Store(max(s.nextOffset, s.baseOffset))
	return s.file.Sync()
}

// truncateFullyLocked replaces every segment with an empty one at offset.
func (l *Log) truncateFullyLocked(offset int64) error {
	segs := l.segments()
	seg, err := l.createSegment(offset, l.nowMs())
	if err != nil {
		return err
	}
	l.publish([]*segment{seg})
	l.unsynced = nil
	l.noteSyncStateLocked()
	l.leo.Store(offset)
	l.logStart.Store(offset)
	// Every epoch entry and producer snapshot describes offsets that are gone.
	if err := l.epochs.truncateFromEnd(math.MinInt64, true); err != nil {
		return err
	}
	if err := l.deleteSnapshotsBelow(math.MaxInt64); err != nil {
		return err
	}
	// deleteSegments syncs the directory, which makes the new segment's
	// entries durable with the old ones' removal.
	return l.deleteSegments(segs)
}

// loadActiveStateAfterTruncate rebuilds the state of s, cut by a truncation
// and now the active segment, from its batch headers (a damaged header
// means a proper rescan, which cuts the file there).
func (l *Log) loadActiveStateAfterTruncate(s *segment) error {
	var changed bool
	_, err := l.scanSegment(s, math.MaxInt64, false, &changed)
	if errors.Is(err, ErrCorruptSegment) {
		_, err = l.scanSegment(s, math.MaxInt64, true, &changed)
	}
	return err
}
