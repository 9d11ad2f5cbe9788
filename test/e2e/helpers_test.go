package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pollUntil calls cond every few milliseconds until it returns true or d has
// passed; it reports whether cond came true. The pause between calls only
// paces the polling: nothing waits on a fixed delay.
func pollUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	pause := 2 * time.Millisecond
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		if pause < 100*time.Millisecond {
			pause *= 2
		}
	}
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func newClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// serves reports whether the broker advertises key in ApiVersions.
func serves(ctx context.Context, t testing.TB, cl *kgo.Client, key kmsg.Key) bool {
	t.Helper()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key.Int16() {
			return true
		}
	}
	return false
}

// createTopic makes topic with the given partition count, through
// CreateTopics when the broker serves it and through Metadata
// auto-creation otherwise (then the broker's num.partitions must equal
// partitions, so tests that need a count pass it as an override too). It
// returns once Metadata shows every partition with a leader.
func createTopic(t testing.TB, addr, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	cl := newClient(t, addr)
	if serves(ctx, t, cl, kmsg.CreateTopics) {
		adm := kadm.NewClient(cl)
		resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			t.Fatalf("CreateTopics %s: %v", topic, err)
		}
		if resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
			t.Fatalf("CreateTopics %s: %v (%s)", topic, resp.Err, resp.ErrMessage)
		}
	} else {
		if len(configs) > 0 {
			t.Skipf("topic configs %v need CreateTopics, which this broker does not serve yet", configs)
		}
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = true
		if _, err := req.RequestWith(ctx, cl); err != nil {
			t.Fatalf("Metadata (auto-create %s): %v", topic, err)
		}
	}
	var got int
	ok := pollUntil(20*time.Second, func() bool {
		got = partitionsWithLeader(ctx, cl, topic)
		return got == int(partitions)
	})
	if !ok {
		t.Fatalf("topic %s: want %d partitions with a leader, metadata shows %d", topic, partitions, got)
	}
}

func partitionsWithLeader(ctx context.Context, cl *kgo.Client, topic string) int {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		return -1
	}
	n := 0
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode == 0 && p.Leader >= 0 {
			n++
		}
	}
	return n
}

// consumeN reads from the start of the given partitions of topic until it has
// n records or the context ends, and returns them in fetch order.
func consumeN(ctx context.Context, t testing.TB, addr, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := newClient(t, addr, append([]kgo.Opt{
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}, opts...)...)
	defer cl.Close()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records from %s before the deadline", len(out), n, topic)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s[%d]: %v", topic, p, err)
		})
		out = append(out, fs.Records()...)
	}
	if len(out) > n {
		t.Fatalf("consumed %d records from %s, want %d", len(out), topic, n)
	}
	return out
}

// produceSync produces records and fails the test on the first error.
func produceSync(ctx context.Context, t testing.TB, cl *kgo.Client, rs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func uniqueTopic(t testing.TB) string {
	return fmt.Sprintf("e2e-%s-%d", sanitize(t.Name()), time.Now().UnixNano()%1_000_000)
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.', c == '_':
		default:
			b[i] = '_'
		}
	}
	if len(b) > 120 {
		b = b[:120]
	}
	return string(b)
}
