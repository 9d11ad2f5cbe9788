package replica

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// The high watermark a consumer sees never moves back, however many acks=all
// producers complete their fsyncs at once (Kafka guarantees this on a
// leader). Every fsync's completion advances the high watermark from the
// recovery point it read: an advance that read before another sync finished
// and stored after it would take back offsets already acknowledged and
// already served. The reader reads what every fetch reads (the high
// watermark, then the last stable offset, which takes the log's lock the
// appenders contend on) and fails at the first step back.
func TestHighWatermarkNeverMovesBack(t *testing.T) {
	const producers, maxAppends = 16, 40000
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 256 << 10 // rolls hold the recovery point back until the next sync
	m := newTestManagerFsync(t, cfg, true)
	tp := topicpart.TopicPartition{Topic: "t", Partition: 0}
	p, err := m.Host(tp, [16]byte{1}, cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	batch := batchOf(t, 4, 100)

	var stop atomic.Bool
	var backHW, backLSO atomic.Int64 // the first step back seen, in offsets
	var reads atomic.Int64
	var readers sync.WaitGroup
	readers.Go(func() {
		lastHW, lastLSO := int64(0), int64(0)
		for !stop.Load() {
			hw := p.Log.HighWatermark()
			lso := p.Log.LastStableOffset()
			reads.Add(1)
			switch {
			case hw < lastHW:
				backHW.Store(lastHW - hw)
				stop.Store(true)
			case lso < lastLSO:
				backLSO.Store(lastLSO - lso)
				stop.Store(true)
			}
			lastHW, lastLSO = max(lastHW, hw), max(lastLSO, lso)
		}
	})

	// Bounded in time and count; on today's machines a step back, when the
	// advance is not atomic, shows within a second.
	deadline := time.Now().Add(2 * time.Second)
	var appends atomic.Int64
	var wg sync.WaitGroup
	for range producers {
		wg.Go(func() {
			for appends.Add(1) <= maxAppends && !stop.Load() && time.Now().Before(deadline) {
				// Append assigns offsets in place: each append gets its own copy.
				res, err := m.Append(t.Context(), tp, append([]byte(nil), batch...), -1, log.OriginClient)
				if err != nil {
					t.Error(err)
					stop.Store(true)
					return
				}
				if hw := p.Log.HighWatermark(); hw <= res.LastOffset {
					t.Errorf("acks=all append of offsets %d-%d returned with the high watermark at %d",
						res.BaseOffset, res.LastOffset, hw)
					stop.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	readers.Wait()
	if b := backHW.Load(); b > 0 {
		t.Fatalf("the high watermark moved back by %d offsets (after %d reads)", b, reads.Load())
	}
	if b := backLSO.Load(); b > 0 {
		t.Fatalf("the last stable offset moved back by %d offsets (after %d reads)", b, reads.Load())
	}
	if hw, leo := p.Log.HighWatermark(), p.Log.LogEndOffset(); hw != leo {
		t.Fatalf("every acks=all append returned, yet the high watermark is %d and the log end offset %d", hw, leo)
	}
}
