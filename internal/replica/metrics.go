package replica

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TopicMetrics are Kafka's BrokerTopicMetrics (kafka.server:
// type=BrokerTopicMetrics,name=…PerSec, broker-wide and with topic=…) as
// counters, named as the Prometheus JMX exporter names them
// (kafka_server_brokertopicmetrics_bytesin_total). The broker-wide series
// carries topic="", which Prometheus stores as a series without the label,
// the way the exporter shows the MBean that has no topic key.
//
// Per-topic children exist only for hosted topics: they are made when a
// topic's first partition is hosted and deleted with its last, so a client
// naming topics that do not exist cannot grow the series set. Requests
// resolve a topic's children once (a sync.Map load) and appends use the
// children cached on the Partition, so counting costs a few atomic adds.
type TopicMetrics struct {
	vecs    [numTopicCounters]*prometheus.CounterVec
	all     *topicCounters
	byTopic sync.Map // topic name → *topicCounters
	// hostedParts counts each topic's hosted partitions (the Manager's mu).
	hostedParts map[string]int
}

// The counters of one topic (or of all topics), indexed as topicCounterDefs.
const (
	cBytesIn = iota
	cBytesOut
	cMessagesIn
	cBytesRejected
	cTotalProduce
	cTotalFetch
	cFailedProduce
	cFailedFetch
	numTopicCounters
)

var topicCounterDefs = [numTopicCounters]struct{ name, help string }{
	cBytesIn: {"kafka_server_brokertopicmetrics_bytesin_total",
		"Bytes of record batches appended by produce and coordinator writes (BytesInPerSec)."},
	cBytesOut: {"kafka_server_brokertopicmetrics_bytesout_total",
		"Bytes of record batches returned to consumers by fetch (BytesOutPerSec)."},
	cMessagesIn: {"kafka_server_brokertopicmetrics_messagesin_total",
		"Records appended by produce and coordinator writes (MessagesInPerSec)."},
	cBytesRejected: {"kafka_server_brokertopicmetrics_bytesrejected_total",
		"Bytes of produced batches rejected as larger than max.message.bytes (BytesRejectedPerSec)."},
	cTotalProduce: {"kafka_server_brokertopicmetrics_totalproducerequests_total",
		"Partitions of Produce requests (TotalProduceRequestsPerSec)."},
	cTotalFetch: {"kafka_server_brokertopicmetrics_totalfetchrequests_total",
		"Partitions of Fetch requests (TotalFetchRequestsPerSec)."},
	cFailedProduce: {"kafka_server_brokertopicmetrics_failedproducerequests_total",
		"Partitions of Produce requests answered with an error (FailedProduceRequestsPerSec)."},
	cFailedFetch: {"kafka_server_brokertopicmetrics_failedfetchrequests_total",
		"Partitions of Fetch requests answered with an error (FailedFetchRequestsPerSec)."},
}

type topicCounters [numTopicCounters]prometheus.Counter

func newTopicMetrics() *TopicMetrics {
	m := &TopicMetrics{hostedParts: map[string]int{}}
	for i, d := range topicCounterDefs {
		m.vecs[i] = prometheus.NewCounterVec(prometheus.CounterOpts{Name: d.name, Help: d.help}, []string{"topic"})
	}
	m.all = m.children("")
	return m
}

func (m *TopicMetrics) children(topic string) *topicCounters {
	var c topicCounters
	for i, v := range m.vecs {
		c[i] = v.WithLabelValues(topic)
	}
	return &c
}

// hosted counts one more hosted partition of topic and returns the topic's
// children, making them on first use. Called with the Manager's mu held, so
// it does not race with dropped.
func (m *TopicMetrics) hosted(topic string) *topicCounters {
	m.hostedParts[topic]++
	if c, ok := m.byTopic.Load(topic); ok {
		return c.(*topicCounters)
	}
	c := m.children(topic)
	m.byTopic.Store(topic, c)
	return c
}

// dropped counts one hosted partition of topic less and deletes the topic's
// series once it has none left. Called with the Manager's mu held.
func (m *TopicMetrics) dropped(topic string) {
	if m.hostedParts[topic]--; m.hostedParts[topic] > 0 {
		return
	}
	delete(m.hostedParts, topic)
	m.byTopic.Delete(topic)
	for _, v := range m.vecs {
		v.DeleteLabelValues(topic)
	}
}

// Topic returns what one request counts into for topic: the broker-wide
// counters, and topic's own when this broker hosts it. A nil TopicMetrics
// gives a TopicStats that counts nothing.
func (m *TopicMetrics) Topic(topic string) TopicStats {
	if m == nil {
		return TopicStats{}
	}
	s := TopicStats{all: m.all}
	if c, ok := m.byTopic.Load(topic); ok {
		s.topic = c.(*topicCounters)
	}
	return s
}

// TopicStats counts one topic's request outcomes.
type TopicStats struct{ all, topic *topicCounters }

func (s TopicStats) add(i int, n float64) {
	if s.all == nil {
		return
	}
	s.all[i].Add(n)
	if s.topic != nil {
		s.topic[i].Add(n)
	}
}

