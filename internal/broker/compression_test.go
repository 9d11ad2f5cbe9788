package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/record"
)

// storedCodecs fetches partition 0 of topic from offset 0 with a raw Fetch
// and returns each stored batch's codec.
func storedCodecs(t *testing.T, ctx context.Context, b *brokertest.Broker, cl *kgo.Client, topic string) []record.Codec {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, b.Metadata().Topic(topic).ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatal(err)
	}
	var out []record.Codec
	for data := p.RecordBatches; len(data) > 0; {
		b, rest, ok := record.Split(data)
		if !ok {
			break
		}
		h, err := record.ValidateStored(b)
		if err != nil {
			t.Fatal(err)
		}
		out, data = append(out, h.Codec()), rest
	}
	return out
}

// Topic compression.type (and the broker's, its synonym) decides the codec
// batches are stored in, whatever the producer used, and consumers read the
// same records; a dynamic change applies to the next batch.
func TestCompressionTypeDecidesStoredCodec(t *testing.T) {
	b := brokertest.Start(t, nil)
	adm := b.AdminClient()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	brokertest.CreateTopic(t, adm, "zstd", 1, map[string]string{"compression.type": "zstd", "compression.zstd.level": "9"})
	brokertest.CreateTopic(t, adm, "plain", 1, map[string]string{"compression.type": "uncompressed"})
	brokertest.CreateTopic(t, adm, "default", 1, nil)

	produce := func(topic string, codec kgo.CompressionCodec, n int) {
		t.Helper()
		cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec))
		for i := 0; i < n; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("%s value %d, compressible compressible compressible", topic, i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce("zstd", kgo.GzipCompression(), 2)
	produce("plain", kgo.Lz4Compression(), 2)
	produce("default", kgo.SnappyCompression(), 1)
	// The broker's compression.type is the default topic's synonym.
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "compression.type", Value: kmsg.StringPtr("gzip")}}); err != nil {
		t.Fatal(err)
	}
	produce("default", kgo.SnappyCompression(), 1)

	cl := b.Client()
	for topic, want := range map[string][]record.Codec{
		"zstd":    {record.CodecZstd, record.CodecZstd},
		"plain":   {record.CodecNone, record.CodecNone},
		"default": {record.CodecSnappy, record.CodecGzip},
	} {
		if got := storedCodecs(t, ctx, b, cl, topic); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: stored codecs %v, want %v", topic, got, want)
		}
	}
	consumer := b.Client(kgo.ConsumeTopics("zstd"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 2 {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if got[0] != "zstd value 0, compressible compressible compressible" || got[1] != "zstd value 1, compressible compressible compressible" {
		t.Fatalf("consumed %q", got)
	}
}
