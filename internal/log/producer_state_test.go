package log

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/gregor-broker/gregor/internal/record"
)

// The producer snapshot keeps, per producer, its epoch, coordinator epoch,
// open transaction, last timestamp and last batch (sequences and offsets,
// wrapping sequences included): a round trip through the file keeps them.
func TestProducerSnapshotRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := newProducerState()
		offset := int64(0)
		for i, n := 0, rapid.IntRange(0, 30).Draw(t, "batches"); i < n; i++ {
			h := record.Header{
				ProducerID:      rapid.Int64Range(0, 5).Draw(t, "pid"),
				ProducerEpoch:   int16(rapid.IntRange(0, 3).Draw(t, "epoch")),
				BaseSequence:    rapid.SampledFrom([]int32{0, 7, math.MaxInt32 - 2, math.MaxInt32}).Draw(t, "seq"),
				LastOffsetDelta: int32(rapid.IntRange(0, 9).Draw(t, "delta")),
				MaxTimestamp:    rapid.Int64Range(-1, 1<<45).Draw(t, "ts"),
				BaseOffset:      offset,
			}
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 1:
				h.Attributes |= record.AttrTransactional
			case 2:
				h.Attributes |= record.AttrControl | record.AttrTransactional
			}
			p.update(&h)
			offset = h.NextOffset() + rapid.Int64Range(0, 3).Draw(t, "gap")
		}
		if rapid.Bool().Draw(t, "coordinatorEpoch") {
			for _, e := range p.m {
				e.CoordinatorEpoch = 42
			}
		}
		q, err := decodeSnapshot(p.encodeSnapshot())
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if len(q.m) != len(p.m) {
			t.Fatalf("%d producers, decoded %d", len(p.m), len(q.m))
		}
		for id, e := range p.m {
			d := q.m[id]
			if d == nil || d.ProducerID != id || d.Epoch != e.Epoch || d.CoordinatorEpoch != e.CoordinatorEpoch ||
				d.CurrentTxnFirstOffset != e.CurrentTxnFirstOffset || d.LastTimestamp != e.LastTimestamp {
				t.Fatalf("producer %d: %+v, decoded %+v", id, e, d)
			}
			if len(e.batches) == 0 {
				if len(d.batches) != 0 {
					t.Fatalf("producer %d: no batches, decoded %+v", id, d.batches)
				}
				continue
			}
			last := e.batches[len(e.batches)-1]
			if len(d.batches) != 1 {
				t.Fatalf("producer %d: decoded %d batches", id, len(d.batches))
			}
			got := d.batches[0]
			if got.firstSeq != last.firstSeq || got.lastSeq != last.lastSeq || got.firstOffset != last.firstOffset || got.lastOffset != last.lastOffset {
				t.Fatalf("producer %d: last batch %+v, decoded %+v", id, last, got)
			}
			// A retry of that batch is still recognised, and the next
			// sequence is accepted.
			h := record.Header{ProducerID: id, ProducerEpoch: e.Epoch, BaseSequence: last.firstSeq,
				LastOffsetDelta: int32(last.lastOffset - last.firstOffset)}
			if dup, ok := q.duplicate(&h); !ok || dup.firstOffset != last.firstOffset {
				t.Fatalf("producer %d: retry of the last batch not a duplicate after decode", id)
			}
			h.BaseSequence, h.LastOffsetDelta = record.IncrementSequence(last.lastSeq, 1), 0
			if err := q.check(&h); err != nil {
				t.Fatalf("producer %d: next sequence after decode: %v", id, err)
			}
		}
	})
}
