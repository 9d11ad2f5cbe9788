package log

import (
	"sort"
	"sync/atomic"
)

// Lookups in a closed segment's index read its file. A lookup binary-searches
// the file's windows (runs of indexWindowBytes of entries) by their first
// keys, then reads the window holding the answer in one positioned read and
// searches it in memory. Windows read are kept in a small cache shared by
// every index of the process, direct-mapped by (index file, window number),
// so that a consumer reading a closed segment front to back reads each window
// once, and the cache's memory is bounded (indexWindowSlots windows) whatever
// the number of logs, segments or bytes. An index on file remembers the
// window of its last lookup (hint) and tries it, then the one after it,
// before searching.

const (
	indexWindowBytes = 4096
	indexWindowSlots = 256
)

// indexWindow is an immutable copy of a run of entries of an index file.
type indexWindow struct {
	id    uint64 // the index file's contents it was read from
	k     int    // window number: it starts at entry k*perWindow
	first int    // number of its first entry
	m     int    // entries in the window
	next  bool   // data also holds the next window's first entry
	data  []byte
}

var (
	indexWindows [indexWindowSlots]atomic.Pointer[indexWindow]
	indexIDs     atomic.Uint64
)

// newIndexID names the contents of an index file that has just gone on file.
// IDs are never reused, so a window read before a truncation can never
// answer for the file after it.
func newIndexID() uint64 { return indexIDs.Add(1) }

func windowSlot(id uint64, k int) *atomic.Pointer[indexWindow] {
	h := id*0x9E3779B97F4A7C15 + uint64(k)*0xC2B2AE3D27D4EB4F
	h ^= h >> 31
	return &indexWindows[h%indexWindowSlots]
}

func cachedWindow(id uint64, k int) *indexWindow {
	if w := windowSlot(id, k).Load(); w != nil && w.id == id && w.k == k {
		return w
	}
	return nil
}

// find returns the number of the last entry of the index whose key is <=
// target, if the window holds the answer (the window before it never does
// when the window's first key is <= target, the window after never does when
// its first key is > target). With force it answers from the window anyway.
func (w *indexWindow) find(target int64, key keyFunc, es int, force bool) (int, bool) {
	if !force {
		if w.first > 0 && key(w.data[:es]) > target {
			return 0, false
		}
		if w.next && key(w.data[w.m*es:]) <= target {
			return 0, false
		}
	}
	i := sort.Search(w.m, func(i int) bool { return key(w.data[i*es:]) > target }) - 1
	if i < 0 && w.first > 0 {
		i = 0 // force on a window whose first key is above target
	}
	return w.first + i, true
}

func (x *index) perWindow() int { return max(indexWindowBytes/x.entrySize, 1) }

// windowLocked returns window k of x's file, from the cache or read through
// r, checked and cached. x.mu is held for reading and x is on file. A window
// whose entries are out of order marks the index bad (see index).
func (x *index) windowLocked(k int, r *indexReader) (*indexWindow, error) {
	if w := cachedWindow(x.id, k); w != nil {
		return w, nil
	}
	per := x.perWindow()
	first := k * per
	m := min(per, x.n-first)
	next := first+m < x.n
	read := m
	if next {
		read++
	}
	w := &indexWindow{id: x.id, k: k, first: first, m: m, next: next, data: make([]byte, read*x.entrySize)}
	if err := r.read(w.data, first); err != nil {
		return nil, err
	}
	if err := x.checkOrder(w.data, first, nil); err != nil {
		x.bad.Store(true)
		return nil, err
	}
	windowSlot(x.id, k).Store(w)
	return w, nil
}

// firstKeyLocked is the key of window k's first entry, from the cache or one
// positioned read through r.
func (x *index) firstKeyLocked(k int, key keyFunc, r *indexReader) (int64, error) {
	if w := cachedWindow(x.id, k); w != nil {
		return key(w.data), nil
	}
	var e entry
	if err := r.read(e[:x.entrySize], k*x.perWindow()); err != nil {
		return 0, err
	}
	return key(e[:]), nil
}

// findOnFileLocked is findLocked for an index on file. The file is opened
// only if the answer is not in the cache, and closed before it returns.
func (x *index) findOnFileLocked(target int64, key keyFunc, e *entry) (int, error) {
	if x.n == 0 || x.bad.Load() {
		return -1, nil
	}
	if key(x.last[:]) <= target {
		*e = x.last
		return x.n - 1, nil
	}
	es, per := x.entrySize, x.perWindow()
	// The answer lies in window lo or later and before window hi; lo's first
	// key is <= target unless lo is 0.
	lo, hi := 0, (x.n+per-1)/per
	done := func(w *indexWindow, force bool) (int, bool) {
		i, ok := w.find(target, key, es, force)
		if ok {
			if k := int64(w.k); x.hint.Load() != k {
				x.hint.Store(k) // readers share the hint's cache line: write only on a change
			}
			if i >= 0 {
				copy(e[:], w.data[(i-w.first)*es:(i-w.first+1)*es])
			}
		}
		return i, ok
	}
	if k := int(x.hint.Load()); k < hi {
		if w := cachedWindow(x.id, k); w != nil {
			if i, ok := done(w, false); ok {
				return i, nil
			}
			if target < key(w.data) {
				hi = k
			} else {
				lo = k + 1 // past w, so at or past the next window's first key
			}
		}
	}
	r := indexReader{x: x}
	defer r.close()
	// A reader moving forward needs the next window: try it before searching.
	if lo > 0 && lo < hi {
		w, err := x.windowLocked(lo, &r)
		if err != nil {
			return -1, err
		}
		if i, ok := done(w, false); ok {
			return i, nil
		}
		lo++
	}
	lo = max(min(lo, hi-1), 0) // only a damaged file gets lo to hi
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		k, err := x.firstKeyLocked(mid, key, &r)
		if err != nil {
			return -1, err
		}
		if k <= target {
			lo = mid
		} else {
			hi = mid
		}
	}
	w, err := x.windowLocked(lo, &r)
	if err != nil {
		return -1, err
	}
	// With entries in order the window holds the answer; with a damaged file
	// it answers anyway, as a search of entries in memory would.
	i, _ := done(w, true)
	return i, nil
}
