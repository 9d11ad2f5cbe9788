package source

import (
	"context"
	"sort"

	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/txn"
)

// Txns is the transaction coordinator's view of a producer id
// (*txn.Coordinator), for the hanging-transaction detector.
type Txns interface {
	ForProducer(ctx context.Context, pid int64) txn.CoordinatorView
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
		h := txn.Holder{ProducerID: o.ProducerID, ProducerEpoch: o.ProducerEpoch, CoordinatorEpoch: o.CoordinatorEpoch,
			FirstOffset: o.FirstOffset, StartMs: o.StartMs, LastTimestamp: o.LastTimestamp, Unreplicated: o.Unreplicated,
			Aborted: o.Aborted, MarkerOffset: o.MarkerOffset}
		d := txn.Diagnose(tp, h, cv, nowMs, abortCheck)
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
