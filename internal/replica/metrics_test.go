package replica

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/logmgr"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

func newTestManager(t testing.TB, cfg log.Config) *Manager {
	t.Helper()
	return newTestManagerFsync(t, cfg, false)
}

// newTestManagerFsync is newTestManager with gregor.ack.fsync set as given.
func newTestManagerFsync(t testing.TB, cfg log.Config, ackFsync bool) *Manager {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	logs, err := logmgr.Open(logmgr.Options{FS: vfs.NewMem(), Clock: clock.Real{}, Dirs: []string{"/d"},
		ConfigFor: func(string) log.Config { return cfg }, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logs.Close() })
	return New(logs, ackFsync, logger)
}

func batchOf(t testing.TB, n, valueSize int) []byte {
	t.Helper()
	spec := record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	for i := range n {
		spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i),
			Timestamp: time.Now().UnixMilli(), Value: make([]byte, valueSize)})
	}
	b, err := record.Build(&spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func seriesCount(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric, 64)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	n := 0
	for range ch {
		n++
	}
	return n
}

func TestTopicMetricsCounts(t *testing.T) {
	cfg := log.DefaultConfig()
	cfg.MaxMessageBytes = 1000
	m := newTestManager(t, cfg)
	tm := m.TopicMetrics()
	tp := topicpart.TopicPartition{Topic: "t", Partition: 0}
	if _, err := m.Host(tp, [16]byte{1}, cfg, 1); err != nil {
		t.Fatal(err)
	}
	ok := batchOf(t, 5, 10)
	if _, err := m.Append(t.Context(), tp, ok, 1, log.OriginClient); err != nil {
		t.Fatal(err)
	}
	big := batchOf(t, 1, 2000)
	if _, err := m.Append(t.Context(), tp, big, 1, log.OriginClient); !errors.Is(err, record.ErrTooLarge) {
		t.Fatalf("appending %d bytes over max.message.bytes 1000: %v", len(big), err)
	}
	tm.Topic("t").Produce(false)
	tm.Topic("t").Produce(true)
	tm.Topic("nope").Produce(true)
	tm.Topic("t").Fetch(70, false)

	for _, c := range []struct {
		i     int
		topic string
		want  float64
	}{
		{cMessagesIn, "t", 5}, {cMessagesIn, "", 5},
		{cBytesIn, "t", float64(len(ok))}, {cBytesIn, "", float64(len(ok))},
		{cBytesRejected, "t", float64(len(big))},
		{cTotalProduce, "t", 2}, {cTotalProduce, "", 3},
		{cFailedProduce, "t", 1}, {cFailedProduce, "", 2},
		{cTotalFetch, "t", 1}, {cBytesOut, "t", 70}, {cFailedFetch, "t", 0},
	} {
		if got := counterValue(t, tm.vecs[c.i].WithLabelValues(c.topic)); got != c.want {
			t.Errorf("%s{topic=%q} = %v, want %v", topicCounterDefs[c.i].name, c.topic, got, c.want)
		}
	}
	if n := seriesCount(tm.vecs[cTotalProduce]); n != 2 {
		t.Errorf("%d totalproducerequests series, want 2 (all topics and t; none for an unknown topic)", n)
	}
	if err := m.Drop(tp); err != nil {
		t.Fatal(err)
	}
	if n := seriesCount(tm.vecs[cTotalProduce]); n != 1 {
		t.Errorf("%d totalproducerequests series after dropping t's only partition, want 1", n)
	}
}

func TestReplicaStateMinISR(t *testing.T) {
	cfg := log.DefaultConfig()
	m := newTestManager(t, cfg)
	tp := topicpart.TopicPartition{Topic: "t", Partition: 0}
	p, err := m.Host(tp, [16]byte{1}, cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	st := p.ReplicaState()
	if !st.Leader || st.Replicas != 1 || st.ISR != 1 || st.UnderReplicated() || st.UnderMinISR() || !st.AtMinISR() {
		t.Fatalf("single-node state %+v: want leader, replicas = ISR = 1, at min ISR", st)
	}
	// Kafka's effectiveMinIsr: min.insync.replicas above the replica count
	// counts as the replica count, so a sole replica is never under it.
	p.SetMinISR(2)
	if st := p.ReplicaState(); st.UnderMinISR() || !st.AtMinISR() || st.MinISR != 1 {
		t.Fatalf("min.insync.replicas=2 with one replica: %+v", st)
	}
	if _, err := m.Append(t.Context(), tp, batchOf(t, 1, 1), -1, log.OriginClient); err != nil {
		t.Fatalf("acks=all append to a sole replica with min.insync.replicas=2: %v", err)
	}
}

// BenchmarkTopicStatsProduce is what counting one produced partition costs
// the request path: a topic lookup and two counter adds.
func BenchmarkTopicStatsProduce(b *testing.B) {
	m := newTestManager(b, log.DefaultConfig())
	if _, err := m.Host(topicpart.TopicPartition{Topic: "bench", Partition: 0}, [16]byte{1}, log.DefaultConfig(), 1); err != nil {
		b.Fatal(err)
	}
	tm := m.TopicMetrics()
	b.ReportAllocs()
	for b.Loop() {
		tm.Topic("bench").Produce(false)
	}
}
