package log

import (
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// This file is the log's durability: the group-committed sync, what a sync
// makes durable (see doc.go, Durability), and the flush schedule.

// RecoveryPoint is the offset below which everything is fsynced: the log's
// bytes, and the indexes of every segment wholly below it. A segment rolled
// since the last sync holds it back to that segment's base offset, so that
// recovery from a checkpoint of it rescans the segment.
func (l *Log) RecoveryPoint() int64 { return min(l.durable.Load(), l.unsyncedFrom.Load()) }

// DurableOffset is the offset below which every record's bytes are fsynced
// (a rolled segment's index files may not be yet: see RecoveryPoint). What
// survives a power loss, which recovery rebuilds indexes for.
func (l *Log) DurableOffset() int64 { return l.durable.Load() }

// noteSyncStateLocked publishes what is waiting for a sync. l.mu is held.
// A dirty epoch cache is not counted: its new entries describe offsets at or
// above what the last sync covered, and the next sync of a record writes it.
func (l *Log) noteSyncStateLocked() {
	from := int64(math.MaxInt64)
	for _, s := range l.unsynced {
		from = min(from, s.baseOffset)
	}
	l.unsyncedFrom.Store(from)
	l.urgentSync.Store(len(l.unsynced) > 0 || len(l.pending) > 0 || len(l.txnDirty) > 0 || l.syncEpochs)
	l.pendingSync.Store(l.urgentSync.Load() || l.dirDirty || len(l.parentDirs) > 0 || l.metaPending != nil || l.metaSync)
}

// NeedsSync reports whether a sync has something to make durable that a
// record or its recovery relies on now: records above the recovery point,
// or files Open or a roll wrote (index files, snapshots, epochs). After
// loading its logs logmgr syncs those that need it, all at once, before it
// checkpoints their recovery points. (Directory entries and metadata a log
// holding no unsynced record has not yet made durable wait for its next
// record's sync.)
func (l *Log) NeedsSync() bool {
	return l.durable.Load() < l.leo.Load() || l.urgentSync.Load()
}

// writePendingLocked replaces path with data without an fsync; the next sync
// makes it durable (see Log.pending).
func (l *Log) writePendingLocked(path string, data []byte) error {
	f, err := vfs.WriteFileUnsynced(l.fs, path, data)
	if err != nil {
		return err
	}
	l.pending = append(l.pending, f)
	l.dirDirty = true
	l.noteSyncStateLocked()
	return nil
}

// SyncTo makes the log durable at least up to offset upTo (group commit):
// concurrent callers share one fdatasync of the active segment, and rolled
// segments and new directory entries are synced first. One caller at a time
// leads a sync of everything appended so far; the others wait for it to end,
// all woken at once, and return if it covered them or elect the next leader
// if not. Once the log has failed (see FailureDomain) every call returns the
// failure, even one whose offsets an earlier sync covered: nothing is
// acknowledged after a failure, however many appends are waiting. Offsets a
// truncation removed meanwhile are ErrTruncated.
func (l *Log) SyncTo(upTo int64) error {
	covered := func() bool { return l.durable.Load() >= upTo && !l.pendingSync.Load() }
	for !covered() || l.domain.Err() != nil {
		if err := l.domain.Err(); err != nil {
			return err
		}
		l.group.Lock()
		for l.group.busy && !covered() {
			l.group.cond.Wait()
		}
		if covered() {
			l.group.Unlock()
			continue // checks for a failure first
		}
		l.group.busy = true
		l.group.Unlock()

		err := l.syncOnce()

		l.group.Lock()
		l.group.busy = false
		l.group.cond.Broadcast()
		l.group.Unlock()
		if err != nil {
			return err
		}
		if l.durable.Load() < upTo && l.leo.Load() < upTo {
			// A sync of the whole log cannot reach upTo: without this
			// a caller would sync forever.
			return fmt.Errorf("%w: log end %d, asked %d", ErrTruncated, l.leo.Load(), upTo)
		}
	}
	return nil
}

// syncOnce syncs everything appended so far. A failed fsync fails the log:
// its files are never synced again, so the durable point stays where the
// last good fsync left it. (Retrying would be wrong: after a writeback
// error Linux marks the pages it could not write clean, and the next fsync
// succeeds without writing them.)
func (l *Log) syncOnce() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	if err := l.writableLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	target := l.leo.Load()
	plan := l.takeSyncLocked(target)
	l.unflushedRecords = 0
	l.mu.Unlock()

	if err := l.syncFiles(&plan); err != nil {
		return l.fail(err)
	}
	if err := l.domain.Err(); err != nil {
		// Another file of the dir failed meanwhile: acknowledge nothing.
		return err
	}
	if target > l.durable.Load() {
		l.durable.Store(target)
	}
	l.mu.Lock()
	l.lastFlush = l.nowMs()
	l.mu.Unlock()
	return nil
}

