package broker

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gregor-broker/gregor/internal/admin/source"
	"github.com/gregor-broker/gregor/internal/api"
	"github.com/gregor-broker/gregor/internal/txn"
)

// startOrphanAborter starts the opt-in automatic abort of orphaned
// transactions (gregor.transaction.orphan.abort.enable): it checks the
// partitions this broker leads and writes ABORT markers through the same
// writer as WriteTxnMarkers, and its count is the metric
// gregor_transaction_orphans_aborted_total.
func (b *Broker) startOrphanAborter(markers txn.MarkerWriter) {
	b.orphans = txn.NewOrphanAborter(txn.OrphanAborterOptions{
		Led: b.ledHolders, Coordinator: txnViews{b}, Markers: markers, Config: b.Config, Clock: b.o.Clock,
		Logger: b.logger.With("component", "orphan-aborter"),
	})
	c := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "gregor_transaction_orphans_aborted_total",
		Help: "Orphaned transactions aborted automatically (gregor.transaction.orphan.abort.enable)."},
		func() float64 { return float64(b.orphans.Aborted()) })
	if err := b.o.Registry.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		b.logger.Warn("cannot register the orphan aborter's metric", "err", err)
	}
	b.orphans.Start()
}

// ledHolders lists what holds the last stable offset of each partition
// this broker leads.
func (b *Broker) ledHolders() []txn.LedHolders {
	var out []txn.LedHolders
	for _, p := range b.replicas.Partitions() {
		if !p.IsLeader() {
			continue
		}
		open := p.Log.OpenTransactions()
		if len(open) == 0 {
			continue
		}
		led := txn.LedHolders{TopicPartition: p.TP}
		for _, o := range open {
			led.Holders = append(led.Holders, source.HolderOf(o))
		}
		out = append(out, led)
	}
	return out
}

var _ txn.MarkerWriter = (*api.MarkerWriter)(nil)
