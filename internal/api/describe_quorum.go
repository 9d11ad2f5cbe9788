package api

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeQuorum, versions 0-2 (Kafka 4.2). A broker forwards it to the
// active controller, which is the raft leader of the metadata quorum and
// answers from raft's progress tracking: the leader and its term (KRaft's
// leader epoch), the commit index (high watermark), and each voter's log
// end (the highest index known to be in its log), when the leader last
// heard from it and when its log last reached the leader's end. v2 adds the
// voters' CONTROLLER listeners and each voter's metadata directory id (the
// leader's own from its raft-meta, the others' as they connected to it;
// zero if one never has). The request must name __cluster_metadata-0 alone
// (INVALID_REQUEST otherwise); a node that is not the leader answers
// NOT_LEADER_OR_FOLLOWER for it, as KRaft does. Every node is a voter, so
// there are no observers.
func init() {
	register(kmsg.DescribeQuorum.Int16(), 0, 2, handleForwarded)
	registerController(kmsg.DescribeQuorum.Int16(), 0, 2, controllerDescribeQuorum)
}

// metadataTopic is the metadata log's Kafka name.
const metadataTopic = "__cluster_metadata"

func controllerDescribeQuorum(ctx context.Context, h *ControllerHandler, kr kmsg.Request) (kmsg.Response, uint64, error) {
	req := kr.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if len(req.Topics) != 1 || req.Topics[0].Topic != metadataTopic || len(req.Topics[0].Partitions) != 1 ||
		req.Topics[0].Partitions[0].Partition != 0 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, 0, nil
	}
	rt := kmsg.NewDescribeQuorumResponseTopic()
	rt.Topic = metadataTopic
	rp := kmsg.NewDescribeQuorumResponseTopicPartition()
	st, err := h.d.Quorum(ctx)
	switch {
	case err != nil:
		rp.ErrorCode = h.code(err)
	case !st.Local:
		rp.ErrorCode = kerr.NotLeaderForPartition.Code
		if req.Version >= 2 {
			rp.ErrorMessage = strp("this node is not the leader of the metadata quorum")
		}
	default:
		rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = st.Leader, int32(st.Term), int64(st.Commit)
		for _, r := range st.Replicas {
			s := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
			// Raft indexes start at 1 (the bootstrap snapshot), so Match 0
			// is a voter a new leader has not heard from yet: unknown
			// (-1), as KRaft reports it.
			s.ReplicaID, s.LogEndOffset = r.NodeID, int64(r.Match)
			if r.Match == 0 {
				s.LogEndOffset = -1
			}
			s.ReplicaDirectoryID = directoryID(r.DirectoryID)
			s.LastFetchTimestamp, s.LastCaughtUpTimestamp = -1, -1
			if !r.LastContact.IsZero() {
				s.LastFetchTimestamp = r.LastContact.UnixMilli()
			}
			if !r.LastCaughtUp.IsZero() {
				s.LastCaughtUpTimestamp = r.LastCaughtUp.UnixMilli()
			}
			if r.Learner {
				rp.Observers = append(rp.Observers, s)
			} else {
				rp.CurrentVoters = append(rp.CurrentVoters, s)
			}
		}
		if req.Version >= 2 {
			resp.Nodes = h.quorumNodes(st.Voters)
		}
	}
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	return resp, 0, nil
}

// directoryID is a quorum directory id (32 hex digits) as a Kafka Uuid;
// zero when unknown or malformed.
func directoryID(s string) [16]byte {
	var id [16]byte
	if b, err := hex.DecodeString(s); err == nil && len(b) == len(id) {
		copy(id[:], b)
	}
	return id
}

// quorumNodes are the voters' CONTROLLER listeners (v2's Nodes).
func (h *ControllerHandler) quorumNodes(voters []int32) []kmsg.DescribeQuorumResponseNode {
	var out []kmsg.DescribeQuorumResponseNode
	for _, id := range voters {
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = id
		if addr, ok := h.d.Voters[id]; ok {
			if host, port, err := net.SplitHostPort(addr); err == nil {
				if p, err := strconv.Atoi(port); err == nil {
					l := kmsg.NewDescribeQuorumResponseNodeListener()
					l.Name, l.Host, l.Port = h.d.ControllerListener, host, uint16(p)
					n.Listeners = append(n.Listeners, l)
				}
			}
		}
		out = append(out, n)
	}
	return out
}

// QuorumDescription is the active controller's DescribeQuorum answer in
// Gregor's terms (what the admin API and `gregor cluster` show).
type QuorumDescription struct {
	LeaderID      int32
	LeaderEpoch   int32 // the raft term
	HighWatermark int64 // the commit index
	Voters        []QuorumReplica
	// Endpoints are the voters' CONTROLLER listeners (host:port).
	Endpoints map[int32]string
}

// QuorumReplica is one voter's log as the leader knows it.
type QuorumReplica struct {
	NodeID       int32
	DirectoryID  [16]byte // zero: unknown
	LogEndOffset int64
	// LastFetch and LastCaughtUp are zero when unknown.
	LastFetch, LastCaughtUp time.Time
}

// DescribeQuorum asks the active controller (the raft leader) for the
// metadata quorum's state, at version 2.
func (c ControllerClient) DescribeQuorum(ctx context.Context) (*QuorumDescription, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.SetVersion(2)
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = metadataTopic
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, rt)
	kr, _, err := c.RPC.Call(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := kr.(*kmsg.DescribeQuorumResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, fmt.Errorf("DescribeQuorum: the controller answered %d topics", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return nil, err
	}
	d := &QuorumDescription{LeaderID: p.LeaderID, LeaderEpoch: p.LeaderEpoch, HighWatermark: p.HighWatermark,
		Endpoints: map[int32]string{}}
	at := func(ms int64) time.Time {
		if ms < 0 {
			return time.Time{}
		}
		return time.UnixMilli(ms)
	}
	for _, v := range p.CurrentVoters {
		d.Voters = append(d.Voters, QuorumReplica{NodeID: v.ReplicaID, DirectoryID: v.ReplicaDirectoryID,
			LogEndOffset: v.LogEndOffset, LastFetch: at(v.LastFetchTimestamp), LastCaughtUp: at(v.LastCaughtUpTimestamp)})
	}
	for _, n := range resp.Nodes {
		for _, l := range n.Listeners {
			d.Endpoints[n.NodeID] = net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
		}
	}
	return d, nil
}
