package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/gregor-broker/gregor/internal/vfs"
)

const (
	offsetEntrySize = 8  // relative offset int32, position int32
	timeEntrySize   = 12 // timestamp int64, relative offset int32
)

// entry holds one index entry of either kind.
type entry = [timeEntrySize]byte

// keyFunc reads the key an index is searched by from an entry.
type keyFunc func(b []byte) int64

// index is a segment's .index or .timeindex: fixed-size entries sorted by
// their key. It holds no open file. It is in one of two modes:
//
//   - In memory: the active segment's index (and one being rebuilt by
//     recovery or written by the cleaner). The entries are in buf, and only
//     there: the file is written when the segment is sealed (it rolls, or
//     recovery or the cleaner finishes it) and when the log closes cleanly.
//     Open never trusts an active segment's index file: it rebuilds the
//     entries from the batches it walks anyway.
//   - On file: a sealed segment's index. Its file holds exactly its entries;
//     what stays on the heap is the entry count and the first and last
//     entries, so a log's memory does not grow with the data it holds.
//     Lookups binary-search the file with positioned reads through the
//     process-wide window cache (index_window.go), opening the file by path
//     for the lookup and closing it after. Truncation into a sealed segment
//     (it becomes the active one again) reads the entries it keeps back into
//     memory.
//
// Readers take mu for reading; the log's appender takes it to add entries
// and to change modes. A lookup that cannot read the file (it was renamed
// away with its deleted segment, or the disk failed), or finds its entries
// out of order, answers as if the index were empty: a scan from the
// segment's start, which the index only shortens.
type index struct {
	mu         sync.RWMutex
	fs         vfs.FS
	path       string
	base       int64
	entrySize  int
	maxEntries int

	inMemory bool
	buf      []byte // in memory: the entries
	scratch  entry  // the entry being added (mu held), so adding allocates nothing

	n           int          // on file: entries in the file
	first, last entry        // on file: entries 0 and n-1
	id          uint64       // on file: names this file's contents in the window cache
	hint        atomic.Int64 // on file: the window of the last lookup, tried first
	bad         atomic.Bool  // on file: entries found out of order; lookups ignore them
}

// initIndex makes x an empty index in memory for path.
func initIndex(x *index, fs vfs.FS, path string, base int64, entrySize, maxBytes int) {
	x.fs, x.path, x.base, x.entrySize, x.maxEntries = fs, path, base, entrySize, max(maxBytes/entrySize, 1)
	x.inMemory = true
}

func (x *index) entries() int {
	if x.inMemory {
		return len(x.buf) / x.entrySize
	}
	return x.n
}

// bytes is the size of the entries (what the sealed file holds).
func (x *index) bytes() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return int64(x.entries() * x.entrySize)
}

func (x *index) isFull() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.entries() >= x.maxEntries
}

// lastEntryLocked copies the last entry into e; false if there is none.
// x.mu is held.
func (x *index) lastEntryLocked(e *entry) bool {
	n := x.entries()
	if n == 0 {
		return false
	}
	if x.inMemory {
		copy(e[:], x.buf[(n-1)*x.entrySize:n*x.entrySize])
	} else {
		*e = x.last
	}
	return true
}

// appendEntryLocked writes the entry held in x.scratch. x.mu is held.
func (x *index) appendEntryLocked() error {
	if err := x.loadLocked(x.entries()); err != nil {
		return err
	}
	if x.entries() >= x.maxEntries {
		return fmt.Errorf("index %s is full (%d entries)", x.path, x.maxEntries)
	}
	x.buf = append(x.buf, x.scratch[:x.entrySize]...)
	return nil
}

// findLocked returns the number of the last entry whose key is <= target,
// or -1, and copies that entry into e. x.mu is held.
func (x *index) findLocked(target int64, key keyFunc, e *entry) (int, error) {
	if !x.inMemory {
		return x.findOnFileLocked(target, key, e)
	}
	n, es := x.entries(), x.entrySize
	i := sort.Search(n, func(i int) bool {
		return key(x.buf[i*es:]) > target
	}) - 1
	if i >= 0 {
		copy(e[:], x.buf[i*es:(i+1)*es])
	}
	return i, nil
}