// Produce counts one partition of a Produce request, failed when it was
// answered with an error code.
func (s TopicStats) Produce(failed bool) {
	s.add(cTotalProduce, 1)
	if failed {
		s.add(cFailedProduce, 1)
	}
}

// Fetch counts one partition of a Fetch request: bytesOut is the record
// bytes returned to a consumer (0 for a follower, whose bytes are
// replication traffic), failed when it was answered with an error code.
func (s TopicStats) Fetch(bytesOut int, failed bool) {
	s.add(cTotalFetch, 1)
	if bytesOut > 0 {
		s.add(cBytesOut, float64(bytesOut))
	}
	if failed {
		s.add(cFailedFetch, 1)
	}
}

func (m *TopicMetrics) describe(ch chan<- *prometheus.Desc) {
	for _, v := range m.vecs {
		v.Describe(ch)
	}
}

func (m *TopicMetrics) collect(ch chan<- prometheus.Metric) {
	for _, v := range m.vecs {
		v.Collect(ch)
	}
}

// flushBucketsMs are the bounds of the log flush histogram, in
// milliseconds: fdatasync takes well under a millisecond on a device with a
// write cache and tens of milliseconds on a busy disk.
var flushBucketsMs = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000}

func newFlushHistogram() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kafka_log_logflushstats_logflushrateandtimems",
		Help:    "Time of the log flushes (fsync) the replica manager waits for, in milliseconds (LogFlushRateAndTimeMs).",
		Buckets: flushBucketsMs,
	})
}

// timedSync runs sync as a log flush of p up to upTo, observing its time
// when the log was not already durable that far.
func (m *Manager) timedSync(p *Partition, upTo int64, sync func() error) error {
	if p.Log.RecoveryPoint() >= upTo {
		return sync()
	}
	start := time.Now()
	err := sync()
	m.flushTime.Observe(float64(time.Since(start)) / float64(time.Millisecond))
	return err
}

// TopicMetrics returns the BrokerTopicMetrics counters requests count into.
func (m *Manager) TopicMetrics() *TopicMetrics {
	if m == nil {
		return nil
	}
	return m.metrics
}

// The Fetch purgatory gauges, read at scrape time (Kafka's
// kafka.server:type=DelayedOperationPurgatory,delayedOperation=Fetch).
var (
	purgatoryLabels   = prometheus.Labels{"delayedOperation": "Fetch"}
	descPurgatorySize = prometheus.NewDesc("kafka_server_delayedoperationpurgatory_purgatorysize",
		"Partition registrations of the long-poll fetches waiting (PurgatorySize): a fetch counts once per partition it waits on.",
		nil, purgatoryLabels)
	descDelayedFetches = prometheus.NewDesc("kafka_server_delayedoperationpurgatory_numdelayedoperations",
		"Long-poll fetches waiting for data (NumDelayedOperations).", nil, purgatoryLabels)
)

// Collector returns the replica manager's Prometheus metrics: the
// BrokerTopicMetrics counters, the log flush histogram, the ISR shrink and
// expansion counters and the Fetch purgatory gauges.
func (m *Manager) Collector() prometheus.Collector { return (*collector)(m) }

type collector Manager

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	c.metrics.describe(ch)
	c.flushTime.Describe(ch)
	c.repl.shrinks.Describe(ch)
	c.repl.expands.Describe(ch)
	ch <- descPurgatorySize
	ch <- descDelayedFetches
	ch <- descFetcherLag
	ch <- descMaxLag
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.metrics.collect(ch)
	c.flushTime.Collect(ch)
	c.repl.shrinks.Collect(ch)
	c.repl.expands.Collect(ch)
	fetches, regs := (*Manager)(c).FetchWaiters()
	ch <- prometheus.MustNewConstMetric(descPurgatorySize, prometheus.GaugeValue, float64(regs))
	ch <- prometheus.MustNewConstMetric(descDelayedFetches, prometheus.GaugeValue, float64(fetches))
	var maxLag int64
	for p, lag := range c.repl.fetchers.lags() {
		maxLag = max(maxLag, lag)
		ch <- prometheus.MustNewConstMetric(descFetcherLag, prometheus.GaugeValue, float64(lag), p.TP.Topic, strconv.Itoa(int(p.TP.Partition)))
	}
	ch <- prometheus.MustNewConstMetric(descMaxLag, prometheus.GaugeValue, float64(maxLag))
}

var (
	descFetcherLag = prometheus.NewDesc("kafka_server_fetcherlagmetrics_consumerlag",
		"Offsets a followed partition is behind its leader's high watermark in the leader's last answer (FetcherLagMetrics ConsumerLag).",
		[]string{"topic", "partition"}, nil)
	descMaxLag = prometheus.NewDesc("kafka_server_replicafetchermanager_maxlag",
		"The largest lag of the partitions this broker follows, in offsets (ReplicaFetcherManager MaxLag, clientId=Replica).", nil, nil)
)

// count adds n to counter i of p's topic and of all topics.
func (p *Partition) count(i, n int) { p.stats.add(i, float64(n)) }
