package vfs

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
)

// CrashClone returns the filesystem a machine would find after losing power
// now: only durable entries and durable contents, as the package
// documentation describes. The receiver is unchanged.
func (fs *MemFS) CrashClone() *MemFS { return fs.crashClone(nil) }

// CrashCloneTorn is CrashClone for a disk that may have persisted part of
// what was appended since the last Sync: each file whose only changes since
// its last Sync are appends keeps its synced contents plus a prefix, of a
// length drawn uniformly from rng, of the appended bytes. Files are visited
// in name order, so the same rng seed gives the same clone.
func (fs *MemFS) CrashCloneTorn(rng *rand.Rand) *MemFS { return fs.crashClone(rng) }

func (fs *MemFS) crashClone(rng *rand.Rand) *MemFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	c := &cloner{
		rng:   rng,
		dirs:  map[*memNode]bool{fs.mu.root: true},
		files: make(map[*memNode]*memNode),
	}
	clone := &MemFS{}
	clone.mu.now = fs.mu.now
	clone.mu.capacity, clone.mu.limited = fs.mu.capacity, fs.mu.limited
	clone.mu.root = c.dir(fs.mu.root)
	return clone
}

// cloner copies the durable tree. A file reachable under several durable
// names stays one file (hard links); a directory is copied once.
type cloner struct {
	rng   *rand.Rand
	dirs  map[*memNode]bool
	files map[*memNode]*memNode
}

func (c *cloner) dir(src *memNode) *memNode {
	dst := newDirNode(src.mode, src.modTime)
	for _, name := range slices.Sorted(maps.Keys(src.durable)) {
		child := src.durable[name]
		var cc *memNode
		if child.isDir {
			if c.dirs[child] {
				continue
			}
			c.dirs[child] = true
			cc = c.dir(child)
		} else {
			cc = c.file(child)
		}
		dst.children[name] = cc
		dst.durable[name] = cc
	}
	return dst
}

func (c *cloner) file(src *memNode) *memNode {
	if dst, ok := c.files[src]; ok {
		return dst
	}
	contents := src.synced
	if c.rng != nil && !src.rewrote && len(src.data) > len(src.synced) {
		keep := c.rng.IntN(len(src.data) - len(src.synced) + 1)
		// The synced bytes, not data's, below len(synced): they differ
		// where a failed Sync lost writes.
		contents = append(bytes.Clone(src.synced), src.data[len(src.synced):len(src.synced)+keep]...)
	}
	// data and synced must not share memory: writes to data below the
	// synced size would otherwise change the durable contents.
	dst := &memNode{
		mode:    src.mode,
		modTime: src.modTime,
		data:    bytes.Clone(contents),
		synced:  bytes.Clone(contents),
		alloc:   min(src.alloc, int64(len(contents))),
	}
	c.files[src] = dst
	return dst
}
