package log

import (
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
// their key. It is in one of two modes:
//
//   - In memory: the active segment's index (and one being rebuilt by
//     recovery or written by the cleaner). The entries are in buf; new ones
//     reach the file when it is trimmed (the segment rolls or the log
//     closes), not one write per entry: an active segment's index is rebuilt
//     after an unclean stop, and checked against the batches after a clean
//     one. The file is extended to the configured maximum size (sparse) while
//     the segment is active, as Kafka does.
//   - On file: a closed segment's index. trim writes the entries out, cuts
//     the file to them and drops buf; from then on the entries live only in
//     the file (and the page cache), and lookups binary-search it with
//     positioned reads through the process-wide window cache (index_window.go).
//     What stays on the heap is the entry count and the last entry, so a
//     log's memory does not grow with the data it holds. Truncation into a
//     closed segment (it becomes the active segment again) loads the entries
//     it keeps back into memory.
//
// Readers take mu for reading; the log's appender takes it to add entries
// and to change modes. A lookup that cannot read the file (it was closed
// after its segment was deleted, or the disk failed) answers as if the index
// were empty: a scan from the segment's start, which the index only shortens.
type index struct {
	mu         sync.RWMutex
	file       vfs.File
	path       string
	base       int64
	entrySize  int
	maxEntries int

	inMemory bool
	buf      []byte // in memory: the entries
	flushed  int    // in memory: entries written to the file
	scratch  entry  // the entry being added (mu held), so adding allocates nothing

	n    int          // on file: entries in the file
	last entry        // on file: entry n-1
	id   uint64       // on file: names this file's contents in the window cache
	hint atomic.Int64 // on file: the window of the last lookup, tried first
}

func (x *index) entries() int {
	if x.inMemory {
		return len(x.buf) / x.entrySize
	}
	return x.n
}

// bytes is the size of the entries (what the trimmed file holds).
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

// flushLocked writes the entries not yet in the file. x.mu is held and x
// is in memory.
func (x *index) flushLocked() error {
	if x.flushed >= x.entries() {
		return nil
	}
	off := x.flushed * x.entrySize
	if _, err := x.file.WriteAt(x.buf[off:], int64(off)); err != nil {
		return err
	}
	x.flushed = x.entries()
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

// readEntries fills p with entries from number first on. The file is read
// as it is; x.mu is held.
func (x *index) readEntries(p []byte, first int) error {
	n, err := x.file.ReadAt(p, int64(first*x.entrySize))
	switch {
	case n == len(p):
		return nil
	case err == nil || err == io.EOF:
		return fmt.Errorf("%w: %s: entries %d.. past the end", ErrCorruptSegment, x.path, first)
	}
	return err
}

// loadLocked brings an index on file back into memory with its first keep
// entries (truncation makes its segment the active one, or recovery rebuilds
// it), cutting the rest from the file. It does nothing to an index in memory.
// x.mu is held.
func (x *index) loadLocked(keep int) error {
	if x.inMemory {
		return nil
	}
	keep = min(keep, x.n)
	buf := make([]byte, keep*x.entrySize, (keep+64)*x.entrySize)
	if keep > 0 {
		if err := x.readEntries(buf, 0); err != nil {
			return err
		}
	}
	if keep < x.n {
		if err := x.file.Truncate(int64(keep * x.entrySize)); err != nil {
			return err
		}
	}
	x.inMemory, x.buf, x.flushed = true, buf, keep
	x.n, x.id = 0, 0
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
	if i >= x.entries() {
		return nil
	}
	if i < x.flushed {
		zero := make([]byte, (x.flushed-i)*x.entrySize)
		if _, err := x.file.WriteAt(zero, int64(i*x.entrySize)); err != nil {
			return err
		}
		x.flushed = i
	}
	x.buf = x.buf[:i*x.entrySize]
	return nil
}

// trim writes out pending entries, shrinks the file to them and leaves the
// index on file: its segment is closed (rolled, sealed by recovery or the
// cleaner, or the log is closing). On an error the index stays as it was.
func (x *index) trim() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.inMemory {
		// A closed segment's index that a crash left preallocated.
		return x.file.Truncate(int64(x.n * x.entrySize))
	}
	if err := x.flushLocked(); err != nil {
		return err
	}
	if err := x.file.Truncate(int64(len(x.buf))); err != nil {
		return err
	}
	var last entry
	n := x.entries()
	x.lastEntryLocked(&last)
	x.inMemory, x.buf, x.flushed = false, nil, 0
	x.n, x.last, x.id = n, last, newIndexID()
	x.hint.Store(0)
	return nil
}

// activate brings the index into memory: its segment is the active one.
func (x *index) activate() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.loadLocked(x.entries())
}

