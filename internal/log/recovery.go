package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Open loads (and if needed recovers) the log in o.Dir, creating it when the
// directory is empty.
func Open(o Options) (*Log, error) {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if err := makeDirDurable(o.FS, o.Dir); err != nil {
		return nil, err
	}
	l := &Log{fs: o.FS, clock: o.Clock, dir: o.Dir, logger: o.Logger, producers: newProducerState(), domain: o.Failure}
	if l.domain == nil {
		l.domain = NewFailureDomain(nil)
	}
	l.group.cond.L = &l.group.Mutex
	cfg := o.Config
	l.cfg.Store(&cfg)
	l.lastFlush = l.nowMs()
	var err error
	if l.epochs, err = loadEpochCache(o.FS, o.Dir); err != nil {
		l.logger.Warn("leader epoch checkpoint unreadable, starting empty", "dir", o.Dir, "err", err)
		l.epochs = &epochCache{fs: o.FS, path: l.epochs.pathOr(o.Dir)}
	}
	if err := l.cleanLeftovers(); err != nil {
		return nil, err
	}
	segs, err := l.openSegments()
	if err != nil {
		return nil, err
	}
	if err := l.load(segs, o); err != nil {
		for _, s := range l.segmentsOrNil() {
			s.close()
		}
		return nil, err
	}
	return l, nil
}

// makeDirDurable creates dir and any missing parents, and syncs the parent of
// every directory it creates: a new directory entry is durable only once its
// parent is synced, and without that a crash could lose the partition
// directory with every acknowledged record in it.
func makeDirDurable(fs vfs.FS, dir string) error {
	var created []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := fs.Stat(d); err == nil {
			break
		} else if !vfs.IsNotExist(err) {
			return err
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := len(created) - 1; i >= 0; i-- {
		if err := fs.SyncDir(filepath.Dir(created[i])); err != nil {
			return err
		}
	}
	return nil
}

func (c *epochCache) pathOr(dir string) string {
	if c != nil {
		return c.path
	}
	return dir + "/" + LeaderEpochCheckpointFile
}

func (l *Log) segmentsOrNil() []*segment {
	if p := l.segs.Load(); p != nil {
		return *p
	}
	return nil
}

// cleanLeftovers finishes what a crash interrupted: temp files, .cleaned and
// .deleted files are removed; a .swap file (written completely before it was
// renamed to .swap) replaces the live segments it covers.
func (l *Log) cleanLeftovers() error {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return err
	}
	var swaps []string
	changed := false
	for _, n := range names {
		p := l.dir + "/" + n
		switch {
		case strings.HasSuffix(n, ".tmp"), strings.HasSuffix(n, CleanedSuffix), strings.HasSuffix(n, DeletedSuffix):
			if err := l.fs.Remove(p); err != nil && !vfs.IsNotExist(err) {
				return err
			}
			changed = true
		case strings.HasSuffix(n, LogSuffix+SwapSuffix):
			swaps = append(swaps, n)
		case strings.HasSuffix(n, SwapSuffix):
			// Index swap files are rebuilt from the log.
			if err := l.fs.Remove(p); err != nil && !vfs.IsNotExist(err) {
				return err
			}
			changed = true
		}
	}
	for _, n := range swaps {
		if err := l.completeSwap(n); err != nil {
			return err
		}
		changed = true
	}
	if changed {
		return l.fs.SyncDir(l.dir)
	}
	return nil
}

