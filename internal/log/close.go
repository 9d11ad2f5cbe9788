package log

import (
	"path/filepath"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// Close syncs what is not yet durable, writes the active segment's index
// files (if it has offset index entries and the files are not current) and
// a producer-state snapshot at the log end offset (if the log has sealed
// segments), and closes every file. After a clean Close the log reopens
// without a rescan.
//
// A log whose records were all synced (acks=all traffic keeps them so)
// closes without an fsync: the files written here need none, since a start
// rebuilds the active segment's index entries from its batches and skips a
// snapshot it cannot read (see doc.go, Durability). A new log holding no
// record leaves its directory entries and metadata unsynced too: nothing
// durable depends on them.
//
// Appends racing with Close either land before it (and are synced) or fail
// with ErrClosed. A failed log (or one whose final sync fails) writes
// nothing: its files are closed as they are, and Close returns the failure.
func (l *Log) Close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	leo := l.leo.Load()
	err := l.domain.Err()
	if err == nil {
		err = l.closeSyncLocked(leo)
	}
	if err != nil {
		for _, f := range l.pending {
			f.Close()
		}
		l.pending = nil
		for _, s := range l.segments() {
			s.close()
		}
		return err
	}
	l.durable.Store(leo)
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	// The active segment's index files, for Kafka's tools (a start does
	// not read them: it rebuilds the entries from the batches), unless they
	// are current, or the segment is too small to have an offset index
	// entry (one below index.interval.bytes: many small partitions stop
	// without creating two files each).
	if act := l.active(); act.index.entries() > 0 {
		idx, ierr := l.sealSegmentOrKeep(act, true)
		keep(ierr)
		for _, f := range idx {
			keep(f.Close())
		}
	} else {
		keep(act.trimLog())
	}
	// The snapshot spares the next start a replay of the sealed segments'
	// batches (a start walks the active segment anyway). One already at
	// the log end offset (a roll's, or an earlier Close's) holds the same
	// state and may be the durable one: it stays.
	if segs := l.segments(); len(segs) > 1 {
		if _, serr := l.fs.Stat(snapshotPath(l.dir, leo)); vfs.IsNotExist(serr) {
			if f, serr := vfs.WriteFileUnsynced(l.fs, snapshotPath(l.dir, leo), l.producers.encodeSnapshot()); serr != nil {
				keep(serr)
			} else {
				keep(f.Close())
			}
		}
	}
	for _, s := range l.segments() {
		keep(s.close())
	}
	l.dirDirty = false
	l.noteSyncStateLocked()
	return l.ioErr(first)
}

// Delete closes the log and removes its directory (topic deletion) as
// Kafka does: the directory is first renamed, durably, to deleteName in the
// same parent (Kafka's <topic>-<partition>.<id>-delete; see
// topicpart.DeleteDirName), so that a removal cut off by a crash is
// recognised (logmgr removes such directories at start) instead of being
// loaded as a partly deleted log.
func (l *Log) Delete(deleteName string) error {
	l.syncMu.Lock() // no sync is under way on the files closed here
	l.mu.Lock()
	l.closed = true
	for _, s := range l.segments() {
		s.deleted.Store(true)
		s.close()
	}
	for _, f := range l.pending {
		f.Close()
	}
	l.pending = nil
	l.mu.Unlock()
	l.syncMu.Unlock()
	parent := filepath.Dir(l.dir)
	to := filepath.Join(parent, deleteName)
	if err := l.fs.Rename(l.dir, to); err != nil {
		if vfs.IsNotExist(err) {
			return nil
		}
		return err
	}
	if err := l.fs.SyncDir(parent); err != nil {
		return err
	}
	return l.fs.RemoveAll(to)
}

// closeSyncLocked is Close's sync: what is not yet durable, if any record
// (or what its recovery relies on) waits for it. Otherwise nothing is
// written: a new log's directory entries and metadata were written at its
// creation, and epoch entries no sync wrote describe no record (a leader
// epoch assigned at the log end offset, entries a load dropped), which the
// next load computes again from the file as it is. A preallocated active
// file is trimmed first, and the sync makes its size durable. syncMu and
// l.mu are held.
func (l *Log) closeSyncLocked(leo int64) error {
	act := l.active()
	trimmed := act.preallocated
	if err := act.trimLog(); err != nil {
		return l.fail(err)
	}
	plan := l.takeSyncLocked(leo)
	plan.syncActive = plan.syncActive || trimmed
	if !plan.protects() {
		for _, f := range plan.pending {
			f.Close()
		}
		return nil
	}
	if err := l.syncFiles(&plan); err != nil {
		return l.fail(err)
	}
	return nil
}
