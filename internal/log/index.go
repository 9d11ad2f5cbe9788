package log

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/gregor-broker/gregor/internal/vfs"
)

const (
	offsetEntrySize = 8  // relative offset int32, position int32
	timeEntrySize   = 12 // timestamp int64, relative offset int32
)

// index is a segment's .index or .timeindex: fixed-size entries sorted by
// their key, held in memory. New entries reach the file when it is trimmed
// (the segment rolls or the log closes), not one write per entry: an active
// segment's index is rebuilt after an unclean stop, and checked against the
// batches after a clean one. The file is extended to the configured maximum
// size (sparse) while the segment is active and trimmed to its entries when
// the segment rolls or closes, as Kafka does. Readers take mu for reading;
// the log's appender takes it to add.
type index struct {
	mu         sync.RWMutex
	file       vfs.File
	path       string
	base       int64
	entrySize  int
	buf        []byte
	flushed    int // entries written to the file
	maxEntries int
	scratch    [timeEntrySize]byte // the entry being added (mu held), so adding allocates nothing
}

func (x *index) entries() int { return len(x.buf) / x.entrySize }

func (x *index) isFull() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.entries() >= x.maxEntries
}

// appendEntryLocked writes the entry held in x.scratch. x.mu is held.
func (x *index) appendEntryLocked() error {
	if x.entries() >= x.maxEntries {
		return fmt.Errorf("index %s is full (%d entries)", x.path, x.maxEntries)
	}
	x.buf = append(x.buf, x.scratch[:x.entrySize]...)
	return nil
}

// flushLocked writes the entries not yet in the file. x.mu is held.
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

// search returns the index of the last entry whose key (by key(i)) is <= target,
// or -1.
func (x *index) search(target int64, key func(b []byte) int64) int {
	n := x.entries()
	i := sort.Search(n, func(i int) bool {
		return key(x.buf[i*x.entrySize:]) > target
	})
	return i - 1
}

// truncateEntries drops entries from i on.
func (x *index) truncateEntries(i int) error {
	x.mu.Lock()
	defer x.mu.Unlock()
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

// trim writes out pending entries and shrinks the file to them.
func (x *index) trim() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.flushLocked(); err != nil {
		return err
	}
	return x.file.Truncate(int64(len(x.buf)))
}

// extend makes the file its maximum size again (the active segment's index).
func (x *index) extend() error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.file.Truncate(int64(x.maxEntries * x.entrySize))
}

func relOffsetKey(b []byte) int64 { return int64(int32(binary.BigEndian.Uint32(b))) }
func timestampKey(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }

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
// (base, 0) if there is none.
func (x *offsetIndex) lookup(target int64) (int64, int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	i := x.search(target-x.base, relOffsetKey)
	if i < 0 {
		return x.base, 0
	}
	e := x.buf[i*offsetEntrySize:]
	return x.base + relOffsetKey(e), int64(binary.BigEndian.Uint32(e[4:]))
}

func (x *offsetIndex) lastOffset() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := x.entries()
	if n == 0 {
		return x.base
	}
	return x.base + relOffsetKey(x.buf[(n-1)*offsetEntrySize:])
}

// truncateTo removes entries for offsets >= offset.
func (x *offsetIndex) truncateTo(offset int64) error {
	x.mu.RLock()
	i := x.search(offset-1-x.base, relOffsetKey) + 1
	x.mu.RUnlock()
	return x.truncateEntries(i)
}

// check validates the loaded entries: strictly increasing offsets above the
// base and non-decreasing positions within the log size.
func (x *offsetIndex) check(logSize int64) error {
	var prevOff, prevPos int64 = -1, -1
	for i := 0; i < x.entries(); i++ {
		e := x.buf[i*offsetEntrySize:]
		off, pos := relOffsetKey(e), int64(binary.BigEndian.Uint32(e[4:]))
		if off <= prevOff || pos < prevPos || pos >= logSize || (i > 0 && off == 0) {
			return fmt.Errorf("%w: %s entry %d (offset %d, position %d) out of order or past the log",
				ErrCorruptSegment, x.path, i, off, pos)
		}
		prevOff, prevPos = off, pos
	}
	return nil
}

// timeIndex maps timestamps to relative offsets: an entry (t, o) says every
// record from offset o on has... a batch at or after o reaches timestamp t.
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
	n := x.entries()
	if n == 0 {
		return -1, x.base, false
	}
	e := x.buf[(n-1)*timeEntrySize:]
	return timestampKey(e), x.base + relOffsetKey(e[8:]), true
}

// lookup returns the offset of the last entry with timestamp < target, from
// where a scan for the first record at or after target can start; base if none.
func (x *timeIndex) lookup(target int64) int64 {
	if target == math.MinInt64 {
		return x.base // target-1 would wrap to the largest timestamp
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	i := x.search(target-1, timestampKey)
	if i < 0 {
		return x.base
	}
	return x.base + relOffsetKey(x.buf[i*timeEntrySize+8:])
}

// truncateTo removes entries pointing at offsets >= offset.
func (x *timeIndex) truncateTo(offset int64) error {
	x.mu.RLock()
	n := x.entries()
	i := n
	for i > 0 && x.base+relOffsetKey(x.buf[(i-1)*timeEntrySize+8:]) >= offset {
		i--
	}
	x.mu.RUnlock()
	return x.truncateEntries(i)
}

func (x *timeIndex) check() error {
	var prevTS, prevOff int64 = -1 << 63, -1
	for i := 0; i < x.entries(); i++ {
		e := x.buf[i*timeEntrySize:]
		ts, off := timestampKey(e), relOffsetKey(e[8:])
		if ts < prevTS || off < prevOff || off < 0 {
			return fmt.Errorf("%w: %s entry %d out of order", ErrCorruptSegment, x.path, i)
		}
		prevTS, prevOff = ts, off
	}
	return nil
}

// openIndex initialises x from path. With create it starts an empty file
// extended to the maximum size; otherwise it reads the existing entries,
// ignoring the all-zero tail of a preallocated file.
func openIndex(x *index, fs vfs.FS, path string, base int64, entrySize, maxBytes int, create bool) error {
	x.path, x.base, x.entrySize, x.maxEntries = path, base, entrySize, maxBytes/entrySize
	if create {
		f, err := fs.Create(path)
		if err != nil {
			return err
		}
		x.file = f
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
	size -= size % int64(entrySize)
	buf := make([]byte, size)
	if size > 0 {
		if _, err := f.ReadAt(buf, 0); err != nil {
			return err
		}
	}
	n := len(buf) / entrySize
	for n > 0 && isZero(buf[(n-1)*entrySize:n*entrySize]) {
		n--
	}
	// Copy out the entries: the preallocated file may be megabytes of zeros we
	// must not keep in memory for every active segment.
	x.buf = append(make([]byte, 0, n*entrySize+64*entrySize), buf[:n*entrySize]...)
	x.flushed = n
	if n > x.maxEntries {
		x.maxEntries = n
	}
	return nil
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
