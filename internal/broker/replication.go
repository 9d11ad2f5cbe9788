package broker

import (
	"time"

	"github.com/gregor-broker/gregor/internal/api"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/replica"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// startReplication starts the replica manager's replication from the
// broker configs: followers fetch from their leaders over the Kafka wire
// (api.LeaderEndpoint, on the inter-broker listener the leaders advertise,
// with its security: interBrokerPool) with
// this broker's epoch, leaders send ISR changes to the active controller
// (AlterPartition through the controller router), and a follower's
// truncation lowers the cleaner's checkpoint below its new log end.
func (b *Broker) startReplication(cfg *config.Broker) {
	ms := func(name string) time.Duration { return time.Duration(cfg.Long(name)) * time.Millisecond }
	listener := b.layout.InterBroker
	b.replicas.StartReplication(replica.ReplicationConfig{
		NodeID:      cfg.NodeID(),
		BrokerEpoch: b.life.Epoch,
		LagTimeMax:  ms("replica.lag.time.max.ms"),
		Fetch: replica.FetcherConfig{
			NumFetchers:       int(cfg.Int("num.replica.fetchers")),
			MaxWait:           ms("replica.fetch.wait.max.ms"),
			MinBytes:          cfg.Int("replica.fetch.min.bytes"),
			MaxBytes:          cfg.Int("replica.fetch.response.max.bytes"),
			PartitionMaxBytes: cfg.Int("replica.fetch.max.bytes"),
			Backoff:           ms("replica.fetch.backoff.ms"),
			RequestTimeout:    ms("replica.socket.timeout.ms"),
		},
		Endpoint: func(broker int32) (replica.LeaderEndpoint, error) {
			ep, err := api.NewLeaderEndpoint(b.pool, b.Metadata(), broker, listener, b.followerHighWatermark)
			if err != nil {
				return nil, err
			}
			return ep, nil
		},
		AlterPartition: b.ctrl,
		RequestTimeout: ms("request.timeout.ms"),
		OnTruncate:     b.truncatedAsFollower,
	})
}

// followerHighWatermark is this follower's high watermark of a partition,
// sent to its leader in Fetch v18.
func (b *Broker) followerHighWatermark(k replica.PartitionKey) int64 {
	if p, ok := b.replicas.Get(topicpart.TopicPartition{Topic: k.Topic, Partition: k.Partition}); ok {
		return p.Log.HighWatermark()
	}
	return -1
}

// truncatedAsFollower lowers the cleaner checkpoint of a log a follower cut
// below it (Kafka's maybeTruncateCheckpoint), so the cleaner does not take
// offsets it has not seen for cleaned.
func (b *Broker) truncatedAsFollower(tp topicpart.TopicPartition, leo int64) {
	if off, ok := b.logs.CleanerOffset(tp); ok && off > leo {
		if err := b.logs.SetCleanerOffset(tp, leo); err != nil {
			b.logger.Warn("lowering the cleaner checkpoint after a truncation failed", "partition", tp, "err", err)
		}
	}
}
