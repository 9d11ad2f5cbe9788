package source_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/broker/brokertest"
)

// TestAPIRecordsPageBoundsDecodedBytes: max_bytes bounds what a page holds
// once decompressed, not only the batch bytes it scans. A zstd batch of a
// few hundred bytes may hold megabytes of value; a page of such records
// must not hold max_records × megabytes (one record is always returned).
func TestAPIRecordsPageBoundsDecodedBytes(t *testing.T) {
	b := brokertest.Start(t, browse)
	brokertest.CreateTopic(t, b.AdminClient(), "big", 1, nil)
	const valueBytes = 1 << 20
	value := bytes.Repeat([]byte{'z'}, valueBytes)
	// The client's own limit is on uncompressed bytes; the broker's
	// max.message.bytes is on the compressed batch, a few hundred bytes.
	cl := b.Client(kgo.DefaultProduceTopic("big"), kgo.ProducerBatchCompression(kgo.ZstdCompression()),
		kgo.ProducerBatchMaxBytes(4<<20), kgo.MaxBufferedBytes(64<<20))
	for range 6 {
		brokertest.Produce(t, cl, &kgo.Record{Key: []byte("k"), Value: value})
	}
	var p admin.RecordPage
	mustGet(t, b, "/v1/partitions/big/0/records?max_bytes=1500000", &p)
	var held int
	for _, r := range p.Records {
		held += len(r.Key) + len(r.Value)
	}
	if len(p.Records) != 1 || p.StopReason != "max_bytes" || p.NextOffset != 1 {
		t.Fatalf("page of %d records holding %d bytes, next offset %d, stop %q; want 1 record (max_bytes=1500000), next offset 1, stop max_bytes",
			len(p.Records), held, p.NextOffset, p.StopReason)
	}
	// The next page goes on from there.
	mustGet(t, b, "/v1/partitions/big/0/records?offset=1&max_bytes=2500000", &p)
	if len(p.Records) != 2 || p.Records[0].Offset != 1 || p.NextOffset != 3 || p.StopReason != "max_bytes" {
		t.Fatalf("second page: %d records from %d, next %d, stop %q", len(p.Records), p.StartOffset, p.NextOffset, p.StopReason)
	}
}

// TestAPIRecordsBatches reads pages out of batches of ten records in every
// codec: a page starts at its offset even in the middle of a batch, and one
// that fills up in the middle of a batch goes on from the next record.
func TestAPIRecordsBatches(t *testing.T) {
	b := brokertest.Start(t, browse)
	brokertest.CreateTopic(t, b.AdminClient(), "codecs", 1, nil)
	codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(),
		kgo.Lz4Compression(), kgo.ZstdCompression()}
	names := []string{"none", "gzip", "snappy", "lz4", "zstd"}
	for ci, c := range codecs {
		// Manual flushing puts the ten records in one batch.
		cl := b.Client(kgo.DefaultProduceTopic("codecs"), kgo.ProducerBatchCompression(c), kgo.ManualFlushing())
		errs := make(chan error, 10)
		for i := range 10 {
			// Values that compress, or the client sends the batch as it is.
			r := &kgo.Record{Key: []byte(fmt.Sprint(ci*10 + i)), Value: bytes.Repeat([]byte{'a' + byte(i)}, 200)}
			cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) { errs <- err })
		}
		if err := cl.Flush(brokertest.Context(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		for range 10 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		cl.Close()
	}
	next := int64(3)
	for next < 50 {
		var p admin.RecordPage
		mustGet(t, b, fmt.Sprintf("/v1/partitions/codecs/0/records?offset=%d&max_records=7", next), &p)
		if p.StartOffset != next || len(p.Records) == 0 {
			t.Fatalf("page from %d: %+v", next, p)
		}
		for i, r := range p.Records {
			off := next + int64(i)
			if r.Offset != off || r.Key != fmt.Sprint(off) || r.Compression != names[off/10] ||
				r.Value != strings.Repeat(string(rune('a'+off%10)), 200) {
				t.Fatalf("page from %d, record %d: offset %d key %q %s value %.10q…", next, i, r.Offset, r.Key, r.Compression, r.Value)
			}
		}
		if want := min(next+7, 50); p.NextOffset != want {
			t.Fatalf("page from %d: next offset %d, want %d", next, p.NextOffset, want)
		}
		next = p.NextOffset
	}
}

// TestAPIRecordsReadCommitted: the browser with isolation=read_committed
// hides the records of an aborted transaction (and of one still open, past
// the last stable offset); read_uncommitted shows them all. Markers are
// never shown.
func TestAPIRecordsReadCommitted(t *testing.T) {
	b := brokertest.Start(t, browse)
	brokertest.CreateTopic(t, b.AdminClient(), "tx", 1, nil)
	cl := b.Client(kgo.DefaultProduceTopic("tx"), kgo.TransactionalID("browser"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, v := range []string{"c1", "a1", "c2", "open"} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		brokertest.Produce(t, cl, &kgo.Record{Value: []byte(v)})
		if v == "open" {
			break
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(v[0] == 'c')); err != nil {
			t.Fatal(err)
		}
	}
	values := func(isolation string) string {
		var p admin.RecordPage
		mustGet(t, b, "/v1/partitions/tx/0/records?isolation="+isolation, &p)
		var out []string
		for _, r := range p.Records {
			out = append(out, string(r.Value))
		}
		return strings.Join(out, ",")
	}
	if got := values("read_committed"); got != "c1,c2" {
		t.Fatalf("read_committed: %q, want c1,c2", got)
	}
	if got := values("read_uncommitted"); got != "c1,a1,c2,open" {
		t.Fatalf("read_uncommitted: %q, want c1,a1,c2,open", got)
	}
}
