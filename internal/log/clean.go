package log

import (
	"errors"
	"fmt"
	"math"

	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// This file is the log's side of compaction: what the cleaner (package
// cleaner) reads and how it installs what it wrote. The cleaner decides; the
// log only hands out immutable views of closed segments, writes a
// <base>.log.cleaned segment, and swaps it in for the segments it replaces.

// ErrSegmentsChanged: ReplaceSegments found that the segments it was asked to
// replace are no longer the log's as they were (retention, DeleteRecords or a
// truncation removed or changed them meanwhile). Nothing was replaced; the
// cleaner tries again on a fresh snapshot.
var ErrSegmentsChanged = errors.New("log segments changed while being cleaned")

// Segment is an immutable view of one segment, taken by CleanSnapshot. Its
// fields are as of the snapshot; a closed segment does not change until
// retention, truncation or a swap removes it from the log.
type Segment struct {
	s *segment

	SegmentInfo
	OffsetIndexBytes int64 // size of the .index entries
	TimeIndexBytes   int64 // size of the .timeindex entries
}

// ReadAt reads bytes of the segment's .log file below Size.
func (s Segment) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.Size {
		return 0, fmt.Errorf("read %s at %d: past the segment's %d bytes", s.s.path(LogSuffix), off, s.Size)
	}
	if rest := s.Size - off; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := s.s.readAt(p, off)
	if err != nil {
		return n, fmt.Errorf("read %s: %w", s.s.path(LogSuffix), err)
	}
	return n, nil
}

// Path is the segment's .log file.
func (s Segment) Path() string { return s.s.path(LogSuffix) }

// PositionFor is the byte position from which a scan for offset should start:
// that of the last indexed batch whose last offset is at most offset, or 0.
func (s Segment) PositionFor(offset int64) int64 {
	_, pos := s.s.index.lookup(offset)
	return pos
}

// AbortedTxns lists the segment's aborted-transaction index entries.
func (s Segment) AbortedTxns() ([]AbortedTxn, error) { return s.s.txn.all() }

// FirstBatchTimestamp is the max timestamp of the segment's first batch
// (Kafka's LogSegment.getFirstBatchTimestamp, what max.compaction.lag.ms is
// measured from); ok is false for an empty segment.
func (s Segment) FirstBatchTimestamp() (ts int64, ok bool, err error) {
	if s.Size < record.HeaderSize {
		return 0, false, nil
	}
	var hb [record.HeaderSize]byte
	if _, err := s.s.readAt(hb[:], 0); err != nil {
		return 0, false, fmt.Errorf("read %s: %w", s.s.path(LogSuffix), err)
	}
	h, err := record.ParseHeader(hb[:])
	if err != nil {
		return 0, false, fmt.Errorf("%w: %s at position 0: %v", ErrCorruptSegment, s.s.path(LogSuffix), err)
	}
	return h.MaxTimestamp, true, nil
}

// ProducerLastRecord is what the cleaner must keep for one active producer:
// the batch holding its last data offset (its last sequence), or, when it has
// written only a transaction marker, the marker of its current epoch.
type ProducerLastRecord struct {
	LastDataOffset int64 // -1 when the producer has no data batch in the log
	Epoch          int16
}

// CleanSnapshot is a consistent view of a log for the cleaner: the Snapshot
// retention and the admin API see, with segments the cleaner can read.
type CleanSnapshot struct {
	Snapshot
	// Segments, oldest first; the last is the active segment. They are
	// Snapshot.Segments with a handle on each.
	Segments []Segment
}

// CleanSnapshot returns the segments and offsets as they are now.
func (l *Log) CleanSnapshot() (CleanSnapshot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return CleanSnapshot{}, ErrClosed
	}
	segs := l.segments()
	out := CleanSnapshot{Snapshot: l.snapshotLocked(), Segments: make([]Segment, len(segs))}
	for i, s := range segs {
		out.Segments[i] = Segment{s: s, SegmentInfo: out.Snapshot.Segments[i],
			OffsetIndexBytes: s.index.bytes(), TimeIndexBytes: s.timeIndex.bytes()}
	}
	return out, nil
}

