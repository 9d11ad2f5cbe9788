package txn

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/internal/topicpart"
)

// The hanging-transaction detector (beyond Kafka): for every transaction
// that holds a partition's last stable offset back, which of six reasons
// it is and what will end it. Kafka offers a metric
// (PartitionsWithLateTransactionsCount) and a three-call procedure
// (kafka-transactions.sh find-hanging); Gregor classifies continuously from
// the partition's producer state and the coordinator's view. Diagnose is
// pure: the caller gathers both sides.

// Hanging-transaction classes, in the order Diagnose tries them.
const (
	ClassUnreplicated = "unreplicated" // decided; the marker is not under the high watermark yet
	ClassUnknown      = "unknown"      // the coordinator cannot be asked
	ClassCompleting   = "completing"   // decided; the marker for this partition is not written yet
	ClassOpen         = "open"         // an ongoing transaction within its timeout
	ClassTimingOut    = "timing_out"   // ongoing past its timeout: the coordinator should abort it
	ClassOrphan       = "orphan"       // hanging: no coordinator will ever write its marker
)

// Holder is a transaction holding a partition's last stable offset, as the
// partition sees it (log.OpenTxn).
type Holder struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	FirstOffset      int64
	// StartMs is the broker's clock at the transaction's first batch on
	// the partition (-1: unknown, begun before the log was loaded);
	// LastTimestamp the producer's last batch timestamp (its own clock).
	StartMs       int64
	LastTimestamp int64
	Unreplicated  bool
	Aborted       bool
	MarkerOffset  int64
}

// CoordinatorView is what the transaction coordinator says of the holder's
// producer id.
type CoordinatorView struct {
	// Available is false when the coordinator could not be asked (its
	// __transaction_state partition loading, or on another broker): Why.
	Available bool
	Why       string
	// Elsewhere: unavailable only because this coordinator does not know
	// the producer id while other brokers coordinate some
	// __transaction_state partitions; the shell may ask them.
	Elsewhere bool
	// Txn is the producer id's transaction, nil when no transactional id
	// of the coordinator has it.
	Txn *Description
	// Markers is the marker writing under way for it, nil when none.
	Markers *MarkerStatus
}

// Diagnosis is the detector's verdict on one holder.
type Diagnosis struct {
	Class           string
	TransactionalID string
	State           string // the coordinator's state of it ("" when unknown)
	AgeMs           int64  // since its first batch here (by the broker's clock when known)
	TimeoutMs       int32
	Explanation     string
	// Action is what ends it, when someone must act.
	Action string
}

