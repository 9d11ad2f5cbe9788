package main

import (
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/admin"
)

// isrView is a leader's view of t/0 with replicas 1 (leader), 2 and 3.
func isrView(isr []int32, minISR string, followers ...admin.ReplicaView) admin.PartitionView {
	v := admin.PartitionView{Topic: "t", Partition: 0, Configs: configs("min.insync.replicas", minISR)}
	v.Leader, v.LeaderEpoch, v.Replicas, v.ISR = 1, 4, []int32{1, 2, 3}, isr
	v.Offsets = admin.Offsets{HW: 90, LEO: 100}
	v.ReplicaState = append([]admin.ReplicaView{{BrokerID: 1, Leader: true, InISR: true, LogEndOffset: 100}}, followers...)
	return v
}

func TestExplainISR(t *testing.T) {
	at := whyNow.Add(-time.Minute).UnixMilli()
	for _, tc := range []struct {
		name string
		view admin.PartitionView
		want []string
		not  []string
	}{{
		name: "all in",
		view: isrView([]int32{1, 2, 3}, "2",
			admin.ReplicaView{BrokerID: 2, InISR: true, LogEndOffset: 100, LastCaughtUpMs: whyNow.UnixMilli()},
			admin.ReplicaView{BrokerID: 3, InISR: true, LogEndOffset: 95, LagOffsets: 5, LastCaughtUpMs: whyNow.UnixMilli()}),
		want: []string{"partition t/0: leader 1 (leader epoch 4), replicas [1,2,3], ISR [1,2,3], min.insync.replicas=2.",
			"replica 3 is in the ISR: log end offset 95, 5 behind the leader", "every replica is in the ISR."},
		not: []string{"NOT_ENOUGH_REPLICAS"},
	}, {
		name: "lagged, below min ISR",
		view: isrView([]int32{1}, "2",
			admin.ReplicaView{BrokerID: 2, LogEndOffset: 40, LagOffsets: 60, LastCaughtUpMs: at,
				OutOfISR: &admin.ISRDeparture{Cause: "lagged", Detail: "not caught up for replica.lag.time.max.ms=30000.", AtMs: at},
				WaitsFor: []string{"its log end offset 40 is below the high watermark 90 (50 behind)"}},
			admin.ReplicaView{BrokerID: 3, LogEndOffset: -1}),
		want: []string{
			"fewer than min.insync.replicas=2: produce requests with acks=all fail with NOT_ENOUGH_REPLICAS",
			"replica 2 is out of the ISR since " + time.UnixMilli(at).UTC().Format(time.RFC3339) + " (1m0s ago): lagged: not caught up for replica.lag.time.max.ms=30000.\n",
			"  its log end offset is 40, 60 behind the leader; it was last caught up",
			"  it rejoins the ISR when all of these clear:\n  - its log end offset 40 is below the high watermark 90 (50 behind)\n",
			"replica 3 is out of the ISR; this leader did not remove it",
			"  its log end offset is unknown (no fetch from it since this broker became leader)",
			"  it meets every rule to rejoin",
		},
		not: []string{"every replica is in the ISR."},
	}, {
		name: "a follower's view",
		view: func() admin.PartitionView {
			v := isrView([]int32{1, 2}, "2")
			v.ReplicaState = []admin.ReplicaView{{BrokerID: 2, InISR: true, LogEndOffset: 100}}
			return v
		}(),
		want: []string{"the broker that answered is not the leader; only broker 1 knows why"},
		not:  []string{"every replica is in the ISR."},
	}, {
		name: "offline",
		view: func() admin.PartitionView {
			v := isrView(nil, "2")
			v.Leader = -1
			v.ReplicaState = []admin.ReplicaView{{BrokerID: 2, LogEndOffset: 100}}
			return v
		}(),
		want: []string{"leader -1", "the partition has no leader: it is offline"},
		not:  []string{"WARNING"},
	}, {
		name: "after an unclean election",
		view: func() admin.PartitionView {
			v := isrView([]int32{1}, "1")
			v.UncleanElection = &admin.UncleanElectionView{Explanation: "Possible data loss: broker 1 was elected uncleanly."}
			return v
		}(),
		want: []string{"min.insync.replicas=1.\nWARNING: Possible data loss: broker 1 was elected uncleanly.\nthe leader's log end offset is 100"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			out := strings.Join(explainISR(tc.view, whyNow), "\n") + "\n"
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("missing %q in:\n%s", w, out)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(out, w) {
					t.Errorf("unexpected %q in:\n%s", w, out)
				}
			}
		})
	}
}
