package api

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/txn"
)

// CoordinatorPeers asks the transaction coordinators of other brokers what
// they know of a producer id, over the inter-broker listener (Deps.Peers),
// as kafka-transactions.sh find-hanging asks every broker: the
// hanging-transaction detector's view in a cluster.
type CoordinatorPeers struct{ d Deps }

// NewCoordinatorPeers asks with d's metadata, peers and listener.
func NewCoordinatorPeers(d Deps) *CoordinatorPeers { return &CoordinatorPeers{d: d} }

// ProducerTransaction is the transaction of producer pid that broker's
// coordinator has (ListTransactions v1 filtered by the producer id, then
// DescribeTransactions of the id it lists); found is false when it lists
// none.
func (c *CoordinatorPeers) ProducerTransaction(ctx context.Context, broker int32, pid int64) (d txn.Description, found bool, err error) {
	addr, ok := peerAddr(&c.d, c.d.Metadata.Image(), broker)
	if !ok || c.d.Peers == nil {
		return d, false, fmt.Errorf("broker %d is not reachable on the inter-broker listener", broker)
	}
	lreq := kmsg.NewPtrListTransactionsRequest()
	lreq.Version, lreq.ProducerIDFilters, lreq.DurationFilterMillis = 1, []int64{pid}, -1
	r, err := c.d.Peers.Request(ctx, addr, lreq)
	if err != nil {
		return d, false, err
	}
	lresp := r.(*kmsg.ListTransactionsResponse)
	if err := kerr.ErrorForCode(lresp.ErrorCode); err != nil {
		return d, false, err
	}
	if len(lresp.TransactionStates) == 0 {
		return d, false, nil
	}
	ds, err := c.describe(ctx, addr, []string{lresp.TransactionStates[0].TransactionalID})
	if err != nil {
		return d, false, err
	}
	if len(ds) != 1 {
		return d, false, fmt.Errorf("DescribeTransactions answered %d states for one id", len(ds))
	}
	if ds[0].err != nil {
		return d, false, ds[0].err
	}
	return ds[0].d, true, nil
}

// Ongoing lists the transactions broker's coordinator has in the given
// states (ListTransactions v1 filtered by state, then one
// DescribeTransactions of every id it lists); an id that ended in between
// (TRANSACTIONAL_ID_NOT_FOUND, or another state now) is left out.
func (c *CoordinatorPeers) Ongoing(ctx context.Context, broker int32, states []txn.State) ([]txn.Description, error) {
	addr, ok := peerAddr(&c.d, c.d.Metadata.Image(), broker)
	if !ok || c.d.Peers == nil {
		return nil, fmt.Errorf("broker %d is not reachable on the inter-broker listener", broker)
	}
	lreq := kmsg.NewPtrListTransactionsRequest()
	lreq.Version, lreq.DurationFilterMillis = 1, -1
	for _, st := range states {
		lreq.StateFilters = append(lreq.StateFilters, st.String())
	}
	r, err := c.d.Peers.Request(ctx, addr, lreq)
	if err != nil {
		return nil, err
	}
	lresp := r.(*kmsg.ListTransactionsResponse)
	if err := kerr.ErrorForCode(lresp.ErrorCode); err != nil {
		return nil, err
	}
	if len(lresp.TransactionStates) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(lresp.TransactionStates))
	for _, st := range lresp.TransactionStates {
		ids = append(ids, st.TransactionalID)
	}
	ds, err := c.describe(ctx, addr, ids)
	if err != nil {
		return nil, err
	}
	var out []txn.Description
	for _, d := range ds {
		if d.err == nil && slices.Contains(states, d.d.State) {
			out = append(out, d.d)
		}
	}
	return out, nil
}

type describedTxn struct {
	d   txn.Description
	err error
}

// describe sends one DescribeTransactions for ids to addr.
func (c *CoordinatorPeers) describe(ctx context.Context, addr string, ids []string) ([]describedTxn, error) {
	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = ids
	r, err := c.d.Peers.Request(ctx, addr, dreq)
	if err != nil {
		return nil, err
	}
	var out []describedTxn
	for _, st := range r.(*kmsg.DescribeTransactionsResponse).TransactionStates {
		if err := kerr.ErrorForCode(st.ErrorCode); err != nil {
			out = append(out, describedTxn{err: err})
			continue
		}
		state, ok := txn.ParseState(st.State)
		if !ok {
			out = append(out, describedTxn{err: fmt.Errorf("unknown transaction state %q", st.State)})
			continue
		}
		d := txn.Description{TransactionalID: st.TransactionalID, State: state, TimeoutMs: st.TimeoutMillis,
			StartMs: st.StartTimestamp, ProducerID: st.ProducerID, ProducerEpoch: st.ProducerEpoch}
		for _, tt := range st.Topics {
			for _, p := range tt.Partitions {
				d.Partitions = append(d.Partitions, topicpart.TopicPartition{Topic: tt.Topic, Partition: p})
			}
		}
		out = append(out, describedTxn{d: d})
	}
	return out, nil
}
