package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/admin"
)

// adminGet fetches path from node nd's admin listener: its status and body.
func (nd *node) adminGet(t *testing.T, path string) (int, string) {
	t.Helper()
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + nd.admin + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// adminJSON decodes path from nd's admin listener into v; false unless 200.
func (nd *node) adminJSON(t *testing.T, path string, v any) bool {
	t.Helper()
	status, body := nd.adminGet(t, path)
	return status == http.StatusOK && json.Unmarshal([]byte(body), v) == nil
}

// createAssigned creates topic with configs and one partition per
// assignment (replica lists, the first the preferred leader), as
// kafka-topics --replica-assignment does.
func createAssigned(t *testing.T, c *cluster, topic string, configs map[string]string, assignments ...[]int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, a := range assignments {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(p), a
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, c.client())
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	}
}

// metadataOf is partition 0 of topic in node via's metadata: leader and ISR
// (ok false when it could not be read).
func metadataOf(c *cluster, via int32, topic string) (leader int32, isr []int32, ok bool) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.node(via).client))
	if err != nil {
		return -1, nil, false
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	m, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return -1, nil, false
	}
	p, found := m.Topics[topic].Partitions[0]
	if !found {
		return -1, nil, false
	}
	return p.Leader, p.ISR, true
}

// The loud unclean election, on five real processes (five so the
// metadata quorum survives two of them killed): two topics on replicas
// 1, 2, 3, one with unclean.leader.election.enable=true, one without.
// Broker 3 is killed with 10 records, 50 more are acknowledged by 1 and 2,
// then 1 and 2 are killed and 3 is started again: the first topic elects
// broker 3 although it is out of sync (its log ends at 10: 50 acknowledged
// records are gone), and every node's /v1/cluster, the console's overview,
// the partition's /v1 document and console page on broker 3, gregor why
// isr, gregor topic describe --admin and gregor cluster say so, with the
// offset from which records are lost; the partition is RECOVERING until
// broker 1 rejoins (then RECOVERED, the warning kept) and
// the warning stays until `gregor partition ack-unclean`. The second
// topic stays offline.
func TestUncleanElectionReported(t *testing.T) {
	start := time.Now()
	c := newClusterWith(t, 5, func(c *cluster) {
		for _, nd := range c.nodes {
			nd.extra = append(nd.extra, "--set", "unclean.leader.election.interval.ms=500",
				"--set", "replica.high.watermark.checkpoint.interval.ms=200")
		}
	})
	const on, off = "unclean-on", "unclean-off"
	createAssigned(t, c, on, map[string]string{"unclean.leader.election.enable": "true", "min.insync.replicas": "2"}, []int32{1, 2, 3})
	createAssigned(t, c, off, map[string]string{"min.insync.replicas": "2"}, []int32{1, 2, 3})
	waitFullISR(t, c, on, 1)
	waitFullISR(t, c, off, 1)
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
	produceN(t, cl, on, 10)
	produceN(t, cl, off, 10)
	waitFullISR(t, c, on, 1) // broker 3 has the 10 records
	c.sigkill(3)
	for _, topic := range []string{on, off} {
		if !poll(20*time.Second, func() bool {
			_, isr, ok := metadataOf(c, 1, topic)
			return ok && slices.Equal(sorted(isr), []int32{1, 2})
		}) {
			t.Fatalf("%s: broker 3 still in the ISR 20 s after SIGKILL", topic)
		}
	}
	produceN(t, cl, on, 50)
	produceN(t, cl, off, 50)
	cl.Close()
	// Broker 1 (the leader) checkpoints its high watermark, 60, before it
	// dies: what it knows it acknowledged when it comes back.
	ckpt := filepath.Join(c.node(1).dir, "replication-offset-checkpoint")
	if !poll(10*time.Second, func() bool {
		b, err := os.ReadFile(ckpt)
		return err == nil && strings.Contains(string(b), on+" 0 60\n")
	}) {
		b, err := os.ReadFile(ckpt)
		t.Fatalf("broker 1's %s never held %s 0 60: %q %v", ckpt, on, b, err)
	}
	c.sigkill(1)
	c.sigkill(2)
	c.start(3)
	c.waitReady(3, 60*time.Second)

	nd3, nd4 := c.node(3), c.node(4)
	var pv admin.PartitionView
	if !poll(30*time.Second, func() bool {
		return nd3.adminJSON(t, "/v1/partitions/"+on+"/0", &pv) && pv.Leader == 3 && pv.UncleanElection != nil
	}) {
		t.Fatalf("broker 3 not elected uncleanly within 30 s; last view: leader %d, unclean %+v", pv.Leader, pv.UncleanElection)
	}
	elected := time.Since(start)
	u := pv.UncleanElection
	if u.Kind != "unclean" || u.Leader != 3 || u.EpochStartOffset != 10 || pv.LEO != 10 || u.Count != 1 ||
		!slices.Contains(u.PreviousISR, 1) && !slices.Contains(u.PreviousELR, 1) || !u.Recovering {
		t.Fatalf("the unclean election as broker 3 shows it: %+v (its log end %d)", u, pv.LEO)
	}
	if !strings.Contains(u.Explanation, "at or after offset 10") || !strings.Contains(u.Acknowledge, "gregor partition ack-unclean "+on+"/0") {
		t.Fatalf("explanation %q, acknowledge %q", u.Explanation, u.Acknowledge)
	}
	// Every node knows it from the metadata.
	var cv admin.ClusterView
	if !poll(10*time.Second, func() bool { return nd4.adminJSON(t, "/v1/cluster", &cv) && len(cv.UncleanElections) == 1 }) {
		t.Fatalf("node 4's /v1/cluster: unclean elections %+v", cv.UncleanElections)
	}
	if got := cv.UncleanElections[0]; got.Topic != on || got.LeaderEpoch != u.LeaderEpoch || got.EpochStartOffset != -1 {
		t.Fatalf("node 4 (no replica) shows %+v", got)
	}
	if v := metricValue(t, nd4, "gregor_unclean_elections_unacknowledged"); v != 1 {
		t.Errorf("node 4's gregor_unclean_elections_unacknowledged = %v, want 1", v)
	}
	for _, pg := range []struct {
		nd   *node
		path string
	}{{nd4, "/"}, {nd3, "/ui/topics/" + on + "/0"}} {
		status, body := pg.nd.adminGet(t, pg.path)
		for _, w := range []string{`role="alert" data-unclean="` + on + `/0"`, "Possible data loss", "gregor partition ack-unclean " + on + "/0"} {
			if status != http.StatusOK || !strings.Contains(body, w) {
				t.Errorf("node %d's console %s (%d) lacks %q", pg.nd.id, pg.path, status, w)
			}
		}
	}
	if status, body := nd3.adminGet(t, "/ui/topics/"+on+"/0"); status != http.StatusOK || !strings.Contains(body, "<code>10</code> (where epoch") {
		t.Errorf("broker 3's partition page does not say records from offset 10 are lost")
	}
	adminList := strings.Join([]string{c.node(3).admin, c.node(4).admin, c.node(5).admin}, ",")
	if out, err := c.gregor("why", "isr", on+"/0", "--admin", adminList); err != nil || !strings.Contains(out, "WARNING: Possible data loss: broker 3 was elected") {
		t.Errorf("why isr: %v\n%s", err, out)
	}
	if out, err := c.gregor("topic", "describe", on, "-b", nd4.client, "--admin", nd4.admin); err != nil ||
		!strings.Contains(out, "WARNING partition 0: Possible data loss") {
		t.Errorf("topic describe --admin: %v\n%s", err, out)
	}
	if out, err := c.gregor("cluster", "--admin", nd4.admin); err != nil || !strings.Contains(out, "WARNING "+on+"/0: Possible data loss") {
		t.Errorf("gregor cluster: %v\n%s", err, out)
	}

	// Without unclean.leader.election.enable the other topic stays offline
	// through several unclean.leader.election.interval.ms passes.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if leader, _, ok := metadataOf(c, 4, off); ok && leader >= 0 {
			t.Fatalf("%s elected broker %d without unclean.leader.election.enable", off, leader)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !nd4.adminJSON(t, "/v1/cluster", &cv) || len(cv.UncleanElections) != 1 || cv.Offline < 1 {
		t.Fatalf("node 4's /v1/cluster: %d unclean elections, %d offline", len(cv.UncleanElections), cv.Offline)
	}

	// Broker 1 comes back, cuts its log back to broker 3's and rejoins:
	// the leader's first ISR change says RECOVERED; the warning stays.
	c.start(1)
	c.waitReady(1, 60*time.Second)
	if !poll(30*time.Second, func() bool {
		return nd3.adminJSON(t, "/v1/partitions/"+on+"/0", &pv) && slices.Contains(pv.ISR, 1) &&
			pv.UncleanElection != nil && !pv.UncleanElection.Recovering
	}) {
		t.Fatalf("broker 1 did not rejoin as RECOVERED: ISR %v, unclean %+v", pv.ISR, pv.UncleanElection)
	}
	checkReplicasEqualOn(t, c, on, []int32{1, 3})
	// Broker 1 says what it dropped: its log ended at 60, all of it
	// acknowledged (its checkpointed high watermark).
	var pv1 admin.PartitionView
	if !c.node(1).adminJSON(t, "/v1/partitions/"+on+"/0", &pv1) || pv1.UncleanElection == nil || pv1.UncleanElection.TruncatedHere == nil {
		t.Fatalf("broker 1's view of its truncation: %+v", pv1.UncleanElection)
	}
	if tr := pv1.UncleanElection.TruncatedHere; tr.FromLogEnd != 60 || tr.ToOffset != 10 || tr.Dropped != 50 ||
		tr.FromHighWatermark != 60 || tr.AcknowledgedDropped != 50 ||
		!strings.Contains(pv1.UncleanElection.Explanation, "50 record(s) dropped here, 50 of them below its high watermark (60)") {
		t.Errorf("broker 1's truncation: %+v\n%s", tr, pv1.UncleanElection.Explanation)
	}

	// A stale acknowledgement is refused; the right one clears it everywhere.
	if out, err := c.gregor("partition", "ack-unclean", on+"/0", "--leader-epoch", fmt.Sprint(u.LeaderEpoch-1), "--admin", adminList); err == nil ||
		!strings.Contains(out, "another leader epoch") {
		t.Errorf("a stale acknowledgement: %v\n%s", err, out)
	}
	out, err := c.gregor("partition", "ack-unclean", on+"/0", "--leader-epoch", fmt.Sprint(u.LeaderEpoch), "--admin", adminList)
	if err != nil || !strings.Contains(out, "acknowledged the unclean election of "+on+"/0") {
		t.Fatalf("ack-unclean: %v\n%s", err, out)
	}
	for _, nd := range []*node{nd3, nd4, c.node(5), c.node(1)} {
		if !poll(10*time.Second, func() bool { return nd.adminJSON(t, "/v1/cluster", &cv) && len(cv.UncleanElections) == 0 }) {
			t.Errorf("node %d still shows %+v after the acknowledgement", nd.id, cv.UncleanElections)
		}
	}
	if v := metricValue(t, nd4, "gregor_unclean_elections_unacknowledged"); v != 0 {
		t.Errorf("after the acknowledgement node 4's gregor_unclean_elections_unacknowledged = %v", v)
	}
	if _, body := nd4.adminGet(t, "/"); strings.Contains(body, `role="alert"`) {
		t.Error("the overview still shows the alert after the acknowledgement")
	}
	t.Logf("unclean election seen %.1f s into the test; whole test %.1f s", elected.Seconds(), time.Since(start).Seconds())
}

func sorted(ids []int32) []int32 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// checkReplicasEqualOn waits until partition 0 of topic holds the same
// bytes on the brokers given.
func checkReplicasEqualOn(t *testing.T, c *cluster, topic string, brokers []int32) {
	t.Helper()
	var last string
	if !poll(20*time.Second, func() bool {
		var first []byte
		for i, b := range brokers {
			data, err := partitionBytes(c.node(b).dir, topic+"-0")
			if err != nil {
				last = err.Error()
				return false
			}
			if i == 0 {
				first = data
			} else if string(data) != string(first) {
				last = fmt.Sprintf("broker %d holds %d bytes, broker %d %d", b, len(data), brokers[0], len(first))
				return false
			}
		}
		return true
	}) {
		t.Fatalf("%s-0 not equal on %v: %s", topic, brokers, last)
	}
}
