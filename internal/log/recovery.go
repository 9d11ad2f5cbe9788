package log

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Open loads (and if needed recovers) the log in o.Dir, creating it when the
// directory is empty or missing. Open syncs nothing: what it repaired or
// rebuilt (a cut tail, index files, removed files, snapshots) and the
// records it found above o.RecoveryPoint are made durable by the next sync,
// and until then RecoveryPoint stays at o.RecoveryPoint (NeedsSync reports
// whether a sync has anything to do; logmgr syncs the logs it loads all at
// once). A directory Open creates, and its entry in its parent, are made
// durable by the first sync too: a new log costs no fsync until it holds a
// record.
func Open(o Options) (*Log, error) {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	parents, err := makeDir(o.FS, o.Dir)
	if err != nil {
		return nil, err
	}
	l := &Log{fs: o.FS, clock: o.Clock, dir: o.Dir, logger: o.Logger, producers: newProducerState(), domain: o.Failure,
		parentDirs: parents, topicID: o.TopicID, created: len(parents) > 0}
	if len(parents) == 0 && o.RecoveryPoint <= 0 {
		// Nothing says a sync ever covered a record of this log (one does
		// before a recovery point above 0 is checkpointed): its directory's
		// entry, its own entries and partition.metadata may not be durable.
		// The sync of its next record makes them so.
		l.dirDirty, l.metaSync = true, true
		if !o.ParentDurable {
			l.parentDirs = []string{filepath.Dir(filepath.Clean(o.Dir))}
		}
	}
	if l.domain == nil {
		l.domain = NewFailureDomain(nil)
	}
	l.group.cond.L = &l.group.Mutex
	cfg := o.Config
	l.cfg.Store(&cfg)
	l.lastFlush = l.nowMs()
	names, err := l.fs.List(l.dir)
	if err != nil {
		return nil, err
	}
	l.epochs = &epochCache{fs: o.FS, path: filepath.Join(o.Dir, LeaderEpochCheckpointFile)}
	if slices.Contains(names, LeaderEpochCheckpointFile) {
		if l.epochs, err = loadEpochCache(o.FS, o.Dir); err != nil {
			l.logger.Warn("leader epoch checkpoint unreadable, starting empty", "dir", o.Dir, "err", err)
			l.epochs = &epochCache{fs: o.FS, path: filepath.Join(o.Dir, LeaderEpochCheckpointFile)}
		}
	}
	if names, err = l.cleanLeftovers(names); err != nil {
		return nil, err
	}
	segs, err := l.openSegments(names, o)
	if err != nil {
		for _, s := range segs {
			s.close()
		}
		return nil, err
	}
	l.mu.Lock()
	err = l.load(segs, names, o)
	l.mu.Unlock()
	if err != nil {
		for _, s := range l.segmentsOrNil() {
			s.close()
		}
		for _, f := range l.pending {
			f.Close()
		}
		return nil, err
	}
	return l, nil
}

// makeDir creates dir and any missing parents. It returns the parent of dir
// if it created dir: the entry there is made durable by the log's first
// sync (a new directory entry is durable only once its parent is synced).
// Directories it creates above that (a log dir that did not exist, as in
// tests; logmgr makes its dirs itself) are made durable at once.
func makeDir(fs vfs.FS, dir string) ([]string, error) {
	var created []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := fs.Stat(d); err == nil {
			break
		} else if !vfs.IsNotExist(err) {
			return nil, err
		}
		if filepath.Dir(d) == d {
			break
		}
		created = append(created, d)
	}
	if len(created) == 0 {
		return nil, nil
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for i := len(created) - 1; i >= 1; i-- {
		if err := fs.SyncDir(filepath.Dir(created[i])); err != nil {
			return nil, err
		}
	}
	return []string{filepath.Dir(created[0])}, nil
}

func (l *Log) segmentsOrNil() []*segment {
	if p := l.segs.Load(); p != nil {
		return *p
	}
	return nil
}