// extend makes the index the active segment's: in memory, and the file its
// maximum size again.
func (x *index) extend() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.loadLocked(x.entries()); err != nil {
		return err
	}
	return x.file.Truncate(int64(x.maxEntries * x.entrySize))
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
	chunk := make([]byte, min(x.n, indexScanChunk/es)*es)
	for first := 0; first < x.n; {
		k := min(x.n-first, len(chunk)/es)
		if err := x.readEntries(chunk[:k*es], first); err != nil {
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
	return x.base + relOffsetKey(e[:]), int64(binary.BigEndian.Uint32(e[4:]))
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

// check validates the entries: strictly increasing offsets above the base
// and non-decreasing positions within the log size.
func (x *offsetIndex) check(logSize int64) error {
	var prevOff, prevPos int64 = -1, -1
	return x.eachEntry(func(i int, e []byte) error {
		off, pos := relOffsetKey(e), int64(binary.BigEndian.Uint32(e[4:]))
		if off <= prevOff || pos < prevPos || pos >= logSize || (i > 0 && off == 0) {
			return fmt.Errorf("%w: %s entry %d (offset %d, position %d) out of order or past the log",
				ErrCorruptSegment, x.path, i, off, pos)
		}
		prevOff, prevPos = off, pos
		return nil
	})
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

func (x *timeIndex) check() error {
	var prevTS, prevOff int64 = -1 << 63, -1
	return x.eachEntry(func(i int, e []byte) error {
		ts, off := timestampKey(e), timeOffsetKey(e)
		if ts < prevTS || off < prevOff || off < 0 {
			return fmt.Errorf("%w: %s entry %d out of order", ErrCorruptSegment, x.path, i)
		}
		prevTS, prevOff = ts, off
		return nil
	})
}

// openIndex initialises x from path. With create it starts an empty file
// extended to the maximum size, in memory; otherwise it opens the existing
// file on file, counting its entries up to the all-zero tail of a
// preallocated file.
func openIndex(x *index, fs vfs.FS, path string, base int64, entrySize, maxBytes int, create bool) error {
	x.path, x.base, x.entrySize, x.maxEntries = path, base, entrySize, maxBytes/entrySize
	if create {
		f, err := fs.Create(path)
		if err != nil {
			return err
		}
		x.file, x.inMemory = f, true
		return x.extend()
	}
	f, err := fs.OpenReadWrite(path)
	if err != nil {
		return err
	}
	x.file = f
	size, err := f.Size()
	if err != nil {
		return err
	}
	n, err := countEntries(x, int(size/int64(entrySize)))
	if err != nil {
		return err
	}
	x.n, x.id = n, newIndexID()
	if n > 0 {
		if err := x.readEntries(x.last[:entrySize], n-1); err != nil {
			return err
		}
	}
	x.maxEntries = max(x.maxEntries, n)
	return nil
}

// countEntries finds the entries among the first n slots of x's file: those
// before its all-zero tail, read backwards in bounded chunks.
func countEntries(x *index, n int) (int, error) {
	es := x.entrySize
	chunk := make([]byte, min(n, indexScanChunk/es)*es)
	for n > 0 {
		k := min(n, len(chunk)/es)
		if err := x.readEntries(chunk[:k*es], n-k); err != nil {
			return 0, err
		}
		for j := k; j > 0; j-- {
			if !isZero(chunk[(j-1)*es : j*es]) {
				return n - k + j, nil
			}
		}
		n -= k
	}
	return 0, nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
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