// LastRecordsOfActiveProducers maps every producer id the log knows to its
// last record (Kafka's UnifiedLog.lastRecordsOfActiveProducers).
func (l *Log) LastRecordsOfActiveProducers() map[int64]ProducerLastRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int64]ProducerLastRecord, len(l.producers.m))
	for pid, e := range l.producers.m {
		out[pid] = ProducerLastRecord{LastDataOffset: e.lastOffset(), Epoch: e.Epoch}
	}
	return out
}

// SegmentsLive reports whether every segment of segs is still in the log
// with the size it had: when a read of one fails, this tells a benign race
// (retention or truncation got there first) from damage.
func (l *Log) SegmentsLive(segs []Segment) bool {
	cur := l.segments()
	for _, s := range segs {
		i := segmentFor(cur, s.BaseOffset)
		if i < 0 || cur[i] != s.s || s.s.size.Load() != s.Size {
			return false
		}
	}
	return true
}

// CleanedSegment is a segment being written by the cleaner: <base>.log.cleaned
// with its .index.cleaned and .timeindex.cleaned, indexed as the appender
// indexes. Nobody reads it until ReplaceSegments installs it. One goroutine
// uses it.
type CleanedSegment struct {
	l       *Log
	seg     *segment
	buf     []byte // bytes appended but not yet written to the file
	written int64  // bytes in the file
	size    int64  // written + len(buf)
	bufSize int
	closed  bool
}

// NewCleanedSegment starts <base>.log.cleaned and its index files, replacing
// any left over. bufSize is how many bytes it gathers before a write.
func (l *Log) NewCleanedSegment(base int64, bufSize int) (*CleanedSegment, error) {
	if err := l.Failed(); err != nil {
		return nil, err
	}
	cfg := l.config()
	s := &segment{dir: l.dir, baseOffset: base, nextOffset: base, maxTimestamp: -1,
		offsetOfMaxTimestamp: base, firstBatchMaxTimestamp: -1, createdMs: l.nowMs()}
	s.txn = newTxnIndex(l.fs, s.path(TxnIndexSuffix+CleanedSuffix))
	w := &CleanedSegment{l: l, seg: s, bufSize: max(bufSize, 4096)}
	var err error
	if s.file, err = l.fs.Create(s.path(LogSuffix + CleanedSuffix)); err != nil {
		return nil, l.ioErr(err)
	}
	maxIndex := max(int(cfg.SegmentIndexBytes), timeEntrySize)
	initIndex(&s.index.index, l.fs, s.path(IndexSuffix+CleanedSuffix), base, offsetEntrySize, maxIndex)
	initIndex(&s.timeIndex.index, l.fs, s.path(TimeIndexSuffix+CleanedSuffix), base, timeEntrySize, maxIndex)
	return w, nil
}

// BaseOffset is the base offset the segment will have.
func (w *CleanedSegment) BaseOffset() int64 { return w.seg.baseOffset }

// Size is the bytes appended so far.
func (w *CleanedSegment) Size() int64 { return w.size }

// NextOffset is the offset after the last batch appended (the base offset
// before any).
func (w *CleanedSegment) NextOffset() int64 { return w.seg.nextOffset }

// Append adds one whole, valid batch. Batches must come in increasing offset
// order and stay within 2^31 offsets of the base offset.
func (w *CleanedSegment) Append(batch []byte) error {
	if w.closed {
		return ErrClosed
	}
	h, err := record.ParseHeader(batch)
	if err != nil {
		return err
	}
	if h.Size() != len(batch) {
		return fmt.Errorf("%w: cleaned batch of %d bytes holds %d", record.ErrCorrupt, len(batch), h.Size())
	}
	if h.BaseOffset < w.seg.nextOffset || h.LastOffset()-w.seg.baseOffset > math.MaxInt32 {
		return fmt.Errorf("cleaned batch at offsets %d..%d does not follow %d in segment %d",
			h.BaseOffset, h.LastOffset(), w.seg.nextOffset, w.seg.baseOffset)
	}
	pos := w.size
	if err := w.l.indexBatch(w.seg, &h, pos); err != nil {
		return err
	}
	w.buf = append(w.buf, batch...)
	w.size += int64(len(batch))
	w.seg.nextOffset = h.NextOffset()
	if len(w.buf) >= w.bufSize {
		return w.flush()
	}
	return nil
}