// Diagnose classifies a holder of tp's last stable offset at nowMs;
// abortCheckMs is transaction.abort.timed.out.transaction.cleanup.interval.ms.
func Diagnose(tp topicpart.TopicPartition, h Holder, cv CoordinatorView, nowMs, abortCheckMs int64) Diagnosis {
	d := Diagnosis{AgeMs: -1}
	switch {
	case h.StartMs >= 0:
		d.AgeMs = nowMs - h.StartMs
	case h.LastTimestamp >= 0:
		d.AgeMs = nowMs - h.LastTimestamp // the producer's clock: a hint only
	}
	if cv.Txn != nil {
		d.TransactionalID, d.State, d.TimeoutMs = cv.Txn.TransactionalID, cv.Txn.State.String(), cv.Txn.TimeoutMs
	}
	who := fmt.Sprintf("producer %d (epoch %d)", h.ProducerID, h.ProducerEpoch)
	if d.TransactionalID != "" {
		who = fmt.Sprintf("transaction %q of %s", d.TransactionalID, who)
	}
	switch {
	case h.Unreplicated:
		d.Class = ClassUnreplicated
		d.Explanation = fmt.Sprintf("%s is decided (%s marker at offset %d) but the high watermark has not passed the marker; "+
			"the last stable offset follows the high watermark", who, outcome(!h.Aborted), h.MarkerOffset)
		d.Action = "none: it clears when the marker is replicated (on one node: fsynced)"
	case !cv.Available:
		d.Class = ClassUnknown
		d.Explanation = fmt.Sprintf("cannot classify %s: the transaction coordinator is unavailable (%s)", who, cv.Why)
	case cv.Txn != nil && cv.Txn.State.preparing() && slices.Contains(cv.Txn.Partitions, tp):
		d.Class = ClassCompleting
		d.Explanation = fmt.Sprintf("%s was decided (%s) by its coordinator; the marker for %s is not written yet", who,
			strings.TrimPrefix(cv.Txn.State.String(), "Prepare"), tp)
		if m := cv.Markers; m != nil {
			d.Explanation += fmt.Sprintf(" (%d attempts", m.Attempts)
			if m.LastError != "" {
				d.Explanation += ", last error: " + m.LastError
			}
			d.Explanation += ")"
		}
		d.Action = "none while the coordinator retries; a partition that stays unwritable keeps it here"
	case cv.Txn != nil && cv.Txn.State == Ongoing && cv.Txn.ProducerEpoch == h.ProducerEpoch && slices.Contains(cv.Txn.Partitions, tp):
		left := int64(cv.Txn.TimeoutMs) - max(nowMs-cv.Txn.StartMs, 0)
		if left > 0 {
			d.Class = ClassOpen
			d.Explanation = fmt.Sprintf("%s is open; it times out in %s", who, ms(left))
			break
		}
		d.Class = ClassTimingOut
		d.Explanation = fmt.Sprintf("%s is open past its %s timeout; the coordinator aborts it at its next check (every %s)",
			who, ms(int64(cv.Txn.TimeoutMs)), ms(abortCheckMs))
		if -left > 2*abortCheckMs+int64(time.Minute/time.Millisecond) {
			d.Explanation += "; it is late: the coordinator may be stuck"
		}
	default:
		d.Class = ClassOrphan
		d.Explanation = fmt.Sprintf("%s is hanging: %s; no coordinator will ever write its marker", who, orphanWhy(tp, h, cv.Txn))
		d.Action = fmt.Sprintf("gregor txn abort %s/%d --start-offset %d (or kafka-transactions.sh --bootstrap-server HOST:PORT "+
			"abort --topic %s --partition %d --producer-id %d --producer-epoch %d --coordinator-epoch %d)", tp.Topic, tp.Partition,
			h.FirstOffset, tp.Topic, tp.Partition, h.ProducerID, h.ProducerEpoch, max(h.CoordinatorEpoch, 0))
	}
	return d
}

func orphanWhy(tp topicpart.TopicPartition, h Holder, t *Description) string {
	switch {
	case t == nil:
		return "the coordinator knows no transactional id with this producer id (expired, or never added the partition)"
	case t.ProducerEpoch != h.ProducerEpoch && !(t.State.preparing() && t.ProducerEpoch == h.ProducerEpoch+1):
		return fmt.Sprintf("the coordinator's epoch for it is %d", t.ProducerEpoch)
	case !slices.Contains(t.Partitions, tp):
		return fmt.Sprintf("its transaction (%s) does not include %s", t.State, tp)
	}
	return fmt.Sprintf("the coordinator has it in state %s", t.State)
}

func outcome(commit bool) string {
	if commit {
		return "COMMIT"
	}
	return "ABORT"
}

func ms(v int64) string { return (time.Duration(v) * time.Millisecond).String() }

// ForProducer gathers the coordinator's view of a producer id: its
// transaction (List by producer id over every loaded partition) and the
// markers being written for it.
// Only this broker's coordinator is asked: when it has no transaction for
// the producer id while other brokers lead some __transaction_state
// partitions, the view is unavailable with Elsewhere set (never orphan),
// since the id may be theirs; the broker's wiring then asks them.
func (c *Coordinator) ForProducer(ctx context.Context, pid int64) CoordinatorView {
	list, err := c.List(ctx, ListFilter{ProducerIDs: []int64{pid}, MinDurationMs: -1})
	if err != nil {
		return CoordinatorView{Why: err.Error()}
	}
	cv := CoordinatorView{Available: true}
	if len(list) == 0 {
		if t := c.o.Topics.Image().Topic(StateTopic); t != nil {
			if owned := len(c.Loaded()); owned < len(t.Partitions) {
				return CoordinatorView{Elsewhere: true, Why: fmt.Sprintf("no transaction of producer %d in the %d %s partitions coordinated here; "+
					"other brokers coordinate the other %d", pid, owned, StateTopic, len(t.Partitions)-owned)}
			}
		}
	}
	if len(list) > 0 {
		d := list[0]
		cv.Txn = &d
		for _, m := range c.PendingMarkers() {
			if m.TransactionalID == d.TransactionalID {
				m := m
				cv.Markers = &m
			}
		}
	}
	return cv
}
