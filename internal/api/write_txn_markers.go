package api

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/txn"
)

// WriteTxnMarkers, versions 1-2 (Kafka 4.2; v0 was removed in 4.0): a
// transaction coordinator (or kafka-transactions.sh abort) writes markers to
// the partitions this broker leads. Each marker is appended with acks=-1 and
// answered once acknowledged (MarkerWriter); a partition the metadata does
// not hold is UNKNOWN_TOPIC_OR_PARTITION. v2 (KIP-1228) says the marker's
// transaction version, which decides the epoch rule; v1 markers get the
// original rule. With an authorizer, CLUSTER_ACTION on the cluster is
// needed (else every partition is CLUSTER_AUTHORIZATION_FAILED), as
// KafkaApis checks; in a cluster with an authorizer the other brokers'
// connections (package kclient, without SASL) need it too.
func init() { register(kmsg.WriteTxnMarkers.Int16(), 1, 2, handleWriteTxnMarkers) }

func handleWriteTxnMarkers(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	w := &MarkerWriter{d: h.d} // this broker's partitions only
	// Kafka: CLUSTER_ACTION on the cluster, else every partition is
	// CLUSTER_AUTHORIZATION_FAILED.
	denied := !h.authz(r).cluster(auth.OpClusterAction)
	for _, m := range req.Markers {
		tv := log.TV0
		if req.Version >= 2 {
			tv = int16(m.TransactionVersion)
		}
		mk := txn.Marker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, Commit: m.Committed,
			CoordinatorEpoch: m.CoordinatorEpoch, TransactionVersion: tv}
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				mk.Partitions = append(mk.Partitions, topicpart.TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
		res := map[topicpart.TopicPartition]error{}
		if denied {
			for _, tp := range mk.Partitions {
				res[tp] = kerr.ClusterAuthorizationFailed
			}
		} else {
			res = w.WriteTxnMarkers(ctx, mk)
		}
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				err := res[topicpart.TopicPartition{Topic: t.Topic, Partition: p}]
				if errors.Is(err, txn.ErrPartitionGone) {
					err = kerr.UnknownTopicOrPartition
				}
				rp.ErrorCode = errCode(h.d.Logger, err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}
