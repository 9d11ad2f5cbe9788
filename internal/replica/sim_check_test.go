package replica

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/gregor-broker/gregor/internal/record"
)

// simBatch is one batch of a replica's log, as the checks compare them.
type simBatch struct {
	base, last int64
	epoch      int32
	raw        []byte
	value      string
}

// batches reads a replica's log from its start up to bound.
func (s *sim) batches(p *Partition, bound int64) []simBatch {
	var out []simBatch
	for off := p.Log.LogStartOffset(); off < bound; {
		data, err := p.Log.Read(nil, off, 1<<20, bound, true)
		if err != nil {
			s.fatalf("reading %s at %d: %v", p.TP, off, err)
		}
		if len(data) == 0 {
			break
		}
		for len(data) > 0 {
			b, rest, ok := record.Split(data)
			if !ok {
				s.fatalf("partial batch in %s at %d", p.TP, off)
			}
			h, err := record.ValidateStored(b)
			if err != nil {
				s.fatalf("%s at %d: %v", p.TP, off, err)
			}
			sb := simBatch{base: h.BaseOffset, last: h.LastOffset(), epoch: h.LeaderEpoch, raw: bytes.Clone(b)}
			_ = record.Iterate(b, 1<<20, func(r *record.Record) error { sb.value = string(r.Value); return nil })
			out = append(out, sb)
			off = h.NextOffset()
			data = rest
		}
	}
	return out
}

// alive are the brokers running (not down, not paused) with a hosted
// replica of partition p.
func (s *sim) alive(p int32) []*Partition {
	var out []*Partition
	for _, b := range s.brokers {
		if !b.up || b.paused {
			continue
		}
		if part, ok := s.partition(b, p); ok {
			out = append(out, part)
		}
	}
	return out
}

// check runs the invariants of design §4.3 after a step.
func (s *sim) check() {
	t := s.im.Topic(simTopic)
	if t == nil {
		return
	}
	for pi := range t.Partitions {
		part := int32(pi)
		s.checkOffsets(part)
		s.checkLeaderHW(part)
		s.checkCompleteness(part)
		if s.rng.IntN(8) == 0 { // comparing whole logs is the expensive one
			s.checkPrefixes(part)
		}
	}
}

// checkOffsets is I6 and I9: log start ≤ LSO ≤ HW ≤ LEO, the epoch cache strictly
// increasing in epoch and start offset, never above the image's epoch.
func (s *sim) checkOffsets(part int32) {
	pi := s.im.Partition(simTopic, part)
	for _, b := range s.brokers {
		if !b.up {
			continue
		}
		p, ok := s.partition(b, part)
		if !ok {
			continue
		}
		l := p.Log
		lso := l.LastStableOffset() // first: the HW only grows past it
		if ls, hw, leo := l.LogStartOffset(), l.HighWatermark(), l.LogEndOffset(); ls > lso || lso > hw || hw > leo {
			s.fatalf("I6: broker %d %s: log start %d, LSO %d, HW %d, LEO %d", b.id, p.TP, ls, lso, hw, leo)
		}
		es := l.Epochs()
		for i := 1; i < len(es); i++ {
			if es[i].Epoch <= es[i-1].Epoch || es[i].StartOffset <= es[i-1].StartOffset {
				s.fatalf("I9: broker %d %s epoch cache not increasing: %v", b.id, p.TP, es)
			}
		}
		if n := len(es); n > 0 && es[n-1].Epoch > pi.LeaderEpoch {
			s.fatalf("I9: broker %d %s holds epoch %d above the image's %d", b.id, p.TP, es[n-1].Epoch, pi.LeaderEpoch)
		}
	}
}

// checkLeaderHW is I7 (a leader's HW never decreases within its leader
// epoch) and keeps the true HW: the most any leader ever exposed.
func (s *sim) checkLeaderHW(part int32) {
	for _, b := range s.brokers {
		if !b.up {
			continue
		}
		p, ok := s.partition(b, part)
		if !ok {
			continue
		}
		role := p.Role()
		if !role.Leader {
			continue
		}
		hw := p.Log.HighWatermark()
		k := simHWKey{b.id*1000 + int32(b.incarnation), part, role.LeaderEpoch}
		if old, ok := s.leaderHW[k]; ok && hw < old {
			s.fatalf("I7: broker %d's HW of %s fell from %d to %d in leader epoch %d", b.id, p.TP, old, hw, role.LeaderEpoch)
		}
		s.leaderHW[k] = hw
		if hw > s.trueHW[part] {
			s.trueHW[part] = hw
		}
	}
}

