package broker

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/txn"
)

// txnViews is the hanging-transaction detector's view of a producer id in a
// cluster (for the admin source and the orphan aborter): this broker's
// transaction coordinator first; when it does not know the producer id and
// other brokers lead __transaction_state partitions, their coordinators,
// over the inter-broker listener, as kafka-transactions.sh find-hanging
// asks every broker (ListTransactions filtered by the producer id, then
// DescribeTransactions of what it finds). A broker that cannot be asked
// leaves the view unavailable (class unknown). With an authorizer an empty
// answer proves nothing — ListTransactions lists only the ids the
// asking principal may DESCRIBE — so it is unknown too, never orphan.
type txnViews struct{ b *Broker }

// peerTimeout bounds each question to another broker's coordinator.
const peerTimeout = 5 * time.Second

func (v txnViews) List(ctx context.Context, f txn.ListFilter) ([]txn.Description, error) {
	return v.b.txns.List(ctx, f)
}

func (v txnViews) ForProducer(ctx context.Context, pid int64) txn.CoordinatorView {
	cv := v.b.txns.ForProducer(ctx, pid)
	if !cv.Elsewhere {
		return cv
	}
	im := v.b.Metadata()
	t := im.Topic(txn.StateTopic)
	if t == nil {
		return cv
	}
	self, owned := v.b.layout.NodeID, v.b.txns.Loaded()
	var peers []int32
	for p := range int32(len(t.Partitions)) {
		leader := im.Partition(txn.StateTopic, p).Leader
		switch {
		case leader < 0:
			return txn.CoordinatorView{Why: fmt.Sprintf("%s partition %d has no leader", txn.StateTopic, p)}
		case leader == self && !slices.Contains(owned, p):
			return txn.CoordinatorView{Why: fmt.Sprintf("%s partition %d is not loaded here yet", txn.StateTopic, p)}
		case leader != self && !slices.Contains(peers, leader):
			peers = append(peers, leader)
		}
	}
	slices.Sort(peers)
	for _, id := range peers {
		d, found, err := v.askPeer(ctx, id, pid)
		if err != nil {
			return txn.CoordinatorView{Why: fmt.Sprintf("the transaction coordinator on broker %d: %v", id, err)}
		}
		if found {
			return txn.CoordinatorView{Available: true, Txn: &d}
		}
	}
	if v.b.Authorizer() != nil {
		return txn.CoordinatorView{Why: fmt.Sprintf("no coordinator (this broker's, and brokers %v) listed producer %d, but with an "+
			"authorizer ListTransactions lists only the transactional ids this broker's principal may DESCRIBE", peers, pid)}
	}
	return txn.CoordinatorView{Available: true}
}

// askPeer asks broker id's coordinator for the transaction of pid.
func (v txnViews) askPeer(ctx context.Context, id int32, pid int64) (txn.Description, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	b := v.b.Metadata().Brokers[id]
	if b == nil || b.Fenced {
		return txn.Description{}, false, fmt.Errorf("broker %d is not serving", id)
	}
	ep, ok := b.Endpoint(v.b.layout.InterBroker)
	if !ok {
		return txn.Description{}, false, fmt.Errorf("broker %d has no %s listener", id, v.b.layout.InterBroker)
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	lreq := kmsg.NewPtrListTransactionsRequest()
	lreq.Version, lreq.ProducerIDFilters, lreq.DurationFilterMillis = 1, []int64{pid}, -1
	r, err := v.b.pool.Request(ctx, addr, lreq)
	if err != nil {
		return txn.Description{}, false, err
	}
	lresp := r.(*kmsg.ListTransactionsResponse)
	if err := kerr.ErrorForCode(lresp.ErrorCode); err != nil {
		return txn.Description{}, false, err
	}
	if len(lresp.TransactionStates) == 0 {
		return txn.Description{}, false, nil
	}
	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = []string{lresp.TransactionStates[0].TransactionalID}
	if r, err = v.b.pool.Request(ctx, addr, dreq); err != nil {
		return txn.Description{}, false, err
	}
	dresp := r.(*kmsg.DescribeTransactionsResponse)
	if len(dresp.TransactionStates) != 1 {
		return txn.Description{}, false, fmt.Errorf("DescribeTransactions answered %d states for one id", len(dresp.TransactionStates))
	}
	st := dresp.TransactionStates[0]
	if err := kerr.ErrorForCode(st.ErrorCode); err != nil {
		return txn.Description{}, false, err
	}
	state, ok := txn.ParseState(st.State)
	if !ok {
		return txn.Description{}, false, fmt.Errorf("unknown transaction state %q", st.State)
	}
	d := txn.Description{TransactionalID: st.TransactionalID, State: state, TimeoutMs: st.TimeoutMillis, StartMs: st.StartTimestamp,
		ProducerID: st.ProducerID, ProducerEpoch: st.ProducerEpoch}
	for _, tt := range st.Topics {
		for _, p := range tt.Partitions {
			d.Partitions = append(d.Partitions, topicpart.TopicPartition{Topic: tt.Topic, Partition: p})
		}
	}
	return d, true, nil
}