// indexReader reads an index file for the span of one operation: it opens
// the file at its first read and closes it in close, so an index holds no
// file between lookups.
type indexReader struct {
	x   *index
	f   vfs.File
	err error
}

// read fills p with entries from number first on.
func (r *indexReader) read(p []byte, first int) error {
	if r.f == nil && r.err == nil {
		r.f, r.err = r.x.fs.Open(r.x.path)
	}
	if r.err != nil {
		return r.err
	}
	n, err := r.f.ReadAt(p, int64(first*r.x.entrySize))
	switch {
	case n == len(p):
		return nil
	case err == nil || err == io.EOF:
		return fmt.Errorf("%w: %s: entries %d.. past the end", ErrCorruptSegment, r.x.path, first)
	}
	return err
}

func (r *indexReader) close() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

// loadLocked brings an index on file back into memory with its first keep
// entries (truncation makes its segment the active one again, or recovery
// rebuilds it). The file is left as it is: it is rewritten when the segment
// is sealed again. It does nothing to an index in memory. x.mu is held.
func (x *index) loadLocked(keep int) error {
	if x.inMemory {
		return nil
	}
	keep = min(keep, x.n)
	buf := make([]byte, keep*x.entrySize, (keep+64)*x.entrySize)
	if keep > 0 {
		r := indexReader{x: x}
		err := r.read(buf, 0)
		r.close()
		if err != nil {
			return err
		}
	}
	x.inMemory, x.buf = true, buf
	x.n, x.id = 0, 0
	x.bad.Store(false)
	return nil
}

// truncateEntries drops entries from i on; the index is in memory after.
func (x *index) truncateEntries(i int) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.truncateEntriesLocked(i)
}

func (x *index) truncateEntriesLocked(i int) error {
	if !x.inMemory {
		return x.loadLocked(i)
	}
	if i < x.entries() {
		x.buf = x.buf[:i*x.entrySize]
	}
	return nil
}

// seal writes the entries to the index file, replacing whatever it held,
// and leaves the index on file: its segment is closed (rolled, rebuilt by
// recovery, written by the cleaner, or the log is closing). It returns the
// file, still open, for the caller to sync (or not) and close. On an error
// the index stays as it was.
func (x *index) seal() (vfs.File, error) { return x.sealOrKeep(false) }

// sealOrKeep is seal; with keep, a file that already holds exactly the
// entries is kept as it is and no file is returned (a log closing after a
// start without appends finds its active segment's files current).
func (x *index) sealOrKeep(keep bool) (vfs.File, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.loadLocked(x.entries()); err != nil {
		return nil, err
	}
	var f vfs.File
	if !keep || !x.fileHoldsLocked(x.buf) {
		var err error
		if f, err = x.fs.Create(x.path); err != nil {
			return nil, err
		}
		if len(x.buf) > 0 {
			if _, err := f.WriteAt(x.buf, 0); err != nil {
				f.Close()
				return nil, err
			}
		}
	}
	n := x.entries()
	x.n = n
	if n > 0 {
		copy(x.first[:], x.buf[:x.entrySize])
		x.lastEntryLocked(&x.last)
	}
	x.inMemory, x.buf, x.id = false, nil, newIndexID()
	x.hint.Store(0)
	x.bad.Store(false)
	return f, nil
}

// fileHoldsLocked reports whether x's file holds exactly b. x.mu is held.
func (x *index) fileHoldsLocked(b []byte) bool {
	f, err := x.fs.Open(x.path)
	if err != nil {
		return false
	}
	defer f.Close()
	if size, err := f.Size(); err != nil || size != int64(len(b)) {
		return false
	}
	got := make([]byte, len(b))
	if n, err := f.ReadAt(got, 0); n != len(b) || (err != nil && err != io.EOF) {
		return false
	}
	return bytes.Equal(got, b)
}

