package api

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/kclient"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/replica"
	"github.com/gregor-broker/gregor/internal/replica/isr"
)

// ReplicaFetchVersion is the Fetch version followers send: v18, whose
// per-partition HighWatermark (KIP-1166) tells the leader the follower's own
// high watermark, so a parked fetch is answered when the leader's passes it.
const ReplicaFetchVersion = 18

// LeaderEndpoint is a follower's side of the Kafka wire to the broker
// leading its partitions (replica.LeaderEndpoint): sessionless Fetch v18
// with ReplicaState{ReplicaId, ReplicaEpoch}, OffsetForLeaderEpoch v4 and
// ListOffsets v9 with its replica id, over pooled connections to the
// leader's listener as the metadata advertises it.
type LeaderEndpoint struct {
	pool *kclient.Pool
	addr string
	// hw is the follower's high watermark of a partition, sent in v18.
	hw func(replica.PartitionKey) int64
	// buf is read into by every fetch: an answer's records alias it until
	// the next Fetch (replica.LeaderEndpoint's contract; one fetcher uses
	// an endpoint), so a follower allocates no buffer per answer.
	buf []byte
}

// NewLeaderEndpoint resolves broker's address on listener in im and returns
// its endpoint; hw gives the follower's high watermark of a partition.
func NewLeaderEndpoint(pool *kclient.Pool, im *metadata.Image, broker int32, listener string, hw func(replica.PartitionKey) int64) (*LeaderEndpoint, error) {
	b := im.Brokers[broker]
	if b == nil {
		return nil, fmt.Errorf("broker %d is not registered", broker)
	}
	ep, ok := b.Endpoint(listener)
	if !ok {
		return nil, fmt.Errorf("broker %d has no %s listener", broker, listener)
	}
	return &LeaderEndpoint{pool: pool, addr: net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), hw: hw}, nil
}

// Close is a no-op: the connections belong to the pool.
func (e *LeaderEndpoint) Close() {}

// Fetch sends a follower's fetch.
func (e *LeaderEndpoint) Fetch(ctx context.Context, r *replica.FetchRequest) ([]replica.FetchedPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(ReplicaFetchVersion)
	req.ReplicaID = -1
	req.ReplicaState.ID, req.ReplicaState.Epoch = r.ReplicaID, r.BrokerEpoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(r.MaxWait/time.Millisecond), r.MinBytes, r.MaxBytes
	req.SessionID, req.SessionEpoch = 0, -1
	names := map[[16]byte]string{}
	byTopic := map[[16]byte]int{}
	for _, p := range r.Partitions {
		i, ok := byTopic[p.Key.TopicID]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = p.Key.Topic, p.Key.TopicID
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			byTopic[p.Key.TopicID] = i
			names[p.Key.TopicID] = p.Key.Topic
		}
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.LogStartOffset = p.Key.Partition, p.FetchOffset, p.LogStartOffset
		fp.CurrentLeaderEpoch, fp.LastFetchedEpoch, fp.PartitionMaxBytes = p.CurrentLeaderEpoch, p.LastFetchedEpoch, p.MaxBytes
		if e.hw != nil {
			fp.HighWatermark = e.hw(p.Key)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, fp)
	}
	kresp, buf, err := e.pool.RequestReusing(ctx, e.addr, req, e.buf)
	e.buf = buf
	if err != nil {
		return nil, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	var out []replica.FetchedPartition
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			fp := replica.FetchedPartition{Key: replica.PartitionKey{Topic: names[t.TopicID], TopicID: t.TopicID, Partition: p.Partition},
				Err: kerr.ErrorForCode(p.ErrorCode), HighWatermark: p.HighWatermark, LogStartOffset: p.LogStartOffset,
				Records: p.RecordBatches}
			if p.DivergingEpoch.EndOffset >= 0 {
				fp.Diverging = &replica.EpochEndOffset{Epoch: p.DivergingEpoch.Epoch, EndOffset: p.DivergingEpoch.EndOffset}
			}
			out = append(out, fp)
		}
	}
	return out, nil
}

