package cleaner

import (
	"hash/maphash"
	"math/bits"
)

// bytesPerEntry is what one key costs in the offset map: a 128-bit key hash
// and an 8-byte offset, as in Kafka's SkimpyOffsetMap (MD5 + offset).
const bytesPerEntry = 24

// offsetMap is the key-hash → last offset table pass 1 fills: Kafka's
// SkimpyOffsetMap. Keys are not stored, only a 128-bit hash of them (two
// independently seeded 64-bit hashes), so two keys collide only with
// negligible probability. It is open addressing with linear probing over a
// table that starts small and doubles up to maxSlots (the slots the dedupe
// buffer pays for), so a round with few keys touches little memory. Once
// maxEntries keys are mapped (maxSlots × log.cleaner.io.buffer.load.factor)
// the map is full. One worker owns it.
type offsetMap struct {
	slots      []slot
	maxSlots   int
	maxEntries int
	entries    int
	latest     int64 // largest offset the map covers (Kafka's latestOffset)
	seed1      maphash.Seed
	seed2      maphash.Seed
}

// slot holds a key hash and offset+1 (0: empty).
type slot struct {
	h1, h2 uint64
	off    int64
}

const initialSlots = 1 << 10

// growLoad is how full a table below maxSlots may get before it doubles.
const growLoad = 0.7

func newOffsetMap(memory int64, loadFactor float64) *offsetMap {
	maxSlots := int(max(memory/bytesPerEntry, 2))
	if loadFactor <= 0 || loadFactor > 1 {
		loadFactor = 0.9
	}
	maxEntries := min(int(float64(maxSlots)*loadFactor), maxSlots-1)
	return &offsetMap{maxSlots: maxSlots, maxEntries: max(maxEntries, 1), latest: -1,
		seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed()}
}

// reset empties the map for a new round starting at offset start.
func (m *offsetMap) reset(start int64) {
	clear(m.slots)
	m.entries = 0
	m.latest = start - 1
}

// full reports whether the map holds as many keys as it may.
func (m *offsetMap) full() bool { return m.entries >= m.maxEntries }

// utilization is the share of the map's capacity in use (Kafka's
// max-buffer-utilization-percent).
func (m *offsetMap) utilization() float64 { return float64(m.entries) / float64(m.maxSlots) }

func (m *offsetMap) hash(key []byte) (uint64, uint64) {
	return maphash.Bytes(m.seed1, key), maphash.Bytes(m.seed2, key)
}

// find returns the slot index for the hash: its own or the empty one where
// it would go.
func (m *offsetMap) find(h1, h2 uint64) int {
	n := uint64(len(m.slots))
	hi, _ := bits.Mul64(h1, n)
	for i := hi; ; {
		s := &m.slots[i]
		if s.off == 0 || (s.h1 == h1 && s.h2 == h2) {
			return int(i)
		}
		if i++; i == n {
			i = 0
		}
	}
}

// put maps key to offset. A key already present is always updated; a new
// key is refused (false) once the map is full.
func (m *offsetMap) put(key []byte, offset int64) bool {
	if len(m.slots) == 0 {
		m.slots = make([]slot, min(initialSlots, m.maxSlots))
	}
	h1, h2 := m.hash(key)
	i := m.find(h1, h2)
	if m.slots[i].off != 0 {
		m.slots[i].off = offset + 1
		return true
	}
	if m.entries >= m.maxEntries {
		return false
	}
	if len(m.slots) < m.maxSlots && float64(m.entries+1) > float64(len(m.slots))*growLoad {
		m.grow()
		i = m.find(h1, h2)
	}
	m.slots[i] = slot{h1: h1, h2: h2, off: offset + 1}
	m.entries++
	return true
}

func (m *offsetMap) grow() {
	old := m.slots
	m.slots = make([]slot, min(2*len(old), m.maxSlots))
	for _, s := range old {
		if s.off != 0 {
			m.slots[m.find(s.h1, s.h2)] = s
		}
	}
}

// get returns the offset mapped for key, -1 if none.
func (m *offsetMap) get(key []byte) int64 {
	if m.entries == 0 {
		return -1
	}
	h1, h2 := m.hash(key)
	return m.slots[m.find(h1, h2)].off - 1
}

// memoryBytes is the table's current footprint.
func (m *offsetMap) memoryBytes() int64 { return int64(len(m.slots)) * bytesPerEntry }
