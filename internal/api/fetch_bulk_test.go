package api

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// joinSplices is what the server writes for a BulkResponse: the encoded
// bytes with each splice's data, or its body's bytes, inserted at its
// position.
func joinSplices(t *testing.T, enc []byte, splices []server.Splice) []byte {
	t.Helper()
	var out []byte
	prev := 0
	for _, s := range splices {
		if s.At < prev || s.At > len(enc) {
			t.Fatalf("splice at %d out of order or past the end (%d bytes)", s.At, len(enc))
		}
		data := s.Data
		if s.Body != nil {
			data = make([]byte, s.Body.Size())
			if n, err := s.Body.ReadAt(data, 0); n != len(data) {
				t.Fatalf("reading a %d-byte body: %d bytes, %v", len(data), n, err)
			}
		}
		out = append(append(out, enc[prev:s.At]...), data...)
		prev = s.At
	}
	return append(out, enc[prev:]...)
}

// bulkSpans returns whole spans of 16 KiB to 116 KiB from a log in memory,
// with the bytes each holds.
func bulkSpans(t *testing.T, n int, rng *rand.Rand) ([]log.Span, [][]byte) {
	t.Helper()
	cfg := log.DefaultConfig()
	cfg.TimestampAfterMs = -1
	l, err := log.Open(log.Options{FS: vfs.NewMem(), Clock: clock.NewFake(time.Unix(0, 0)), Dir: "/d/t-0", Config: cfg,
		Logger: slog.New(slog.DiscardHandler), RecoveryPoint: -1, LogStartOffset: -1, HighWatermark: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for range 40 {
		spec := record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
		for i := range 1 + rng.IntN(8) {
			spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Value: bytes.Repeat([]byte{byte(i)}, 1000+rng.IntN(3000))})
		}
		b, err := record.Build(&spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(b, log.OriginClient, 0); err != nil {
			t.Fatal(err)
		}
	}
	var spans []log.Span
	var data [][]byte
	for range n {
		sp, err := l.Locate(rng.Int64N(l.LogEndOffset()/2), bulkMinBytes+rng.IntN(100<<10), l.LogEndOffset(), true)
		if err == nil {
			sp, err = sp.Whole()
		}
		if err != nil || sp.Size() == 0 {
			t.Fatalf("locating a span: %v (%d bytes)", err, sp.Size())
		}
		d, err := sp.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		spans, data = append(spans, sp), append(data, d)
	}
	return spans, data
}

// randomFetchResponse has topics whose partitions carry no records, a few
// inline-sized records and bulk-sized records, with errors, aborted
// transactions and (where the version has them) tagged fields and broker
// endpoints, so kmsg writes fields on both sides of every record set.
func randomFetchResponse(rng *rand.Rand, version int16) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(version)
	resp.SessionID = rng.Int32()
	for ti := range 1 + rng.IntN(3) {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = "topic-" + string(rune('a'+ti))
		for i := range t.TopicID {
			t.TopicID[i] = byte(rng.Uint32())
		}
		for pi := range 1 + rng.IntN(4) {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = int32(pi)
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = rng.Int64N(1<<40), rng.Int64N(1<<40), rng.Int64N(1<<20)
			p.PreferredReadReplica = -1
			switch rng.IntN(4) {
			case 0:
				p.RecordBatches = []byte{}
			case 1:
				p.RecordBatches = make([]byte, 1+rng.IntN(bulkMinBytes-1))
				fill := byte(rng.Uint32())
				for i := range p.RecordBatches {
					p.RecordBatches[i] = fill + byte(i)
				}
			default:
				p.RecordBatches = recordsMarker // a body, filled in by the caller
			}
			if rng.IntN(3) == 0 {
				p.ErrorCode = 1
			}
			if rng.IntN(3) == 0 {
				a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				a.ProducerID, a.FirstOffset = 7, 42
				p.AbortedTransactions = append(p.AbortedTransactions, a)
			}
			if rng.IntN(2) == 0 {
				p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = 3, 99
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = 1, 4
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	if rng.IntN(2) == 0 {
		b := kmsg.NewFetchResponseBroker()
		b.NodeID, b.Host, b.Port = 1, "localhost", 9092
		resp.Brokers = append(resp.Brokers, b)
	}
	return resp
}

// The spliced encoding of a Fetch response is byte for byte kmsg's encoding
// of the response with the record sets read into memory, at every served
// version.
func TestBulkFetchResponseEncodesAsKmsg(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	spans, data := bulkSpans(t, 20, rng)
	for version := int16(4); version <= 18; version++ {
		for range 10 {
			resp := randomFetchResponse(rng, version)
			r := &bulkFetchResponse{FetchResponse: resp}
			plain := kmsg.NewPtrFetchResponse()
			*plain = *resp
			plain.Topics = nil
			for _, tp := range resp.Topics {
				pt := tp
				pt.Partitions = append([]kmsg.FetchResponseTopicPartition(nil), tp.Partitions...)
				for pi := range pt.Partitions {
					if bytes.Equal(pt.Partitions[pi].RecordBatches, recordsMarker) {
						k := rng.IntN(len(spans))
						r.bodies = append(r.bodies, spans[k])
						pt.Partitions[pi].RecordBatches = data[k]
					}
				}
				plain.Topics = append(plain.Topics, pt)
			}
			prefix := []byte("header")
			want := plain.AppendTo(bytes.Clone(prefix))
			enc, splices := r.AppendBulk(bytes.Clone(prefix))
			if got := joinSplices(t, enc, splices); !bytes.Equal(got, want) {
				t.Fatalf("v%d: spliced encoding (%d bytes) differs from kmsg's (%d bytes)", version, len(got), len(want))
			}
			if len(splices) != len(r.bodies) {
				t.Fatalf("v%d: %d splices for %d record sets read from their files", version, len(splices), len(r.bodies))
			}
			if got := r.appendCopied(bytes.Clone(prefix)); !bytes.Equal(got, want) {
				t.Fatalf("v%d: the copying fallback (%d bytes) differs from kmsg's (%d bytes)", version, len(got), len(want))
			}
		}
	}
}

// A response whose encoding does not hold the markers where expected is
// encoded by copying, never garbled.
func TestSpliceRecordsRejectsMissingMarker(t *testing.T) {
	spans, _ := bulkSpans(t, 1, rand.New(rand.NewPCG(1, 1)))
	for _, flexible := range []bool{false, true} {
		if _, _, ok := spliceRecords(nil, []byte("no marker here"), spans, flexible); ok {
			t.Fatalf("flexible=%v: spliced an encoding without a marker", flexible)
		}
		// The marker with the wrong length prefix in front of it.
		enc := append([]byte{0, 0, 0, 9}, recordsMarker...)
		if _, _, ok := spliceRecords(nil, enc, spans, flexible); ok {
			t.Fatalf("flexible=%v: accepted a marker with the wrong length prefix", flexible)
		}
	}
}
