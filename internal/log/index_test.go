package log

import (
	"fmt"
	"math"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// indexModel is the list of entries an index should hold, with the answers
// a lookup must give, computed the slow way.
type indexModel struct {
	base int64
	keys []int64 // relative offset (offset index) or timestamp (time index)
	vals []int64 // position (offset index) or relative offset (time index)
}

// last returns the last entry whose key is <= target, or -1.
func (m *indexModel) last(target int64) int {
	i := -1
	for j, k := range m.keys {
		if k <= target {
			i = j
		}
	}
	return i
}

func (m *indexModel) offsetLookup(target int64) (int64, int64) {
	i := m.last(target - m.base)
	if i < 0 {
		return m.base, 0
	}
	return m.base + m.keys[i], m.vals[i]
}

func (m *indexModel) timeLookup(target int64) int64 {
	if target == math.MinInt64 {
		return m.base
	}
	i := m.last(target - 1)
	if i < 0 {
		return m.base
	}
	return m.base + m.vals[i]
}

// cut keeps the entries for offsets below offset.
func (m *indexModel) cut(offset int64, offsetKeys bool) {
	n := 0
	for n < len(m.keys) {
		rel := m.vals[n]
		if offsetKeys {
			rel = m.keys[n]
		}
		if m.base+rel >= offset {
			break
		}
		n++
	}
	m.keys, m.vals = m.keys[:n], m.vals[:n]
}

func drawIndexModel(t *rapid.T, time bool) *indexModel {
	m := &indexModel{base: rapid.Int64Range(0, 1<<40).Draw(t, "base")}
	n := rapid.SampledFrom([]int{0, 1, 2, 340, 341, 342, 511, 512, 513, 1500, 3000}).Draw(t, "entries")
	n = rapid.IntRange(n, n+3).Draw(t, "more entries")
	key, val := int64(rapid.IntRange(1, 50).Draw(t, "first key")), int64(0)
	for i := 0; i < n; i++ {
		m.keys, m.vals = append(m.keys, key), append(m.vals, val)
		key += int64(rapid.IntRange(1, 40).Draw(t, "key gap"))
		val += int64(rapid.IntRange(0, 300).Draw(t, "value gap"))
	}
	if time {
		// Timestamps are absolute and may be far from zero.
		shift := rapid.Int64Range(0, 1<<41).Draw(t, "time shift")
		for i := range m.keys {
			m.keys[i] += shift
		}
	}
	return m
}

// drawTargets returns lookups to make: random ones, a forward walk (a
// consumer), a backward walk, the edges, and the keys around the first
// entry of each window (keyAt(i) is entry i's key, as a lookup takes it) in
// random order.
func drawTargets(t *rapid.T, lo, hi int64, n, per int, keyAt func(int) int64) []int64 {
	out := []int64{lo - 1, lo, hi, hi + 1, math.MaxInt64, math.MinInt64}
	var edges []int64
	for i := 0; i < n; i += per {
		edges = append(edges, keyAt(i)-1, keyAt(i), keyAt(i)+1)
	}
	out = append(out, rapid.Permutation(edges).Draw(t, "window edges")...)
	for range rapid.IntRange(0, 40).Draw(t, "random lookups") {
		out = append(out, rapid.Int64Range(lo-5, hi+5).Draw(t, "target"))
	}
	step := max((hi-lo)/int64(rapid.IntRange(1, 200).Draw(t, "walk steps")), 1)
	for x := lo; x <= hi; x += step {
		out = append(out, x)
	}
	for x := hi; x >= lo && x > hi-50*step; x -= step {
		out = append(out, x)
	}
	return out
}

// TestIndexOnFileMatchesMemory checks that lookups in a closed segment's index
// (on file, read through the window cache) give what the same index answered
// in memory, and what a linear scan of the entries gives: after trimming,
// after reopening the file, and after truncating it back into memory.
func TestIndexOnFileMatchesMemory(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fs := vfs.NewMem()
		if rapid.Bool().Draw(t, "time index") {
			checkTimeIndexModes(t, fs)
		} else {
			checkOffsetIndexModes(t, fs)
		}
	})
}

