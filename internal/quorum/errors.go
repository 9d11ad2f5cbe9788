package quorum

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFormatted: the directory holds no raft state; format it with
	// Bootstrap (every initial voter, the same voters and data).
	ErrNotFormatted = errors.New("quorum: metadata directory is not formatted")
	// ErrAlreadyFormatted: Bootstrap found raft state in the directory.
	ErrAlreadyFormatted = errors.New("quorum: metadata directory is already formatted")
	// ErrVoteAmnesia: part of a voter's durable raft state (raft-meta, WAL,
	// snapshot) is missing. Starting would let it vote twice in a term it
	// already voted in, so it refuses; the node must be removed from the
	// quorum and re-added with a fresh id, or the whole cluster re-formatted.
	ErrVoteAmnesia = errors.New("quorum: raft state of a voter is missing (vote amnesia)")
	// ErrCorrupt: durable raft state that cannot be trusted.
	ErrCorrupt = errors.New("quorum: corrupt raft state")
	// ErrNotLeader is wrapped by *NotLeaderError: proposals are accepted only
	// by the leader (forwarding is disabled).
	ErrNotLeader = errors.New("quorum: not the raft leader")
	// ErrProposalDropped: the leader did not append the proposal (a leader
	// transfer is in progress or too much is uncommitted). Retry later.
	ErrProposalDropped = errors.New("quorum: proposal dropped")
	// ErrProposalLost: the proposal was appended but can never commit: a
	// different entry committed at its index, or a later term committed
	// below it.
	ErrProposalLost = errors.New("quorum: proposal lost")
	// ErrProposalUnknown: a snapshot from a later term was installed over
	// the proposal's index, so whether it committed cannot be told here.
	ErrProposalUnknown = errors.New("quorum: proposal outcome unknown")
	// ErrTooLarge: a proposal above Config.MaxEntryBytes, or empty.
	ErrTooLarge = errors.New("quorum: proposal too large")
	// ErrEmptyProposal: an empty proposal (raft uses empty entries itself).
	ErrEmptyProposal = errors.New("quorum: empty proposal")
	// ErrStopped: the node is closed or failed; Node.Err says why.
	ErrStopped = errors.New("quorum: node stopped")
)

// NotLeaderError says who the leader is, as far as this node knows.
type NotLeaderError struct {
	Leader int32 // node id, or -1 if none is known
	Term   uint64
}

func (e *NotLeaderError) Error() string {
	if e.Leader < 0 {
		return fmt.Sprintf("quorum: not the raft leader (term %d, no leader known)", e.Term)
	}
	return fmt.Sprintf("quorum: not the raft leader (term %d, leader is node %d)", e.Term, e.Leader)
}

func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }

func isNotFormatted(err error) bool { return errors.Is(err, ErrNotFormatted) }
