package broker_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/broker"
	"github.com/gregor-broker/gregor/internal/broker/brokertest"
)

// docMetric is one row of docs/metrics.md's table.
type docMetric struct {
	typ    dto.MetricType
	labels []string // sorted
}

// readDocMetrics parses the metric table of docs/metrics.md.
func readDocMetrics(t *testing.T) map[string]docMetric {
	t.Helper()
	f, err := os.Open("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	types := map[string]dto.MetricType{"counter": dto.MetricType_COUNTER, "gauge": dto.MetricType_GAUGE,
		"histogram": dto.MetricType_HISTOGRAM}
	out := map[string]docMetric{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 5 {
			t.Fatalf("docs/metrics.md: row with %d cells, want 5: %s", len(cells), line)
		}
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		typ, ok := types[strings.TrimSpace(cells[1])]
		if !ok {
			t.Fatalf("docs/metrics.md: %s has unknown type %q", name, cells[1])
		}
		var labels []string
		for _, l := range strings.Split(cells[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		sort.Strings(labels)
		if _, dup := out[name]; dup {
			t.Fatalf("docs/metrics.md lists %s twice", name)
		}
		out[name] = docMetric{typ: typ, labels: labels}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 40 {
		t.Fatalf("docs/metrics.md: parsed only %d metrics", len(out))
	}
	return out
}

// standard reports whether a family comes from client_golang's own
// collectors, which the doc mentions but does not list.
func standard(name string) bool {
	return strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") ||
		strings.HasPrefix(name, "promhttp_")
}

// scrape reads /metrics from the broker's admin listener.
func scrape(t *testing.T, b *brokertest.Broker) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + b.AdminAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// value returns the value of the series of family name whose labels are
// exactly labels (a counter's, gauge's or histogram's sample count), and
// whether it exists.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		if len(got) != len(labels) {
			continue
		}
		match := true
		for k, v := range labels {
			if got[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue(), true
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

func mustValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := value(fams, name, labels)
	if !ok {
		t.Fatalf("/metrics has no %s%v", name, labels)
	}
	return v
}

func sum(fams map[string]*dto.MetricFamily, name string) float64 {
	var s float64
	for _, m := range fams[name].GetMetric() {
		s += m.GetGauge().GetValue()
	}
	return s
}

// badFrame sends a frame with a negative size, which the broker refuses by
// closing the connection (gregor_network_request_errors_total
// {reason="invalid_receive"}).
func badFrame(t *testing.T, b *brokertest.Broker) {
	t.Helper()
	c, err := net.DialTimeout("tcp", b.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte{0xff, 0xff, 0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("the broker answered a frame of size -1")
	}
}

// pollScrape scrapes until ok accepts the result or 15 seconds pass.
func pollScrape(t *testing.T, b *brokertest.Broker, what string, ok func(map[string]*dto.MetricFamily) bool) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	pause := 5 * time.Millisecond
	for {
		fams := scrape(t, b)
		if ok(fams) {
			return fams
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics: %s did not happen within 15s", what)
		}
		time.Sleep(pause)
		pause = min(2*pause, 200*time.Millisecond)
	}
}

func enablePartitionSeries(ctx context.Context, t *testing.T, adm *kadm.Client) {
	t.Helper()
	v := "true"
	resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: broker.PartitionSeriesConfig, Value: &v}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resps {
		if r.Err != nil {
			t.Fatalf("enabling %s: %v (%s)", broker.PartitionSeriesConfig, r.Err, r.ErrMessage)
		}
	}
}

// TestMetricsDocumented checks that docs/metrics.md lists exactly the
// metrics /metrics exposes, with their types and labels.
func TestMetricsDocumented(t *testing.T) {
	doc := readDocMetrics(t)
	b := brokertest.Start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := b.AdminClient()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "documented"); err != nil {
		t.Fatal(err)
	}
	badFrame(t, b)

	check := func(fams map[string]*dto.MetricFamily, optIn bool) {
		t.Helper()
		for name, f := range fams {
			if standard(name) {
				continue
			}
			d, ok := doc[name]
			if !ok {
				t.Errorf("/metrics exposes %s, which docs/metrics.md does not list", name)
				continue
			}
			if f.GetType() != d.typ {
				t.Errorf("%s is a %v, docs/metrics.md says %v", name, f.GetType(), d.typ)
			}
			for _, m := range f.GetMetric() {
				var labels []string
				for _, lp := range m.GetLabel() {
					labels = append(labels, lp.GetName())
				}
				sort.Strings(labels)
				if !slices.Equal(labels, d.labels) {
					t.Errorf("%s has labels %v, docs/metrics.md says %v", name, labels, d.labels)
					break
				}
			}
		}
		for name := range doc {
			partitionSeries := strings.HasPrefix(name, "kafka_log_log_")
			_, exposed := fams[name]
			// Series of followed partitions: a single node follows none.
			followerOnly := name == "kafka_server_fetcherlagmetrics_consumerlag"
			switch {
			case followerOnly:
			case partitionSeries && !optIn && exposed:
				t.Errorf("%s is exposed although %s is off", name, broker.PartitionSeriesConfig)
			case (optIn || !partitionSeries) && !exposed:
				t.Errorf("docs/metrics.md lists %s, which /metrics does not expose", name)
			}
		}
	}
	check(pollScrape(t, b, "request errors counted", func(f map[string]*dto.MetricFamily) bool {
		return f["gregor_network_request_errors_total"] != nil
	}), false)
	enablePartitionSeries(ctx, t, adm)
	check(pollScrape(t, b, "per-partition series enabled", func(f map[string]*dto.MetricFamily) bool {
		return f["kafka_log_log_size"] != nil
	}), true)
}

// TestMetricsValues produces and consumes known records and checks what
// /metrics counts, as an operator's dashboard would read it.
func TestMetricsValues(t *testing.T) {
	b := brokertest.Start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := b.AdminClient()
	small := "1024"
	topics := []struct {
		name       string
		partitions int32
		n, size    int
	}{{"metrics-a", 2, 40, 100}, {"metrics-b", 1, 25, 300}}
	for _, tp := range topics {
		if _, err := adm.CreateTopic(ctx, tp.partitions, 1, nil, tp.name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": &small}, "metrics-small"); err != nil {
		t.Fatal(err)
	}

	// Uncompressed, so the bytes appended are at least the keys and values.
	cl := b.Client(kgo.ProducerBatchCompression(kgo.NoCompression()))
	payload := map[string]int{}
	for _, tp := range topics {
		var recs []*kgo.Record
		for i := range tp.n {
			key := fmt.Appendf(nil, "key-%03d", i)
			val := []byte(strings.Repeat("v", tp.size))
			recs = append(recs, &kgo.Record{Topic: tp.name, Key: key, Value: val})
			payload[tp.name] += len(key) + len(val)
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", tp.name, err)
		}
	}
	big := &kgo.Record{Topic: "metrics-small", Value: make([]byte, 4096)}
	if err := cl.ProduceSync(ctx, big).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("producing 4096 bytes to a topic with max.message.bytes=1024: %v, want MESSAGE_TOO_LARGE", err)
	}
	for _, tp := range topics {
		consumer := b.Client(kgo.ConsumeTopics(tp.name), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(200*time.Millisecond))
		got := 0
		for got < tp.n {
			fs := consumer.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consumed %d of %d records from %s", got, tp.n, tp.name)
			}
			if err := fs.Err(); err != nil {
				t.Fatalf("consume %s: %v", tp.name, err)
			}
			got += fs.NumRecords()
		}
	}

	fams := scrape(t, b)
	var allIn float64
	for _, tp := range topics {
		topic := map[string]string{"topic": tp.name}
		if got := mustValue(t, fams, "kafka_server_brokertopicmetrics_messagesin_total", topic); got != float64(tp.n) {
			t.Errorf("messages in %s = %v, want %d", tp.name, got, tp.n)
		}
		in := mustValue(t, fams, "kafka_server_brokertopicmetrics_bytesin_total", topic)
		if in < float64(payload[tp.name]) {
			t.Errorf("bytes in %s = %v, less than the %d bytes of keys and values", tp.name, in, payload[tp.name])
		}
		allIn += in
		if out := mustValue(t, fams, "kafka_server_brokertopicmetrics_bytesout_total", topic); out < in {
			t.Errorf("bytes out %s = %v after consuming everything, less than bytes in %v", tp.name, out, in)
		}
		if n := mustValue(t, fams, "kafka_server_brokertopicmetrics_totalproducerequests_total", topic); n < 1 {
			t.Errorf("produce requests %s = %v", tp.name, n)
		}
		if n := mustValue(t, fams, "kafka_server_brokertopicmetrics_totalfetchrequests_total", topic); n < 1 {
			t.Errorf("fetch requests %s = %v", tp.name, n)
		}
		if n := mustValue(t, fams, "kafka_server_brokertopicmetrics_failedproducerequests_total", topic); n != 0 {
			t.Errorf("failed produce requests %s = %v, want 0", tp.name, n)
		}
	}
	smallTopic := map[string]string{"topic": "metrics-small"}
	if n := mustValue(t, fams, "kafka_server_brokertopicmetrics_failedproducerequests_total", smallTopic); n < 1 {
		t.Errorf("failed produce requests metrics-small = %v, want ≥ 1", n)
	}
	if n := mustValue(t, fams, "kafka_server_brokertopicmetrics_bytesrejected_total", smallTopic); n < 4096 {
		t.Errorf("bytes rejected metrics-small = %v, want ≥ 4096", n)
	}
	if n := mustValue(t, fams, "kafka_server_brokertopicmetrics_messagesin_total", smallTopic); n != 0 {
		t.Errorf("messages in metrics-small = %v, want 0", n)
	}
	all := map[string]string{"topic": ""}
	if n := mustValue(t, fams, "kafka_server_brokertopicmetrics_failedproducerequests_total", all); n < 1 {
		t.Errorf("failed produce requests, all topics = %v, want ≥ 1", n)
	}
	if n := mustValue(t, fams, "kafka_server_brokertopicmetrics_bytesin_total", all); n < allIn {
		t.Errorf("bytes in, all topics = %v, less than the topics' sum %v", n, allIn)
	}
	if n := mustValue(t, fams, "kafka_server_brokertopicmetrics_messagesin_total", all); n < float64(topics[0].n+topics[1].n) {
		t.Errorf("messages in, all topics = %v", n)
	}
	var produces float64
	for _, m := range fams["kafka_network_requestmetrics_requests_total"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "request" && lp.GetValue() == "Produce" {
				produces += m.GetCounter().GetValue()
			}
		}
	}
	if produces < 3 {
		t.Errorf("Produce requests = %v, want ≥ 3", produces)
	}
	if n := mustValue(t, fams, "kafka_log_logflushstats_logflushrateandtimems", nil); n < 1 {
		t.Errorf("log flushes = %v after acks=all produce with gregor.ack.fsync=true", n)
	}

	im := b.Metadata()
	var partitions int
	for _, tp := range im.SortedTopics() {
		partitions += len(tp.Partitions)
	}
	if partitions < 4 {
		t.Fatalf("metadata holds %d partitions, want ≥ 4", partitions)
	}
	for name, want := range map[string]float64{
		"kafka_server_replicamanager_partitioncount":              float64(partitions),
		"kafka_server_replicamanager_leadercount":                 float64(partitions),
		"kafka_server_replicamanager_underreplicatedpartitions":   0,
		"kafka_server_replicamanager_underminisrpartitioncount":   0,
		"kafka_server_replicamanager_atminisrpartitioncount":      float64(partitions), // min.insync.replicas=1, ISR of 1
		"kafka_server_replicamanager_offlinereplicacount":         0,
		"kafka_controller_kafkacontroller_offlinepartitionscount": 0,
		"kafka_controller_kafkacontroller_activecontrollercount":  1,
		"kafka_controller_kafkacontroller_globaltopiccount":       float64(im.NumTopics()),
		"kafka_controller_kafkacontroller_globalpartitioncount":   float64(partitions),
		"kafka_coordinator_group_groupmetadatamanager_numgroups":  0,
	} {
		if got := mustValue(t, fams, name, nil); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := sum(fams, "gregor_log_size_bytes"); got < allIn {
		t.Errorf("gregor_log_size_bytes = %v, less than the bytes appended %v", got, allIn)
	}
	if fams["kafka_log_log_size"] != nil {
		t.Fatalf("per-partition series exposed while %s is off", broker.PartitionSeriesConfig)
	}

	enablePartitionSeries(ctx, t, adm)
	fams = pollScrape(t, b, "per-partition series enabled", func(f map[string]*dto.MetricFamily) bool {
		return f["kafka_log_log_size"] != nil
	})
	if got := len(fams["kafka_log_log_size"].GetMetric()); got != partitions {
		t.Errorf("kafka_log_log_size has %d series, want one per partition (%d)", got, partitions)
	}
	if got, want := sum(fams, "kafka_log_log_size"), sum(fams, "gregor_log_size_bytes"); got != want {
		t.Errorf("per-partition sizes sum to %v, the log dir total is %v", got, want)
	}
	b0 := map[string]string{"topic": "metrics-b", "partition": "0"}
	if got := mustValue(t, fams, "kafka_log_log_logendoffset", b0); got != float64(topics[1].n) {
		t.Errorf("log end offset of metrics-b/0 = %v, want %d", got, topics[1].n)
	}
	if got := mustValue(t, fams, "kafka_log_log_logstartoffset", b0); got != 0 {
		t.Errorf("log start offset of metrics-b/0 = %v, want 0", got)
	}
	if got := mustValue(t, fams, "kafka_log_log_numlogsegments", b0); got != 1 {
		t.Errorf("segments of metrics-b/0 = %v, want 1", got)
	}
	var aEnd float64
	for _, p := range []string{"0", "1"} {
		aEnd += mustValue(t, fams, "kafka_log_log_logendoffset", map[string]string{"topic": "metrics-a", "partition": p})
	}
	if aEnd != float64(topics[0].n) {
		t.Errorf("log end offsets of metrics-a sum to %v, want %d", aEnd, topics[0].n)
	}
}

// TestMetricsTopicDeleted checks that a deleted topic's series go with it.
func TestMetricsTopicDeleted(t *testing.T) {
	b := brokertest.Start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := b.AdminClient()
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "doomed"); err != nil {
		t.Fatal(err)
	}
	cl := b.Client()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "doomed", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	doomed := map[string]string{"topic": "doomed"}
	if got := mustValue(t, scrape(t, b), "kafka_server_brokertopicmetrics_messagesin_total", doomed); got != 1 {
		t.Fatalf("messages in doomed = %v, want 1", got)
	}
	if _, err := adm.DeleteTopics(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	pollScrape(t, b, "deleted topic's series removed", func(f map[string]*dto.MetricFamily) bool {
		_, ok := value(f, "kafka_server_brokertopicmetrics_messagesin_total", doomed)
		return !ok
	})
}
