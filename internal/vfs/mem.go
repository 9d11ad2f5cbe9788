package vfs

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is an in-memory FS that knows which of its state is durable; see the
// package documentation for the exact model. Paths are resolved from one
// root: "a/b", "/a/b" and "/a/./b" name the same file.
type MemFS struct {
	mu struct {
		sync.Mutex
		root *memNode
		now  func() time.Time
		// capacity is the volume size DiskUsage reports; writes past it
		// fail with ENOSPC once SetCapacity has set it (limited).
		capacity int64
		limited  bool
	}
}

var _ FS = (*MemFS)(nil)

// memNode is an inode: a file or a directory. Names live in the parent's
// entry maps, so one node may be reachable under several names (after a
// crash undoes half of a cross-directory rename).
type memNode struct {
	isDir   bool
	mode    os.FileMode
	modTime time.Time

	// Files. Invariant: if !rewrote, synced agrees with data below
	// len(synced), except on ranges a failed Sync lost (loseWriteback).
	data   []byte
	synced []byte
	// rewrote records that, since the last Sync, a byte below len(synced)
	// was written or the file was truncated below len(synced): the change
	// is not a pure append, so a crash cannot tear it into a prefix.
	rewrote bool
	// alloc is how many bytes of the file have blocks: the end of the
	// furthest write, cut by truncation. Growing a file with Truncate
	// leaves a hole, as on Linux filesystems, and uses no space.
	alloc int64

	// locked: a Lock on this file is held. Locks are not durable: a
	// crash clone's nodes start unlocked.
	locked bool

	// Directories.
	children map[string]*memNode // live entries
	durable  map[string]*memNode // entries as of the last SyncDir
}

// NewMem returns an empty MemFS whose modification times come from the wall
// clock (see SetNow).
func NewMem() *MemFS {
	fs := &MemFS{}
	fs.mu.now = time.Now
	fs.mu.capacity = defaultMemCapacity
	fs.mu.root = newDirNode(os.ModeDir|0o755, fs.mu.now())
	return fs
}

// SetNow sets the clock used for modification times, e.g. a clock.Fake's
// Now method.
func (fs *MemFS) SetNow(now func() time.Time) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.mu.now = now
}

func newDirNode(mode os.FileMode, now time.Time) *memNode {
	return &memNode{
		isDir:    true,
		mode:     mode,
		modTime:  now,
		children: make(map[string]*memNode),
		durable:  make(map[string]*memNode),
	}
}

// splitPath turns name into its components below the root; the root itself
// has none.
func splitPath(name string) ([]string, error) {
	if name == "" {
		return nil, syscall.ENOENT
	}
	clean := path.Clean("/" + filepath.ToSlash(name))
	if clean == "/" {
		return nil, nil
	}
	return strings.Split(clean[1:], "/"), nil
}

// walkLocked returns the node at comps.
func (fs *MemFS) walkLocked(comps []string) (*memNode, error) {
	n := fs.mu.root
	for _, c := range comps {
		if !n.isDir {
			return nil, syscall.ENOTDIR
		}
		child, ok := n.children[c]
		if !ok {
			return nil, syscall.ENOENT
		}
		n = child
	}
	return n, nil
}

// lookupLocked resolves name to its node.
func (fs *MemFS) lookupLocked(name string) (*memNode, error) {
	comps, err := splitPath(name)
	if err != nil {
		return nil, err
	}
	return fs.walkLocked(comps)
}

// parentLocked resolves the directory that holds name's entry and the
// entry's name. It fails with EBUSY for the root, which has no entry.
func (fs *MemFS) parentLocked(name string) (*memNode, string, error) {
	comps, err := splitPath(name)
	if err != nil {
		return nil, "", err
	}
	if len(comps) == 0 {
		return nil, "", syscall.EBUSY
	}
	dir, err := fs.walkLocked(comps[:len(comps)-1])
	if err != nil {
		return nil, "", err
	}
	if !dir.isDir {
		return nil, "", syscall.ENOTDIR
	}
	return dir, comps[len(comps)-1], nil
}

// Create implements FS.
func (fs *MemFS) Create(name string) (File, error) {
	return fs.openWritable(name, true)
}

// OpenReadWrite implements FS.
func (fs *MemFS) OpenReadWrite(name string) (File, error) {
	return fs.openWritable(name, false)
}