// AppendAborted adds an aborted transaction to the cleaned segment's
// index: the cleaner carries over the entry of every ABORT marker it keeps
// (Kafka's CleanedTransactionMetadata), in marker order.
func (w *CleanedSegment) AppendAborted(a AbortedTxn) error {
	if w.closed {
		return ErrClosed
	}
	if _, err := w.seg.txn.append(a); err != nil {
		return w.l.ioErr(err)
	}
	return nil
}

func (w *CleanedSegment) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.seg.file.WriteAt(w.buf, w.written); err != nil {
		return w.l.ioErr(fmt.Errorf("write %s: %w", w.seg.path(LogSuffix+CleanedSuffix), err))
	}
	w.written += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

// finish writes what is buffered, seals the indexes as a rolled segment's
// are, and fsyncs the three files.
func (w *CleanedSegment) finish() error {
	if err := w.flush(); err != nil {
		return err
	}
	s := w.seg
	s.size.Store(w.size)
	idx, err := w.l.sealSegment(s)
	if err != nil {
		return w.l.ioErr(err)
	}
	defer func() {
		for _, f := range idx {
			f.Close()
		}
	}()
	for _, f := range append([]vfs.File{s.file}, idx...) {
		if err := f.Sync(); err != nil {
			// A failed fsync fails the dir, even of a file about to be
			// thrown away: the disk is no longer trusted.
			return w.l.fail(fmt.Errorf("sync %s: %w", s.path(LogSuffix+CleanedSuffix), err))
		}
	}
	if err := s.txn.sync(); err != nil {
		return w.l.fail(err)
	}
	return nil
}

// Abort closes and removes the .cleaned files.
func (w *CleanedSegment) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	w.seg.close()
	for _, sfx := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix} {
		if err := w.l.fs.Remove(w.seg.path(sfx + CleanedSuffix)); err != nil && !vfs.IsNotExist(err) {
			w.l.logger.Warn("could not remove cleaned file", "path", w.seg.path(sfx+CleanedSuffix), "err", err)
		}
	}
}

