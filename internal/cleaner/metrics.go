package cleaner

import (
	"sort"

	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are Kafka's LogCleaner and LogCleanerManager gauges under the
// names Kafka's JMX exporter gives them (kafka.log:type=LogCleaner,
// name=max-clean-time-secs → kafka_log_logcleaner_max_clean_time_secs),
// computed at scrape time.
var (
	descMaxDirty = prometheus.NewDesc("kafka_log_logcleanermanager_max_dirty_percent",
		"Dirty ratio of the dirtiest compacted log at the last round, in percent.", nil, nil)
	descSinceLastRun = prometheus.NewDesc("kafka_log_logcleanermanager_time_since_last_run_ms",
		"Milliseconds since a cleaner thread last looked for a log to clean.", nil, nil)
	descUncleanable = prometheus.NewDesc("kafka_log_logcleanermanager_uncleanable_partitions_count",
		"Partitions marked uncleanable after an error, per log dir.", []string{"logDirectory"}, nil)
	descUncleanableBytes = prometheus.NewDesc("kafka_log_logcleanermanager_uncleanable_bytes",
		"Dirty bytes of the partitions marked uncleanable, per log dir.", []string{"logDirectory"}, nil)
	descRecopy = prometheus.NewDesc("kafka_log_logcleaner_cleaner_recopy_percent",
		"Bytes written as a percentage of bytes read by each thread's last cleaning.", nil, nil)
	descMaxCleanTime = prometheus.NewDesc("kafka_log_logcleaner_max_clean_time_secs",
		"Longest duration of the threads' last cleanings, in seconds.", nil, nil)
	descMaxDelay = prometheus.NewDesc("kafka_log_logcleaner_max_compaction_delay_secs",
		"How far past max.compaction.lag.ms the most overdue log was at the last round, in seconds.", nil, nil)
	descBufferUtil = prometheus.NewDesc("kafka_log_logcleaner_max_buffer_utilization_percent",
		"Largest offset map utilization of the threads' last cleanings, in percent.", nil, nil)
	descDead = prometheus.NewDesc("kafka_log_logcleaner_deadthreadcount",
		"Cleaner threads that have stopped while the cleaner runs.", nil, nil)
)

// Collector returns the cleaner's Prometheus metrics.
func (c *Cleaner) Collector() prometheus.Collector { return (*collector)(c) }

type collector Cleaner

func (m *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMaxDirty, descSinceLastRun, descUncleanable, descUncleanableBytes,
		descRecopy, descMaxCleanTime, descMaxDelay, descBufferUtil, descDead} {
		ch <- d
	}
}

func (m *collector) Collect(ch chan<- prometheus.Metric) {
	c := (*Cleaner)(m)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	nowMs := c.o.Clock.Now().UnixMilli()
	dirs := map[string]bool{}
	uncleanable := map[string]*[2]float64{}
	parts := c.o.Logs.Partitions()
	dirOf := make(map[topicpart.TopicPartition]Partition, len(parts))
	for _, p := range parts {
		dirs[p.Dir] = true
		dirOf[p.TopicPartition] = p
	}
	c.mu.Lock()
	dirtiest, lastRound, delay := c.mu.dirtiestRatio, c.mu.lastRoundMs, c.mu.maxCompactionDelayMs
	var read, written, maxSecs, maxUtil float64
	for _, w := range c.mu.workers {
		if !w.lastSet {
			continue
		}
		read += float64(w.last.BytesRead)
		written += float64(w.last.BytesWritten)
		maxSecs = max(maxSecs, float64(w.last.DurationMs)/1000)
		maxUtil = max(maxUtil, w.last.MapUtilization)
	}
	var failing []Partition
	for tp, ps := range c.mu.parts {
		if p, ok := dirOf[tp]; ok && ps.err != "" {
			failing = append(failing, p)
		}
	}
	c.mu.Unlock()
	for _, p := range failing {
		u := uncleanable[p.Dir]
		if u == nil {
			u = new([2]float64)
			uncleanable[p.Dir] = u
		}
		u[0]++
		if v, ok := c.assess(p, nowMs); ok {
			u[1] += float64(v.a.DirtyBytes)
		}
	}
	gauge(descMaxDirty, float64(int(100*dirtiest)))
	gauge(descSinceLastRun, float64(nowMs-lastRound))
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		var u [2]float64
		if p := uncleanable[d]; p != nil {
			u = *p
		}
		gauge(descUncleanable, u[0], d)
		gauge(descUncleanableBytes, u[1], d)
	}
	recopy := 0.0
	if read > 0 {
		recopy = 100 * written / read
	}
	gauge(descRecopy, recopy)
	gauge(descMaxCleanTime, maxSecs)
	gauge(descMaxDelay, float64(delay)/1000)
	gauge(descBufferUtil, 100*maxUtil)
	gauge(descDead, float64(c.dead.Load()))
}
