package cluster

import (
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/admin"
)

// An idle partition's followers wait at the leader's log end offset in
// long polls of replica.fetch.wait.max.ms (3 s here). The leader's /v1
// view counts them caught up now while they wait and at each answer
// (Kafka's rule applied at the answer too), so their lag in time stays
// near zero; counted only when each fetch arrives, it would climb to 3 s
// before every answer. Sampled every 100 ms for 3.5 s (more than a whole
// long poll), the largest lag must stay under half the wait.
func TestIdleFollowerCaughtUpTime(t *testing.T) {
	c := newClusterWith(t, 3, func(c *cluster) {
		for _, nd := range c.nodes {
			nd.extra = append(nd.extra, "--set", "replica.fetch.wait.max.ms=3000")
		}
	})
	const topic = "idle"
	createAssigned(t, c, topic, nil, []int32{1, 2, 3})
	waitFullISR(t, c, topic, 1)
	produceN(t, c.client(), topic, 5)
	var pv admin.PartitionView
	caughtUp := func() bool {
		if !c.node(1).adminJSON(t, "/v1/partitions/"+topic+"/0", &pv) || len(pv.ReplicaState) != 3 {
			return false
		}
		for _, r := range pv.ReplicaState {
			if r.LogEndOffset != 5 || !r.InISR {
				return false
			}
		}
		return true
	}
	if !poll(20*time.Second, caughtUp) {
		t.Fatalf("followers not caught up: %+v", pv.ReplicaState)
	}
	var worst int64
	samples := 0
	for end := time.Now().Add(3500 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if !c.node(1).adminJSON(t, "/v1/partitions/"+topic+"/0", &pv) {
			continue
		}
		samples++
		for _, r := range pv.ReplicaState {
			worst = max(worst, r.LagMs)
		}
	}
	t.Logf("%d samples over 3.5 s of an idle partition: largest follower lag %d ms (replica.fetch.wait.max.ms=3000)", samples, worst)
	if samples < 10 || worst >= 1500 {
		t.Fatalf("an idle, caught-up follower's lag reached %d ms in %d samples; want < 1500 ms", worst, samples)
	}
}
