package quorum

import (
	"slices"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"
)

// Status is one node's view of the quorum, for DescribeQuorum, the admin
// API and tests.
type Status struct {
	NodeID int32
	Leadership
	Role          string // "leader", "follower", "candidate", "pre-candidate"
	Vote          int32  // node voted for in Term, NoLeader if none
	Commit        uint64 // highest index known committed
	Applied       uint64 // highest index applied to the state machine
	LastIndex     uint64 // last index in the durable log
	SnapshotIndex uint64 // newest snapshot taken or installed
	Voters        []int32
	Learners      []int32
	// Replicas is the leader's view of every member's log (empty on
	// followers): how far each has replicated, as DescribeQuorum reports.
	Replicas []ReplicaProgress
}

// ReplicaProgress is the leader's record of one member's log.
type ReplicaProgress struct {
	NodeID  int32
	Learner bool
	// DirectoryID is the member's metadata directory id (raft-meta's
	// directory.id, 32 hex digits; DescribeQuorum's ReplicaDirectoryId):
	// this node's own, and each peer's as it first connected. Empty when
	// unknown; only a Node fills it in.
	DirectoryID string
	// Match is the highest index known to be in the member's log (its
	// log end offset, in DescribeQuorum's words); Next the next index the
	// leader will send it.
	Match, Next uint64
	// State is raft's replication state: "StateProbe", "StateReplicate"
	// or "StateSnapshot".
	State string
	// RecentActive: the member was heard from within the last election
	// timeout.
	RecentActive bool
	// LastContact is when the leader last received a message from the
	// member, LastCaughtUp when the member's Match last reached the
	// leader's last index (checked every tick): DescribeQuorum's
	// LastFetchTimestamp and LastCaughtUpTimestamp. Zero if unknown; only
	// a Node fills them in.
	LastContact, LastCaughtUp time.Time
}

var roles = map[raft.StateType]string{
	raft.StateLeader:       "leader",
	raft.StateFollower:     "follower",
	raft.StateCandidate:    "candidate",
	raft.StatePreCandidate: "pre-candidate",
}

// Status returns the Peer's current view.
func (p *Peer) Status() Status {
	rs := p.rn.Status()
	s := Status{
		NodeID:        p.cfg.NodeID,
		Leadership:    Leadership{Term: rs.GetTerm(), Leader: NodeID(rs.Lead), Local: rs.RaftState == raft.StateLeader},
		Role:          roles[rs.RaftState],
		Vote:          NodeID(rs.GetVote()),
		Commit:        rs.GetCommit(),
		Applied:       p.applied.Index,
		LastIndex:     p.lastIndex(),
		SnapshotIndex: p.snapshotted,
		Voters:        voters(p.cs),
	}
	for _, l := range p.cs.GetLearners() {
		s.Learners = append(s.Learners, NodeID(l))
	}
	slices.Sort(s.Learners)
	ids := make([]uint64, 0, len(rs.Progress))
	for id := range rs.Progress {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		pr := rs.Progress[id]
		s.Replicas = append(s.Replicas, replicaProgress(id, pr))
	}
	return s
}

func replicaProgress(id uint64, pr tracker.Progress) ReplicaProgress {
	return ReplicaProgress{NodeID: NodeID(id), Learner: pr.IsLearner, Match: pr.Match, Next: pr.Next,
		State: pr.State.String(), RecentActive: pr.RecentActive}
}

// visitCaughtUp calls f with the raft id of every member whose log reaches
// the leader's last index (nothing on a follower).
func (p *Peer) visitCaughtUp(f func(id uint64)) {
	if !p.lead.Local {
		return
	}
	last := p.lastIndex()
	p.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
		if pr.Match >= last {
			f(id)
		}
	})
}