// openWritable opens name for reading and writing, creating it if needed,
// positioned at its end.
func (fs *MemFS) openWritable(name string, truncate bool) (File, error) {
	const op = "open"
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir, base, err := fs.parentLocked(name)
	if err == syscall.EBUSY {
		err = syscall.EISDIR
	}
	if err != nil {
		return nil, &os.PathError{Op: op, Path: name, Err: err}
	}
	n, ok := dir.children[base]
	switch {
	case ok && n.isDir:
		return nil, &os.PathError{Op: op, Path: name, Err: syscall.EISDIR}
	case ok && truncate:
		fs.truncateLocked(n, 0)
	case !ok:
		n = &memNode{mode: 0o644, modTime: fs.mu.now()}
		dir.children[base] = n
		dir.modTime = n.modTime
	}
	return &memFile{fs: fs, n: n, name: name, pos: int64(len(n.data)), writable: true}, nil
}

// Lock implements FS: the lock belongs to the file (the node), so it follows
// a rename, and only one holder at a time may have it.
func (fs *MemFS) Lock(name string) (io.Closer, error) {
	f, err := fs.openWritable(name, false)
	if err != nil {
		return nil, err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := f.(*memFile).n
	if n.locked {
		return nil, &os.PathError{Op: "lock", Path: name, Err: ErrLocked}
	}
	n.locked = true
	return &memLock{fs: fs, n: n, name: name}, nil
}

// memLock is a held MemFS lock.
type memLock struct {
	fs       *MemFS
	n        *memNode
	name     string
	released bool // guarded by fs.mu
}

func (l *memLock) Close() error {
	l.fs.mu.Lock()
	defer l.fs.mu.Unlock()
	if l.released {
		return &os.PathError{Op: "unlock", Path: l.name, Err: os.ErrClosed}
	}
	l.released, l.n.locked = true, false
	return nil
}

// Open implements FS. Directories may be opened, e.g. to Sync them.
func (fs *MemFS) Open(name string) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.lookupLocked(name)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return &memFile{fs: fs, n: n, name: name}, nil
}

// Remove implements FS.
func (fs *MemFS) Remove(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir, base, err := fs.parentLocked(name)
	if err != nil {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	n, ok := dir.children[base]
	if !ok {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.ENOENT}
	}
	if n.isDir && len(n.children) > 0 {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
	}
	delete(dir.children, base)
	dir.modTime = fs.mu.now()
	return nil
}

// RemoveAll implements FS. Only the entry in the parent is removed: nothing
// below it is reachable any more, and a crash before the parent is synced
// brings the whole tree back as it was durably.
func (fs *MemFS) RemoveAll(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir, base, err := fs.parentLocked(name)
	if err == syscall.ENOENT {
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "unlinkat", Path: name, Err: err}
	}
	if _, ok := dir.children[base]; ok {
		delete(dir.children, base)
		dir.modTime = fs.mu.now()
	}
	return nil
}

// Rename implements FS, with os.Rename's rules: an existing file at newname
// is replaced, an existing directory is not (EEXIST).
func (fs *MemFS) Rename(oldname, newname string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fail := func(err error) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	odir, obase, err := fs.parentLocked(oldname)
	if err != nil {
		return fail(err)
	}
	n, ok := odir.children[obase]
	if !ok {
		return fail(syscall.ENOENT)
	}
	ndir, nbase, err := fs.parentLocked(newname)
	if err != nil {
		return fail(err)
	}
	target, exists := ndir.children[nbase]
	switch {
	case exists && target == n:
		return nil
	case exists && target.isDir:
		return fail(syscall.EEXIST)
	case exists && n.isDir:
		return fail(syscall.ENOTDIR)
	}
	if n.isDir && isBelow(ndir, n) {
		return fail(syscall.EINVAL)
	}
	delete(odir.children, obase)
	ndir.children[nbase] = n
	now := fs.mu.now()
	odir.modTime, ndir.modTime = now, now
	return nil
}

// isBelow reports whether dir is d or lies in the live tree under d.
func isBelow(dir, d *memNode) bool {
	if dir == d {
		return true
	}
	for _, c := range d.children {
		if c.isDir && isBelow(dir, c) {
			return true
		}
	}
	return false
}

