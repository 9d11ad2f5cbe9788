package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
)

// replCLIProps are fast replication settings for the 3-node CLI test.
var replCLIProps = map[string]string{
	"replica.lag.time.max.ms":   "1500",
	"replica.fetch.wait.max.ms": "200",
	"replica.fetch.backoff.ms":  "100",
	"min.insync.replicas":       "2",
}

// poll runs check until it returns nil or 30 s pass.
func poll(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReplicaStateCLI runs topic describe and why isr against three nodes:
// an RF 3 partition shows its replicas, ISR, ELR and every replica's log end
// offset and lag; a stopped follower leaves the ISR, and why isr, asked
// through a list of admin listeners, finds the leader and says why the
// follower left, how far behind it is and what it waits for; once it is
// back, both show it caught up and in the ISR again.
func TestReplicaStateCLI(t *testing.T) {
	c := brokertest.StartCluster(t, 3, replCLIProps, false)
	ctx := brokertest.Context(t, 90*time.Second)
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, nil, "r"); err != nil {
		t.Fatal(err)
	}
	leaderOf := func() int32 {
		if pi := c.Running()[0].Metadata().Partition("r", 0); pi != nil {
			return pi.Leader
		}
		return -1
	}
	poll(t, "a leader for r/0", func() error {
		if l := leaderOf(); l < 1 {
			return fmt.Errorf("leader %d", l)
		}
		return nil
	})
	leader := leaderOf()
	lb := c.Brokers[leader-1]
	follower := int32(1 + leader%3)
	other := int32(1 + follower%3)
	cl := lb.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(10))
	produce := func(n int) {
		for i := range n {
			brokertest.Produce(t, cl, &kgo.Record{Topic: "r", Value: []byte(fmt.Sprint(i))})
		}
	}
	produce(20)
	c1 := cli{t: t, b: lb, addr: lb.Addr().String()}
	describe := func() *partitionState {
		var desc []topicDescription
		c1.json(&desc, "topic", "describe", "r")
		if len(desc) != 1 || len(desc[0].PartitionStates) != 1 {
			t.Fatalf("describe: %+v", desc)
		}
		return desc[0].PartitionStates[0]
	}
	lags := func(ps *partitionState) map[int32]string {
		out := map[int32]string{}
		for _, rs := range ps.ReplicaStates {
			s := "-"
			if rs.Error != "" {
				s = "error: " + rs.Error
			}
			if rs.LogEndOffset != nil && rs.Lag != nil {
				s = fmt.Sprintf("%d/%d", *rs.LogEndOffset, *rs.Lag)
			}
			out[rs.Broker] = s
		}
		return out
	}
	all20 := map[int32]string{1: "20/0", 2: "20/0", 3: "20/0"}
	poll(t, "every replica at 20 with no lag", func() error {
		ps := describe()
		if got := lags(ps); len(ps.ISR) != 3 || fmt.Sprint(got) != fmt.Sprint(all20) {
			return fmt.Errorf("ISR %v, LEO/lag %v", ps.ISR, got)
		}
		if ps.ELR == nil || len(ps.ELR) != 0 {
			return fmt.Errorf("ELR %v, want known and empty", ps.ELR)
		}
		return nil
	})
	// SIZE ("1.4 KiB") has a space, so the last cell holds its unit too.
	rows := tableRows(t, section(t, c1.run("topic", "describe", "r"), "PARTITION"))
	var want []string
	for _, id := range describe().Replicas {
		want = append(want, fmt.Sprintf("%d:20(0)", id))
	}
	if len(rows) != 1 || rows[0]["ELR"] != "[]" || !strings.HasSuffix(rows[0]["REPLICA-LEO(LAG)"], " "+strings.Join(want, ",")) || rows[0]["HW"] != "20" {
		t.Fatalf("describe table: %v, want ELR [] and REPLICA-LEO(LAG) %s", rows, strings.Join(want, ","))
	}
	// gregor offsets asks every replica too (ListOffsets with the
	// debugging replica id, which followers answer).
	rows = tableRows(t, c1.run("offsets", "r"))
	if len(rows) != 1 || rows[0]["REPLICA-LEOS"] != strings.ReplaceAll(strings.Join(want, ","), "(0)", "") {
		t.Fatalf("offsets table: %v", rows)
	}
	admins := func(ids ...int32) string {
		var a []string
		for _, id := range ids {
			a = append(a, "127.0.0.1:1") // a stopped node: nothing listens
			if b := c.Brokers[id-1]; b != nil {
				a[len(a)-1] = b.AdminAddr().String()
			}
		}
		return strings.Join(a, ",")
	}
	out, _, err := c1.exec("", true, "why", "isr", "r/0", "--admin", admins(leader))
	if err != nil || !strings.Contains(out, "every replica is in the ISR.") {
		t.Fatalf("why isr with all in the ISR: %v\n%s", err, out)
	}

	c.Stop(follower)
	poll(t, "the stopped follower leaves the ISR", func() error {
		if ps := describe(); len(ps.ISR) != 2 || slices.Contains(ps.ISR, follower) {
			return fmt.Errorf("ISR %v", ps.ISR)
		}
		return nil
	})
	produce(10)
	ps := describe()
	if got := lags(ps); !strings.HasPrefix(got[follower], "error: ") || got[leader] != "30/0" {
		t.Fatalf("LEO/lag with broker %d stopped: %v", follower, got)
	}
	// Asked the stopped node, then a follower, then the leader: the
	// leader answers.
	out, _, err = c1.exec("", true, "why", "isr", "r/0", "--admin", admins(follower, other, leader))
	if err != nil {
		t.Fatalf("why isr: %v\n%s", err, out)
	}
	for _, s := range []string{
		fmt.Sprintf("partition r/0: leader %d", leader),
		fmt.Sprintf("replica %d is out of the ISR since ", follower),
		"its log end offset is 20, 10 behind the leader",
		"it rejoins the ISR when all of these clear:\n  - ",
		fmt.Sprintf("replica %d is in the ISR: log end offset 30, 0 behind the leader", other),
	} {
		if !strings.Contains(out, s) {
			t.Errorf("why isr does not say %q:\n%s", s, out)
		}
	}
	// A follower alone cannot say: it names the leader and fails.
	out, _, err = c1.exec("", true, "why", "isr", "r/0", "--admin", admins(other))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the leader is broker %d", leader)) ||
		!strings.Contains(out, fmt.Sprintf("only broker %d knows why", leader)) {
		t.Errorf("why isr asked a follower: %v\n%s", err, out)
	}

	c.Restart(follower)
	poll(t, "the restarted follower catches up and rejoins", func() error {
		ps := describe()
		if got := lags(ps); len(ps.ISR) != 3 || got[follower] != "30/0" {
			return fmt.Errorf("ISR %v, LEO/lag %v", ps.ISR, got)
		}
		return nil
	})
	out, _, err = c1.exec("", true, "why", "isr", "r/0", "--admin", admins(leader))
	if err != nil || !strings.Contains(out, "every replica is in the ISR.") {
		t.Fatalf("why isr after the rejoin: %v\n%s", err, out)
	}
}