// ReplaceSegments installs w in place of old, a run of consecutive closed
// segments starting at w's base offset, following Kafka's replaceSegments:
// w's files are synced; renamed .cleaned → .swap (the .log last) and the
// directory synced; old's files renamed to .deleted and the directory synced
// (they are closed and removed after file.delete.delay.ms); the .swap files
// renamed to their final names and the directory synced. Readers and the
// appender see the old list or the new one, never a mix: the list is
// published under Log.mu once the renames are done. A crash at any step
// recovers to the old or the new segments (see doc.go); w must reach into
// old's last segment so that its .swap file covers every old segment.
//
// If old is no longer as snapshotted, nothing changes and the error is
// ErrSegmentsChanged. w is consumed either way.
func (l *Log) ReplaceSegments(w *CleanedSegment, old []Segment) error {
	if len(old) == 0 || old[0].BaseOffset != w.seg.baseOffset {
		w.Abort()
		return fmt.Errorf("replace segments: cleaned segment %d does not start the group", w.seg.baseOffset)
	}
	if last := old[len(old)-1]; w.seg.nextOffset <= last.BaseOffset {
		w.Abort()
		return fmt.Errorf("replace segments: cleaned segment ends at %d, before the group's last segment %d",
			w.seg.nextOffset, last.BaseOffset)
	}
	if err := w.finish(); err != nil {
		w.Abort()
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		w.Abort()
		return err
	}
	segs := l.segments()
	i, err := l.checkReplaceable(segs, old, w)
	if err != nil {
		w.Abort()
		return err
	}
	s := w.seg
	s.createdMs = old[len(old)-1].s.createdMs
	if err := l.renameCleaned(s, CleanedSuffix, SwapSuffix); err != nil {
		// Undo as far as the disk lets us (the .log.swap first: it is what
		// recovery would install; if it stays, that is still a valid log).
		for _, sfx := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix} {
			l.fs.Remove(s.path(sfx + SwapSuffix))
		}
		w.Abort()
		return l.ioErr(err)
	}
	w.closed = true // the files are the segment's now
	gone := make([]*segment, len(old))
	for k := range old {
		gone[k] = old[k].s
	}
	// From here on the new set is what recovery installs. If renaming the
	// old files fails, they stay open and serve until a restart completes
	// the swap; once they are renamed (and perhaps closed), the new segment
	// serves even if its own renames fail, recovery finishing them.
	if err := l.deleteSegments(gone); err != nil {
		return l.ioErr(fmt.Errorf("replace segments: %w", err))
	}
	renameErr := l.renameCleaned(s, SwapSuffix, "")
	if renameErr == nil {
		s.index.path, s.timeIndex.path = s.path(IndexSuffix), s.path(TimeIndexSuffix)
		s.txn.setPath(s.path(TxnIndexSuffix))
	}
	next := make([]*segment, 0, len(segs)-len(old)+1)
	next = append(append(append(next, segs[:i]...), s), segs[i+len(old):]...)
	l.publish(next)
	l.unsynced = without(l.unsynced, gone)
	l.noteSyncStateLocked()
	if renameErr != nil {
		return l.ioErr(fmt.Errorf("replace segments: cleaned segment %d installed in memory, its files left as .swap for recovery: %w",
			s.baseOffset, renameErr))
	}
	l.logger.Info("replaced segments with a cleaned one", "dir", l.dir, "base_offset", s.baseOffset,
		"segments", len(old), "bytes", s.size.Load())
	return nil
}

// checkReplaceable finds old in segs: consecutive, unchanged, all closed, and
// the next segment's base offset not below w's end. l.mu is held.
func (l *Log) checkReplaceable(segs []*segment, old []Segment, w *CleanedSegment) (int, error) {
	i := segmentFor(segs, old[0].BaseOffset)
	if i < 0 || i+len(old) >= len(segs) {
		return 0, ErrSegmentsChanged
	}
	for k, o := range old {
		s := segs[i+k]
		if s != o.s || s.size.Load() != o.Size {
			return 0, ErrSegmentsChanged
		}
		if s.deleted.Load() {
			// Still listed but its files renamed: an earlier replacement
			// failed half way. Recovery completes it at the next start.
			return 0, fmt.Errorf("replace segments: segment %d is half replaced by an earlier failed swap; a restart completes it",
				s.baseOffset)
		}
	}
	if nb := segs[i+len(old)].baseOffset; w.seg.nextOffset > nb {
		return 0, fmt.Errorf("replace segments: cleaned segment ends at %d, past the next segment %d", w.seg.nextOffset, nb)
	}
	return i, nil
}

// renameCleaned renames the new segment's files from suffix from to suffix
// to (appended to .log, .index, .timeindex, and .txnindex when it has
// aborted transactions), the .log last, and syncs the directory.
func (l *Log) renameCleaned(s *segment, from, to string) error {
	sfxs := []string{IndexSuffix, TimeIndexSuffix, LogSuffix}
	if s.txn.count() > 0 {
		sfxs = []string{IndexSuffix, TimeIndexSuffix, TxnIndexSuffix, LogSuffix}
	}
	for _, sfx := range sfxs {
		if err := l.fs.Rename(s.path(sfx+from), s.path(sfx+to)); err != nil {
			return err
		}
	}
	return l.fs.SyncDir(l.dir)
}
