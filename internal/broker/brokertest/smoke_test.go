package brokertest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestProduceConsumeRoundTrip(t *testing.T) {
	b := Start(t, nil)
	cl := b.Client(kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("smoke"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons := b.Client(kgo.ConsumeTopics("smoke"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []*kgo.Record
	for len(got) < 10 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got = append(got, fs.Records()...)
	}
	for i, r := range got {
		if r.Offset != int64(i) || r.Value[0] != byte(i) {
			t.Fatalf("record %d: offset %d value %v", i, r.Offset, r.Value)
		}
	}
}
