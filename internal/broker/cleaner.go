package broker

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gregor-broker/gregor/internal/cleaner"
	"github.com/gregor-broker/gregor/internal/logmgr"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// cleanerLogs adapts the log manager to what the cleaner needs.
type cleanerLogs struct{ m *logmgr.Manager }

func (c cleanerLogs) Partitions() []cleaner.Partition {
	all := c.m.All()
	out := make([]cleaner.Partition, 0, len(all))
	for tp, l := range all {
		out = append(out, cleaner.Partition{TopicPartition: tp, Dir: c.m.DirOf(tp), Log: l})
	}
	return out
}

func (c cleanerLogs) Partition(tp topicpart.TopicPartition) (cleaner.Partition, bool) {
	l := c.m.Get(tp)
	if l == nil {
		return cleaner.Partition{}, false
	}
	return cleaner.Partition{TopicPartition: tp, Dir: c.m.DirOf(tp), Log: l}, true
}

func (c cleanerLogs) CleanerOffset(tp topicpart.TopicPartition) (int64, bool) {
	return c.m.CleanerOffset(tp)
}

func (c cleanerLogs) SetCleanerOffset(tp topicpart.TopicPartition, offset int64) error {
	return c.m.SetCleanerOffset(tp, offset)
}

// startCleaner builds the log cleaner over the log manager, serves its
// per-partition status and metrics, and starts it if log.cleaner.enable.
func (b *Broker) startCleaner() {
	b.cleaner = cleaner.New(cleaner.Options{
		Logs:   cleanerLogs{b.logs},
		Config: func() cleaner.Config { return cleaner.ConfigFrom(b.Config()) },
		Clock:  b.o.Clock, Logger: b.logger.With("component", "log-cleaner"),
	})
	b.adm.Handle("GET /v1/partitions/{topic}/{partition}/cleaner", b.cleaner.Handler())
	if err := b.o.Registry.Register(b.cleaner.Collector()); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		b.logger.Warn("cannot register log cleaner metrics", "err", err)
	}
	b.cleaner.Start()
}

// Cleaner exposes the log cleaner (admin JSON API, tests).
func (b *Broker) Cleaner() *cleaner.Cleaner { return b.cleaner }