// checkCompleteness is I3 and I4: the leader the image names (once it has
// applied that image) and every running member of ISR ∪ ELR hold every
// committed offset durably, and every acknowledged record where it was
// acknowledged; the leader's HW is within every ISR member's durable log
// end (with gregor.ack.fsync a follower's fetch offset is durable).
func (s *sim) checkCompleteness(part int32) {
	if s.unclean[part] {
		return
	}
	pi := s.im.Partition(simTopic, part)
	holders := append(slices.Clone(pi.ISR), pi.ELR...)
	for _, id := range holders {
		b := s.brokers[id-1]
		if !b.up {
			continue
		}
		p, ok := s.partition(b, part)
		if !ok {
			continue
		}
		if rp := p.Log.DurableOffset(); rp < s.trueHW[part] && id != pi.Leader {
			s.fatalf("I4: broker %d (ISR %v ELR %v) holds %s durably up to %d, below the committed %d",
				id, pi.ISR, pi.ELR, p.TP, rp, s.trueHW[part])
		}
	}
	if pi.Leader < 0 {
		return
	}
	b := s.brokers[pi.Leader-1]
	p, ok := s.partition(b, part)
	if !b.up || !ok || !p.Role().Leader || p.LeaderEpoch() != pi.LeaderEpoch {
		return // the leader has not applied its election yet
	}
	if leo := p.Log.LogEndOffset(); leo < s.trueHW[part] {
		s.fatalf("I3: leader %d of %s (epoch %d) ends at %d, below the committed %d", b.id, p.TP, pi.LeaderEpoch, leo, s.trueHW[part])
	}
	if s.rng.IntN(8) != 0 {
		return
	}
	got := map[int64]string{}
	for _, bt := range s.batches(p, p.Log.LogEndOffset()) {
		got[bt.base] = bt.value
	}
	for off, v := range s.acked[part] {
		if got[off] != v {
			s.fatalf("I1: %s acknowledged at %s offset %d, but leader %d holds %q there", v, p.TP, off, b.id, got[off])
		}
	}
}

// checkPrefixes is I2: any two replicas hold the same batches below the
// lower of their high watermarks.
func (s *sim) checkPrefixes(part int32) {
	reps := s.alive(part)
	for i := range reps {
		for j := i + 1; j < len(reps); j++ {
			a, b := reps[i], reps[j]
			bound := min(a.Log.HighWatermark(), b.Log.HighWatermark())
			if s.unclean[part] {
				continue
			}
			ba, bb := s.batches(a, bound), s.batches(b, bound)
			start := max(a.Log.LogStartOffset(), b.Log.LogStartOffset())
			ba = slices.DeleteFunc(ba, func(x simBatch) bool { return x.base < start })
			bb = slices.DeleteFunc(bb, func(x simBatch) bool { return x.base < start })
			if len(ba) != len(bb) {
				s.fatalf("I2: %s below %d: %d batches on one replica, %d on another", a.TP, bound, len(ba), len(bb))
			}
			for k := range ba {
				if !bytes.Equal(ba[k].raw, bb[k].raw) {
					s.fatalf("I2: %s replicas differ below HW %d at offset %d (epochs %d and %d, values %s and %s)",
						a.TP, bound, ba[k].base, ba[k].epoch, bb[k].epoch, ba[k].value, bb[k].value)
				}
			}
		}
	}
}

// converged reports what still keeps the healed cluster from its settled
// state, nil once there is nothing.
func (s *sim) converged() error {
	for _, b := range s.brokers {
		if br := s.im.Brokers[b.id]; br == nil || br.Fenced || b.applied < s.im.Index {
			return fmt.Errorf("broker %d not unfenced or behind the metadata", b.id)
		}
	}
	if len(s.pending) > 0 {
		return fmt.Errorf("%d produces unanswered", len(s.pending))
	}
	t := s.im.Topic(simTopic)
	for pi, p := range t.Partitions {
		if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
			return fmt.Errorf("%s-%d leader %d ISR %v", simTopic, pi, p.Leader, p.ISR)
		}
		leader, ok := s.partition(s.brokers[p.Leader-1], int32(pi))
		if !ok {
			return fmt.Errorf("leader has no replica")
		}
		leo := leader.Log.LogEndOffset()
		for _, r := range s.alive(int32(pi)) {
			if r.Log.LogEndOffset() != leo || r.Log.HighWatermark() != leo {
				return fmt.Errorf("%s replica at LEO %d HW %d, leader at %d", r.TP, r.Log.LogEndOffset(), r.Log.HighWatermark(), leo)
			}
		}
	}
	return nil
}

