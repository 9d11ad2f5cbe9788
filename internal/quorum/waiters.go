package quorum

import (
	"context"
	"encoding/binary"
	"slices"
)

// waiter is a WaitApplied (committed false: done when applied ≥ id.Index)
// or a WaitCommitted (done when the fate of entry id is known). Waiters
// live on the raft loop.
type waiter struct {
	ctx       context.Context
	id        EntryID
	committed bool
	done      chan error
}

func (w *waiter) finish(err error) { w.done <- err }

// onApplied decides a waiter given that entry e was just applied. For a
// WaitCommitted: the entry at its index decides by its term; an entry below
// its index from a later term dooms it (that term's leader did not have it,
// and the committed log can now never hold it: log terms only grow).
func (w *waiter) onApplied(e EntryID) (error, bool) {
	if !w.committed {
		return nil, e.Index >= w.id.Index
	}
	switch {
	case e.Index == w.id.Index && e.Term == w.id.Term:
		return nil, true
	case e.Index == w.id.Index, e.Index < w.id.Index && e.Term > w.id.Term:
		return ErrProposalLost, true
	}
	return nil, false
}

// onRestored decides a waiter given a snapshot installed at s. A snapshot
// past a WaitCommitted's index tells its fate only when its term says so:
// the same term means the same leader wrote both (committed), an older
// term means the index holds an older entry (lost), a newer term cannot
// tell.
func (w *waiter) onRestored(s EntryID) (error, bool) {
	if !w.committed {
		return nil, s.Index >= w.id.Index
	}
	switch {
	case s.Index < w.id.Index:
		if s.Term > w.id.Term {
			return ErrProposalLost, true
		}
		return nil, false
	case s.Term == w.id.Term:
		return nil, true
	case s.Term < w.id.Term:
		return ErrProposalLost, true
	}
	return ErrProposalUnknown, true
}

// resolveNow decides a new waiter against what was applied before it came.
func (n *Node) resolveNow(w *waiter) bool {
	if !w.committed {
		if n.last.Index >= w.id.Index {
			w.finish(nil)
			return true
		}
		return false
	}
	if n.last.Index < w.id.Index {
		if err, ok := w.onApplied(n.last); ok {
			w.finish(err)
			return true
		}
		return false
	}
	// Already past its index: look the entry's term up in the log.
	if term, err := n.peer.st.ms.Term(w.id.Index); err == nil {
		err, _ := w.onApplied(EntryID{Index: w.id.Index, Term: term})
		w.finish(err)
		return true
	}
	err, _ := w.onRestored(n.last)
	w.finish(err)
	return true
}

func (n *Node) resolve(decide func(*waiter) (error, bool)) {
	n.waiters = slices.DeleteFunc(n.waiters, func(w *waiter) bool {
		err, ok := decide(w)
		if ok {
			w.finish(err)
		}
		return ok
	})
}

func dropDone(ws []*waiter) []*waiter {
	return slices.DeleteFunc(ws, func(w *waiter) bool { return w.ctx.Err() != nil })
}

// nodeObserver is the Node's Observer of its Peer; it runs on the raft loop
// (and, for what NewPeer does, in Open before the loop starts).
type nodeObserver struct{ n *Node }

func (o nodeObserver) Applied(id EntryID) {
	n := o.n
	n.last = id
	n.applied.Store(id.Index)
	n.resolve(func(w *waiter) (error, bool) { return w.onApplied(id) })
}

func (o nodeObserver) Restored(id EntryID) {
	n := o.n
	n.last = id
	n.applied.Store(id.Index)
	n.resolve(func(w *waiter) (error, bool) { return w.onRestored(id) })
}

func (o nodeObserver) ReadIndex(rctx []byte, index uint64) {
	n := o.n
	if len(rctx) != 8 {
		return
	}
	id := binary.BigEndian.Uint64(rctx)
	if r, ok := n.reads[id]; ok {
		delete(n.reads, id)
		r.done <- index
	}
}

func (o nodeObserver) LeaderChanged(l Leadership) {
	n := o.n
	n.leadMu.Lock()
	n.lead = l
	close(n.leadC)
	n.leadC = make(chan struct{})
	n.leadMu.Unlock()
	if l.Leader != NoLeader {
		n.retryReads()
	}
}
