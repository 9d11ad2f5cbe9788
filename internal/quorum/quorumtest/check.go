package quorumtest

import (
	"bytes"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/gregor-broker/gregor/internal/quorum"
)

// simObserver checks each node's apply stream against the common history.
type simObserver struct {
	s *Sim
	n *Node
}

func (o *simObserver) Applied(id quorum.EntryID) {
	s, n := o.s, o.n
	if id.Index != n.applied.Index+1 {
		s.Fatalf("node %d applied %v after %v: not the next index", n.ID, id, n.applied)
	}
	if h, ok := s.hist[id.Index]; ok && h.term != id.Term {
		s.Fatalf("node %d applied %v but index %d committed in term %d", n.ID, id, id.Index, h.term)
	} else if !ok {
		s.hist[id.Index] = histEntry{term: id.Term}
	}
	n.applied = id
	for _, f := range s.onApplied {
		f(n.ID, id)
	}
}

func (o *simObserver) Restored(id quorum.EntryID) {
	s, n := o.s, o.n
	if id.Index <= n.applied.Index {
		s.Fatalf("node %d restored snapshot %v at or below its applied %v", n.ID, id, n.applied)
	}
	if h, ok := s.hist[id.Index]; ok && h.term != id.Term {
		s.Fatalf("node %d restored snapshot %v but index %d committed in term %d", n.ID, id, id.Index, h.term)
	}
	n.applied = id
	s.Installed++
	s.Tracef("node %d installed snapshot %v", n.ID, id)
}

func (o *simObserver) ReadIndex([]byte, uint64) {}

func (o *simObserver) LeaderChanged(l quorum.Leadership) {
	s, n := o.s, o.n
	s.Tracef("node %d: term %d leader %d local=%v", n.ID, l.Term, l.Leader, l.Local)
	if !l.Local {
		return
	}
	if prev, ok := s.termLeader[l.Term]; ok && prev != n.ID {
		s.Fatalf("two leaders in term %d: nodes %d and %d", l.Term, prev, n.ID)
	} else if !ok {
		s.Elections++
	}
	s.termLeader[l.Term] = n.ID
}

// CheckedSM checks the data of every applied entry against the common
// history and, for state machines that can list what they hold, that a
// restored snapshot holds exactly the history up to its index.
type CheckedSM struct {
	s     *Sim
	node  *Node
	inner quorum.StateMachine
}

// Lister is implemented by state machines that can list the entries they
// applied (LogSM does), so the Sim can check restored snapshots.
type Lister interface {
	Entries() []quorum.Entry
}

func (c *CheckedSM) Apply(e quorum.Entry) error {
	s := c.s
	h, ok := s.hist[e.Index]
	switch {
	case !ok:
		s.hist[e.Index] = histEntry{term: e.Term, data: bytes.Clone(e.Data), visible: true}
	case h.term != e.Term:
		s.Fatalf("node %d applied %v but index %d committed in term %d", c.node.ID, e.EntryID, e.Index, h.term)
	case h.visible && !bytes.Equal(h.data, e.Data):
		s.Fatalf("node %d applied %q at %v but %q committed there", c.node.ID, e.Data, e.EntryID, h.data)
	case !h.visible:
		h.data, h.visible = bytes.Clone(e.Data), true
		s.hist[e.Index] = h
	}
	return c.inner.Apply(e)
}

func (c *CheckedSM) Snapshot() ([]byte, error) { return c.inner.Snapshot() }

func (c *CheckedSM) Restore(id quorum.EntryID, data []byte) error {
	if err := c.inner.Restore(id, data); err != nil {
		return err
	}
	if !c.node.Up() {
		// The restore at open, from the node's own newest snapshot: where
		// its applied sequence restarts (a snapshot from the leader is
		// checked by simObserver.Restored).
		c.node.applied = id
	}
	l, ok := c.inner.(Lister)
	if !ok {
		return nil
	}
	s := c.s
	got := l.Entries()
	for _, e := range got {
		if h, ok := s.hist[e.Index]; ok && (h.term != e.Term || (h.visible && !bytes.Equal(h.data, e.Data))) {
			s.Fatalf("node %d restored snapshot %v holding %q at %v, but %q committed there in term %d",
				c.node.ID, id, e.Data, e.EntryID, h.data, h.term)
		}
	}
	// Everything known committed and visible up to id must be in it.
	k := 0
	for i := uint64(1); i <= id.Index; i++ {
		h, ok := s.hist[i]
		if !ok || !h.visible {
			continue
		}
		for k < len(got) && got[k].Index < i {
			k++
		}
		if k == len(got) || got[k].Index != i {
			s.Fatalf("node %d restored snapshot %v without entry %d (%q), committed in term %d", c.node.ID, id, i, h.data, h.term)
		}
	}
	return nil
}

func (s *Sim) check() {
	for _, f := range s.checks {
		if err := f(); err != nil {
			s.Fatalf("%v", err)
		}
	}
}

// Inner is the state machine the Sim wraps.
func (c *CheckedSM) Inner() quorum.StateMachine { return c.inner }

// notePromise records what a message tells its receiver is durable: the
// sender's term (pre-vote messages carry a term not yet adopted) and a vote.
func (s *Sim) notePromise(n *Node, m *pb.Message) {
	switch m.GetType() {
	case pb.MsgPreVote, pb.MsgPreVoteResp:
		return
	}
	if t := m.GetTerm(); t > n.promisedTerm {
		n.promisedTerm, n.promisedVote = t, quorum.NoLeader
	}
	if m.GetType() == pb.MsgVoteResp && !m.GetReject() && m.GetTerm() == n.promisedTerm {
		n.promisedVote = quorum.NodeID(m.GetTo())
	}
}

// checkPromises checks that a restarted node remembers what it promised
// before it crashed: the term, and whom it voted for in it.
func (s *Sim) checkPromises(n *Node) {
	st := n.Peer.Status()
	if st.Term < n.promisedTerm {
		s.Fatalf("node %d restarted in term %d but had sent messages in term %d", n.ID, st.Term, n.promisedTerm)
	}
	if st.Term == n.promisedTerm && n.promisedVote != quorum.NoLeader && st.Vote != n.promisedVote {
		s.Fatalf("node %d restarted in term %d having forgotten its vote for node %d (vote now %d)", n.ID, st.Term, n.promisedVote, st.Vote)
	}
}
