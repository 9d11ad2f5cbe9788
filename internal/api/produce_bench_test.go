package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/api"
	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/broker"
	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/server"
)

// BenchmarkProduceHandler measures the broker side of one acks=1 Produce
// request (4 partitions, a 10-record batch each) from decoded request to
// response, without the network: the handler, the replica manager and the
// log append, with gregor.ack.fsync=false so fsync does not dominate.
// Keep -benchtime bounded (e.g. 20000x): every iteration appends to disk.
// The acls-10k variant has the StandardAuthorizer over 10,000 ACLs (the
// request's principal allowed by one of them): the difference is what ACL
// checks cost a produce.
func BenchmarkProduceHandler(b *testing.B) {
	b.Run("no-authorizer", func(b *testing.B) { benchmarkProduceHandler(b, nil) })
	b.Run("acls-10k", func(b *testing.B) {
		acls := []auth.Binding{{ResourceType: auth.ResourceTopic, ResourceName: "bench", PatternType: auth.PatternLiteral,
			Principal: "User:ANONYMOUS", Host: "*", Operation: auth.OpWrite, Permission: auth.Allow}}
		for i := range 9999 {
			pt, name := auth.PatternLiteral, fmt.Sprintf("team%d.service%d.events", i%200, i)
			if i%3 == 0 {
				pt, name = auth.PatternPrefixed, fmt.Sprintf("team%d.service%d", i%200, i)
			}
			acls = append(acls, auth.Binding{ResourceType: auth.ResourceTopic, ResourceName: name, PatternType: pt,
				Principal: fmt.Sprintf("User:u%d", i%50), Host: "*", Operation: auth.OpWrite, Permission: auth.Allow})
		}
		a := auth.New(auth.AuthorizerConfig{}, acls)
		benchmarkProduceHandler(b, func() *auth.Authorizer { return a })
	})
}

func benchmarkProduceHandler(b *testing.B, authorizer func() *auth.Authorizer) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	br := brokertest.Start(b, map[string]string{"gregor.ack.fsync": "false"})
	const topic, partitions = "bench", 4
	if err := br.CreateTopic(context.Background(), topic, partitions, nil); err != nil {
		b.Fatal(err)
	}
	h := api.New(api.Deps{
		NodeID: br.Config().NodeID(), Metadata: brokerMetadata{br.Broker}, Replicas: br.Replicas(), Logs: br.Logs(),
		Config: br.Config, Logger: logger, Authorizer: authorizer,
	})
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(11)
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	now := time.Now().UnixMilli()
	for p := int32(0); p < partitions; p++ {
		spec := record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
		for i := int32(0); i < 10; i++ {
			spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: i, Timestamp: now,
				Key: fmt.Appendf(nil, "k%d", i), Value: make([]byte, 50)})
		}
		batch, err := record.Build(&spec)
		if err != nil {
			b.Fatal(err)
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	sreq := &server.Request{Key: req.Key(), Version: req.GetVersion(), Body: req, Received: time.Now()}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		// The log rewrites each batch's base offset in place; the CRC does
		// not cover it, so the same bytes can be produced again.
		resp, err := h.Handle(ctx, sreq)
		if err != nil {
			b.Fatal(err)
		}
		if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			b.Fatalf("produce error code %d", code)
		}
	}
}

// brokerMetadata is a broker's published metadata as the handlers read it.
type brokerMetadata struct{ b *broker.Broker }

func (m brokerMetadata) Image() *metadata.Image { return m.b.Metadata() }

func (m brokerMetadata) WaitPublished(ctx context.Context, index uint64) error {
	return m.b.Node().WaitPublished(ctx, index)
}
