package main

// `gregor txn list|describe|producers|abort`: what Kafka's
// kafka-transactions.sh does, over the Kafka protocol (ListTransactions,
// DescribeTransactions, DescribeProducers, WriteTxnMarkers).

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func txnCmd() *cobra.Command {
	var f connFlags
	cmd := &cobra.Command{
		Use:   "txn",
		Short: "List and describe transactions, show a partition's producers, abort a hanging transaction (kafka-transactions.sh)",
	}
	f.register(cmd)
	cmd.AddCommand(txnListCmd(&f), txnDescribeCmd(&f), txnProducersCmd(&f), txnAbortCmd(&f))
	return cmd
}

// listedTxn is one row of `txn list`.
type listedTxn struct {
	TransactionalID string `json:"transactional_id"`
	ProducerID      int64  `json:"producer_id"`
	State           string `json:"state"`
	Coordinator     int32  `json:"coordinator"`
}

var listedTxns = tableView[listedTxn]{
	header: []any{"transactional-id", "producer-id", "state", "coordinator"},
	row:    func(t listedTxn) []any { return []any{t.TransactionalID, t.ProducerID, t.State, t.Coordinator} },
}

func txnListCmd(f *connFlags) *cobra.Command {
	var states []string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the transactional ids every coordinator knows, with their state",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, end, err := f.connect(cmd)
			if err != nil {
				return err
			}
			defer end()
			listed, err := retryRetriable(s.ctx, func() (kadm.ListedTransactions, error) {
				return s.adm.ListTransactions(s.ctx, nil, states)
			})
			if err != nil {
				return err
			}
			out := []listedTxn{}
			for _, t := range listed.Sorted() {
				out = append(out, listedTxn{t.TxnID, t.ProducerID, t.State, t.Coordinator})
			}
			return listedTxns.print(cmd.OutOrStdout(), f.output, out)
		},
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "only transactions in these states (Ongoing, PrepareCommit, …)")
	return cmd
}

// describedTxn is one row of `txn describe`.
type describedTxn struct {
	TransactionalID string   `json:"transactional_id"`
	State           string   `json:"state"`
	ProducerID      int64    `json:"producer_id"`
	ProducerEpoch   int16    `json:"producer_epoch"`
	TimeoutMs       int32    `json:"timeout_ms"`
	StartedMs       int64    `json:"started_ms"` // -1: no transaction open
	Partitions      []string `json:"partitions"`
	Coordinator     int32    `json:"coordinator"`
	Error           string   `json:"error,omitempty"`
}

var describedTxns = tableView[describedTxn]{
	header: []any{"transactional-id", "state", "producer-id", "epoch", "timeout", "open-for", "partitions", "coordinator"},
	row: func(t describedTxn) []any {
		if t.Error != "" {
			return []any{t.TransactionalID, "error: " + t.Error, "-", "-", "-", "-", "-", "-"}
		}
		open := "-"
		if t.StartedMs >= 0 {
			open = time.Since(time.UnixMilli(t.StartedMs)).Round(time.Millisecond).String()
		}
		return []any{t.TransactionalID, t.State, t.ProducerID, t.ProducerEpoch, time.Duration(t.TimeoutMs) * time.Millisecond,
			open, len(t.Partitions), t.Coordinator}
	},
}

func txnDescribeCmd(f *connFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "describe TRANSACTIONAL_ID...",
		Short: "Show transactions: state, producer id and epoch, timeout, how long open, partitions",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, ids []string) error {
			s, end, err := f.connect(cmd)
			if err != nil {
				return err
			}
			defer end()
			described, err := retryRetriable(s.ctx, func() (kadm.DescribedTransactions, error) {
				return s.adm.DescribeTransactions(s.ctx, ids...)
			})
			if err != nil {
				return err
			}
			out, failed := collect(ids, func(id string) (describedTxn, error) {
				d, ok := described[id]
				if !ok {
					return describedTxn{TransactionalID: id, Error: errNoAnswer.Error()}, errNoAnswer
				}
				if d.Err != nil {
					return describedTxn{TransactionalID: id, Error: d.Err.Error()}, d.Err
				}
				dt := describedTxn{TransactionalID: id, State: d.State, ProducerID: d.ProducerID, ProducerEpoch: d.ProducerEpoch,
					TimeoutMs: d.TimeoutMillis, StartedMs: d.StartTimestamp, Coordinator: d.Coordinator, Partitions: []string{}}
				for _, tp := range d.Topics.Sorted() {
					for _, p := range tp.Partitions {
						dt.Partitions = append(dt.Partitions, fmt.Sprintf("%s/%d", tp.Topic, p))
					}
				}
				return dt, nil
			})
			if err := describedTxns.print(cmd.OutOrStdout(), f.output, out); err != nil {
				return err
			}
			return failed.err("transaction descriptions")
		},
	}
}