// cleanLeftovers finishes what a crash interrupted: temp files, .cleaned and
// .deleted files are removed; a .swap file (written completely before it was
// renamed to .swap) replaces the live segments it covers. It returns the
// directory's names as they are after.
func (l *Log) cleanLeftovers(names []string) ([]string, error) {
	var swaps []string
	changed := false
	for _, n := range names {
		p := l.dir + "/" + n
		switch {
		case strings.HasSuffix(n, ".tmp"), strings.HasSuffix(n, CleanedSuffix), strings.HasSuffix(n, DeletedSuffix):
			if err := l.fs.Remove(p); err != nil && !vfs.IsNotExist(err) {
				return nil, err
			}
			changed = true
		case strings.HasSuffix(n, LogSuffix+SwapSuffix):
			swaps = append(swaps, n)
		case strings.HasSuffix(n, TxnIndexSuffix+SwapSuffix):
			// Not rebuildable from the log alone: completeSwap installs it
			// with its .log.swap, or drops it if that is missing.
			if !slices.Contains(names, strings.TrimSuffix(n, TxnIndexSuffix+SwapSuffix)+LogSuffix+SwapSuffix) {
				if err := l.fs.Remove(p); err != nil && !vfs.IsNotExist(err) {
					return nil, err
				}
				changed = true
			}
		case strings.HasSuffix(n, SwapSuffix):
			// Index swap files are rebuilt from the log.
			if err := l.fs.Remove(p); err != nil && !vfs.IsNotExist(err) {
				return nil, err
			}
			changed = true
		}
	}
	for _, n := range swaps {
		if err := l.completeSwap(n); err != nil {
			return nil, err
		}
		changed = true
	}
	if !changed {
		return names, nil
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return nil, err
	}
	return l.fs.List(l.dir)
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
			if err := l.fs.Remove(l.dir + "/" + FileName(base) + TxnIndexSuffix + SwapSuffix); err != nil && !vfs.IsNotExist(err) {
				return err
			}
			return l.fs.Remove(swapPath)
		}
		l.logger.Warn("installing damaged swap file for recovery", "path", swapPath, "err", err)
	}
	// The swap's .txnindex: B.txnindex.swap if it has not been renamed yet.
	// Without one, a B.txnindex is the new one when B.log is gone (a
	// removed segment loses its .txnindex before its .log), the old one
	// while B.log is still there.
	txnSwap := slices.Contains(names, FileName(base)+TxnIndexSuffix+SwapSuffix)
	keepTxn := !txnSwap && !slices.Contains(names, FileName(base)+LogSuffix)
	for _, n := range names {
		off, ok := ParseFileName(n)
		if !ok || strings.HasSuffix(n, SwapSuffix) || !hasSuffixAny(n, segmentSuffixes()...) {
			continue
		}
		if n == FileName(base)+TxnIndexSuffix && keepTxn {
			continue
		}
		if off >= base && (off < next || off == base) {
			if err := l.fs.Remove(l.dir + "/" + n); err != nil && !vfs.IsNotExist(err) {
				return err
			}
		}
	}
	l.logger.Info("completing interrupted segment swap", "dir", l.dir, "base_offset", base, "next_offset", next)
	if txnSwap {
		p := l.dir + "/" + FileName(base) + TxnIndexSuffix
		if err := l.fs.Rename(p+SwapSuffix, p); err != nil {
			return err
		}
	}
	return l.fs.Rename(swapPath, l.dir+"/"+FileName(base)+LogSuffix)
}

