package quorum

import "fmt"

// NoLeader is the node id meaning "no leader known".
const NoLeader int32 = -1

// RaftID is the raft id of Kafka node id n: n+1, since raft reserves 0 and
// Kafka allows node.id 0. Raft ids are never reused (raft's doc.go: a given
// id must be used only once even after the node is removed).
func RaftID(n int32) uint64 { return uint64(n) + 1 }

// NodeID is the Kafka node id of raft id r (NoLeader for 0, raft's None).
func NodeID(r uint64) int32 {
	if r == 0 {
		return NoLeader
	}
	return int32(r - 1)
}

// EntryID names a raft log entry: its index and the term it was written in.
// Two logs holding the same EntryID hold the same entry and the same log
// before it (raft's Log Matching property).
type EntryID struct {
	Index, Term uint64
}

func (id EntryID) String() string { return fmt.Sprintf("%d@%d", id.Index, id.Term) }

// Entry is a committed normal entry handed to the state machine.
type Entry struct {
	EntryID
	Data []byte
}
