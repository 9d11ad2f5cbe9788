package quorum

import (
	"fmt"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// handle processes one Ready strictly in the order raft's doc.go requires
// in synchronous mode (design §5.2):
//
//  1. persist: an incoming snapshot first, then entries and HardState in one
//     WAL write, fsynced iff MustSync; then mirror into MemoryStorage;
//  2. send the messages (the Transport reports unreachable peers and
//     finished snapshots back);
//  3. apply the snapshot, then the committed entries, in order;
//  4. take a snapshot of our own if enough entries were applied;
//  5. Advance.
//
// Sending only after persisting is what makes a MsgAppResp or a vote mean
// "durably done"; raft already holds back the messages that need it until
// this Ready (msgsAfterAppend), so sending all of them here is right.
func (p *Peer) handle(rd *raft.Ready) error {
	if err := p.st.save(rd); err != nil {
		return fmt.Errorf("persist: %w", err)
	}
	if len(rd.Messages) > 0 {
		p.tr.Send(rd.Messages)
	}
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := p.restore(rd.Snapshot); err != nil {
			return err
		}
	}
	for _, e := range rd.CommittedEntries {
		if err := p.apply(e); err != nil {
			return err
		}
	}
	for _, rs := range rd.ReadStates {
		p.obs.ReadIndex(rs.RequestCtx, rs.Index)
	}
	p.noteLeadership()
	if p.applied.Index-p.snapshotted >= p.cfg.SnapshotEntries {
		if err := p.snapshot(); err != nil {
			return err
		}
	}
	p.rn.Advance(*rd)
	return nil
}

func (p *Peer) restore(s *pb.Snapshot) error {
	md := s.GetMetadata()
	id := EntryID{Index: md.GetIndex(), Term: md.GetTerm()}
	if err := p.sm.Restore(id, s.GetData()); err != nil {
		return fmt.Errorf("restore snapshot %v: %w", id, err)
	}
	p.cs = proto.Clone(md.GetConfState()).(*pb.ConfState)
	p.applied, p.snapshotted = id, id.Index
	p.log.Info("installed snapshot from leader", "snapshot", id, "voters", voters(p.cs))
	p.obs.Restored(id)
	return nil
}

func (p *Peer) apply(e *pb.Entry) error {
	id := EntryID{Index: e.GetIndex(), Term: e.GetTerm()}
	if id.Index <= p.applied.Index {
		return nil // covered by a snapshot restored in this Ready
	}
	if id.Index != p.applied.Index+1 {
		return fmt.Errorf("apply: entry %v after %v leaves a gap", id, p.applied)
	}
	switch e.GetType() {
	case pb.EntryNormal:
		if len(e.GetData()) > 0 {
			if err := p.sm.Apply(Entry{EntryID: id, Data: e.GetData()}); err != nil {
				return fmt.Errorf("apply entry %v: %w", id, err)
			}
		}
	case pb.EntryConfChange:
		var cc pb.ConfChange
		if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
			return fmt.Errorf("apply entry %v: conf change: %w", id, err)
		}
		p.cs = p.rn.ApplyConfChange(&cc)
		p.log.Info("membership changed", "entry", id, "voters", voters(p.cs))
	case pb.EntryConfChangeV2:
		var cc pb.ConfChangeV2
		if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
			return fmt.Errorf("apply entry %v: conf change: %w", id, err)
		}
		p.cs = p.rn.ApplyConfChange(&cc)
		p.log.Info("membership changed", "entry", id, "voters", voters(p.cs))
	}
	p.applied = id
	p.obs.Applied(id)
	return nil
}

func (p *Peer) noteLeadership() {
	bs := p.rn.BasicStatus()
	l := Leadership{Term: bs.GetTerm(), Leader: NodeID(bs.Lead), Local: bs.RaftState == raft.StateLeader}
	if l == p.lead {
		return
	}
	if l.Leader != p.lead.Leader || l.Local != p.lead.Local {
		p.log.Info("raft leader changed", "term", l.Term, "leader", l.Leader, "local", l.Local)
	}
	p.lead = l
	p.obs.LeaderChanged(l)
}

func (p *Peer) snapshot() error {
	data, err := p.sm.Snapshot()
	if err != nil {
		return fmt.Errorf("snapshot state machine at %v: %w", p.applied, err)
	}
	if err := p.st.snapshot(p.applied.Index, p.cs, data, p.cfg.SnapshotKeepEntries); err != nil {
		return fmt.Errorf("save snapshot at %v: %w", p.applied, err)
	}
	p.snapshotted = p.applied.Index
	p.log.Debug("snapshot taken", "snapshot", p.applied, "bytes", len(data))
	return nil
}
