package log

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// LeaderEpochCheckpointFile is the per-partition file holding the epoch cache.
const LeaderEpochCheckpointFile = "leader-epoch-checkpoint"

// EpochEntry says leader epoch Epoch began at StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is Kafka's LeaderEpochFileCache: the start offset of every
// leader epoch the log holds records of, in increasing epoch and offset
// order, persisted as leader-epoch-checkpoint (version 0). A new epoch
// (assign) is written by the log's next sync, before the recovery point can
// pass its start offset (dirty until then); truncations rewrite the file at
// once. writeMu serialises writes of the file and is taken before mu; mu is
// not held while the file is written, so an append that assigns an epoch
// never waits for an fsync.
type epochCache struct {
	writeMu sync.Mutex
	mu      sync.RWMutex
	fs      vfs.FS
	path    string
	entries []EpochEntry
	dirty   bool   // entries changed since the file was last written
	gen     uint64 // counts changes, so a write knows whether it saw the last
}

func loadEpochCache(fs vfs.FS, dir string) (*epochCache, error) {
	c := &epochCache{fs: fs, path: filepath.Join(dir, LeaderEpochCheckpointFile)}
	lines, err := vfs.ReadCheckpoint(fs, c.path, 0)
	if vfs.IsNotExist(err) {
		return c, nil
	}
	if errors.Is(err, vfs.ErrCorruptCheckpoint) {
		return nil, fmt.Errorf("%w: %w", ErrCorruptSegment, err)
	}
	if err != nil {
		return nil, err
	}
	for _, f := range lines {
		if len(f) != 2 {
			return nil, fmt.Errorf("%w: %s: bad line %v", ErrCorruptSegment, c.path, f)
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: %s: bad line %v", ErrCorruptSegment, c.path, f)
		}
		c.entries = append(c.entries, EpochEntry{int32(e), o})
	}
	return c, nil
}

func (c *epochCache) encodeLocked() []byte {
	lines := make([]string, len(c.entries))
	for i, e := range c.entries {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	return vfs.EncodeCheckpoint(0, lines)
}

// changedLocked notes a change of the entries. c.mu is held.
func (c *epochCache) changedLocked() {
	c.dirty = true
	c.gen++
}

// writeIfDirty rewrites the file durably if entries changed since it was
// last written (temp file, fsync, rename; with syncDir the directory too),
// and reports whether it did.
func (c *epochCache) writeIfDirty(syncDir bool) (bool, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.RLock()
	if !c.dirty {
		c.mu.RUnlock()
		return false, nil
	}
	data, gen := c.encodeLocked(), c.gen
	c.mu.RUnlock()
	if err := vfs.WriteFileSynced(c.fs, c.path, data); err != nil {
		return false, err
	}
	if syncDir {
		if err := c.fs.SyncDir(filepath.Dir(c.path)); err != nil {
			return false, err
		}
	}
	c.mu.Lock()
	if c.gen == gen {
		c.dirty = false
	}
	c.mu.Unlock()
	return true, nil
}

// settle ends a truncation: with persist the file is rewritten durably at
// once; without, the cache stays dirty for the next sync (the load of a log
// drops entries no record of which is left, which a crash before the next
// sync only makes it drop again).
func (c *epochCache) settle(changed, persist bool) error {
	if !changed || !persist {
		return nil
	}
	_, err := c.writeIfDirty(true)
	return err
}

// assign records that epoch starts at offset (Kafka's
// LeaderEpochFileCache.assign): nothing changes unless epoch differs from
// the latest epoch or offset lies below its start; otherwise every tail
// entry whose epoch is not below epoch, or whose start offset is not below
// offset, is dropped first, so both columns stay strictly increasing (a
// follower's append replaces an epoch it began as leader but never wrote,
// and an epoch the new leader never saw). It reports whether the cache
// changed; the change is written by the log's next sync (the cache is
// dirty until then).
func (c *epochCache) assign(epoch int32, offset int64) bool {
	if epoch < 0 || offset < 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.entries); n > 0 {
		last := c.entries[n-1]
		if epoch == last.Epoch && offset >= last.StartOffset {
			return false
		}
		for len(c.entries) > 0 {
			e := c.entries[len(c.entries)-1]
			if e.Epoch < epoch && e.StartOffset < offset {
				break
			}
			c.entries = c.entries[:len(c.entries)-1]
		}
	}
	c.entries = append(c.entries, EpochEntry{epoch, offset})
	c.changedLocked()
	return true
}

// truncateFromEnd removes epochs starting at or after endOffset; persist
// as for settle.
func (c *epochCache) truncateFromEnd(endOffset int64, persist bool) error {
	c.mu.Lock()
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= endOffset {
		n--
	}
	changed := n != len(c.entries)
	if changed {
		c.entries = c.entries[:n]
		c.changedLocked()
	}
	c.mu.Unlock()
	return c.settle(changed, persist)
}

// truncateFromStart drops epochs wholly below startOffset and moves the first
// remaining epoch's start up to it; persist as for settle.
func (c *epochCache) truncateFromStart(startOffset int64, persist bool) error {
	c.mu.Lock()
	i := 0
	for i+1 < len(c.entries) && c.entries[i+1].StartOffset <= startOffset {
		i++
	}
	changed := i > 0
	c.entries = c.entries[i:]
	if len(c.entries) > 0 && c.entries[0].StartOffset < startOffset {
		c.entries[0].StartOffset = startOffset
		changed = true
	}
	if changed {
		c.changedLocked()
	}
	c.mu.Unlock()
	return c.settle(changed, persist)
}

func (c *epochCache) latest() (EpochEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.entries) == 0 {
		return EpochEntry{-1, -1}, false
	}
	return c.entries[len(c.entries)-1], true
}

// endOffsetFor answers OffsetForLeaderEpoch as Kafka's LeaderEpochFileCache
// does: for the latest epoch, the log end offset; otherwise the largest epoch
// <= epoch and the start offset of the next higher epoch; (epoch, first start)
// when epoch is below every held epoch; (-1, -1) when it is above them all or
// the cache is empty.
func (c *epochCache) endOffsetFor(epoch int32, leo int64) (int32, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := len(c.entries)
	if epoch < 0 || n == 0 {
		return -1, -1
	}
	if epoch == c.entries[n-1].Epoch {
		return epoch, leo
	}
	hi := sort.Search(n, func(i int) bool { return c.entries[i].Epoch > epoch })
	if hi == n {
		return -1, -1
	}
	if hi == 0 {
		return epoch, c.entries[0].StartOffset
	}
	return c.entries[hi-1].Epoch, c.entries[hi].StartOffset
}

func (c *epochCache) snapshot() []EpochEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]EpochEntry(nil), c.entries...)
}
