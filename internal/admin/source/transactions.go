package source

import (
	"context"
	"sort"

	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/txn"
)

// Txns is the transaction coordinator (*txn.Coordinator): its view of a
// producer id, for the hanging-transaction detector, and its transactions.
type Txns interface {
	ForProducer(ctx context.Context, pid int64) txn.CoordinatorView
	// Ongoing lists the transactions under way (Ongoing, Prepare*) on
	// every coordinator it can ask, by broker id; errs says which it
	// could not.
	Ongoing(ctx context.Context) (byBroker map[int32][]txn.Description, errs []error)
}

// Orphans is the automatic abort of orphaned transactions
// (*txn.OrphanAborter).
type Orphans interface {
	Status() txn.AutoAbortStatus
}

// transactions classifies the holders of l's last stable offset
// (txn.Diagnose); the coordinator is asked once per producer id.
func (s *Source) transactions(ctx context.Context, tp topicpart.TopicPartition, l *log.Log) []admin.TransactionView {
	holders := l.OpenTransactions()
	out := make([]admin.TransactionView, 0, len(holders))
	if len(holders) == 0 {
		return out
	}
	nowMs := s.d.Clock.Now().UnixMilli()
	abortCheck := int64(s.d.Config().Int("transaction.abort.timed.out.transaction.cleanup.interval.ms"))
	views := map[int64]txn.CoordinatorView{}
	for _, o := range holders {
		cv, ok := views[o.ProducerID]
		if !ok {
			cv = txn.CoordinatorView{Why: "this broker has no transaction coordinator"}
			if s.d.Txns != nil {
				cv = s.d.Txns.ForProducer(ctx, o.ProducerID)
			}
			views[o.ProducerID] = cv
		}
		d := txn.Diagnose(tp, HolderOf(o), cv, nowMs, abortCheck)
		out = append(out, admin.TransactionView{ProducerID: o.ProducerID, ProducerEpoch: o.ProducerEpoch,
			CoordinatorEpoch: o.CoordinatorEpoch, FirstOffset: o.FirstOffset, StartMs: o.StartMs, AgeMs: d.AgeMs,
			Class: d.Class, TransactionalID: d.TransactionalID, State: d.State, TimeoutMs: d.TimeoutMs,
			Explanation: d.Explanation, Action: d.Action})
	}
	return out
}

// Transactions lists the partitions whose last stable offset transactions
// hold back.
func (s *Source) Transactions(ctx context.Context) ([]admin.HeldPartition, error) {
	all := s.d.Logs.All()
	tps := make([]topicpart.TopicPartition, 0, len(all))
	for tp := range all {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	out := []admin.HeldPartition{}
	for _, tp := range tps {
		l := all[tp]
		lso := l.LastStableOffset()
		hw := l.HighWatermark()
		txns := s.transactions(ctx, tp, l)
		if len(txns) == 0 {
			continue
		}
		out = append(out, admin.HeldPartition{Topic: tp.Topic, Partition: tp.Partition, LastStableOffset: lso,
			HighWatermark: hw, Transactions: txns})
		if err := ctx.Err(); err != nil {
			return out, err
		}
	}
	return out, nil
}

// OngoingTransactions lists the transactions under way on every
// transaction coordinator (Deps.Txns), by transactional id.
func (s *Source) OngoingTransactions(ctx context.Context) (admin.OngoingView, error) {
	v := admin.OngoingView{Transactions: []admin.OngoingTransaction{}}
	if s.d.Txns == nil {
		return v, nil
	}
	byBroker, errs := s.d.Txns.Ongoing(ctx)
	for _, err := range errs {
		v.Errors = append(v.Errors, err.Error())
	}
	nowMs := s.d.Clock.Now().UnixMilli()
	for broker, list := range byBroker {
		for _, d := range list {
			v.Transactions = append(v.Transactions, ongoingView(broker, d, nowMs))
		}
	}
	sort.Slice(v.Transactions, func(i, j int) bool { return v.Transactions[i].TransactionalID < v.Transactions[j].TransactionalID })
	return v, ctx.Err()
}

func ongoingView(broker int32, d txn.Description, nowMs int64) admin.OngoingTransaction {
	o := admin.OngoingTransaction{TransactionalID: d.TransactionalID, Coordinator: broker, ProducerID: d.ProducerID,
		ProducerEpoch: d.ProducerEpoch, State: d.State.String(), TimeoutMs: d.TimeoutMs, StartMs: d.StartMs, AgeMs: -1,
		LastUpdateMs: d.LastUpdateMs, Partitions: []admin.TopicPartitions{}}
	if d.StartMs >= 0 {
		o.AgeMs = max(nowMs-d.StartMs, 0)
	}
	for _, g := range topicpart.ByTopic(d.Partitions) {
		o.Partitions = append(o.Partitions, admin.TopicPartitions{Topic: g.Topic, Partitions: g.Partitions})
	}
	return o
}

// AutoAbort is the automatic abort's state; without one (Deps.Orphans nil)
// only its settings.
func (s *Source) AutoAbort(context.Context) (admin.AutoAbortView, error) {
	var st txn.AutoAbortStatus
	if s.d.Orphans != nil {
		st = s.d.Orphans.Status()
	} else {
		st.Config, st.LastCheckMs = txn.AutoAbortConfigFrom(s.d.Config()), -1
	}
	v := admin.AutoAbortView{Enabled: st.Config.Enabled, MinOrphanMs: st.Config.MinOrphanMs, MinAgeMs: st.Config.MinAgeMs,
		CheckIntervalMs: st.CheckIntervalMs, Checks: st.Checks, LastCheckMs: st.LastCheckMs, AbortedTotal: st.Aborted,
		Watched: []admin.WatchedOrphan{}, Recent: []admin.AutoAbortRecord{}}
	for _, w := range st.Watched {
		v.Watched = append(v.Watched, watchedView(w))
	}
	for _, r := range st.Recent {
		v.Recent = append(v.Recent, admin.AutoAbortRecord{WatchedOrphan: watchedView(r.Watched), AtMs: r.AtMs, Error: r.Err})
	}
	return v, nil
}

func watchedView(w txn.Watched) admin.WatchedOrphan {
	return admin.WatchedOrphan{Topic: w.TopicPartition.Topic, Partition: w.TopicPartition.Partition, ProducerID: w.ProducerID,
		ProducerEpoch: w.ProducerEpoch, CoordinatorEpoch: w.Holder.CoordinatorEpoch, FirstOffset: w.FirstOffset,
		OrphanSinceMs: w.OrphanSinceMs, AgeMs: w.AgeMs, DueMs: w.DueMs, Explanation: w.Explanation}
}

// HolderOf is the hanging-transaction detector's view of what a log says
// holds its last stable offset (the broker's orphan aborter reads the logs
// the same way).
func HolderOf(o log.OpenTxn) txn.Holder {
	return txn.Holder{ProducerID: o.ProducerID, ProducerEpoch: o.ProducerEpoch, CoordinatorEpoch: o.CoordinatorEpoch,
		FirstOffset: o.FirstOffset, StartMs: o.StartMs, LastTimestamp: o.LastTimestamp, Unreplicated: o.Unreplicated,
		Aborted: o.Aborted, MarkerOffset: o.MarkerOffset}
}