// eachEntry calls fn with every entry in order, reading an index on file in
// bounded chunks. x.mu need not be held: load and recovery own the segment.
func (x *index) eachEntry(fn func(i int, e []byte) error) error {
	es := x.entrySize
	if x.inMemory {
		for i := 0; i < x.entries(); i++ {
			if err := fn(i, x.buf[i*es:(i+1)*es]); err != nil {
				return err
			}
		}
		return nil
	}
	r := indexReader{x: x}
	defer r.close()
	chunk := make([]byte, min(x.n, indexScanChunk/es)*es)
	for first := 0; first < x.n; {
		k := min(x.n-first, len(chunk)/es)
		if err := r.read(chunk[:k*es], first); err != nil {
			return err
		}
		for j := 0; j < k; j++ {
			if err := fn(first+j, chunk[j*es:(j+1)*es]); err != nil {
				return err
			}
		}
		first += k
	}
	return nil
}

// indexScanChunk bounds the buffer used to read an index file through.
const indexScanChunk = 64 << 10

func relOffsetKey(b []byte) int64  { return int64(int32(binary.BigEndian.Uint32(b))) }
func positionKey(b []byte) int64   { return int64(binary.BigEndian.Uint32(b[4:])) }
func timestampKey(b []byte) int64  { return int64(binary.BigEndian.Uint64(b)) }
func timeOffsetKey(b []byte) int64 { return relOffsetKey(b[8:]) }
func positionOf(b []byte) int64    { return int64(binary.BigEndian.Uint32(b[4:])) }

// inOrder reports whether entry e may follow entry prev (nil for the first)
// in an index of this kind: offset index relative offsets strictly increase
// and positions do not decrease; time index timestamps and offsets do not
// decrease. No relative offset is negative.
func (x *index) inOrder(prev, e []byte) bool {
	if x.entrySize == offsetEntrySize {
		off, pos := relOffsetKey(e), positionOf(e)
		return off >= 0 && pos >= 0 && (prev == nil || (off > relOffsetKey(prev) && pos >= positionOf(prev)))
	}
	ts, off := timestampKey(e), timeOffsetKey(e)
	return off >= 0 && (prev == nil || (ts >= timestampKey(prev) && off >= timeOffsetKey(prev)))
}

// checkOrder checks the entries from number first on in p, following prev
// (nil if none), and returns a corruption error naming the first out of order.
func (x *index) checkOrder(p []byte, first int, prev []byte) error {
	es := x.entrySize
	for i := 0; i+es <= len(p); i += es {
		if !x.inOrder(prev, p[i:i+es]) {
			return fmt.Errorf("%w: %s: entry %d out of order", ErrCorruptSegment, x.path, first+i/es)
		}
		prev = p[i : i+es]
	}
	return nil
}

// offsetIndex maps relative offsets to byte positions in the .log file.
type offsetIndex struct{ index }

func (x *offsetIndex) add(offset int64, pos int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	binary.BigEndian.PutUint32(x.scratch[0:], uint32(offset-x.base))
	binary.BigEndian.PutUint32(x.scratch[4:], uint32(pos))
	return x.appendEntryLocked()
}

// lookup returns the largest indexed offset <= target and its position, or
// (base, 0) if there is none or the index cannot be read.
func (x *offsetIndex) lookup(target int64) (int64, int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var e entry
	i, err := x.findLocked(target-x.base, relOffsetKey, &e)
	if err != nil || i < 0 {
		return x.base, 0
	}
	return x.base + relOffsetKey(e[:]), positionOf(e[:])
}