// syncPlan is what one sync makes durable, taken from the log under l.mu.
type syncPlan struct {
	rolled     []*segment // sealed segments whose .log is not yet synced
	pending    []vfs.File // written files to sync and close
	txn        []*segment // segments whose .txnindex a load rewrote
	active     *segment
	syncActive bool     // the active segment has bytes above the durable point
	dir        bool     // the partition directory's entries changed
	parents    []string // directories whose entries Open changed (a new log)
	meta       []byte   // partition.metadata to rewrite durably
	metaSync   bool     // partition.metadata to fsync as it is
}

// protects reports whether the plan makes a record durable (or index files
// and snapshots a record's recovery relies on), as opposed to only a new,
// empty log's directory entries and metadata.
func (p *syncPlan) protects() bool {
	return p.syncActive || len(p.rolled) > 0 || len(p.pending) > 0 || len(p.txn) > 0
}

// takeSyncLocked moves what waits for a sync into a plan. l.mu is held.
func (l *Log) takeSyncLocked(target int64) syncPlan {
	p := syncPlan{rolled: l.unsynced, pending: l.pending, active: l.active(), syncActive: l.durable.Load() < target,
		dir: l.dirDirty, parents: l.parentDirs, meta: l.metaPending, metaSync: l.metaSync, txn: l.txnDirty}
	p.syncActive = p.syncActive || l.syncEpochs
	l.txnDirty = nil
	l.unsynced, l.pending, l.dirDirty, l.parentDirs, l.metaPending, l.syncEpochs = nil, nil, false, nil, nil, false
	l.metaSync = false
	l.noteSyncStateLocked()
	return p
}

// syncFiles runs a plan: the rolled segments' logs, the pending files and
// the active segment's log are fsynced, the epoch checkpoint and
// partition.metadata rewritten durably if they changed, then the directory
// is synced, then the parent directories of a new log. A segment that
// retention or truncation removed meanwhile needs no sync (its file may
// already be closed). The pending files are closed, synced or not.
func (l *Log) syncFiles(p *syncPlan) error {
	defer func() {
		for _, f := range p.pending {
			f.Close()
		}
	}()
	for _, s := range p.rolled {
		if err := s.file.Sync(); err != nil && !s.deleted.Load() {
			return fmt.Errorf("sync %s: %w", s.path(LogSuffix), err)
		}
	}
	// Aborted-transaction index entries are durable with the markers they
	// name: recovery trusts what lies below the recovery point.
	for _, group := range [3][]*segment{p.rolled, p.txn, {p.active}} {
		for _, s := range group {
			if err := s.txn.sync(); err != nil && !s.deleted.Load() {
				return err
			}
		}
	}
	for _, f := range p.pending {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("sync a file of %s: %w", l.dir, err)
		}
	}
	if p.syncActive {
		if err := p.active.file.Sync(); err != nil && !p.active.deleted.Load() {
			return fmt.Errorf("sync %s: %w", p.active.path(LogSuffix), err)
		}
	}
	wrote, err := l.epochs.writeIfDirty(false)
	if err != nil {
		return fmt.Errorf("write %s: %w", l.epochs.path, err)
	}
	p.dir = p.dir || wrote
	if p.meta != nil {
		if err := vfs.WriteFileSynced(l.fs, filepath.Join(l.dir, PartitionMetadataFile), p.meta); err != nil {
			return fmt.Errorf("write %s: %w", PartitionMetadataFile, err)
		}
		p.dir = true
	} else if p.metaSync {
		if err := l.syncFile(filepath.Join(l.dir, PartitionMetadataFile)); err != nil {
			return err
		}
	}
	if p.dir {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fmt.Errorf("sync dir %s: %w", l.dir, err)
		}
	}
	for _, d := range p.parents {
		if err := l.fs.SyncDir(d); err != nil {
			return fmt.Errorf("sync dir %s: %w", d, err)
		}
	}
	return nil
}

// syncFile fsyncs the file at path if there is one.
func (l *Log) syncFile(path string) error {
	f, err := l.fs.Open(path)
	if vfs.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}

// Flush syncs everything appended so far.
func (l *Log) Flush() error { return l.SyncTo(l.leo.Load()) }

// FlushDue reports whether flush.messages or flush.ms asks for a flush now.
func (l *Log) FlushDue(now time.Time) bool {
	cfg := l.config()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.durable.Load() >= l.leo.Load() || l.domain.Err() != nil {
		return false
	}
	return l.unflushedRecords >= cfg.FlushMessages || now.UnixMilli()-l.lastFlush >= cfg.FlushMs
}