// completeSwap installs name (<base>.log.swap): live segments whose base
// offsets fall in the range the swap file covers are removed, then the swap
// file becomes <base>.log with its indexes rebuilt on load.
func (l *Log) completeSwap(name string) error {
	base, ok := ParseFileName(name)
	if !ok {
		return fmt.Errorf("%w: bad swap file name %s", ErrCorruptSegment, name)
	}
	swapPath := l.dir + "/" + name
	f, err := l.fs.Open(swapPath)
	if err != nil {
		return err
	}
	size, err := f.Size()
	tmp := &segment{dir: l.dir, baseOffset: base, file: f}
	next := base
	if err == nil {
		err = tmp.scanFrom(0, size, func(bp batchPos) bool { next = bp.hdr.NextOffset(); return true })
	}
	f.Close()
	names, lerr := l.fs.List(l.dir)
	if lerr != nil {
		return lerr
	}
	if err != nil {
		// A swap file is complete before it is renamed to .swap, so this is
		// disk damage. While the segment it replaces is still there, keep
		// the old set; otherwise install it and let recovery cut it.
		if slices.Contains(names, FileName(base)+LogSuffix) {
			l.logger.Warn("dropping damaged swap file", "path", swapPath, "err", err)
			return l.fs.Remove(swapPath)
		}
		l.logger.Warn("installing damaged swap file for recovery", "path", swapPath, "err", err)
	}
	for _, n := range names {
		off, ok := ParseFileName(n)
		if !ok || strings.HasSuffix(n, SwapSuffix) || !hasSuffixAny(n, segmentSuffixes()...) {
			continue
		}
		if off >= base && (off < next || off == base) {
			if err := l.fs.Remove(l.dir + "/" + n); err != nil && !vfs.IsNotExist(err) {
				return err
			}
		}
	}
	l.logger.Info("completing interrupted segment swap", "dir", l.dir, "base_offset", base, "next_offset", next)
	return l.fs.Rename(swapPath, l.dir+"/"+FileName(base)+LogSuffix)
}

