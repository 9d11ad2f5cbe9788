package main

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/admin"
)

// What `gregor cluster` prints: the brokers with state, epoch and the
// controller, then the quorum's voters with their raft index and lag.
func TestPrintCluster(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	recent, old := now.Add(-300*time.Millisecond), now.Add(-95*time.Second)
	v := admin.ClusterView{ClusterID: "q1Sh-9_ISia_zwGINzRvyQ", NodeID: 1, ControllerID: 2,
		Brokers: []admin.BrokerView{
			{NodeID: 1, Host: "127.0.0.1", Port: 9092, State: admin.BrokerUnfenced, Epoch: 40},
			{NodeID: 2, Host: "127.0.0.1", Port: 9192, State: admin.BrokerUnfenced, Epoch: 12, Controller: true, Rack: "b"},
			{NodeID: 3, Host: "127.0.0.1", Port: 9292, State: admin.BrokerFenced, Epoch: 7},
		},
		Quorum: &admin.QuorumView{LeaderID: 2, LeaderEpoch: 5, HighWatermark: 1500, Voters: []admin.VoterView{
			{NodeID: 1, Endpoint: "127.0.0.1:9093", LogEndOffset: 1500, LastFetch: &recent, LastCaughtUp: &recent},
			{NodeID: 2, Endpoint: "127.0.0.1:9193", LogEndOffset: 1500, LastFetch: &recent, LastCaughtUp: &recent},
			{NodeID: 3, Endpoint: "127.0.0.1:9293", LogEndOffset: 1200, Lag: 300, LastFetch: &old, LastCaughtUp: &old},
		}, Local: admin.LocalQuorumView{Role: "follower", Term: 5, CommitIndex: 1500, AppliedIndex: 1500,
			CaughtUpAt: &recent, CaughtUpIndex: 1500}},
	}
	var b bytes.Buffer
	printCluster(&b, v, now)
	want := `Cluster q1Sh-9_ISia_zwGINzRvyQ: controller node 2 (as node 1 sees it)

BROKER  STATE     EPOCH  ENDPOINT        RACK
     1  unfenced     40  127.0.0.1:9092  -
     2  unfenced     12  127.0.0.1:9192  b     controller
     3  fenced        7  127.0.0.1:9292  -

Metadata quorum: leader node 2, term 5, committed up to index 1500
VOTER  RAFT INDEX  LAG  LAST FETCH  LAST CAUGHT UP  ENDPOINT
    1        1500    0  0.3s ago    0.3s ago        127.0.0.1:9093
    2        1500    0  0.3s ago    0.3s ago        127.0.0.1:9193  leader
    3        1200  300  1m35s ago   1m35s ago       127.0.0.1:9293

Node 1 is a follower in term 5: applied up to index 1500, 1500 committed; caught up with the log at index 1500 0.3s ago
`
	if got := b.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	v.Quorum = &admin.QuorumView{LeaderID: -1, Error: "no leader", Voters: []admin.VoterView{{NodeID: 1, LogEndOffset: -1, Lag: -1}}}
	b.Reset()
	printCluster(&b, v, now)
	if !bytes.Contains(b.Bytes(), []byte("Metadata quorum: no leader\n")) || !bytes.Contains(b.Bytes(), []byte("    1           ?    ?  never")) {
		t.Errorf("without a leader:\n%s", b.String())
	}
}

// A node still waiting for a quorum has no /v1/cluster yet: `gregor
// cluster` says so with the node's /readyz instead of a bare 404.
func TestClusterNotServingYet(t *testing.T) {
	a := admin.New(admin.Config{Logger: slog.New(slog.DiscardHandler)})
	const waiting = "waiting for the metadata quorum (voters 1@127.0.0.1:9093,2@127.0.0.1:9193) to have a leader"
	a.SetCondition("metadata", admin.NotReady, waiting)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	c := cli{t: t}
	_, _, err := c.exec("", true, "cluster", "--admin", srv.URL)
	if err == nil || !strings.Contains(err.Error(), "does not show the cluster yet") || !strings.Contains(err.Error(), waiting) {
		t.Fatalf("gregor cluster against a node without a quorum: %v", err)
	}
}
