package api

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/server"
)

// joinSplices is what the server writes for a BulkResponse: the encoded
// bytes with each splice's data inserted at its position.
func joinSplices(t *testing.T, enc []byte, splices []server.Splice) []byte {
	t.Helper()
	var out []byte
	prev := 0
	for _, s := range splices {
		if s.At < prev || s.At > len(enc) {
			t.Fatalf("splice at %d out of order or past the end (%d bytes)", s.At, len(enc))
		}
		out = append(append(out, enc[prev:s.At]...), s.Data...)
		prev = s.At
	}
	return append(out, enc[prev:]...)
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
			default:
				p.RecordBatches = make([]byte, bulkMinBytes+rng.IntN(100<<10))
			}
			fill := byte(rng.Uint32())
			for i := range p.RecordBatches {
				p.RecordBatches[i] = fill + byte(i)
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

// The spliced encoding of a Fetch response is byte for byte kmsg's, at
// every served version, and encoding leaves the response as it was.
func TestBulkFetchResponseEncodesAsKmsg(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for version := int16(4); version <= 18; version++ {
		for range 10 {
			resp := randomFetchResponse(rng, version)
			prefix := []byte("header")
			want := resp.AppendTo(bytes.Clone(prefix))
			r := &bulkFetchResponse{FetchResponse: resp}
			enc, splices := r.AppendBulk(bytes.Clone(prefix))
			if got := joinSplices(t, enc, splices); !bytes.Equal(got, want) {
				t.Fatalf("v%d: spliced encoding (%d bytes) differs from kmsg's (%d bytes)", version, len(got), len(want))
			}
			for _, s := range splices {
				if len(s.Data) < bulkMinBytes {
					t.Fatalf("v%d: a %d-byte record set was spliced; below %d they are encoded inline", version, len(s.Data), bulkMinBytes)
				}
			}
			if again := resp.AppendTo(bytes.Clone(prefix)); !bytes.Equal(again, want) {
				t.Fatalf("v%d: AppendBulk changed the response", version)
			}
		}
	}
}

// A response whose encoding does not hold the markers where expected is
// encoded by copying, never garbled.
func TestSpliceRecordsRejectsMissingMarker(t *testing.T) {
	data := [][]byte{make([]byte, bulkMinBytes)}
	for _, flexible := range []bool{false, true} {
		if _, _, ok := spliceRecords(nil, []byte("no marker here"), data, flexible); ok {
			t.Fatalf("flexible=%v: spliced an encoding without a marker", flexible)
		}
		// The marker with the wrong length prefix in front of it.
		enc := append([]byte{0, 0, 0, 9}, recordsMarker...)
		if _, _, ok := spliceRecords(nil, enc, data, flexible); ok {
			t.Fatalf("flexible=%v: accepted a marker with the wrong length prefix", flexible)
		}
	}
}
