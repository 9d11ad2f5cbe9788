package replica

import (
	"testing"

	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// A consumer long-polling an active and an idle partition is woken by every
// append to the active one; its registration on the idle one must stay a
// single entry however often that happens, and none may be left once the
// fetch is done.
func TestFetchWaiterDoesNotGrowOnIdlePartitions(t *testing.T) {
	cfg := log.DefaultConfig()
	m := newTestManager(t, cfg)
	active := topicpart.TopicPartition{Topic: "t", Partition: 0}
	idle := topicpart.TopicPartition{Topic: "t", Partition: 1}
	var parts []*Partition
	for _, tp := range []topicpart.TopicPartition{active, idle} {
		p, err := m.Host(tp, [16]byte{1}, cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
	}
	w := m.NewWaiter(parts)
	for i := range 100 {
		if _, err := m.Append(t.Context(), active, batchOf(t, 1, 10), 1, log.OriginClient); err != nil {
			t.Fatal(err)
		}
		if !w.Wait(t.Context(), nil) {
			t.Fatal("an append to a partition the fetch waits on did not wake it")
		}
		if fetches, regs := m.FetchWaiters(); fetches != 1 || regs != 2 {
			t.Fatalf("after %d wake-ups one fetch waiting on 2 partitions counts as %d fetches with %d registrations",
				i+1, fetches, regs)
		}
	}
	w.Done()
	if fetches, regs := m.FetchWaiters(); fetches != 0 || regs != 0 {
		t.Fatalf("%d fetches with %d registrations left waiting after the fetch ended", fetches, regs)
	}
}