// openSegments opens every .log file (the one file a segment keeps open)
// and reads the first and last entries of the sealed segments' index files.
// An index file missing or not a whole number of entries marks its segment
// for a rebuild. The last segment's index files are not read: Open rebuilds
// the active segment's entries from its batches. After an unclean stop the
// sealed segments that load rescans anyway are not read either.
func (l *Log) openSegments(names []string, o Options) ([]*segment, error) {
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
	slices.Sort(bases)
	cfg := l.config()
	var segs []*segment
	for i, base := range bases {
		s := l.newSegment(base, l.nowMs())
		segs = append(segs, s)
		var err error
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
		if i == len(bases)-1 || (!o.CleanShutdown && bases[i+1] > o.RecoveryPoint) {
			continue // rebuilt from its batches by load
		}
		if !have[FileName(base)+IndexSuffix] || !have[FileName(base)+TimeIndexSuffix] {
			s.rebuild = size > 0
			continue
		}
		maxBytes := int(cfg.SegmentIndexBytes)
		err = openIndexFile(&s.index.index, l.fs, s.path(IndexSuffix), base, offsetEntrySize, maxBytes)
		if err == nil {
			err = openIndexFile(&s.timeIndex.index, l.fs, s.path(TimeIndexSuffix), base, timeEntrySize, maxBytes)
		}
		if errors.Is(err, ErrCorruptSegment) || vfs.IsNotExist(err) {
			l.logger.Warn("rebuilding the indexes of a segment", "dir", l.dir, "segment", base, "err", err)
			initIndex(&s.index.index, l.fs, s.path(IndexSuffix), base, offsetEntrySize, maxBytes)
			initIndex(&s.timeIndex.index, l.fs, s.path(TimeIndexSuffix), base, timeEntrySize, maxBytes)
			s.rebuild = true
		} else if err != nil {
			return segs, err
		}
	}
	for i, s := range segs {
		if !have[FileName(s.baseOffset)+TxnIndexSuffix] {
			continue
		}
		limit := int64(math.MaxInt64)
		if i+1 < len(segs) {
			limit = segs[i+1].baseOffset
		}
		if err := s.txn.load(s.baseOffset, limit, l.logger.Warn); err != nil {
			return segs, err
		}
	}
	return segs, nil
}

// load recovers segments as needed and sets up offsets, producer state and
// the epoch cache. l.mu is held (nobody else can see the log yet).
//
// A sealed segment is trusted without a rescan below the recovery point, or
// after a clean shutdown, once its index files pass checkSealed; any other
// sealed segment is rescanned (every batch validated, the file cut at the
// first bad byte), and its index files rewritten. The last segment is always
// walked: validated after an unclean stop, its batch headers only after a
// clean one; its index is rebuilt in memory either way.
func (l *Log) load(segs []*segment, names []string, o Options) error {
	segs, durable, epochsChanged, err := l.loadSegments(segs, o)
	if err != nil {
		return err
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
	l.publish(segs)
	leo := max(act.nextOffset, act.baseOffset)
	logStart = min(logStart, leo)
	l.leo.Store(leo)
	l.logStart.Store(logStart)
	if err := l.epochs.truncateFromEnd(leo, false); err != nil {
		return err
	}
	if err := l.epochs.truncateFromStart(logStart, false); err != nil {
		return err
	}
	l.syncEpochs = epochsChanged
	// After an unclean stop a snapshot above the recovery point may describe
	// batches that did not reach the disk: rebuild from an older one.
	trusted := leo
	if !o.CleanShutdown {
		trusted = min(leo, max(o.RecoveryPoint, 0))
	}
	if err := l.loadProducerState(trusted, snapshotOffsets(names)); err != nil {
		return err
	}
	l.durable.Store(min(durable, leo))
	if l.durable.Load() < leo {
		// Segments above the recovery point may have been created since the
		// directory was last synced (Kafka flushes the directory with them).
		l.dirDirty = true
	}
	l.noteSyncStateLocked()
	hw := o.HighWatermark
	if hw < 0 {
		hw = logStart
	}
	l.setHWLocked(min(max(hw, logStart), leo))
	l.logger.Debug("loaded log", "dir", l.dir, "segments", len(segs), "log_start_offset", logStart,
		"log_end_offset", leo, "clean_shutdown", o.CleanShutdown)
	return nil
}

// loadSegments trusts, checks or rescans each segment (see load). It
// returns the segments left (a cut segment ends the log), the durable point
// (the recovery point after an unclean stop, below any cut; MaxInt64 after a
// clean one), and whether the epoch cache took entries from the batches.
func (l *Log) loadSegments(segs []*segment, o Options) ([]*segment, int64, bool, error) {
	recoverFrom := max(o.RecoveryPoint, 0)
	durable := int64(math.MaxInt64)
	if !o.CleanShutdown {
		durable = recoverFrom
	}
	epochsChanged := false
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		last := i == len(segs)-1
		limit := int64(math.MaxInt64)
		if !last {
			limit = segs[i+1].baseOffset
		}
		needScan := s.rebuild || (!o.CleanShutdown && (last || limit > recoverFrom))
		if !needScan && !last {
			if err := s.checkSealed(limit, int64(l.config().IndexIntervalBytes)); err != nil {
				l.logger.Warn("rebuilding the indexes of a segment that fails its check", "dir", l.dir,
					"segment", s.baseOffset, "err", err)
				needScan = true
			}
		}
		if !needScan && !last {
			if ts, off, ok := s.timeIndex.last(); ok {
				s.maxTimestamp, s.offsetOfMaxTimestamp = ts, off
			}
			continue
		}
		validate := needScan
		if !validate {
			// The last segment after a clean stop: its headers only. A
			// header that does not check out means a proper rescan.
			if _, err := l.scanSegment(s, limit, false, &epochsChanged); err == nil {
				continue
			} else if !errors.Is(err, ErrCorruptSegment) {
				return nil, 0, false, err
			} else {
				l.logger.Warn("rescanning the active segment", "dir", l.dir, "segment", s.baseOffset, "err", err)
			}
		}
		truncated, err := l.scanSegment(s, limit, true, &epochsChanged)
		if err != nil {
			return nil, 0, false, err
		}
		if truncated {
			// The cut must reach the disk before a recovery point above it.
			durable = min(durable, s.baseOffset)
		}
		if truncated && !last {
			l.logger.Warn("deleting segments after a truncated segment", "dir", l.dir,
				"segment", s.baseOffset, "deleted", len(segs)-i-1)
			if err := l.removeSegmentFiles(segs[i+1:]); err != nil {
				return nil, 0, false, err
			}
			segs = segs[:i+1]
			last = true
		}
		if !last {
			// A rebuilt sealed segment gets its index files (with the final
			// time index entry a roll writes, or a clean restart would not
			// know its largest timestamp), synced before the recovery point
			// passes it.
			idx, err := l.sealSegment(s)
			if err != nil {
				return nil, 0, false, err
			}
			l.pending = append(l.pending, idx...)
			l.unsynced = append(l.unsynced, s)
			l.dirDirty = true
		}
	}
	return segs, durable, epochsChanged, nil
}

