package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/coord"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/replica"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/txn"
)

// The transaction APIs' shared helpers: the coordinator, Kafka's per-version
// error rewrites, and the leader's side of WriteTxnMarkers.

func (h *Handler) txns() (*txn.Coordinator, error) {
	if h.d.Txn == nil {
		return nil, fmt.Errorf("%w: this broker has no transaction coordinator", kerr.CoordinatorNotAvailable)
	}
	return h.d.Txn, nil
}

// fencedBefore rewrites PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for request
// versions older than first (KafkaApis: clients of those versions do not
// know PRODUCER_FENCED; InitProducerId < 4, AddPartitionsToTxn,
// AddOffsetsToTxn and EndTxn < 2).
func fencedBefore(err error, version, first int16) error {
	if version < first && errors.Is(err, kerr.ProducerFenced) {
		return fmt.Errorf("%w: %v", kerr.InvalidProducerEpoch, err)
	}
	return err
}

// finalizedTV is the finalized transaction.version feature level.
func (h *Handler) finalizedTV() int16 { return txn.FinalizedVersion(h.d.Config()) }

// MarkerWriter is the leader's side of WriteTxnMarkers on this broker: each
// marker is appended to its partition with acks=-1 and answered once
// acknowledged; on a __consumer_offsets partition the group coordinator
// writes it (and applies it to the pending transactional offsets). The
// WriteTxnMarkers handler writes only here (a partition led elsewhere is
// NOT_LEADER_OR_FOLLOWER); the transaction coordinator's writer (route)
// sends the partitions the metadata says another broker leads to that
// broker as WriteTxnMarkers (txn_route.go), so both see the same errors.
type MarkerWriter struct {
	d     Deps
	route bool
}

// NewMarkerWriter is the transaction coordinator's writer: with d's
// metadata, replicas and group coordinator here, and d.Peers to the
// other brokers.
func NewMarkerWriter(d Deps) *MarkerWriter {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return &MarkerWriter{d: d, route: d.Peers != nil}
}

// WriteTxnMarkers implements txn.MarkerWriter.
func (w *MarkerWriter) WriteTxnMarkers(ctx context.Context, m txn.Marker) map[topicpart.TopicPartition]error {
	res := make(map[topicpart.TopicPartition]error, len(m.Partitions))
	spec := log.MarkerSpec{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, Commit: m.Commit,
		CoordinatorEpoch: m.CoordinatorEpoch, TransactionVersion: m.TransactionVersion}
	var pends []*replica.Pending
	var pendTPs []topicpart.TopicPartition
	var wg sync.WaitGroup
	var mu sync.Mutex
	im := w.d.Metadata.Image()
	remote := map[int32][]topicpart.TopicPartition{}
	for _, tp := range m.Partitions {
		switch t := im.Topic(tp.Topic); {
		case t == nil || tp.Partition < 0 || tp.Partition >= int32(len(t.Partitions)):
			res[tp] = txn.ErrPartitionGone
		case w.route && leaderOf(im, tp) >= 0 && leaderOf(im, tp) != w.d.NodeID:
			remote[leaderOf(im, tp)] = append(remote[leaderOf(im, tp)], tp)
		case tp.Topic == group.OffsetsTopic:
			wg.Add(1)
			go func(tp topicpart.TopicPartition) {
				defer wg.Done()
				err := w.groupMarker(ctx, tp, m)
				mu.Lock()
				res[tp] = err
				mu.Unlock()
			}(tp)
		default:
			pend, err := w.d.Replicas.AppendMarkerNoWait(tp, spec, -1)
			if err != nil {
				res[tp] = asKafkaError(w.d, err)
				continue
			}
			pends, pendTPs = append(pends, &pend), append(pendTPs, tp)
		}
	}
	for leader, tps := range remote {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := w.remoteMarkers(ctx, leader, m, tps)
			mu.Lock()
			maps.Copy(res, out)
			mu.Unlock()
		}()
	}
	// Kafka appends markers with acks=-1 and request.timeout.ms as the
	// timeout (KafkaApis.handleWriteTxnMarkersRequest): a marker is answered
	// once the high watermark passes it, or REQUEST_TIMED_OUT, which the
	// coordinator retries.
	actx, cancel := context.WithTimeout(ctx, time.Duration(w.d.Config().Int("request.timeout.ms"))*time.Millisecond)
	errs := w.d.Replicas.AwaitContext(actx, pends)
	cancel()
	wg.Wait()
	for i, tp := range pendTPs {
		res[tp] = asKafkaError(w.d, errs[i])
	}
	return res
}

// groupMarker has the group coordinator write a marker to its partition.
// Its coordinator errors become NOT_LEADER_OR_FOLLOWER, as Kafka translates
// them, so the transaction coordinator retries.
func (w *MarkerWriter) groupMarker(ctx context.Context, tp topicpart.TopicPartition, m txn.Marker) error {
	if w.d.Groups == nil {
		return kerr.NotLeaderForPartition
	}
	err := w.d.Groups.CompleteTransaction(ctx, tp.Partition, coord.Marker{ProducerID: m.ProducerID,
		ProducerEpoch: m.ProducerEpoch, Commit: m.Commit, CoordinatorEpoch: m.CoordinatorEpoch,
		TransactionVersion: m.TransactionVersion})
	if errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.NotCoordinator) {
		return fmt.Errorf("%w: %v", kerr.NotLeaderForPartition, err)
	}
	return asKafkaError(w.d, err)
}

// asKafkaError keeps the message of err behind its Kafka code.
func asKafkaError(d Deps, err error) error {
	ke := kafkaError(d.Logger, err)
	if ke == nil || errors.Is(err, ke) {
		return err
	}
	return fmt.Errorf("%w: %v", ke, err)
}

// metadataCatchUpWait bounds how long a transaction request naming a topic
// or partition this broker's metadata does not hold waits for the metadata
// to catch up before the answer is UNKNOWN_TOPIC_OR_PARTITION.
const metadataCatchUpWait = time.Second

// caughtUpImage is the image to answer a transaction request from when im,
// the published image, lacks one of its partitions. Another broker may name
// a topic it has published before this one has: a group coordinator
// verifying a TxnOffsetCommit with this transaction coordinator names the
// __consumer_offsets partition it leads, which a FindCoordinator created
// and waited for on one broker only. This broker first publishes
// everything committed in the metadata log (a ReadIndex), at most
// metadataCatchUpWait, so that a partition that exists is never answered
// unknown; Kafka answers from its metadata cache as it is, and the client
// retries. On a timeout (no controller) the answer is im's.
func (h *Handler) caughtUpImage(ctx context.Context, im *metadata.Image) *metadata.Image {
	ctx, cancel := context.WithTimeout(ctx, metadataCatchUpWait)
	defer cancel()
	if err := h.d.Metadata.WaitPublished(ctx, 0); err != nil {
		return im
	}
	return h.d.Metadata.Image()
}

// hasPartition reports whether im holds topic-p.
func hasPartition(im *metadata.Image, topic string, p int32) bool {
	t := im.Topic(topic)
	return t != nil && p >= 0 && p < int32(len(t.Partitions))
}