// OffsetForLeaderEpoch asks where leader epochs end, v4 with a replica id.
func (e *LeaderEndpoint) OffsetForLeaderEpoch(ctx context.Context, replicaID int32, qs []replica.EpochQuery) ([]replica.EpochAnswer, error) {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(4)
	req.ReplicaID = replicaID
	byTopic := map[string]int{}
	ids := map[string][16]byte{}
	for _, q := range qs {
		i, ok := byTopic[q.Key.Topic]
		if !ok {
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = q.Key.Topic
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			byTopic[q.Key.Topic], ids[q.Key.Topic] = i, q.Key.TopicID
		}
		p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch = q.Key.Partition, q.CurrentLeaderEpoch, q.LeaderEpoch
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	kresp, err := e.pool.Request(ctx, e.addr, req)
	if err != nil {
		return nil, err
	}
	var out []replica.EpochAnswer
	for _, t := range kresp.(*kmsg.OffsetForLeaderEpochResponse).Topics {
		for _, p := range t.Partitions {
			out = append(out, replica.EpochAnswer{Key: replica.PartitionKey{Topic: t.Topic, TopicID: ids[t.Topic], Partition: p.Partition},
				Err: kerr.ErrorForCode(p.ErrorCode), EpochEndOffset: replica.EpochEndOffset{Epoch: p.LeaderEpoch, EndOffset: p.EndOffset}})
		}
	}
	return out, nil
}

// ListOffset is ListOffsets v9 with a replica id: -2 the leader's log start
// offset, -1 its log end offset.
func (e *LeaderEndpoint) ListOffset(ctx context.Context, replicaID int32, key replica.PartitionKey, currentLeaderEpoch int32, ts int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(9)
	req.ReplicaID = replicaID
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = key.Topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition, p.CurrentLeaderEpoch, p.Timestamp = key.Partition, currentLeaderEpoch, ts
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	kresp, err := e.pool.Request(ctx, e.addr, req)
	if err != nil {
		return -1, err
	}
	resp := kresp.(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("%w: ListOffsets answered %d topics", kerr.UnknownServerError, len(resp.Topics))
	}
	rp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return -1, err
	}
	return rp.Offset, nil
}

// AlterPartition sends a leader's ISR proposals to the active controller
// (replica.AlterPartitionSender), v3 with NewIsrWithEpochs.
func (c ControllerClient) AlterPartition(ctx context.Context, brokerID int32, brokerEpoch int64, items []replica.AlterPartitionItem) ([]replica.AlterPartitionAnswer, error) {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(3)
	req.BrokerID, req.BrokerEpoch = brokerID, brokerEpoch
	byTopic := map[[16]byte]int{}
	for _, it := range items {
		i, ok := byTopic[it.TopicID]
		if !ok {
			t := kmsg.NewAlterPartitionRequestTopic()
			t.TopicID = it.TopicID
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			byTopic[it.TopicID] = i
		}
		p := kmsg.NewAlterPartitionRequestTopicPartition()
		p.Partition, p.LeaderEpoch, p.PartitionEpoch = it.Partition, it.LeaderEpoch, it.PartitionEpoch
		p.LeaderRecoveryState = int8(metadata.Recovered)
		for _, m := range it.ISR {
			ne := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			ne.BrokerID, ne.BrokerEpoch = m.ID, m.BrokerEpoch
			p.NewEpochISR = append(p.NewEpochISR, ne)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	kresp, _, err := c.RPC.Call(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := kresp.(*kmsg.AlterPartitionResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	var out []replica.AlterPartitionAnswer
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			a := replica.AlterPartitionAnswer{TopicID: t.TopidID, Partition: p.Partition}
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				a.Err = err
			} else {
				a.Result = isr.Result{LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: p.ISR,
					Recovering: metadata.LeaderRecoveryState(p.LeaderRecoveryState) == metadata.Recovering}
			}
			out = append(out, a)
		}
	}
	return out, nil
}
