package api

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/txn"
)

// In a cluster the transaction coordinator of a transactional id and the
// leaders of its partitions are on different brokers. As in Kafka, the
// coordinator sends WriteTxnMarkers to each partition's leader
// (TransactionMarkerChannelManager), and a partition leader verifying a
// produce sends AddPartitionsToTxn v5 to the id's coordinator
// (AddPartitionsToTxnManager). Both go over the other broker's inter-broker
// listener (Deps.PeerListener), with its security, through Deps.Peers.

// peerAddr is broker id's address on the inter-broker listener, as im has
// it.
func peerAddr(d *Deps, im *metadata.Image, id int32) (string, bool) {
	b := im.Brokers[id]
	if b == nil || b.Fenced {
		return "", false
	}
	ep, ok := b.Endpoint(listenerOr(d.PeerListener, d.Listener))
	if !ok {
		return "", false
	}
	return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), true
}

// leaderOf is the leader of tp in im (-1: none, or no such partition).
func leaderOf(im *metadata.Image, tp topicpart.TopicPartition) int32 {
	if pi := im.Partition(tp.Topic, tp.Partition); pi != nil {
		return pi.Leader
	}
	return -1
}

// remoteMarkers sends m's partitions led by broker leader to it as one
// WriteTxnMarkers v2 request and answers each partition's error. A request
// that got no answer is NETWORK_EXCEPTION for all of them (the coordinator
// retries it, looking the leader up again).
func (w *MarkerWriter) remoteMarkers(ctx context.Context, leader int32, m txn.Marker,
	tps []topicpart.TopicPartition) map[topicpart.TopicPartition]error {
	res := make(map[topicpart.TopicPartition]error, len(tps))
	fail := func(err error) map[topicpart.TopicPartition]error {
		for _, tp := range tps {
			res[tp] = err
		}
		return res
	}
	addr, ok := peerAddr(&w.d, w.d.Metadata.Image(), leader)
	if !ok {
		return fail(fmt.Errorf("%w: broker %d, the partitions' leader, is not available", kerr.NotLeaderForPartition, leader))
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 2
	rm := kmsg.NewWriteTxnMarkersRequestMarker()
	rm.ProducerID, rm.ProducerEpoch, rm.Committed = m.ProducerID, m.ProducerEpoch, m.Commit
	rm.CoordinatorEpoch, rm.TransactionVersion = m.CoordinatorEpoch, int8(m.TransactionVersion)
	for _, g := range topicpart.ByTopic(tps) {
		rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		rt.Topic, rt.Partitions = g.Topic, g.Partitions
		rm.Topics = append(rm.Topics, rt)
	}
	req.Markers = append(req.Markers, rm)
	kr, err := w.d.Peers.Request(ctx, addr, req)
	if err != nil {
		return fail(fmt.Errorf("%w: %v", kerr.NetworkException, err))
	}
	fail(fmt.Errorf("%w: broker %d did not answer for the partition", kerr.NetworkException, leader))
	for _, mk := range kr.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, t := range mk.Topics {
			for _, p := range t.Partitions {
				tp := topicpart.TopicPartition{Topic: t.Topic, Partition: p.Partition}
				if _, asked := res[tp]; asked {
					res[tp] = kerr.ErrorForCode(p.ErrorCode)
				}
			}
		}
	}
	return res
}

// coordinatorBroker is the leader of the __transaction_state partition of
// id: its transaction coordinator.
func (h *Handler) coordinatorBroker(t *txn.Coordinator, id string) int32 {
	return leaderOf(h.d.Metadata.Image(), topicpart.TopicPartition{Topic: txn.StateTopic, Partition: t.PartitionFor(id)})
}

// remoteVerify is coordinatorVerify against the coordinator on broker
// coordinator: AddPartitionsToTxn v5 with one transaction, verify-only
// unless add. The coordinator's codes come back per partition.
func (h *Handler) remoteVerify(ctx context.Context, coordinator int32, id string, k producerKey, tps []topicpart.TopicPartition,
	add bool) map[topicpart.TopicPartition]error {
	errs := make(map[topicpart.TopicPartition]error, len(tps))
	all := func(err error) map[topicpart.TopicPartition]error {
		for _, tp := range tps {
			errs[tp] = err
		}
		return errs
	}
	addr, ok := peerAddr(&h.d, h.d.Metadata.Image(), coordinator)
	if !ok || h.d.Peers == nil {
		return all(fmt.Errorf("%w: the transaction coordinator (broker %d) is not available", kerr.CoordinatorNotAvailable, coordinator))
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, k.pid, k.epoch, !add
	for _, g := range topicpart.ByTopic(tps) {
		rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		rt.Topic, rt.Partitions = g.Topic, g.Partitions
		tx.Topics = append(tx.Topics, rt)
	}
	req.Transactions = append(req.Transactions, tx)
	kr, err := h.d.Peers.Request(ctx, addr, req)
	if err != nil {
		return all(fmt.Errorf("%w: %v", kerr.NetworkException, err))
	}
	resp := kr.(*kmsg.AddPartitionsToTxnResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return all(err)
	}
	for _, rt := range resp.Transactions {
		for _, t := range rt.Topics {
			for _, p := range t.Partitions {
				errs[topicpart.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = kerr.ErrorForCode(p.ErrorCode)
			}
		}
	}
	for _, tp := range tps {
		if _, ok := errs[tp]; !ok {
			errs[tp] = fmt.Errorf("%w: the coordinator did not answer for %s", kerr.NetworkException, tp)
		}
	}
	return errs
}
