package replica

import (
	"errors"
	"fmt"

	"github.com/gregor-broker/gregor/internal/log"
)

// errNotFollowing: the partition no longer follows in the epoch a fetch
// was made for (it leads now, follows another leader or epoch, or is gone);
// the fetcher drops what it got.
var errNotFollowing = errors.New("no longer following in that leader epoch")

// following reports whether p follows leader in leaderEpoch; roleMu is held.
func (p *Partition) followingLocked(leaderEpoch int32) bool {
	return !p.role.Leader && p.role.LeaderEpoch == leaderEpoch
}

// appendAsFollower appends the leader's batches as they are (offsets and
// leader epochs kept; OriginReplication) while p still follows in
// leaderEpoch: the role's read lock is held across the append, so nothing
// fetched in an epoch lands after the partition left it. The log dir's
// free-space reserve admits them first, as it does a client's: refused, the
// error is log.ErrNoSpace and nothing is written.
func (p *Partition) appendAsFollower(records []byte, leaderEpoch int32) (log.AppendResult, error) {
	if err := p.admit(len(records)); err != nil {
		return log.AppendResult{}, err
	}
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if !p.followingLocked(leaderEpoch) {
		return log.AppendResult{}, errNotFollowing
	}
	return p.Log.Append(records, log.OriginReplication, leaderEpoch)
}

// truncateAsFollower cuts p's log to offset while p follows in leaderEpoch
// (truncation by leader epoch, never by high watermark: KIP-101).
func (p *Partition) truncateAsFollower(offset int64, leaderEpoch int32) error {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if !p.followingLocked(leaderEpoch) {
		return errNotFollowing
	}
	return p.Log.TruncateTo(offset)
}

// restartAsFollower empties p's log and restarts it at offset, past its end:
// the leader's log starts beyond everything p holds.
func (p *Partition) restartAsFollower(offset int64, leaderEpoch int32) error {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if !p.followingLocked(leaderEpoch) {
		return errNotFollowing
	}
	return p.Log.TruncateFullyAndStartAt(offset)
}

// followLeader takes the leader's high watermark (bounded by p's own log
// end offset, so it can go down after a leader change) and log start offset
// (Kafka's processPartitionData), while p follows in leaderEpoch.
func (p *Partition) followLeader(leaderEpoch int32, hw, logStart int64) error {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if !p.followingLocked(leaderEpoch) {
		return errNotFollowing
	}
	p.Log.SetHighWatermark(hw)
	if ls := min(logStart, p.Log.HighWatermark()); ls > p.Log.LogStartOffset() {
		if _, err := p.Log.IncrementLogStartOffset(ls); err != nil {
			return fmt.Errorf("moving the log start offset to the leader's %d: %w", ls, err)
		}
	}
	return nil
}
