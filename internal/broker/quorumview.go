package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/gregor-broker/gregor/internal/admin"
)

// quorumViewTimeout bounds how long the admin API waits for the quorum
// leader's account of the voters.
const quorumViewTimeout = 2 * time.Second

// quorumView is the metadata quorum for the admin API and the console: this
// node's own raft state, and the leader's DescribeQuorum answer (through
// the controller router, as a client's DescribeQuorum goes), each voter's
// lag being how far its log end is behind the leader's.
func (b *Broker) quorumView(ctx context.Context) *admin.QuorumView {
	ctx, cancel := context.WithTimeout(ctx, quorumViewTimeout)
	defer cancel()
	v := &admin.QuorumView{LeaderID: -1, Voters: []admin.VoterView{}}
	if st, err := b.node.Raft().Status(ctx); err == nil {
		v.Local = admin.LocalQuorumView{Role: st.Role, Term: st.Term, CommitIndex: st.Commit, AppliedIndex: st.Applied,
			LastIndex: st.LastIndex, SnapshotIndex: st.SnapshotIndex}
	}
	if at, index := b.MetadataCaughtUp(); !at.IsZero() {
		v.Local.CaughtUpAt, v.Local.CaughtUpIndex = timeOrNil(at), index
	}
	d, err := b.ctrl.DescribeQuorum(ctx)
	if err != nil {
		v.Error = fmt.Sprintf("the quorum leader's account of the voters could not be had within %s: %v", quorumViewTimeout, err)
		for _, id := range sortedIDs(b.layout.Voters) {
			v.Voters = append(v.Voters, admin.VoterView{NodeID: id, Endpoint: b.layout.Voters[id], LogEndOffset: -1, Lag: -1})
		}
		return v
	}
	v.LeaderID, v.LeaderEpoch, v.HighWatermark = d.LeaderID, int64(d.LeaderEpoch), d.HighWatermark
	var leaderEnd int64 = -1
	for _, r := range d.Voters {
		if r.NodeID == d.LeaderID {
			leaderEnd = r.LogEndOffset
		}
	}
	for _, r := range d.Voters {
		vv := admin.VoterView{NodeID: r.NodeID, Endpoint: d.Endpoints[r.NodeID], LogEndOffset: r.LogEndOffset, Lag: -1,
			LastFetch: timeOrNil(r.LastFetch), LastCaughtUp: timeOrNil(r.LastCaughtUp)}
		if r.DirectoryID != ([16]byte{}) {
			vv.DirectoryID = formatUUID(r.DirectoryID)
		}
		if leaderEnd >= 0 && r.LogEndOffset >= 0 {
			vv.Lag = max(leaderEnd-r.LogEndOffset, 0)
		}
		v.Voters = append(v.Voters, vv)
	}
	return v
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
