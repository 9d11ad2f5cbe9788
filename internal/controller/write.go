package controller

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/gregor-broker/gregor/internal/controller/election"
	"github.com/gregor-broker/gregor/internal/metadata"
)

// write is the scratch state of one batch being built: the applied image
// plus the records of the ops built so far, applied with this node's term,
// so each op decides against what the ops before it will have done.
type write struct {
	c  *Core
	im *metadata.Image
	// index is the scratch entries' index: one past the applied image. The
	// real index is known only when the entry applies (a registration's
	// broker epoch is taken from it then).
	index uint64
	// recs are the records the current op emitted.
	recs []metadata.Record
}

func (c *Core) newWrite() *write {
	return &write{c: c, im: c.applied, index: c.applied.Index + 1}
}

// emit writes records for the current op and applies them to the scratch
// image, so what the op decides next (and every later op) sees them. They
// were built against that image, so none may be skipped; a skip is a
// controller bug.
func (w *write) emit(recs ...metadata.Record) {
	if len(recs) == 0 {
		return
	}
	before := w.im.Skipped
	w.im, _ = metadata.Apply(w.im, w.index, w.c.term, &metadata.Entry{Proposer: w.c.cfg.NodeID, Term: w.c.term, Records: recs})
	if w.im.Skipped != before {
		panic(fmt.Sprintf("controller invariant violated: %d record(s) built against the scratch image do not apply to it: %+v",
			w.im.Skipped-before, recs))
	}
	w.recs = append(w.recs, recs...)
}

// elrEnabled reports whether eligible leader replicas (KIP-966) are on: the
// eligible.leader.replicas.version feature is finalized at level 1 or more.
func elrEnabled(im *metadata.Image) bool { return im.Features[FeatureELR] >= 1 }

// FeatureELR is the feature that turns eligible leader replicas on.
const FeatureELR = "eligible.leader.replicas.version"

// topicInt is a topic config's value: the topic's override, else the
// cluster's broker config (dynamic, then static, then default). The names
// used here are topic configs whose broker synonym has the same name.
func (w *write) topicInt(topic, name string) int {
	if v, ok := w.im.TopicConfigs(topic)[name]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return int(w.c.brokerCfg.Int(name))
}

func (w *write) topicBool(topic, name string) bool {
	if v, ok := w.im.TopicConfigs(topic)[name]; ok {
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	}
	return w.c.brokerCfg.Bool(name)
}

// minISR is Kafka's getTopicEffectiveMinIsr: min.insync.replicas, at most
// the replication factor.
func (w *write) minISR(t *metadata.TopicImage) int {
	m := w.topicInt(t.Name, "min.insync.replicas")
	if len(t.Partitions) > 0 {
		m = min(m, len(t.Partitions[0].Replicas))
	}
	return m
}

func (w *write) uncleanAllowed(topic string) bool {
	return w.topicBool(topic, "unclean.leader.election.enable")
}

// change is one partition decision: election.Build with the topic's
// effective min ISR, the ELR feature and the scratch image's usable brokers
// unless the request names its own acceptor. Callers that do not mean to
// change the leader recovery state set TargetRecovery to NoRecoveryChange.
func (w *write) change(t *metadata.TopicImage, p int32, req election.Request) election.Result {
	req.Topic, req.Partition, req.Current = t.ID, p, t.Partitions[p]
	if req.Acceptable == nil {
		req.Acceptable = w.im.Usable
	}
	req.MinISR = w.minISR(t)
	req.ELR = elrEnabled(w.im)
	return election.Build(req)
}

// election describes an unclean or last-known-leader election for the
// report and its record, nil for a clean one. t is the topic before the
// change; the change sets the leader (an unclean election always does), so
// the leader epoch after it is one more.
func (w *write) election(t *metadata.TopicImage, p int32, res election.Result) *Election {
	if !res.Changed || !res.Unclean || res.Change.Leader == metadata.NoLeaderChange {
		return nil
	}
	return w.uncleanElection(t, p, res.Leader)
}

func (w *write) uncleanElection(t *metadata.TopicImage, p int32, leader int32) *Election {
	cur := t.Partitions[p]
	e := &Election{Topic: t.Name, TopicID: t.ID, Partition: p, Leader: leader, LeaderEpoch: cur.LeaderEpoch + 1,
		LastKnownLeader: len(cur.ISR) == 0 && len(cur.ELR) == 0 && slices.Equal(cur.LastKnownELR, []int32{leader}),
		At:              w.c.now, PreviousLeader: cur.Leader, PreviousISR: slices.Clone(cur.ISR), PreviousELR: slices.Clone(cur.ELR), Count: 1}
	if e.PreviousLeader == metadata.NoLeader && len(cur.LastKnownELR) == 1 {
		e.PreviousLeader = cur.LastKnownELR[0]
	}
	if cur.Unclean != nil {
		e.Count = cur.Unclean.Count + 1
	}
	return e
}

// updatePartitions is Kafka's generateLeaderAndIsrUpdates over the
// partitions match selects: remove leaves every ISR and may not lead;
// uncleanShutdown leaves ISR and ELR and may not lead; elections are
// unclean where the topic allows it.
func (w *write) updatePartitions(remove, uncleanShutdown int32, match func(*metadata.PartitionImage) bool) ([]metadata.Record, []Election) {
	var recs []metadata.Record
	var elections []Election
	acceptable := func(id int32) bool { return id != remove && id != uncleanShutdown && w.im.Usable(id) }
	for _, t := range w.im.SortedTopics() {
		kind := election.Online
		if w.uncleanAllowed(t.Name) {
			kind = election.Unclean
		}
		for i, p := range t.Partitions {
			if !match(p) {
				continue
			}
			req := election.Request{Acceptable: acceptable, Kind: kind,
				TargetISR: without(p.ISR, remove, uncleanShutdown), TargetRecovery: metadata.NoRecoveryChange}
			if uncleanShutdown >= 0 {
				req.UncleanShutdown = []int32{uncleanShutdown}
			}
			res := w.change(t, int32(i), req)
			if res.Changed {
				recs = append(recs, res.Change)
			}
			if e := w.election(t, int32(i), res); e != nil {
				elections = append(elections, *e)
				recs = append(recs, e.Record())
			}
		}
	}
	return recs, elections
}

// without returns ids minus drop, never nil.
func without(ids []int32, drop ...int32) []int32 {
	out := make([]int32, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(drop, id) {
			out = append(out, id)
		}
	}
	return out
}