// MkdirAll implements FS.
func (fs *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	comps, err := splitPath(dir)
	if err != nil {
		return &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	n := fs.mu.root
	for _, c := range comps {
		child, ok := n.children[c]
		if !ok {
			child = newDirNode(os.ModeDir|perm.Perm(), fs.mu.now())
			n.children[c] = child
			n.modTime = child.modTime
		}
		if !child.isDir {
			return &os.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		n = child
	}
	return nil
}

// List implements FS.
func (fs *MemFS) List(dir string) ([]string, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.lookupLocked(dir)
	if err == nil && !n.isDir {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	names := make([]string, 0, len(n.children))
	names = slices.AppendSeq(names, maps.Keys(n.children))
	slices.Sort(names)
	return names, nil
}

// Stat implements FS.
func (fs *MemFS) Stat(name string) (os.FileInfo, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.lookupLocked(name)
	if err != nil {
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	base := "/"
	if comps, _ := splitPath(name); len(comps) > 0 {
		base = comps[len(comps)-1]
	}
	return n.info(base), nil
}

// defaultMemCapacity is the volume size a new MemFS reports: 1 TiB.
const defaultMemCapacity = 1 << 40

// SetCapacity sets the volume size DiskUsage reports and makes it a limit:
// from now on a write that needs more blocks than are left writes what fits
// and fails with ENOSPC, as a full disk does.
func (fs *MemFS) SetCapacity(bytes int64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.mu.capacity = bytes
	fs.mu.limited = true
}

// DiskUsage implements FS for the one volume a MemFS is: its capacity, less
// the allocated bytes of every file reachable from the root, is usable.
func (fs *MemFS) DiskUsage(path string) (Usage, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if _, err := fs.lookupLocked(path); err != nil {
		return Usage{}, &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	return Usage{Total: fs.mu.capacity, Usable: max(fs.mu.capacity-fs.usedLocked(), 0)}, nil
}

// usedLocked is the allocated bytes of every file reachable from the root:
// a removed file's space is free at once, even while a handle is open.
func (fs *MemFS) usedLocked() int64 {
	var used int64
	var walk func(n *memNode)
	walk = func(n *memNode) {
		if !n.isDir {
			used += n.alloc
			return
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(fs.mu.root)
	return used
}

// SyncDir implements FS: the directory's live entries become its durable
// entries.
func (fs *MemFS) SyncDir(dir string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.lookupLocked(dir)
	if err == nil && !n.isDir {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return &os.PathError{Op: "syncdir", Path: dir, Err: err}
	}
	n.syncLocked()
	return nil
}

// syncLocked makes n's live state durable: contents for a file, entries for
// a directory.
func (n *memNode) syncLocked() {
	if n.isDir {
		n.durable = maps.Clone(n.children)
		return
	}
	if n.rewrote {
		n.synced = append(n.synced[:0], n.data...)
	} else {
		// Pure appends since the last Sync: copy only the tail.
		n.synced = append(n.synced, n.data[len(n.synced):]...)
	}
	n.rewrote = false
}

// truncateLocked sets n's live size, zero-extending (a hole: no blocks).
func (fs *MemFS) truncateLocked(n *memNode, size int64) {
	if size < int64(len(n.synced)) {
		n.rewrote = true
	}
	n.data = resize(n.data, size)
	n.alloc = min(n.alloc, size)
	n.modTime = fs.mu.now()
}

// writeAtLocked writes p at off into n's live contents. On a volume whose
// capacity is a limit, a write needing more blocks than are free writes the
// part that fits and fails with ENOSPC.
func (fs *MemFS) writeAtLocked(n *memNode, p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var full error
	if end := off + int64(len(p)); fs.mu.limited && end > n.alloc {
		if free := fs.mu.capacity - fs.usedLocked(); end-n.alloc > free {
			p = p[:max(min(n.alloc+free-off, int64(len(p))), 0)]
			full = syscall.ENOSPC
		}
	}
	if len(p) == 0 {
		return 0, full
	}
	if off < int64(len(n.synced)) {
		n.rewrote = true
	}
	end := off + int64(len(p))
	if end > int64(len(n.data)) {
		n.data = resize(n.data, end)
	}
	n.alloc = max(n.alloc, end)
	copy(n.data[off:], p)
	n.modTime = fs.mu.now()
	return len(p), full
}

// loseWriteback is what Linux does to a file whose fsync failed: the dirty
// pages it could not write are marked clean, so no later fsync writes them.
// The file's size reaches the disk; the bytes written since the last good
// Sync do not (the old durable bytes stay, zeros past them). A later write
// over a lost range dirties it again.
func (n *memNode) loseWriteback() {
	if n.isDir {
		return
	}
	lost := make([]byte, len(n.data))
	copy(lost, n.synced)
	n.synced, n.rewrote = lost, false
}

// resize returns b with length size; bytes past the old length are zero.
func resize(b []byte, size int64) []byte {
	old := int64(len(b))
	if size <= old {
		return b[:size]
	}
	if size <= int64(cap(b)) {
		b = b[:size]
		clear(b[old:]) // may hold bytes from before an earlier truncation
		return b
	}
	grown := make([]byte, size, max(size, 2*int64(cap(b))))
	copy(grown, b)
	return grown
}

func (n *memNode) info(name string) os.FileInfo {
	return &memFileInfo{name: name, size: int64(len(n.data)), mode: n.mode, modTime: n.modTime}
}

type memFileInfo struct {
	name    string
	size    int64
	mode    os.FileMode
	modTime time.Time
}

func (i *memFileInfo) Name() string       { return i.name }
func (i *memFileInfo) Size() int64        { return i.size }
func (i *memFileInfo) Mode() os.FileMode  { return i.mode }
func (i *memFileInfo) ModTime() time.Time { return i.modTime }
func (i *memFileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i *memFileInfo) Sys() any           { return nil }

// memFile is an open handle. Its node stays usable after the name is
// removed, as an open descriptor does.
type memFile struct {
	fs       *MemFS
	n        *memNode
	name     string
	writable bool

	// Guarded by fs.mu.
	pos    int64
	closed bool
}

var _ File = (*memFile)(nil)

// checkLocked returns the error an operation op on f gets before it looks at
// the data.
func (f *memFile) checkLocked(op string, write bool) error {
	switch {
	case f.closed:
		return &os.PathError{Op: op, Path: f.name, Err: os.ErrClosed}
	case write && !f.writable:
		return &os.PathError{Op: op, Path: f.name, Err: syscall.EBADF}
	case f.n.isDir && op != "sync":
		return &os.PathError{Op: op, Path: f.name, Err: syscall.EISDIR}
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("read", false); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if f.pos >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	k := copy(p, f.n.data[f.pos:])
	f.pos += int64(k)
	return k, nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &os.PathError{Op: "readat", Path: f.name, Err: syscall.EINVAL}
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	k := copy(p, f.n.data[off:])
	if k < len(p) {
		return k, io.EOF
	}
	return k, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("write", true); err != nil {
		return 0, err
	}
	k, err := f.fs.writeAtLocked(f.n, p, f.pos)
	f.pos += int64(k)
	if err != nil {
		return k, &os.PathError{Op: "write", Path: f.name, Err: err}
	}
	return k, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &os.PathError{Op: "writeat", Path: f.name, Err: syscall.EINVAL}
	}
	k, err := f.fs.writeAtLocked(f.n, p, off)
	if err != nil {
		return k, &os.PathError{Op: "write", Path: f.name, Err: err}
	}
	return k, nil
}

// loseWriteback drops what a failed Sync could not write (see
// memNode.loseWriteback); the injecting FS calls it for ErrWritebackLost.
func (f *memFile) loseWriteback() {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	f.n.loseWriteback()
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return &os.PathError{Op: "close", Path: f.name, Err: os.ErrClosed}
	}
	f.closed = true
	return nil
}

// Sync makes the file's contents durable; on a directory handle it makes the
// directory's entries durable, as fsync on a directory descriptor does.
func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("sync", false); err != nil {
		return err
	}
	f.n.syncLocked()
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return &os.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL}
	}
	f.fs.truncateLocked(f.n, size)
	f.pos = min(f.pos, size)
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return 0, &os.PathError{Op: "stat", Path: f.name, Err: os.ErrClosed}
	}
	return int64(len(f.n.data)), nil
}

// String lists every live path with its live and durable sizes, for test
// failure messages.
func (fs *MemFS) String() string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var b strings.Builder
	var walk func(dir *memNode, prefix string)
	walk = func(dir *memNode, prefix string) {
		for _, name := range slices.Sorted(maps.Keys(dir.children)) {
			n := dir.children[name]
			p := prefix + "/" + name
			_, durable := dir.durable[name]
			mark := ""
			if !durable {
				mark = " (entry not synced)"
			}
			if n.isDir {
				fmt.Fprintf(&b, "%s/%s\n", p, mark)
				walk(n, p)
				continue
			}
			fmt.Fprintf(&b, "%s size=%d synced=%d%s\n", p, len(n.data), len(n.synced), mark)
		}
	}
	walk(fs.mu.root, "")
	return b.String()
}