func checkOffsetIndexModes(t *rapid.T, fs *vfs.MemFS) {
	m := drawIndexModel(t, false)
	const path = "/x.index"
	var x offsetIndex
	initIndex(&x.index, fs, path, m.base, offsetEntrySize, 1<<20)
	for i := range m.keys {
		if err := x.add(m.base+m.keys[i], m.vals[i]); err != nil {
			t.Fatal(err)
		}
	}
	lo, hi := m.base, m.base+1
	if len(m.keys) > 0 {
		hi = m.base + m.keys[len(m.keys)-1]
	}
	targets := drawTargets(t, lo, hi, len(m.keys), x.perWindow(), func(i int) int64 { return m.base + m.keys[i] })
	type answer struct{ off, pos int64 }
	inMemory := make([]answer, len(targets))
	for i, target := range targets {
		inMemory[i].off, inMemory[i].pos = x.lookup(target)
	}
	check := func(x *offsetIndex, what string) {
		t.Helper()
		for i, target := range targets {
			off, pos := x.lookup(target)
			wo, wp := m.offsetLookup(target)
			if off != wo || pos != wp || (what == "trimmed" && (off != inMemory[i].off || pos != inMemory[i].pos)) {
				t.Fatalf("%s: lookup(%d) = (%d, %d), want (%d, %d); in memory it was (%d, %d)",
					what, target, off, pos, wo, wp, inMemory[i].off, inMemory[i].pos)
			}
		}
		if got, want := x.lastOffset(), lastOr(m, m.base); got != want {
			t.Fatalf("%s: lastOffset %d, want %d", what, got, want)
		}
	}
	check(&x, "in memory")
	if err := sealIndex(&x.index); err != nil {
		t.Fatal(err)
	}
	assertOnFile(t, &x.index, fs, path, len(m.keys))
	check(&x, "trimmed")

	var y offsetIndex
	if err := openIndexFile(&y.index, fs, path, m.base, offsetEntrySize, 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := checkAllEntries(&y.index); err != nil {
		t.Fatal(err)
	}
	check(&y, "reopened")

	cut := rapid.Int64Range(lo, hi+2).Draw(t, "truncate to")
	truncateThenTrim(t, &y, &y.index, m, cut, true, func(what string) { check(&y, what) })
}

// truncateThenTrim truncates an index reopened from file to cut (and the
// model with it, by key or by value), which brings it back into memory, then
// trims it, calling check after each step.
func truncateThenTrim(t *rapid.T, y interface {
	truncateTo(int64) error
}, ix *index, m *indexModel, cut int64, byKey bool, check func(what string)) {
	t.Helper()
	if err := y.truncateTo(cut); err != nil {
		t.Fatal(err)
	}
	m.cut(cut, byKey)
	if !ix.inMemory || ix.entries() != len(m.keys) {
		t.Fatalf("after truncateTo(%d): in memory %v with %d entries, want %d", cut, ix.inMemory, ix.entries(), len(m.keys))
	}
	check("truncated")
	if err := sealIndex(ix); err != nil {
		t.Fatal(err)
	}
	check("truncated and trimmed")
}

func lastOr(m *indexModel, def int64) int64 {
	if len(m.keys) == 0 {
		return def
	}
	return m.base + m.keys[len(m.keys)-1]
}

func checkTimeIndexModes(t *rapid.T, fs *vfs.MemFS) {
	m := drawIndexModel(t, true)
	const path = "/x.timeindex"
	var x timeIndex
	initIndex(&x.index, fs, path, m.base, timeEntrySize, 1<<20)
	for i := range m.keys {
		if err := x.add(m.keys[i], m.base+m.vals[i]); err != nil {
			t.Fatal(err)
		}
	}
	lo, hi := int64(0), int64(1)
	if len(m.keys) > 0 {
		lo, hi = m.keys[0], m.keys[len(m.keys)-1]
	}
	// A time lookup finds the last entry below its target.
	targets := drawTargets(t, lo, hi, len(m.keys), x.perWindow(), func(i int) int64 { return m.keys[i] + 1 })
	inMemory := make([]int64, len(targets))
	for i, target := range targets {
		inMemory[i] = x.lookup(target)
	}
	check := func(x *timeIndex, what string) {
		t.Helper()
		for i, target := range targets {
			got, want := x.lookup(target), m.timeLookup(target)
			if got != want || (what == "trimmed" && got != inMemory[i]) {
				t.Fatalf("%s: lookup(%d) = %d, want %d; in memory it was %d", what, target, got, want, inMemory[i])
			}
		}
		ts, off, ok := x.last()
		if ok != (len(m.keys) > 0) || (ok && (ts != m.keys[len(m.keys)-1] || off != m.base+m.vals[len(m.vals)-1])) {
			t.Fatalf("%s: last() = %d, %d, %v", what, ts, off, ok)
		}
	}
	check(&x, "in memory")
	if err := sealIndex(&x.index); err != nil {
		t.Fatal(err)
	}
	assertOnFile(t, &x.index, fs, path, len(m.keys))
	check(&x, "trimmed")

	var y timeIndex
	if err := openIndexFile(&y.index, fs, path, m.base, timeEntrySize, 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := checkAllEntries(&y.index); err != nil {
		t.Fatal(err)
	}
	check(&y, "reopened")

	var vlo, vhi int64
	if len(m.vals) > 0 {
		vhi = m.vals[len(m.vals)-1]
	}
	cut := m.base + rapid.Int64Range(vlo, vhi+2).Draw(t, "truncate to")
	truncateThenTrim(t, &y, &y.index, m, cut, false, func(what string) { check(&y, what) })
}

// assertOnFile checks that a trimmed index keeps nothing of its entries on
// the heap and its file holds exactly them.
func assertOnFile(t fataler, x *index, fs vfs.FS, path string, n int) {
	t.Helper()
	if x.inMemory || x.buf != nil || x.entries() != n {
		t.Fatalf("%s: in memory %v, %d buffered bytes, %d entries (want on file, none, %d)",
			path, x.inMemory, len(x.buf), x.entries(), n)
	}
	fi, err := fs.Stat(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if fi.Size() != int64(n*x.entrySize) {
		t.Fatalf("%s: %d bytes, want %d entries of %d", path, fi.Size(), n, x.entrySize)
	}
}

// TestIndexOnFileConcurrentLookups runs lookups on several closed indexes at
// once (they share the window cache) and checks every answer.
func TestIndexOnFileConcurrentLookups(t *testing.T) {
	fs := vfs.NewMem()
	const nIdx, entries = 4, 5000
	idx := make([]*offsetIndex, nIdx)
	for k := range idx {
		x := new(offsetIndex)
		base := int64(k) * 1_000_000
		initIndex(&x.index, fs, fmt.Sprintf("/%d.index", k), base, offsetEntrySize, 1<<20)
		for i := 0; i < entries; i++ {
			if err := x.add(base+int64(3*i+1), int64(100*i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := sealIndex(&x.index); err != nil {
			t.Fatal(err)
		}
		idx[k] = x
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			x := idx[g%nIdx]
			for j := 0; j < 3*entries; j += 1 + g {
				target := x.base + int64(j)
				i := (j - 1) / 3 // last entry with 3i+1 <= j
				if j == 0 {
					i = -1
				}
				wantOff, wantPos := x.base, int64(0)
				if i >= 0 {
					wantOff, wantPos = x.base+int64(3*i+1), int64(100*i)
				}
				if off, pos := x.lookup(target); off != wantOff || pos != wantPos {
					t.Errorf("index %d: lookup(%d) = (%d, %d), want (%d, %d)", g%nIdx, target, off, pos, wantOff, wantPos)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

// TestIndexOnFileUnreadable: a lookup in an index whose file is gone (its
// segment was deleted, its files renamed, while a reader held it) answers
// "scan from the start".
func TestIndexOnFileUnreadable(t *testing.T) {
	fs := vfs.NewMem()
	var x offsetIndex
	initIndex(&x.index, fs, "/c.index", 0, offsetEntrySize, 1<<20)
	for i := 1; i <= 2000; i++ {
		if err := x.add(int64(i), int64(i*10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := sealIndex(&x.index); err != nil {
		t.Fatal(err)
	}
	if err := fs.Rename("/c.index", "/c.index.deleted"); err != nil {
		t.Fatal(err)
	}
	if off, pos := x.lookup(1000); off != 0 || pos != 0 {
		t.Fatalf("lookup on a renamed file = (%d, %d), want (0, 0)", off, pos)
	}
	// The last entry is known without reading.
	if got := x.lastOffset(); got != 2000 {
		t.Fatalf("lastOffset %d", got)
	}
}

// TestIndexOnFileReads bounds the reads lookups cost: a consumer walking a
// closed segment forward reads each window of its index once; a lookup
// anywhere reads O(log windows) entries and one window.
func TestIndexOnFileReads(t *testing.T) {
	reads := vfs.NewCountingInjector(vfs.OpRead)
	fs := vfs.NewInjecting(vfs.NewMem(), reads)
	const entries = 100_000
	var x offsetIndex
	initIndex(&x.index, fs, "/r.index", 0, offsetEntrySize, 1<<20)
	for i := 0; i < entries; i++ {
		if err := x.add(int64(2*i+1), int64(10*i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := sealIndex(&x.index); err != nil {
		t.Fatal(err)
	}
	windows := int64((entries + x.perWindow() - 1) / x.perWindow())
	start := reads.Count()
	for off := int64(1); off < 2*entries; off += 3 {
		if got, _ := x.lookup(off); got != off-(off-1)%2 {
			t.Fatalf("lookup(%d) = %d", off, got)
		}
	}
	if n := reads.Count() - start; n > windows+16 {
		t.Fatalf("a forward walk over %d windows made %d reads", windows, n)
	}
	perLookup := int64(2)
	for w := windows; w > 1; w = (w + 1) / 2 {
		perLookup++
	}
	start = reads.Count()
	const lookups = 1000
	for i := int64(0); i < lookups; i++ {
		off := (i*7919*2 + 1) % (2 * entries) // scattered, odd: an entry's key
		if got, _ := x.lookup(off); got != off {
			t.Fatalf("lookup(%d) = %d", off, got)
		}
	}
	if n := reads.Count() - start; n > lookups*perLookup {
		t.Fatalf("%d scattered lookups made %d reads, want at most %d each", lookups, n, perLookup)
	}
}

// sealIndex seals x and closes its file.
func sealIndex(x *index) error {
	f, err := x.seal()
	if err != nil {
		return err
	}
	return f.Close()
}

// checkAllEntries checks every entry of x is in order.
func checkAllEntries(x *index) error {
	var prev []byte
	return x.eachEntry(func(i int, e []byte) error {
		if !x.inOrder(prev, e) {
			return fmt.Errorf("%s: entry %d out of order", x.path, i)
		}
		prev = append(prev[:0], e...)
		return nil
	})
}
