package group

import "container/heap"

type timerKind uint8

const (
	// timerHeartbeat expires a member (or pending member) whose session ended.
	timerHeartbeat timerKind = iota
	// timerJoin ends a join phase (rebalance timeout).
	timerJoin
	// timerInitialJoin ends (or extends) an Empty group's initial delay.
	timerInitialJoin
	// timerSync removes members that did not SyncGroup in time.
	timerSync
	// timerExpireOffsets runs the offset expiration check.
	timerExpireOffsets
)

type timerKey struct {
	kind   timerKind
	group  string
	member string
}

type timerEntry struct {
	at  int64 // ms
	seq uint64
	key timerKey
}

// timers is a deterministic keyed timer set: scheduling a key replaces its
// previous deadline; equal deadlines fire in scheduling order. Cancelled and
// replaced entries stay in the heap until they surface (lazy deletion).
type timers struct {
	live map[timerKey]timerEntry // key → its current entry
	h    timerHeap
	seq  uint64
}

func newTimers() *timers { return &timers{live: map[timerKey]timerEntry{}} }

func (t *timers) schedule(k timerKey, at int64) {
	t.seq++
	e := timerEntry{at: at, seq: t.seq, key: k}
	t.live[k] = e
	heap.Push(&t.h, e)
	if len(t.h) > 4*len(t.live)+64 {
		// Mostly stale entries (every heartbeat reschedules): rebuild.
		t.h = t.h[:0]
		for _, e := range t.live {
			t.h = append(t.h, e)
		}
		heap.Init(&t.h)
	}
}

func (t *timers) cancel(k timerKey) { delete(t.live, k) }

func (t *timers) prune() {
	for len(t.h) > 0 {
		e := t.h[0]
		if cur, ok := t.live[e.key]; ok && cur.seq == e.seq {
			return
		}
		heap.Pop(&t.h)
	}
}

// next is the earliest live deadline.
func (t *timers) next() (int64, bool) {
	t.prune()
	if len(t.h) == 0 {
		return 0, false
	}
	return t.h[0].at, true
}

// popDue removes and returns the earliest live timer due at now.
func (t *timers) popDue(now int64) (timerKey, bool) {
	t.prune()
	if len(t.h) == 0 || t.h[0].at > now {
		return timerKey{}, false
	}
	e := heap.Pop(&t.h).(timerEntry)
	delete(t.live, e.key)
	return e.key, true
}

type timerHeap []timerEntry

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timerEntry)) }
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