// openSegments opens every .log file with whatever index files exist.
func (l *Log) openSegments() ([]*segment, error) {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(names))
	var bases []int64
	for _, n := range names {
		have[n] = true
		if strings.HasSuffix(n, LogSuffix) && len(n) == 20+len(LogSuffix) {
			if off, ok := ParseFileName(n); ok {
				bases = append(bases, off)
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	cfg := l.config()
	var segs []*segment
	for _, base := range bases {
		s := &segment{dir: l.dir, baseOffset: base, maxTimestamp: -1, offsetOfMaxTimestamp: base,
			firstBatchMaxTimestamp: -1, createdMs: l.nowMs()}
		if cfg.SegmentJitterMs > 0 {
			s.rollJitterMs = rollJitter(l.dir, base, cfg.SegmentJitterMs)
		}
		segs = append(segs, s)
		if s.file, err = l.fs.OpenReadWrite(s.path(LogSuffix)); err != nil {
			return segs, err
		}
		size, err := s.file.Size()
		if err != nil {
			return segs, err
		}
		s.size.Store(size)
		if fi, err := l.fs.Stat(s.path(LogSuffix)); err == nil {
			s.createdMs = fi.ModTime().UnixMilli()
		}
		create := !have[FileName(base)+IndexSuffix] || !have[FileName(base)+TimeIndexSuffix]
		if err := openIndex(&s.index.index, l.fs, s.path(IndexSuffix), base, offsetEntrySize, int(cfg.SegmentIndexBytes), create); err != nil {
			return segs, err
		}
		if err := openIndex(&s.timeIndex.index, l.fs, s.path(TimeIndexSuffix), base, timeEntrySize, int(cfg.SegmentIndexBytes), create); err != nil {
			return segs, err
		}
		s.rebuild = create && size > 0
	}
	return segs, nil
}

// load recovers segments as needed and sets up offsets, producer state and
// the epoch cache.
func (l *Log) load(segs []*segment, o Options) error {
	recoverFrom := max(o.RecoveryPoint, 0)
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		last := i == len(segs)-1
		containsUnflushed := last || segs[i+1].baseOffset > recoverFrom
		needScan := s.rebuild || (!o.CleanShutdown && containsUnflushed)
		if !needScan {
			if err := s.index.check(max(s.size.Load(), 1)); err != nil {
				l.logger.Warn("rebuilding index", "dir", l.dir, "segment", s.baseOffset, "err", err)
				needScan = true
			} else if err := s.timeIndex.check(); err != nil {
				l.logger.Warn("rebuilding time index", "dir", l.dir, "segment", s.baseOffset, "err", err)
				needScan = true
			} else if err := s.checkTail(); err != nil {
				// A recovery-point checkpoint older than a truncation can
				// vouch for a segment whose tail was rewritten and lost.
				l.logger.Warn("rescanning segment with a damaged tail", "dir", l.dir, "segment", s.baseOffset, "err", err)
				needScan = true
			}
		}
		if needScan {
			limit := int64(math.MaxInt64)
			if !last {
				limit = segs[i+1].baseOffset
			}
			truncated, err := l.recoverSegment(s, limit)
			if err != nil {
				return err
			}
			if truncated && !last {
				l.logger.Warn("deleting segments after a truncated segment", "dir", l.dir,
					"segment", s.baseOffset, "deleted", len(segs)-i-1)
				if err := l.removeSegmentFiles(segs[i+1:]); err != nil {
					return err
				}
				segs = segs[:i+1]
			} else if !last {
				// A rebuilt closed segment gets the final time index entry
				// rolling gave it, or a clean restart would not know its
				// largest timestamp.
				if err := l.sealSegment(s); err != nil {
					return err
				}
			}
		} else if last {
			if err := l.loadActiveState(s); err != nil {
				return err
			}
		} else if ts, off, ok := s.timeIndex.last(); ok {
			s.maxTimestamp, s.offsetOfMaxTimestamp = ts, off
		}
	}
	logStart := max(o.LogStartOffset, 0)
	if len(segs) > 0 {
		logStart = max(logStart, segs[0].baseOffset)
	}
	if len(segs) == 0 {
		s, err := l.createSegment(logStart, l.nowMs())
		if err != nil {
			return err
		}
		segs = append(segs, s)
	}
	act := segs[len(segs)-1]
	if err := act.index.extend(); err != nil {
		return err
	}
	if err := act.timeIndex.extend(); err != nil {
		return err
	}
	for _, s := range segs[:len(segs)-1] {
		if err := s.index.trim(); err != nil {
			return err
		}
		if err := s.timeIndex.trim(); err != nil {
			return err
		}
	}
	l.publish(segs)
	leo := max(act.nextOffset, act.baseOffset)
	logStart = min(logStart, leo)
	l.leo.Store(leo)
	l.logStart.Store(logStart)
	if err := l.epochs.truncateFromEnd(leo); err != nil {
		return err
	}
	if err := l.epochs.truncateFromStart(logStart); err != nil {
		return err
	}
	// After an unclean stop a snapshot above the recovery point may describe
	// batches that did not reach the disk: rebuild from an older one.
	trusted := leo
	if !o.CleanShutdown {
		trusted = min(leo, recoverFrom)
	}
	if err := l.loadProducerState(trusted); err != nil {
		return err
	}
	// Everything loaded is now known good; make it durable and call it the
	// recovery point.
	l.dirDirty = true
	l.unsynced = append([]*segment(nil), segs[:len(segs)-1]...)
	if o.CleanShutdown {
		l.unsynced = nil
		l.durable.Store(leo)
	}
	l.noteSyncStateLocked()
	if err := l.SyncTo(leo); err != nil {
		return err
	}
	l.durable.Store(leo)
	hw := o.HighWatermark
	if hw < 0 {
		hw = logStart
	}
	l.SetHighWatermark(hw)
	l.logger.Debug("loaded log", "dir", l.dir, "segments", len(segs), "log_start_offset", logStart,
		"log_end_offset", leo, "clean_shutdown", o.CleanShutdown)
	return nil
}

// recoverSegment rescans a segment: every batch is read and checked (length,
// CRC, offsets increasing and below limit, the next segment's base offset),
// the indexes are rebuilt, and the file is truncated at the first bad byte.
// It reports whether bytes were cut.
func (l *Log) recoverSegment(s *segment, limit int64) (bool, error) {
	if err := s.index.truncateEntries(0); err != nil {
		return false, err
	}
	if err := s.timeIndex.truncateEntries(0); err != nil {
		return false, err
	}
	s.nextOffset, s.maxTimestamp, s.offsetOfMaxTimestamp = s.baseOffset, -1, s.baseOffset
	s.firstBatchMaxTimestamp, s.bytesSinceIndexEntry = -1, 0
	size := s.size.Load()
	var pos int64
	var bad error
	buf := make([]byte, 0, 64<<10)
	var hb [record.HeaderSize]byte
	for pos < size {
		if size-pos < record.HeaderSize {
			bad = fmt.Errorf("%d stray bytes", size-pos)
			break
		}
		if _, err := s.readAt(hb[:], pos); err != nil {
			return false, err
		}
		h, err := record.ParseHeader(hb[:])
		if err != nil {
			bad = err
			break
		}
		if int64(h.Size()) > size-pos {
			bad = fmt.Errorf("batch of %d bytes runs past the end", h.Size())
			break
		}
		if cap(buf) < h.Size() {
			buf = make([]byte, h.Size())
		}
		buf = buf[:h.Size()]
		if _, err := s.readAt(buf, pos); err != nil {
			return false, err
		}
		if _, err := record.ValidateStored(buf); err != nil {
			bad = err
			break
		}
		if h.BaseOffset < s.nextOffset || h.LastOffset()-s.baseOffset > 1<<31-1 || h.LastOffset() >= limit {
			bad = fmt.Errorf("batch offsets %d..%d do not follow %d or reach %d", h.BaseOffset, h.LastOffset(), s.nextOffset, limit)
			break
		}
		if err := l.indexBatch(s, &h, pos); err != nil {
			return false, err
		}
		if _, err := l.epochs.assign(h.LeaderEpoch, h.BaseOffset, false); err != nil {
			return false, err
		}
		s.nextOffset = h.NextOffset()
		pos += int64(h.Size())
	}
	l.epochs.mu.Lock()
	err := l.epochs.flushLocked()
	l.epochs.mu.Unlock()
	if err != nil {
		return false, err
	}
	if bad == nil {
		return false, nil
	}
	if hb == ([record.HeaderSize]byte{}) {
		// An all-zero header: the unused end of a preallocated segment, or
		// blocks a crash left unwritten. Nothing was lost there.
		l.logger.Info("trimming the zero-filled end of a log segment", "segment", s.path(LogSuffix),
			"position", pos, "bytes_removed", size-pos)
	} else {
		l.logger.Warn("truncating corrupt log tail", "segment", s.path(LogSuffix), "position", pos,
			"bytes_removed", size-pos, "reason", bad)
	}
	if err := s.file.Truncate(pos); err != nil {
		return false, err
	}
	s.size.Store(pos)
	return true, nil
}

// loadActiveState reads the active segment's batch headers (after a clean
// shutdown its indexes are trusted) to learn its next offset and timestamps.
func (l *Log) loadActiveState(s *segment) error {
	// The active segment's indexes live in memory (they take appends).
	if err := s.index.activate(); err != nil {
		return err
	}
	if err := s.timeIndex.activate(); err != nil {
		return err
	}
	s.nextOffset = s.baseOffset
	lastIdx := s.index.lastOffset()
	_, idxPos := s.index.lookup(lastIdx)
	if ts, off, ok := s.timeIndex.last(); ok {
		s.maxTimestamp, s.offsetOfMaxTimestamp = ts, off
	}
	// The whole segment is walked anyway: check on the way that every index
	// entry names a batch as it is (a trusted index that does not would send
	// readers into the middle of a batch).
	v := indexVerifier{s: s}
	first := true
	err := s.scanFrom(0, s.size.Load(), func(bp batchPos) bool {
		h := bp.hdr
		if first {
			s.firstBatchMaxTimestamp, first = h.MaxTimestamp, false
		}
		v.batch(bp)
		if bp.pos >= idxPos {
			if h.MaxTimestamp > s.maxTimestamp {
				s.maxTimestamp, s.offsetOfMaxTimestamp = h.MaxTimestamp, h.BaseOffset
			}
			if bp.pos > idxPos || lastIdx == s.baseOffset {
				s.bytesSinceIndexEntry += int64(h.Size())
			}
		}
		s.nextOffset = h.NextOffset()
		return true
	})
	if err == nil && !v.done() {
		err = fmt.Errorf("%w: %s: index entries do not match the batches", ErrCorruptSegment, s.path(IndexSuffix))
	}
	if errors.Is(err, ErrCorruptSegment) {
		// A clean shutdown should never leave this; rescan properly.
		l.logger.Warn("rescanning active segment", "dir", l.dir, "segment", s.baseOffset, "err", err)
		_, err = l.recoverSegment(s, math.MaxInt64)
	}
	return err
}

// indexVerifier matches a segment's index entries against its batches, in
// file order: an offset index entry must sit at a batch's position and carry
// its last offset; a time index entry must name a batch's base offset and its
// max timestamp.
type indexVerifier struct {
	s         *segment
	off, time int // next entry of each index
	bad       bool
}

func (v *indexVerifier) batch(bp batchPos) {
	x, tx := &v.s.index, &v.s.timeIndex
	for v.off < x.entries() {
		e := x.buf[v.off*offsetEntrySize:]
		rel, pos := relOffsetKey(e), int64(binary.BigEndian.Uint32(e[4:]))
		if pos > bp.pos {
			break
		}
		v.bad = v.bad || pos < bp.pos || x.base+rel != bp.hdr.LastOffset()
		v.off++
	}
	for v.time < tx.entries() {
		e := tx.buf[v.time*timeEntrySize:]
		ts, off := timestampKey(e), tx.base+relOffsetKey(e[8:])
		if off > bp.hdr.BaseOffset {
			break
		}
		v.bad = v.bad || off < bp.hdr.BaseOffset || ts != bp.hdr.MaxTimestamp
		v.time++
	}
}

func (v *indexVerifier) done() bool {
	return !v.bad && v.off == v.s.index.entries() && v.time == v.s.timeIndex.entries()
}

// loadProducerState restores producer state from the newest usable snapshot
// and replays batch headers from its offset to the end of the log. Producers
// expired by now are skipped when the snapshot is read (Kafka's
// loadFromSnapshot) and removed after the replay.
//
// A snapshot is usable at or below upTo (the log end offset; after an unclean
// stop the recovery point, above which a snapshot may describe batches that
// never reached the disk: those are removed) or at or below the first
// segment's base offset: such a snapshot describes only batches retention or
// DeleteRecords removed, which no crash can contradict, and it is the only
// record of their producers.
//
// Every segment base offset the replay passes lacks a usable snapshot; it
// gets one, with the state before the segment's first batch, while any
// producer is known. So each segment's base offset keeps a snapshot, and the
// one at whichever segment retention leaves first carries every producer of
// the deleted ones.
func (l *Log) loadProducerState(upTo int64) error {
	segs := l.segments()
	upTo = max(upTo, segs[0].baseOffset)
	offs, err := listSnapshots(l.fs, l.dir)
	if err != nil {
		return err
	}
	nowMs, expMs := l.nowMs(), l.config().ProducerIDExpirationMs
	from := segs[0].baseOffset
	for i := len(offs) - 1; i >= 0; i-- {
		off := offs[i]
		if off > upTo {
			if err := l.fs.Remove(snapshotPath(l.dir, off)); err != nil && !vfs.IsNotExist(err) {
				return err
			}
			continue
		}
		data, err := vfs.ReadFile(l.fs, snapshotPath(l.dir, off))
		if err == nil {
			var ps *producerState
			if ps, err = decodeSnapshot(data); err == nil {
				ps.removeExpired(nowMs, expMs)
				l.producers = ps
				from = off
				break
			}
		}
		l.logger.Warn("ignoring unreadable producer snapshot", "dir", l.dir, "offset", off, "err", err)
	}
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].baseOffset <= from {
			continue
		}
		if s.baseOffset > from && len(l.producers.m) > 0 {
			if err := vfs.WriteFileAtomic(l.fs, snapshotPath(l.dir, s.baseOffset), l.producers.encodeSnapshot()); err != nil {
				return err
			}
		}
		replay := func(bp batchPos) bool {
			if bp.hdr.LastOffset() >= from {
				l.producers.update(&bp.hdr)
			}
			return true
		}
		_, pos := s.index.lookup(from)
		err := s.scanFrom(pos, s.size.Load(), replay)
		if errors.Is(err, ErrCorruptSegment) && pos > 0 {
			// A trusted index entry that does not point at a batch: scan the
			// segment from its start instead.
			err = s.scanFrom(0, s.size.Load(), replay)
		}
		if errors.Is(err, ErrCorruptSegment) {
			// Only a segment trusted without a rescan (clean shutdown, below
			// the recovery point) gets here; readers will meet the same
			// damage as ErrCorruptSegment. Producer state stops at it.
			l.logger.Warn("producer state replay stopped at a damaged segment", "dir", l.dir,
				"segment", s.baseOffset, "err", err)
			break
		}
		if err != nil {
			return err
		}
	}
	l.producers.removeExpired(nowMs, expMs)
	return nil
}