// txnProducer is one row of `txn producers`.
type txnProducer struct {
	Topic            string `json:"topic"`
	Partition        int32  `json:"partition"`
	ProducerID       int64  `json:"producer_id"`
	ProducerEpoch    int16  `json:"producer_epoch"`
	LastSequence     int32  `json:"last_sequence"`
	LastTimestampMs  int64  `json:"last_timestamp_ms"`
	CoordinatorEpoch int32  `json:"coordinator_epoch"`
	TxnStartOffset   int64  `json:"current_txn_start_offset"` // -1: none open
}

var txnProducers = tableView[txnProducer]{
	header: []any{"topic", "partition", "producer-id", "epoch", "last-sequence", "coordinator-epoch", "txn-start-offset"},
	row: func(p txnProducer) []any {
		return []any{p.Topic, p.Partition, p.ProducerID, p.ProducerEpoch, p.LastSequence, p.CoordinatorEpoch, p.TxnStartOffset}
	},
}

func txnProducersCmd(f *connFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "producers TOPIC/PARTITION",
		Short: "Show the producers of a partition, and the transaction each has open there (DescribeProducers)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tp, err := parseTopicPartition(args[0])
			if err != nil {
				return err
			}
			if tp.partition < 0 {
				return fmt.Errorf("%q: want TOPIC/PARTITION", args[0])
			}
			s, end, err := f.connect(cmd)
			if err != nil {
				return err
			}
			defer end()
			ps, err := describeProducers(s, tp)
			if err != nil {
				return err
			}
			return txnProducers.print(cmd.OutOrStdout(), f.output, ps)
		},
	}
}

func describeProducers(s session, tp topicPartition) ([]txnProducer, error) {
	d, err := retryRetriable(s.ctx, func() (kadm.DescribedProducersTopics, error) {
		return s.adm.DescribeProducers(s.ctx, kadm.TopicsSet{tp.topic: {tp.partition: {}}})
	})
	if err != nil {
		return nil, err
	}
	out := []txnProducer{}
	for _, p := range d.SortedPartitions() {
		if p.Err != nil {
			return nil, fmt.Errorf("%s/%d: %w", p.Topic, p.Partition, p.Err)
		}
	}
	for _, p := range d.SortedProducers() {
		out = append(out, txnProducer{p.Topic, p.Partition, p.ProducerID, p.ProducerEpoch, p.LastSequence, p.LastTimestamp,
			p.CoordinatorEpoch, p.CurrentTxnStartOffset})
	}
	return out, nil
}

func txnAbortCmd(f *connFlags) *cobra.Command {
	var startOffset int64
	cmd := &cobra.Command{
		Use:   "abort TOPIC/PARTITION --start-offset N",
		Short: "Abort the transaction open on a partition since an offset (a hanging transaction no coordinator will end)",
		Long: `Write an ABORT marker for the transaction that has been open on TOPIC/PARTITION
since --start-offset, as kafka-transactions.sh abort does: the partition's
producers are described (DescribeProducers), the one whose open transaction
starts at that offset is found, and the leader is sent WriteTxnMarkers with its
producer id, epoch and coordinator epoch. The last stable offset then moves
past it. gregor why lso TOPIC/PARTITION shows the offset and the command.

Use it only for a transaction its coordinator will never end (an orphan):
aborting one a live producer is still writing makes that producer fail.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tp, err := parseTopicPartition(args[0])
			if err != nil {
				return err
			}
			if tp.partition < 0 {
				return fmt.Errorf("%q: want TOPIC/PARTITION", args[0])
			}
			if startOffset < 0 {
				return errors.New("--start-offset is required: the first offset of the transaction to abort (gregor why lso shows it)")
			}
			s, end, err := f.connect(cmd)
			if err != nil {
				return err
			}
			defer end()
			return txnAbort(cmd, s, tp, startOffset)
		},
	}
	cmd.Flags().Int64Var(&startOffset, "start-offset", -1, "the first offset of the transaction to abort")
	return cmd
}

func txnAbort(cmd *cobra.Command, s session, tp topicPartition, startOffset int64) error {
	ps, err := describeProducers(s, tp)
	if err != nil {
		return err
	}
	var p *txnProducer
	for i := range ps {
		if ps[i].TxnStartOffset == startOffset {
			p = &ps[i]
		}
	}
	if p == nil {
		return fmt.Errorf("%s/%d: no producer has a transaction open since offset %d", tp.topic, tp.partition, startOffset)
	}
	resp, err := s.adm.WriteTxnMarkers(s.ctx, kadm.TxnMarkers{ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch,
		CoordinatorEpoch: p.CoordinatorEpoch, Topics: kadm.TopicsSet{tp.topic: {tp.partition: {}}}})
	if err != nil {
		return err
	}
	for _, r := range resp.SortedPartitions() {
		if r.Err != nil {
			return fmt.Errorf("%s/%d: %w", r.Topic, r.Partition, r.Err)
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "aborted the transaction of producer %d (epoch %d) open on %s/%d since offset %d\n",
		p.ProducerID, p.ProducerEpoch, tp.topic, tp.partition, startOffset)
	return nil
}
