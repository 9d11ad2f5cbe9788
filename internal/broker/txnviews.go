package broker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gregor-broker/gregor/internal/txn"
)

// txnViews is the hanging-transaction detector's view of a producer id in a
// cluster (for the admin source and the orphan aborter): this broker's
// transaction coordinator first; when it does not know the producer id and
// other brokers lead __transaction_state partitions, their coordinators,
// over the inter-broker listener (api.CoordinatorPeers). A broker that cannot be asked
// leaves the view unavailable (class unknown). With an authorizer an empty
// answer proves nothing — ListTransactions lists only the ids the
// asking principal may DESCRIBE — so it is unknown too, never orphan.
type txnViews struct{ b *Broker }

// peerTimeout bounds each question to another broker's coordinator: a page
// of the console or a check of the orphan aborter waits at most this long
// for an unresponsive broker, per producer id it does not know.
const peerTimeout = 2 * time.Second

// ongoingStates are the states of a transaction under way.
var ongoingStates = []txn.State{txn.Ongoing, txn.PrepareCommit, txn.PrepareAbort}

// Ongoing lists the transactions under way on this broker's coordinator
// and on every other broker leading a __transaction_state partition, by
// broker id; errs says which could not be asked.
func (v txnViews) Ongoing(ctx context.Context) (map[int32][]txn.Description, []error) {
	self := v.b.layout.NodeID
	out := map[int32][]txn.Description{}
	var errs []error
	local, err := v.b.txns.List(ctx, txn.ListFilter{States: ongoingStates, MinDurationMs: -1})
	if err != nil {
		errs = append(errs, fmt.Errorf("broker %d (this one): %w", self, err))
	}
	out[self] = local
	im := v.b.Metadata()
	t := im.Topic(txn.StateTopic)
	if t == nil {
		return out, errs
	}
	var peers []int32
	for p := range int32(len(t.Partitions)) {
		switch leader := im.Partition(txn.StateTopic, p).Leader; {
		case leader < 0:
			errs = append(errs, fmt.Errorf("%s partition %d has no leader", txn.StateTopic, p))
		case leader != self && !slices.Contains(peers, leader):
			peers = append(peers, leader)
		}
	}
	slices.Sort(peers)
	for _, id := range peers {
		qctx, cancel := context.WithTimeout(ctx, peerTimeout)
		ds, err := v.b.coordPeers.Ongoing(qctx, id, ongoingStates)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("broker %d: %w", id, err))
			continue
		}
		out[id] = ds
	}
	return out, errs
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
		qctx, cancel := context.WithTimeout(ctx, peerTimeout)
		d, found, err := v.b.coordPeers.ProducerTransaction(qctx, id, pid)
		cancel()
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