// scanSegment walks a segment's batches from its start and rebuilds its
// indexes (in memory), next offset, timestamps and the epochs they carry.
// Each batch header is checked (length, offsets increasing, below limit, the
// next segment's base offset); with validate each batch is also read whole
// and checked (record.ValidateStored: CRC, records). The walk stops at the
// first bad batch: with validate the file is cut there and scanSegment
// reports that bytes were cut; without, it returns ErrCorruptSegment for
// the caller to rescan with validate. *epochsChanged is set if the epoch
// cache took a new entry.
func (l *Log) scanSegment(s *segment, limit int64, validate bool, epochsChanged *bool) (bool, error) {
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
	var buf []byte
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
		if h.BaseOffset < s.nextOffset || h.LastOffset()-s.baseOffset > 1<<31-1 || h.LastOffset() >= limit {
			bad = fmt.Errorf("batch offsets %d..%d do not follow %d or reach %d", h.BaseOffset, h.LastOffset(), s.nextOffset, limit)
			break
		}
		if validate {
			if cap(buf) < h.Size() {
				buf = make([]byte, max(h.Size(), 64<<10))
			}
			buf = buf[:h.Size()]
			if _, err := s.readAt(buf, pos); err != nil {
				return false, err
			}
			if _, err := record.ValidateStored(buf); err != nil {
				bad = err
				break
			}
		}
		if err := l.indexBatch(s, &h, pos); err != nil {
			return false, err
		}
		// Recovery only adds newer epochs (Kafka's LogSegment.recover); the
		// cache is cut at the recovered log end afterwards.
		if latest, ok := l.epochs.latest(); !ok || h.LeaderEpoch > latest.Epoch {
			if l.epochs.assign(h.LeaderEpoch, h.BaseOffset) {
				*epochsChanged = true
			}
		}
		s.nextOffset = h.NextOffset()
		pos += int64(h.Size())
	}
	if bad == nil {
		return false, nil
	}
	if !validate {
		return false, fmt.Errorf("%w: %s at position %d: %v", ErrCorruptSegment, s.path(LogSuffix), pos, bad)
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
//
// offs are the offsets of the snapshot files in the log's directory.
func (l *Log) loadProducerState(upTo int64, offs []int64) error {
	segs := l.segments()
	upTo = max(upTo, segs[0].baseOffset)
	nowMs, expMs := l.nowMs(), l.config().ProducerIDExpirationMs
	from := segs[0].baseOffset
	for i := len(offs) - 1; i >= 0; i-- {
		off := offs[i]
		if off > upTo {
			if err := l.fs.Remove(snapshotPath(l.dir, off)); err != nil && !vfs.IsNotExist(err) {
				return err
			}
			// Durably gone before the recovery point can pass it again.
			l.dirDirty = true
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
	created := false
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].baseOffset <= from {
			continue
		}
		if s.baseOffset > from && len(l.producers.m) > 0 {
			if err := l.writePendingLocked(snapshotPath(l.dir, s.baseOffset), l.producers.encodeSnapshot()); err != nil {
				return err
			}
		}
		rp := replayer{l: l, s: s, next: from}
		// The replay writes the aborted-transaction index of what it
		// replays again: entries from its start on may describe batches a
		// crash or a truncation took away, or be missing.
		if err := s.txn.truncateTo(from); err != nil {
			return err
		}
		_, pos := s.index.lookup(from)
		err := s.scanFrom(pos, s.size.Load(), rp.batch)
		if errors.Is(err, ErrCorruptSegment) && pos > 0 && rp.err == nil {
			// A trusted index entry that does not point at a batch: scan the
			// segment from its start instead.
			err = s.scanFrom(0, s.size.Load(), rp.batch)
		}
		if rp.err != nil {
			return rp.err
		}
		created = created || rp.created
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
	l.queueTxnIndexesLocked(created)
	l.producers.removeExpired(nowMs, expMs)
	return nil
}

// replayer applies batch headers to the producer state while loading,
// reading a control batch whole for its marker, and writes the aborts it
// completes to the segment's transaction index.
type replayer struct {
	l       *Log
	s       *segment
	next    int64 // batches ending below it are applied already
	err     error
	created bool
	buf     []byte
}

func (rp *replayer) batch(bp batchPos) bool {
	h := bp.hdr
	if h.LastOffset() < rp.next {
		return true
	}
	rp.next = h.NextOffset()
	var m *record.Marker
	if h.Control() {
		if cap(rp.buf) < h.Size() {
			rp.buf = make([]byte, h.Size())
		}
		rp.buf = rp.buf[:h.Size()]
		if _, err := rp.s.readAt(rp.buf, bp.pos); err != nil {
			rp.err = fmt.Errorf("read %s at %d: %w", rp.s.path(LogSuffix), bp.pos, err)
			return false
		}
		mk, err := record.ParseControl(rp.buf, 1<<20)
		if err != nil {
			rp.l.logger.Warn("unreadable control batch while loading producer state", "dir", rp.l.dir,
				"offset", h.BaseOffset, "err", err)
		} else {
			m = &mk
		}
	}
	c := rp.l.producers.update(&h, m, -1)
	if c == nil || !c.Aborted {
		return true
	}
	a := AbortedTxn{ProducerID: c.ProducerID, FirstOffset: c.FirstOffset, LastOffset: c.LastOffset,
		LastStableOffset: rp.l.producers.lastStableOffsetAfter(*c)}
	created, err := rp.s.txn.append(a)
	rp.created = rp.created || created
	if err != nil {
		rp.err = err
		return false
	}
	return true
}

// queueTxnIndexesLocked hands the transaction indexes a replay rewrote to
// the next sync (Open fsyncs nothing itself; see doc.go, Durability), and
// the directory when it created one. l.mu is held.
func (l *Log) queueTxnIndexesLocked(created bool) {
	for _, s := range l.segments() {
		if s.txn.isDirty() && !slices.Contains(l.txnDirty, s) {
			l.txnDirty = append(l.txnDirty, s)
		}
	}
	l.dirDirty = l.dirDirty || created
	l.noteSyncStateLocked()
}
