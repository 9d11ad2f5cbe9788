package quorumtest

import (
	"container/heap"
	"time"
)

type evKind uint8

const (
	evTick evKind = iota
	evDeliver
	evUnreachable
	evSnapStatus
)

// event is addressed to node to in incarnation inc: a crash in between
// makes it moot.
type event struct {
	at      time.Duration
	tie     uint64 // seeded: equal times run in a random but replayable order
	seq     uint64
	kind    evKind
	to      int32
	inc     int
	from    int32
	fromInc int
	msg     []byte
	snap    bool
	ok      bool
}

type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	if h[i].tie != h[j].tie {
		return h[i].tie < h[j].tie
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

func (s *Sim) schedule(after time.Duration, e event) { s.scheduleAt(s.now+after, e) }

func (s *Sim) scheduleAt(at time.Duration, e event) {
	s.seq++
	e.at, e.seq, e.tie = at, s.seq, s.rng.Uint64()
	heap.Push(&s.events, &e)
}
