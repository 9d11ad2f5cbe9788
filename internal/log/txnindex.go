package log

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// AbortedTxn is one entry of a segment's aborted-transaction index
// (.txnindex, Kafka's AbortedTxn): a transaction of ProducerID aborted on
// this partition, from FirstOffset (its first data offset here) to
// LastOffset (its ABORT marker), and the last stable offset when the abort
// was appended (the first offset of the earliest transaction of another
// producer still open then, or LastOffset+1). Readers of the index use that
// last field to stop early: no transaction that aborts later can begin
// below it.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// txnEntrySize is Kafka's AbortedTxn.TOTAL_SIZE: int16 version 0, then the
// four int64 fields.
const (
	txnEntrySize    = 2 + 4*8
	txnEntryVersion = 0
)

func (a AbortedTxn) appendTo(b []byte) []byte {
	be := binary.BigEndian
	b = be.AppendUint16(b, txnEntryVersion)
	b = be.AppendUint64(b, uint64(a.ProducerID))
	b = be.AppendUint64(b, uint64(a.FirstOffset))
	b = be.AppendUint64(b, uint64(a.LastOffset))
	return be.AppendUint64(b, uint64(a.LastStableOffset))
}

func decodeAbortedTxn(b []byte) (AbortedTxn, error) {
	be := binary.BigEndian
	if v := be.Uint16(b); v != txnEntryVersion {
		return AbortedTxn{}, fmt.Errorf("%w: transaction index entry version %d", ErrCorruptSegment, v)
	}
	return AbortedTxn{ProducerID: int64(be.Uint64(b[2:])), FirstOffset: int64(be.Uint64(b[10:])),
		LastOffset: int64(be.Uint64(b[18:])), LastStableOffset: int64(be.Uint64(b[26:]))}, nil
}

// txnIndex is a segment's .txnindex. Kafka creates the file only when the
// first abort lands in the segment; so does Gregor, and it opens an
// existing file only when it is read or appended to, so a log of many
// segments without aborted transactions holds no descriptor for them.
// Entries are appended by the log's appender (Log.mu) in increasing
// LastOffset order; readers take mu only to learn the file and its length.
type txnIndex struct {
	fs   vfs.FS
	path string

	mu      sync.Mutex
	file    vfs.File // nil until opened
	entries int      // whole entries in the file
	last    int64    // LastOffset of the last entry, -1 when empty
	dirty   bool     // appended since the last sync
}

func newTxnIndex(fs vfs.FS, path string) *txnIndex { return &txnIndex{fs: fs, path: path, last: -1} }

// load learns the entry count of an existing file and checks its entries
// (Kafka's TransactionIndex.sanityCheck): each LastOffset at or above base,
// below limit and above the one before. A bad or torn tail is cut off
// (after an unclean stop the log's replay writes those entries again).
func (x *txnIndex) load(base, limit int64, warn func(msg string, args ...any)) error {
	f, err := x.fs.OpenReadWrite(x.path)
	if err != nil {
		return err
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return err
	}
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, 0); err != nil && int64(len(buf)) > 0 {
		f.Close()
		return fmt.Errorf("read %s: %w", x.path, err)
	}
	n, last := 0, int64(-1)
	for ; (n+1)*txnEntrySize <= len(buf); n++ {
		a, err := decodeAbortedTxn(buf[n*txnEntrySize:])
		if err != nil || a.LastOffset < base || a.LastOffset >= limit || a.LastOffset <= last || a.FirstOffset > a.LastOffset {
			break
		}
		last = a.LastOffset
	}
	if int64(n*txnEntrySize) != size {
		warn("cutting a damaged transaction index", "path", x.path, "entries_kept", n, "bytes", size)
		if err := f.Truncate(int64(n * txnEntrySize)); err != nil {
			f.Close()
			return err
		}
		x.dirty = true
	}
	if n == 0 {
		// Nothing to read: hold no descriptor until an abort lands here.
		if x.dirty {
			if err := f.Sync(); err != nil {
				f.Close()
				return err
			}
			x.dirty = false
		}
		return f.Close()
	}
	x.mu.Lock()
	x.file, x.entries, x.last = f, n, last
	x.mu.Unlock()
	return nil
}

