package broker_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// An idempotent producer keeps producing across a DeleteRecords up to the
// high watermark, which deletes the segments holding its batches, without
// errors: the partition keeps the producer's state (Kafka since KIP-360) and
// its sequence goes on. producer.id.expiration.ms, a dynamic broker config,
// reaches the partition logs.
func TestIdempotentProducerAcrossDeleteRecords(t *testing.T) {
	b := brokertest.Start(t, nil)
	adm := b.AdminClient()
	const topic = "idempotent"
	brokertest.CreateTopic(t, adm, topic, 1, map[string]string{"internal.segment.bytes": "200"})
	cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	send := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			r := &kgo.Record{Partition: 0, Value: []byte(strconv.Itoa(i))}
			brokertest.Produce(t, cl, r)
			if r.Offset != int64(i) {
				t.Fatalf("record %d at offset %d", i, r.Offset)
			}
		}
	}
	send(0, 20)
	// Another producer's record, too big for the segment holding offset 19,
	// starts a segment at 20; DeleteRecords to the high watermark (21) then
	// deletes every segment holding the idempotent producer's batches.
	other := b.Client(kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite())
	brokertest.Produce(t, other, &kgo.Record{Value: make([]byte, 300)})
	ctx := brokertest.Context(t, 30*time.Second)
	var to kadm.Offsets
	to.Add(kadm.Offset{Topic: topic, Partition: 0, At: 21})
	resp, err := adm.DeleteRecords(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := resp.Lookup(topic, 0); !ok || d.Err != nil || d.LowWatermark != 21 {
		t.Fatalf("DeleteRecords to 21: %+v", d)
	}
	l := b.Logs().Get(topicpart.TopicPartition{Topic: topic, Partition: 0})
	snap, err := l.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if first := snap.Segments[0].BaseOffset; first != 20 {
		t.Fatalf("first segment at %d after DeleteRecords, want 20", first)
	}
	pid, _, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Producer(pid); !ok {
		t.Fatalf("producer %d forgotten after DeleteRecords", pid)
	}
	send(21, 20)

	if got := l.Config().ProducerIDExpirationMs; got != 86400000 {
		t.Fatalf("log's producer.id.expiration.ms %d, want the default 86400000", got)
	}
	v := "3600000"
	alter, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "producer.id.expiration.ms", Value: &v}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range alter {
		if r.Err != nil {
			t.Fatalf("setting producer.id.expiration.ms: %v (%s)", r.Err, r.ErrMessage)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); l.Config().ProducerIDExpirationMs != 3600000; {
		if time.Now().After(deadline) {
			t.Fatalf("log's producer.id.expiration.ms still %d", l.Config().ProducerIDExpirationMs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
