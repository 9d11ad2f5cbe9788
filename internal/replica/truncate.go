package replica

// EpochEndOffset is a leader's answer about a leader epoch: the largest
// epoch it knows that is not above the one asked about, and where that epoch
// ends in its log (Fetch's DivergingEpoch, OffsetForLeaderEpoch's answer).
// -1 means undefined.
type EpochEndOffset struct {
	Epoch     int32
	EndOffset int64
}

// Truncation is where a follower cuts its log to match its leader's, and
// whether that settles it (false: the follower did not know the epoch the
// leader answered with; it cut to the end of the largest epoch it knows below
// that one and asks again, KIP-279).
type Truncation struct {
	Offset   int64
	Complete bool
}

// truncationFor is Kafka's AbstractFetcherThread.getOffsetTruncationState:
// where to truncate, given the leader's answer, the follower's own
// endOffsetFor (its leader-epoch cache), its log end offset and its current
// fetch offset.
func truncationFor(leader EpochEndOffset, local func(epoch int32) (int32, int64), leo, fetchOffset int64) Truncation {
	switch {
	case leader.EndOffset < 0:
		return Truncation{Offset: fetchOffset, Complete: true}
	case leader.Epoch < 0:
		return Truncation{Offset: min(leader.EndOffset, leo), Complete: true}
	}
	epoch, end := local(leader.Epoch)
	switch {
	case epoch < 0 || end < 0:
		// The follower holds no epoch at or below the leader's: what the
		// leader has up to its end offset is all there is to keep.
		return Truncation{Offset: min(leader.EndOffset, leo), Complete: true}
	case epoch != leader.Epoch:
		return Truncation{Offset: min(end, leo), Complete: false}
	}
	return Truncation{Offset: min(leader.EndOffset, end, leo), Complete: true}
}