// count is the number of entries.
func (x *txnIndex) count() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.entries
}

// append adds an entry, creating the file on the first one (created reports
// that, so the caller can make the new directory entry durable).
func (x *txnIndex) append(a AbortedTxn) (created bool, err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if a.LastOffset <= x.last {
		return false, fmt.Errorf("transaction index %s: entry ending at %d does not follow %d", x.path, a.LastOffset, x.last)
	}
	if x.file == nil {
		if x.file, err = x.fs.OpenReadWrite(x.path); err != nil {
			return false, err
		}
		created = true
	}
	if _, err := x.file.WriteAt(a.appendTo(make([]byte, 0, txnEntrySize)), int64(x.entries*txnEntrySize)); err != nil {
		return created, fmt.Errorf("append to %s: %w", x.path, err)
	}
	x.entries++
	x.last = a.LastOffset
	x.dirty = true
	return created, nil
}

// truncateTo drops the entries whose LastOffset is at or above offset
// (Kafka's TransactionIndex.truncateTo).
func (x *txnIndex) truncateTo(offset int64) error {
	all, err := x.all()
	if err != nil {
		return err
	}
	keep := sort.Search(len(all), func(i int) bool { return all[i].LastOffset >= offset })
	if keep == len(all) {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.file.Truncate(int64(keep * txnEntrySize)); err != nil {
		return fmt.Errorf("truncate %s: %w", x.path, err)
	}
	x.entries, x.last, x.dirty = keep, -1, true
	if keep > 0 {
		x.last = all[keep-1].LastOffset
	}
	return nil
}

// all reads every entry.
func (x *txnIndex) all() ([]AbortedTxn, error) {
	x.mu.Lock()
	f, n := x.file, x.entries
	x.mu.Unlock()
	if n == 0 {
		return nil, nil
	}
	buf := make([]byte, n*txnEntrySize)
	if _, err := f.ReadAt(buf, 0); err != nil {
		return nil, fmt.Errorf("read %s: %w", x.path, err)
	}
	out := make([]AbortedTxn, n)
	for i := range out {
		a, err := decodeAbortedTxn(buf[i*txnEntrySize:])
		if err != nil {
			return nil, fmt.Errorf("%s entry %d: %w", x.path, i, err)
		}
		out[i] = a
	}
	return out, nil
}

// collect is Kafka's TransactionIndex.collectAbortedTxns: the entries
// overlapping [fetchOffset, upperBound) — LastOffset ≥ fetchOffset and
// FirstOffset < upperBound — and whether the search is complete, i.e. an
// entry's LastStableOffset reached upperBound, so no later segment can hold
// an overlapping one. Entries are sorted by LastOffset, so the scan starts
// at the first one ending at or after fetchOffset (none before it can end
// the search: their LastStableOffset is at most their LastOffset+1).
func (x *txnIndex) collect(dst []AbortedTxn, fetchOffset, upperBound int64) ([]AbortedTxn, bool, error) {
	all, err := x.all()
	if err != nil {
		return dst, false, err
	}
	i := sort.Search(len(all), func(i int) bool { return all[i].LastOffset >= fetchOffset })
	for _, a := range all[i:] {
		if a.FirstOffset < upperBound {
			dst = append(dst, a)
		}
		if a.LastStableOffset >= upperBound {
			return dst, true, nil
		}
	}
	return dst, false, nil
}

// isDirty reports entries appended or cut since the last sync.
func (x *txnIndex) isDirty() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.dirty
}

// sync makes appended entries durable.
func (x *txnIndex) sync() error {
	x.mu.Lock()
	f, dirty := x.file, x.dirty
	x.dirty = false
	x.mu.Unlock()
	if f == nil || !dirty {
		return nil
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", x.path, err)
	}
	return nil
}

func (x *txnIndex) close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.file == nil {
		return nil
	}
	err := x.file.Close()
	x.file = nil
	return err
}

// setPath follows a rename of the file (a cleaned segment going live).
func (x *txnIndex) setPath(p string) {
	x.mu.Lock()
	x.path = p
	x.mu.Unlock()
}