// lookupPosition returns the entry with the largest position <= pos, if
// there is one and the index can be read.
func (x *offsetIndex) lookupPosition(pos int64) (int64, int64, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var e entry
	i, err := x.findLocked(pos, positionKey, &e)
	if err != nil || i < 0 {
		return 0, 0, false
	}
	return x.base + relOffsetKey(e[:]), positionKey(e[:]), true
}

func (x *offsetIndex) lastOffset() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var e entry
	if !x.lastEntryLocked(&e) {
		return x.base
	}
	return x.base + relOffsetKey(e[:])
}

// truncateTo removes entries for offsets >= offset; the index is in memory
// after (its segment becomes the active one).
func (x *offsetIndex) truncateTo(offset int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.truncateByKeyLocked(offset-1-x.base, relOffsetKey)
}

// truncateByKeyLocked keeps the entries whose key is <= keep. x.mu is held.
func (x *index) truncateByKeyLocked(keep int64, key keyFunc) error {
	var e entry
	i, err := x.findLocked(keep, key, &e)
	if err != nil {
		return err
	}
	return x.truncateEntriesLocked(i + 1)
}

// timeIndex maps timestamps to relative offsets: an entry (t, o) says a
// batch at or after offset o reaches timestamp t, and none before o does.
type timeIndex struct{ index }

func (x *timeIndex) add(ts int64, offset int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.addLocked(ts, offset)
}

func (x *timeIndex) addLocked(ts int64, offset int64) error {
	binary.BigEndian.PutUint64(x.scratch[0:], uint64(ts))
	binary.BigEndian.PutUint32(x.scratch[8:], uint32(offset-x.base))
	return x.appendEntryLocked()
}

func (x *timeIndex) last() (ts int64, offset int64, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var e entry
	if !x.lastEntryLocked(&e) {
		return -1, x.base, false
	}
	return timestampKey(e[:]), x.base + timeOffsetKey(e[:]), true
}

// lookup returns the offset of the last entry with timestamp < target, from
// where a scan for the first record at or after target can start; base if
// none or if the index cannot be read.
func (x *timeIndex) lookup(target int64) int64 {
	if target == math.MinInt64 {
		return x.base // target-1 would wrap to the largest timestamp
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	var e entry
	i, err := x.findLocked(target-1, timestampKey, &e)
	if err != nil || i < 0 {
		return x.base
	}
	return x.base + timeOffsetKey(e[:])
}

// truncateTo removes entries pointing at offsets >= offset (their offsets
// never decrease); the index is in memory after.
func (x *timeIndex) truncateTo(offset int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.truncateByKeyLocked(offset-1-x.base, timeOffsetKey)
}

// openIndexFile makes x the sealed index in path: it reads the file's size
// and its first and last entries, and keeps no file open. A size that is not
// a whole number of entries is ErrCorruptSegment (the caller rebuilds the
// index from the log); so is a missing file (vfs.IsNotExist holds then).
func openIndexFile(x *index, fs vfs.FS, path string, base int64, entrySize, maxBytes int) error {
	initIndex(x, fs, path, base, entrySize, maxBytes)
	x.inMemory = false
	f, err := fs.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return err
	}
	if size%int64(entrySize) != 0 || size/int64(entrySize) > math.MaxInt32 {
		return fmt.Errorf("%w: %s: %d bytes is not a whole number of %d-byte entries", ErrCorruptSegment, path, size, entrySize)
	}
	n := int(size / int64(entrySize))
	if n > 0 {
		r := indexReader{x: x, f: f}
		if err := r.read(x.first[:entrySize], 0); err != nil {
			return err
		}
		if err := r.read(x.last[:entrySize], n-1); err != nil {
			return err
		}
	}
	x.n, x.id = n, newIndexID()
	x.maxEntries = max(x.maxEntries, n)
	return nil
}

// appendEntryForce adds a time index entry even if the index is full (the
// final entry written when a segment becomes inactive).
func (x *timeIndex) appendEntryForce(ts int64, offset int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.entries() >= x.maxEntries {
		x.maxEntries++
	}
	return x.addLocked(ts, offset)
}
