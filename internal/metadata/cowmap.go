package metadata

import (
	"hash/maphash"
	"maps"
)

// cowShards is how many maps a cowMap splits its keys over: a change copies
// one of them, so an image with n topics costs n/cowShards pointer copies
// per changed topic instead of n.
const cowShards = 256

var cowSeed = maphash.MakeSeed()

// cowMap is an immutable map whose writers copy only the shard they change,
// so that images sharing most of their topics share most of the maps too.
type cowMap[K comparable, V any] struct {
	shards *[cowShards]map[K]V
	n      int
}

func newCowMap[K comparable, V any]() cowMap[K, V] {
	return cowMap[K, V]{shards: new([cowShards]map[K]V)}
}

func shardOf[K comparable](k K) int { return int(maphash.Comparable(cowSeed, k) % cowShards) }

func (m cowMap[K, V]) get(k K) V { return m.shards[shardOf(k)][k] }

func (m cowMap[K, V]) len() int { return m.n }

// each calls f for every entry, in no particular order.
func (m cowMap[K, V]) each(f func(K, V)) {
	for _, s := range m.shards {
		for k, v := range s {
			f(k, v)
		}
	}
}

// cowWriter builds the next version of a cowMap within one Apply: the first
// write to a shard copies it, later writes change the copy.
type cowWriter[K comparable, V any] struct {
	m     *cowMap[K, V]
	owned [cowShards]bool
}

// writer makes m (a field of the image being built) writable, sharing every
// shard with the map it was copied from until that shard is written.
func writer[K comparable, V any](m *cowMap[K, V]) *cowWriter[K, V] {
	shards := *m.shards
	m.shards = &shards
	return &cowWriter[K, V]{m: m}
}

func (w *cowWriter[K, V]) shard(k K) map[K]V {
	i := shardOf(k)
	if !w.owned[i] {
		w.m.shards[i] = maps.Clone(w.m.shards[i])
		if w.m.shards[i] == nil {
			w.m.shards[i] = map[K]V{}
		}
		w.owned[i] = true
	}
	return w.m.shards[i]
}

func (w *cowWriter[K, V]) set(k K, v V) {
	s := w.shard(k)
	if _, ok := s[k]; !ok {
		w.m.n++
	}
	s[k] = v
}

func (w *cowWriter[K, V]) delete(k K) {
	s := w.shard(k)
	if _, ok := s[k]; ok {
		w.m.n--
		delete(s, k)
	}
}
