package api

import (
	"context"
	"fmt"

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
	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = []string{lresp.TransactionStates[0].TransactionalID}
	if r, err = c.d.Peers.Request(ctx, addr, dreq); err != nil {
		return d, false, err
	}
	dresp := r.(*kmsg.DescribeTransactionsResponse)
	if len(dresp.TransactionStates) != 1 {
		return d, false, fmt.Errorf("DescribeTransactions answered %d states for one id", len(dresp.TransactionStates))
	}
	st := dresp.TransactionStates[0]
	if err := kerr.ErrorForCode(st.ErrorCode); err != nil {
		return d, false, err
	}
	state, ok := txn.ParseState(st.State)
	if !ok {
		return d, false, fmt.Errorf("unknown transaction state %q", st.State)
	}
	d = txn.Description{TransactionalID: st.TransactionalID, State: state, TimeoutMs: st.TimeoutMillis, StartMs: st.StartTimestamp,
		ProducerID: st.ProducerID, ProducerEpoch: st.ProducerEpoch}
	for _, tt := range st.Topics {
		for _, p := range tt.Partitions {
			d.Partitions = append(d.Partitions, topicpart.TopicPartition{Topic: tt.Topic, Partition: p})
		}
	}
	return d, true, nil
}
