package txn

import (
	"strings"
	"testing"

	"github.com/gregor-broker/gregor/internal/topicpart"
)

// Every class of the hanging-transaction detector, from the partition's
// holder and the coordinator's view.
func TestDiagnose(t *testing.T) {
	tp := topicpart.TopicPartition{Topic: "t", Partition: 2}
	other := topicpart.TopicPartition{Topic: "t", Partition: 3}
	const now = 1_000_000
	holder := Holder{ProducerID: 7, ProducerEpoch: 4, CoordinatorEpoch: 1, FirstOffset: 100, StartMs: now - 5000,
		LastTimestamp: now - 4000, MarkerOffset: -1}
	txn := func(state State, epoch int16, parts ...topicpart.TopicPartition) *Description {
		return &Description{TransactionalID: "app", State: state, TimeoutMs: 60000, StartMs: now - 5000,
			ProducerID: 7, ProducerEpoch: epoch, Partitions: parts}
	}
	for _, c := range []struct {
		name  string
		h     Holder
		cv    CoordinatorView
		class string
		says  []string
	}{
		{"open", holder, CoordinatorView{Available: true, Txn: txn(Ongoing, 4, tp)}, ClassOpen,
			[]string{`transaction "app" of producer 7 (epoch 4) is open; it times out in 55s`}},
		{"timing out", holder, CoordinatorView{Available: true, Txn: &Description{TransactionalID: "app", State: Ongoing,
			TimeoutMs: 1000, StartMs: now - 5000, ProducerID: 7, ProducerEpoch: 4, Partitions: []topicpart.TopicPartition{tp}}},
			ClassTimingOut, []string{"past its 1s timeout", "next check (every 10s)"}},
		{"completing", holder, CoordinatorView{Available: true, Txn: txn(PrepareCommit, 4, tp),
			Markers: &MarkerStatus{Attempts: 3, LastError: "NOT_LEADER_OR_FOLLOWER"}}, ClassCompleting,
			[]string{"decided (Commit)", "marker for t-2 is not written yet (3 attempts, last error: NOT_LEADER_OR_FOLLOWER)"}},
		{"completing under TV2 (the epoch already bumped)", holder, CoordinatorView{Available: true, Txn: txn(PrepareAbort, 5, tp)},
			ClassCompleting, []string{"decided (Abort)"}},
		{"unreplicated", Holder{ProducerID: 7, ProducerEpoch: 4, FirstOffset: 100, StartMs: -1, LastTimestamp: now - 100,
			Unreplicated: true, Aborted: true, MarkerOffset: 140}, CoordinatorView{}, ClassUnreplicated,
			[]string{"ABORT marker at offset 140", "high watermark has not passed"}},
		{"coordinator unavailable", holder, CoordinatorView{Why: "COORDINATOR_LOAD_IN_PROGRESS"}, ClassUnknown,
			[]string{"cannot classify", "COORDINATOR_LOAD_IN_PROGRESS"}},
		{"orphan: unknown producer", holder, CoordinatorView{Available: true}, ClassOrphan,
			[]string{"knows no transactional id with this producer id",
				"abort --topic t --partition 2 --producer-id 7 --producer-epoch 4 --coordinator-epoch 1"}},
		{"orphan: not in the transaction", holder, CoordinatorView{Available: true, Txn: txn(Ongoing, 4, other)}, ClassOrphan,
			[]string{"does not include t-2"}},
		{"orphan: another epoch", holder, CoordinatorView{Available: true, Txn: txn(Ongoing, 9, tp)}, ClassOrphan,
			[]string{"the coordinator's epoch for it is 9"}},
		{"orphan: the coordinator ended it", holder, CoordinatorView{Available: true, Txn: txn(CompleteAbort, 4)}, ClassOrphan,
			[]string{"does not include t-2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := Diagnose(tp, c.h, c.cv, now, 10000)
			if d.Class != c.class {
				t.Fatalf("class %s, want %s: %s", d.Class, c.class, d.Explanation)
			}
			text := d.Explanation + " " + d.Action
			for _, s := range c.says {
				if !strings.Contains(text, s) {
					t.Errorf("explanation lacks %q: %s", s, text)
				}
			}
		})
	}
}
