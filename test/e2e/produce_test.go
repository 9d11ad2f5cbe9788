package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
)

// Each codec's batches are stored as the producer compressed them
// (compression.type=producer) and come back with the same contents and the
// same codec in the batch attributes.
func TestCodecsRoundTrip(t *testing.T) {
	t.Parallel()
	b := brokertest.Start(t, nil)
	addr := b.Addr().String()
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		attr  uint8 // batch attributes' compression bits
	}{
		{"none", kgo.NoCompression(), 0},
		{"gzip", kgo.GzipCompression(), 1},
		{"snappy", kgo.SnappyCompression(), 2},
		{"lz4", kgo.Lz4Compression(), 3},
		{"zstd", kgo.ZstdCompression(), 4},
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			topic := uniqueTopic(t)
			createTopic(t, addr, topic, 1, nil)
			ctx := testCtx(t, 30*time.Second)
			cl := newClient(t, addr, kgo.DefaultProduceTopic(topic),
				kgo.ProducerBatchCompression(c.codec), kgo.ProducerLinger(50*time.Millisecond))
			const n = 500
			want := make([]*kgo.Record, n)
			for i := range want {
				// Compressible values of varying length, some empty, a
				// null key on every seventh record, and headers.
				r := &kgo.Record{
					Key:   []byte(fmt.Sprintf("key-%d", i%13)),
					Value: bytes.Repeat([]byte(fmt.Sprintf("%s-%d|", c.name, i)), i%50),
					Headers: []kgo.RecordHeader{
						{Key: "i", Value: []byte(fmt.Sprint(i))},
					},
				}
				if i%7 == 0 {
					r.Key = nil
				}
				want[i] = r
			}
			produceSync(ctx, t, cl, want...)

			got := consumeN(ctx, t, addr, topic, n)
			for i, r := range got {
				w := want[i]
				if r.Offset != int64(i) {
					t.Fatalf("record %d has offset %d", i, r.Offset)
				}
				if !bytes.Equal(r.Key, w.Key) || (r.Key == nil) != (w.Key == nil) {
					t.Fatalf("record %d: key %q, want %q", i, r.Key, w.Key)
				}
				if !bytes.Equal(r.Value, w.Value) {
					t.Fatalf("record %d: value %q, want %q", i, r.Value, w.Value)
				}
				if len(r.Headers) != 1 || r.Headers[0].Key != "i" || string(r.Headers[0].Value) != fmt.Sprint(i) {
					t.Fatalf("record %d: headers %v", i, r.Headers)
				}
				if ct := r.Attrs.CompressionType(); ct != c.attr {
					t.Fatalf("record %d came back in a batch with codec %d, want %d (%s)", i, ct, c.attr, c.name)
				}
			}
		})
	}
}

// A batch of exactly max.message.bytes is taken; one byte more is refused
// with MESSAGE_TOO_LARGE and the log is unchanged.
func TestMaxMessageBytes(t *testing.T) {
	t.Parallel()
	b := brokertest.Start(t, nil)
	addr := b.Addr().String()
	topic := uniqueTopic(t)
	createTopic(t, addr, topic, 1, nil)
	ctx := testCtx(t, 60*time.Second)

	// Kafka's default max.message.bytes (broker message.max.bytes).
	const limit = 1048588
	// Size of a v2 batch holding one record with a null key, no headers, a
	// timestamp delta and offset delta of 0 and a value of v bytes: the
	// 61-byte batch header, the record's length varint, then attributes,
	// timestamp delta, offset delta, key length (-1) (one byte each), the
	// value length varint, the value and the header count (one byte).
	batchSize := func(v int) int {
		body := 4 + varintLen(int64(v)) + v + 1
		return 61 + varintLen(int64(body)) + body
	}
	v := limit - 61 - 3 - 4 - 3 - 1 // first guess, then adjust to the exact size
	for batchSize(v) < limit {
		v++
	}
	for batchSize(v) > limit {
		v--
	}
	if batchSize(v) != limit {
		t.Fatalf("no value size gives a %d-byte batch", limit)
	}

	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(4<<20),
		kgo.RecordRetries(0),
	)
	val := bytes.Repeat([]byte{'x'}, v)
	produceSync(ctx, t, cl, &kgo.Record{Value: val})

	err := cl.ProduceSync(ctx, &kgo.Record{Value: append(val, 'y')}).FirstErr()
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("a %d-byte batch (limit %d): got %v, want MESSAGE_TOO_LARGE", limit+1, limit, err)
	}
	// A small record after the refusal still goes to offset 1.
	r := &kgo.Record{Value: []byte("small")}
	produceSync(ctx, t, cl, r)
	if r.Offset != 1 {
		t.Fatalf("record after the refused batch got offset %d, want 1", r.Offset)
	}
	got := consumeN(ctx, t, addr, topic, 2, kgo.FetchMaxBytes(8<<20), kgo.FetchMaxPartitionBytes(8<<20))
	if len(got[0].Value) != v || string(got[1].Value) != "small" {
		t.Fatalf("log holds values of %d and %d bytes, want %d and 5", len(got[0].Value), len(got[1].Value), v)
	}
}

func varintLen(x int64) int {
	u := uint64((x << 1) ^ (x >> 63))
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// A 100-partition topic takes records on every partition and gives each
// partition's records back in order.
func TestHundredPartitions(t *testing.T) {
	t.Parallel()
	const parts = 100
	// num.partitions makes auto-creation (used when CreateTopics is not
	// served) give the same topic.
	b := brokertest.Start(t, map[string]string{"num.partitions": fmt.Sprint(parts)})
	addr := b.Addr().String()
	topic := uniqueTopic(t)
	createTopic(t, addr, topic, parts, nil)
	ctx := testCtx(t, 60*time.Second)

	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const perPart = 20
	var rs []*kgo.Record
	for i := 0; i < perPart; i++ {
		for p := int32(0); p < parts; p++ {
			rs = append(rs, &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, i))})
		}
	}
	produceSync(ctx, t, cl, rs...)

	got := consumeN(ctx, t, addr, topic, parts*perPart)
	next := make([]int64, parts)
	for _, r := range got {
		want := fmt.Sprintf("p%d-%d", r.Partition, next[r.Partition])
		if r.Offset != next[r.Partition] || string(r.Value) != want {
			t.Fatalf("partition %d: offset %d value %q, want offset %d value %q",
				r.Partition, r.Offset, r.Value, next[r.Partition], want)
		}
		next[r.Partition]++
	}
	for p, n := range next {
		if n != perPart {
			t.Fatalf("partition %d: %d records, want %d", p, n, perPart)
		}
	}
}
