package e2e

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
)

// requestsServed sums kafka_network_requestmetrics_requests_total for one
// request name over all versions, read from the admin /metrics endpoint.
func requestsServed(t testing.TB, adminAddr, request string) float64 {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	prefix := "kafka_network_requestmetrics_requests_total{"
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) || !strings.Contains(line, `request="`+request+`"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		sum += v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading /metrics: %v", err)
	}
	return sum
}

// A consumer whose fetch waits up to 10 s gets a record produced while the
// fetch is parked well before the wait ends.
func TestLongPollReturnsEarly(t *testing.T) {
	t.Parallel()
	b := brokertest.Start(t, nil)
	addr, admin := b.Addr().String(), b.AdminAddr().String()
	topic := uniqueTopic(t)
	createTopic(t, addr, topic, 1, nil)
	ctx := testCtx(t, 60*time.Second)

	const maxWait = 10 * time.Second
	producer := newClient(t, addr, kgo.DefaultProduceTopic(topic))
	consumer := newClient(t, addr,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(maxWait),
	)
	before := requestsServed(t, admin, "FetchConsumer")

	type receipt struct {
		at  time.Time
		rec *kgo.Record
		err error
	}
	got := make(chan receipt, 1)
	go func() {
		for {
			fs := consumer.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				got <- receipt{err: err}
				return
			}
			if rs := fs.Records(); len(rs) > 0 {
				got <- receipt{at: time.Now(), rec: rs[0]}
				return
			}
		}
	}()

	// The topic is empty, so the consumer's first fetch parks in the
	// broker. Produce only once the broker has taken that fetch.
	if !pollUntil(15*time.Second, func() bool { return requestsServed(t, admin, "FetchConsumer") > before }) {
		t.Fatal("the consumer sent no Fetch within 15s")
	}
	fetchesBefore := requestsServed(t, admin, "FetchConsumer")
	start := time.Now()
	produceSync(ctx, t, producer, &kgo.Record{Value: []byte("wake up")})
	acked := time.Now()

	var r receipt
	select {
	case r = <-got:
	case <-ctx.Done():
		t.Fatal("the consumer got nothing before the test deadline")
	}
	if r.err != nil {
		t.Fatalf("poll: %v", r.err)
	}
	if string(r.rec.Value) != "wake up" {
		t.Fatalf("got %q", r.rec.Value)
	}
	latency := r.at.Sub(start)
	t.Logf("produce→receipt %v (produce ack took %v), fetch max wait %v", latency, acked.Sub(start), maxWait)
	if latency > maxWait/5 {
		t.Fatalf("record arrived %v after it was produced; a parked fetch (max wait %v) should return at once", latency, maxWait)
	}
	// The record came on the parked fetch (or at most one follow-up), not
	// on a stream of fetches that returned empty.
	if n := requestsServed(t, admin, "FetchConsumer") - fetchesBefore; n > 2 {
		t.Fatalf("%v fetches were served between the produce and the receipt; the parked one should answer", n)
	}
}

// ListOffsets by timestamp (kadm.ListOffsetsAfterMilli) gives the first
// offset whose timestamp is at or after the one asked for, and the end
// offset when every record is older.
func TestListOffsetsByTimestamp(t *testing.T) {
	t.Parallel()
	b := brokertest.Start(t, nil)
	addr := b.Addr().String()
	topic := uniqueTopic(t)
	createTopic(t, addr, topic, 1, nil)
	ctx := testCtx(t, 30*time.Second)

	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic))
	// One batch per record so every batch has its own max timestamp.
	for i := 0; i < 5; i++ {
		produceSync(ctx, t, cl, &kgo.Record{Value: []byte{byte(i)}, Timestamp: base.Add(time.Duration(i) * 10 * time.Second)})
	}
	adm := kadm.NewClient(cl)
	for _, c := range []struct {
		at     time.Time
		offset int64
	}{
		{base.Add(-time.Minute), 0},
		{base, 0},
		{base.Add(time.Millisecond), 1},
		{base.Add(20 * time.Second), 2},
		{base.Add(25 * time.Second), 3},
		{base.Add(40 * time.Second), 4},
		{base.Add(41 * time.Second), 5}, // after every record: the end offset
	} {
		listed, err := adm.ListOffsetsAfterMilli(ctx, c.at.UnixMilli(), topic)
		if err != nil {
			t.Fatalf("ListOffsetsAfterMilli(%v): %v", c.at, err)
		}
		lo, ok := listed.Lookup(topic, 0)
		if !ok || lo.Err != nil {
			t.Fatalf("ListOffsetsAfterMilli(%v): %+v", c.at, lo)
		}
		if lo.Offset != c.offset {
			t.Errorf("at %v (+%v): offset %d, want %d", c.at.UnixMilli(), c.at.Sub(base), lo.Offset, c.offset)
		}
		if c.offset < 5 {
			if want := base.Add(time.Duration(c.offset) * 10 * time.Second).UnixMilli(); lo.Timestamp != want {
				t.Errorf("at +%v: timestamp %d, want %d", c.at.Sub(base), lo.Timestamp, want)
			}
		}
	}
	start, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := start.Lookup(topic, 0); s.Offset != 0 {
		t.Errorf("start offset %d, want 0", s.Offset)
	}
	if e, _ := end.Lookup(topic, 0); e.Offset != 5 {
		t.Errorf("end offset %d, want 5", e.Offset)
	}
}