// final is the end-of-run checker (design §6.4): every acknowledged record
// at its offset on every replica, and the replicas identical.
func (s *sim) final() {
	t := s.im.Topic(simTopic)
	for pi := range t.Partitions {
		part := int32(pi)
		var ref []simBatch
		for i, r := range s.alive(part) {
			bs := s.batches(r, r.Log.LogEndOffset())
			if i == 0 {
				ref = bs
			} else if len(bs) != len(ref) {
				s.fatalf("final: %s replicas hold %d and %d batches", r.TP, len(ref), len(bs))
			} else {
				for k := range bs {
					if !bytes.Equal(bs[k].raw, ref[k].raw) {
						s.fatalf("final: %s replicas differ at offset %d", r.TP, bs[k].base)
					}
				}
			}
			s.checkTxnState(r, s.alive(part)[0])
			if s.unclean[part] {
				continue
			}
			got := map[int64]string{}
			for _, b := range bs {
				got[b.base] = b.value
			}
			for off, v := range s.acked[part] {
				if got[off] != v {
					s.fatalf("I1 final: %s acknowledged at %s offset %d; the replica holds %q", v, r.TP, off, got[off])
				}
			}
		}
	}
}

// describe is the image and each replica's offsets, for failures.
func (s *sim) describe() string {
	var b strings.Builder
	for _, br := range s.im.SortedBrokers() {
		fmt.Fprintf(&b, "broker %d epoch %d fenced=%v\n", br.ID, br.Epoch, br.Fenced)
	}
	if t := s.im.Topic(simTopic); t != nil {
		for i, p := range t.Partitions {
			fmt.Fprintf(&b, "%s-%d leader=%d epoch=%d/%d isr=%v elr=%v trueHW=%d acked=%d\n", simTopic, i, p.Leader,
				p.LeaderEpoch, p.PartitionEpoch, p.ISR, p.ELR, s.trueHW[int32(i)], len(s.acked[int32(i)]))
			for _, sb := range s.brokers {
				if !sb.up {
					fmt.Fprintf(&b, "  broker %d down\n", sb.id)
					continue
				}
				if r, ok := s.partition(sb, int32(i)); ok {
					fmt.Fprintf(&b, "  broker %d role=%+v LEO=%d HW=%d durable=%d epochs=%v paused=%v\n", sb.id, r.Role(),
						r.Log.LogEndOffset(), r.Log.HighWatermark(), r.Log.DurableOffset(), r.Log.Epochs(), sb.paused)
				}
			}
		}
	}
	return b.String()
}

// checkTxnState is I10, at the end of a run when the replicas hold the same
// bytes under the same HW: r's transactional state is ref's (each derived
// it from the same log, through appends as leader or follower, truncations
// and reloads): the same LSO, aborted-transaction index and open
// transactions.
func (s *sim) checkTxnState(r, ref *Partition) {
	if r == ref {
		return
	}
	if r.Log.HighWatermark() != ref.Log.HighWatermark() {
		return // not settled: a follower's HW (and with it its LSO) lags
	}
	if a, b := r.Log.LastStableOffset(), ref.Log.LastStableOffset(); a != b {
		s.fatalf("I10: %s replicas' last stable offsets %d and %d", r.TP, a, b)
	}
	end := r.Log.LogEndOffset()
	ar, err1 := r.Log.AbortedTransactions(r.Log.LogStartOffset(), end)
	af, err2 := ref.Log.AbortedTransactions(ref.Log.LogStartOffset(), end)
	if err1 != nil || err2 != nil {
		s.fatalf("I10: %s aborted transactions: %v / %v", r.TP, err1, err2)
	}
	if !slices.Equal(ar, af) {
		s.fatalf("I10: %s replicas' aborted transactions %+v and %+v", r.TP, ar, af)
	}
	open := func(p *Partition) []string {
		var out []string
		for _, o := range p.Log.OpenTransactions() {
			out = append(out, fmt.Sprintf("%d@%d", o.ProducerID, o.FirstOffset))
		}
		slices.Sort(out)
		return out
	}
	if a, b := open(r), open(ref); !slices.Equal(a, b) {
		s.fatalf("I10: %s replicas' open transactions %v and %v", r.TP, a, b)
	}
}
