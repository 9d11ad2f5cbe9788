package txn

import (
	"cmp"
	"slices"

	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// Opt-in automatic abort of true orphans (beyond Kafka, which leaves them
// to kafka-transactions.sh abort). Orphans is the pure decision: it is told
// what the detector classified at each check and answers which orphans to
// abort now. The shell (OrphanAborter) gathers, acts and reports.

// Configs of the automatic abort.
const (
	AutoAbortEnableConfig      = "gregor.transaction.orphan.abort.enable"
	AutoAbortMinOrphanMsConfig = "gregor.transaction.orphan.abort.min.orphan.ms"
)

// AutoAbortConfig is when an orphan may be aborted automatically.
type AutoAbortConfig struct {
	Enabled bool
	// MinOrphanMs is how long it must have been classified orphan at every
	// check, without a break, by this broker.
	MinOrphanMs int64
	// MinAgeMs is transaction.max.timeout.ms: it must be older than any
	// transaction a producer may keep open.
	MinAgeMs int64
}

// AutoAbortConfigFrom reads the automatic abort's configuration.
func AutoAbortConfigFrom(b *config.Broker) AutoAbortConfig {
	return AutoAbortConfig{Enabled: b.Bool(AutoAbortEnableConfig), MinOrphanMs: b.Long(AutoAbortMinOrphanMsConfig),
		MinAgeMs: int64(b.Int("transaction.max.timeout.ms"))}
}

// OrphanKey is one transaction holding one partition's last stable offset.
type OrphanKey struct {
	TopicPartition topicpart.TopicPartition
	ProducerID     int64
	ProducerEpoch  int16
	FirstOffset    int64
}

// Sighting is one holder of a partition's last stable offset as one check
// classified it.
type Sighting struct {
	TopicPartition topicpart.TopicPartition
	Holder         Holder
	Diagnosis      Diagnosis
}

func (s Sighting) key() OrphanKey {
	return OrphanKey{TopicPartition: s.TopicPartition, ProducerID: s.Holder.ProducerID,
		ProducerEpoch: s.Holder.ProducerEpoch, FirstOffset: s.Holder.FirstOffset}
}

// Watched is an orphan the tracker has seen at every check since
// OrphanSinceMs.
type Watched struct {
	OrphanKey
	Holder        Holder
	Explanation   string
	OrphanSinceMs int64
	// AgeMs is the transaction's age at the last check: the detector's,
	// or the time it has been watched when that is longer or unknown.
	AgeMs int64
	// DueMs is when both conditions hold; an enabled tracker aborts it at
	// the first check at or after it.
	DueMs int64
}

// Orphans tracks orphans from check to check. Not safe for concurrent use.
type Orphans struct {
	seen map[OrphanKey]*Watched
}

// Observe takes one check's sightings (every holder of every partition the
// broker leads) at nowMs and returns the orphans to abort now (none unless
// cfg.Enabled) and every orphan watched, in topic, partition, offset order.
// A holder classified anything but orphan, or not seen at this check, is
// forgotten: it must be orphan again for MinOrphanMs before it is due.
func (o *Orphans) Observe(nowMs int64, cfg AutoAbortConfig, seen []Sighting) (abort, watched []Watched) {
	next := make(map[OrphanKey]*Watched, len(seen))
	for _, s := range seen {
		if s.Diagnosis.Class != ClassOrphan {
			continue
		}
		k := s.key()
		w := o.seen[k]
		if w == nil {
			w = &Watched{OrphanKey: k, OrphanSinceMs: nowMs}
		}
		w.Holder, w.Explanation = s.Holder, s.Diagnosis.Explanation
		w.AgeMs = max(s.Diagnosis.AgeMs, nowMs-w.OrphanSinceMs)
		w.DueMs = max(w.OrphanSinceMs+cfg.MinOrphanMs, nowMs-w.AgeMs+cfg.MinAgeMs+1)
		next[k] = w
	}
	o.seen = next
	for _, w := range next {
		watched = append(watched, *w)
		if cfg.Enabled && nowMs >= w.DueMs {
			abort = append(abort, *w)
		}
	}
	order := func(a, b Watched) int {
		return cmp.Or(cmp.Compare(a.TopicPartition.Topic, b.TopicPartition.Topic),
			cmp.Compare(a.TopicPartition.Partition, b.TopicPartition.Partition), cmp.Compare(a.FirstOffset, b.FirstOffset),
			cmp.Compare(a.ProducerID, b.ProducerID))
	}
	slices.SortFunc(abort, order)
	slices.SortFunc(watched, order)
	return abort, watched
}
