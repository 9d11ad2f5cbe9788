package controller

import (
	"fmt"
	"testing"
	"time"
)

// benchCluster is one controller node with three unfenced brokers.
func benchCluster(b *testing.B) *cluster {
	c := newCluster(b, clusterOpts{nodes: 1, elr: true, static: map[string]string{"min.insync.replicas": "2"}})
	c.elect(1, 1, true)
	for id := int32(1); id <= 3; id++ {
		c.submit(0, registration(id, "i", -1))
	}
	for id := int32(1); id <= 3; id++ {
		c.submit(0, &BrokerHeartbeatRequest{BrokerID: id, BrokerEpoch: c.epochs[id], CurrentMetadataOffset: int64(c.im.Index)})
	}
	return c
}

// BenchmarkCreateTopics writes one topic of 3 partitions × RF 3 per
// request, each request its own entry, through the fake log.
func BenchmarkCreateTopics(b *testing.B) {
	c := benchCluster(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.submit(0, &CreateTopicsRequest{Topics: []CreatableTopic{{Name: fmt.Sprintf("t%d", i), NumPartitions: 3, ReplicationFactor: 3}}})
	}
}

// BenchmarkFenceBroker fences the brokers that are in the ISRs of 9,000
// partitions (3,000 topics × RF 3) and unfences them again: one batch of
// partition changes each way.
func BenchmarkFenceBroker(b *testing.B) {
	c := benchCluster(b)
	for i := 0; i < 3000; i++ {
		c.submit(0, &CreateTopicsRequest{Topics: []CreatableTopic{{Name: fmt.Sprintf("t%d", i), NumPartitions: 3, ReplicationFactor: 3}}})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.advance(10 * time.Second) // every session expires: three fences in one batch
		for id := int32(1); id <= 3; id++ {
			c.submit(0, &BrokerHeartbeatRequest{BrokerID: id, BrokerEpoch: c.epochs[id], CurrentMetadataOffset: int64(c.im.Index)})
		}
	}
}
