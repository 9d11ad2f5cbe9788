package group

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/coord"
)

// List handles ListGroups for this shard.
func (s *Shard) List(f ListFilter) []Listing {
	var out []Listing
	for _, id := range sortedKeys(s.groups) {
		g := s.groups[id]
		if !matchesAny(f.States, g.state.String()) || !matchesAny(f.Types, GroupType) {
			continue
		}
		out = append(out, Listing{Group: id, ProtocolType: g.protocolType, State: g.state.String(), Type: GroupType})
	}
	return out
}

func matchesAny(filter []string, v string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if strings.EqualFold(f, v) {
			return true
		}
	}
	return false
}

// Describe handles one group of DescribeGroups. Members' metadata and
// assignments are shown only when the group is Stable, as in Kafka.
func (s *Shard) Describe(id string) *Description {
	g := s.groups[id]
	if g == nil || g.state == Dead {
		return &Description{Err: errGroupNotFound(id), Group: id, State: Dead.String()}
	}
	d := &Description{Group: id, State: g.state.String(), ProtocolType: g.protocolType}
	stable := g.state == Stable
	if stable {
		d.Protocol = g.protocol
	}
	for _, m := range g.sortedMembers() {
		md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			Metadata: []byte{}, Assignment: []byte{}}
		if stable {
			if b := m.metadata(g.protocol); b != nil {
				md.Metadata = b
			}
			if m.assignment != nil {
				md.Assignment = m.assignment
			}
		}
		d.Members = append(d.Members, md)
	}
	return d
}

// Delete handles DeleteGroups for groups of this shard: only empty groups
// may be deleted; their offsets and metadata are tombstoned.
func (s *Shard) Delete(ids []string, out *coord.Output) []error {
	errs := make([]error, len(ids))
	for i, id := range ids {
		g := s.groups[id]
		switch {
		case g == nil || g.state == Dead:
			errs[i] = errGroupNotFound(id)
		case g.state != Empty:
			errs[i] = fmt.Errorf("%w: group %s is %s", kerr.NonEmptyGroup, id, g.state)
		default:
			s.logger.Info("deleting group", "group", id, "offsets", g.numOffsets())
			for _, k := range []timerKind{timerJoin, timerInitialJoin, timerSync} {
				s.timers.cancel(timerKey{kind: k, group: id})
			}
			for pid := range g.pending {
				s.timers.cancel(timerKey{kind: timerHeartbeat, group: id, member: pid})
			}
			s.deleteGroup(g, out)
		}
	}
	return errs
}
