package broker_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/cluster"
	"github.com/gregor-broker/gregor/internal/quorum"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// eventually polls cond every 20ms until it holds or 20s pass.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: still %v after 20s", what, err)
}

// metadataFrom asks one broker (not the cluster) for the metadata of topics.
func metadataFrom(t *testing.T, b *brokertest.Broker, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	cl := b.Client()
	resp, err := cl.SeedBrokers()[0].Request(brokertest.Context(t, 10*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.MetadataResponse)
}

func brokerIDs(m *kmsg.MetadataResponse) []int32 {
	var ids []int32
	for _, b := range m.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids
}

// everywhere waits until every running node has published topic.
func everywhere(t *testing.T, c *brokertest.Cluster, topic string) {
	t.Helper()
	for _, b := range c.Running() {
		eventually(t, "topic "+topic+" on every node", func() error {
			if b.Metadata().Topic(topic) == nil {
				return fmt.Errorf("node %d does not have it", b.Config().NodeID())
			}
			return nil
		})
	}
}

// produceEach writes one record to every partition of topic and fails the
// test on an error.
func produceEach(t *testing.T, cl *kgo.Client, topic string, partitions int32, value string) {
	t.Helper()
	var recs []*kgo.Record
	for p := range partitions {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(value)})
	}
	brokertest.Produce(t, cl, recs...)
}

func consumeCluster(t *testing.T, c *brokertest.Cluster, topic string, want int) map[int32][]string {
	t.Helper()
	cl := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := brokertest.Context(t, 20*time.Second)
	got := map[int32][]string{}
	n := 0
	for n < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", n, want, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			n++
		})
	}
	return got
}

// Three nodes on loopback are one cluster to clients: a topic created
// through any node is placed over all three and served by each leader;
// records produced through the cluster are consumed back; stopping a node
// takes its partitions offline while the others go on serving them and the
// metadata; the node comes back with its data.
func TestThreeNodeCluster(t *testing.T) {
	c := brokertest.StartCluster(t, 3, map[string]string{"gregor.ack.fsync": "false"}, false)
	ctx := brokertest.Context(t, 60*time.Second)

	// Created through node 2 (which forwards to the controller), seen at
	// once by node 2, placed over all.
	const parts = 6
	create := kmsg.NewPtrCreateTopicsRequest()
	create.TimeoutMillis = 10000
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "orders", parts, -1
	create.Topics = append(create.Topics, ct)
	cresp, err := c.Brokers[1].Client().SeedBrokers()[0].Request(ctx, create)
	if err != nil || cresp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode != 0 {
		t.Fatalf("create through node 2: %v %+v", err, cresp)
	}
	m := metadataFrom(t, c.Brokers[1], "orders")
	everywhere(t, c, "orders")
	if ids := brokerIDs(m); !slices.Equal(ids, []int32{1, 2, 3}) {
		t.Fatalf("node 2 lists brokers %v", ids)
	}
	leaders := map[int32]int{}
	for _, p := range m.Topics[0].Partitions {
		if p.ErrorCode != 0 || len(p.Replicas) != 1 || p.Leader != p.Replicas[0] {
			t.Fatalf("orders-%d: %+v", p.Partition, p)
		}
		leaders[p.Leader]++
	}
	if len(leaders) != 3 {
		t.Fatalf("leaders spread over %v, want all three brokers", leaders)
	}
	if m.ControllerID < 1 || m.ControllerID > 3 {
		t.Fatalf("controller id %d", m.ControllerID)
	}

	// A non-leader answers NOT_LEADER_OR_FOLLOWER to Produce, Fetch and
	// ListOffsets, with the leader to Produce and Fetch (KIP-951).
	var elsewhere kmsg.MetadataResponseTopicPartition
	for _, p := range m.Topics[0].Partitions {
		if p.Leader != 1 {
			elsewhere = p
		}
	}
	checkNotLeaderHint(t, c.Brokers[0], "orders", m.Topics[0].TopicID, elsewhere)

	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceEach(t, cl, "orders", parts, "before")
	if got := consumeCluster(t, c, "orders", parts); len(got) != parts {
		t.Fatalf("consumed from %d partitions, want %d", len(got), parts)
	}

	// Node 3 stops (a controlled shutdown): its partitions go offline,
	// the others keep serving, and metadata and topic creation work
	// through the nodes left.
	stopped := int32(3)
	c.Stop(stopped)
	eventually(t, "node 3's partitions offline in node 1's metadata", func() error {
		m := metadataFrom(t, c.Brokers[0], "orders")
		if ids := brokerIDs(m); slices.Contains(ids, stopped) {
			return fmt.Errorf("brokers %v", ids)
		}
		for _, p := range m.Topics[0].Partitions {
			offline := p.Replicas[0] == stopped
			if offline != (p.Leader == -1) || offline != (p.ErrorCode == kerr.LeaderNotAvailable.Code) {
				return fmt.Errorf("orders-%d leader %d error %d", p.Partition, p.Leader, p.ErrorCode)
			}
		}
		return nil
	})
	cl2 := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(1))
	for _, p := range m.Topics[0].Partitions {
		if p.Replicas[0] == stopped {
			continue
		}
		r := cl2.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: p.Partition, Value: []byte("during")})
		if err := r.FirstErr(); err != nil {
			t.Fatalf("produce to orders-%d (led by %d) with node 3 down: %v", p.Partition, p.Leader, err)
		}
	}
	if resp, err := c.Brokers[0].AdminClient().CreateTopic(ctx, 2, -1, nil, "later"); err != nil || resp.Err != nil {
		t.Fatalf("create with node 3 down: %v %v", err, resp.Err)
	}
	checkDescribeCluster(t, c.Brokers[0], stopped)
	checkClusterView(t, c.Brokers[0], stopped)

	// Node 3 comes back with its data and leads its partitions again.
	c.Restart(stopped)
	eventually(t, "node 3 leads its partitions again", func() error {
		m := metadataFrom(t, c.Brokers[0], "orders")
		for _, p := range m.Topics[0].Partitions {
			if p.Leader != p.Replicas[0] {
				return fmt.Errorf("orders-%d leader %d, replicas %v", p.Partition, p.Leader, p.Replicas)
			}
		}
		return nil
	})
	got := consumeCluster(t, c, "orders", parts+parts-leaders[stopped])
	for p, vals := range got {
		if vals[0] != "before" {
			t.Fatalf("orders-%d starts with %q", p, vals[0])
		}
	}
}

// checkNotLeaderHint produces to p through b, which does not lead it, and
// expects NOT_LEADER_OR_FOLLOWER naming the leader and its endpoint.
func checkNotLeaderHint(t *testing.T, b *brokertest.Broker, topic string, topicID [16]byte, p kmsg.MetadataResponseTopicPartition) {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.TopicID = topicID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p.Partition, []byte{}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := b.Client().SeedBrokers()[0].Request(brokertest.Context(t, 10*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	pr := resp.(*kmsg.ProduceResponse)
	sp := pr.Topics[0].Partitions[0]
	if sp.ErrorCode != kerr.NotLeaderForPartition.Code || sp.CurrentLeader.LeaderID != p.Leader ||
		sp.CurrentLeader.LeaderEpoch != p.LeaderEpoch {
		t.Fatalf("produce to partition %d through a non-leader: error %d, current leader %+v, want %d@%d", p.Partition,
			sp.ErrorCode, sp.CurrentLeader, p.Leader, p.LeaderEpoch)
	}
	if len(pr.Brokers) != 1 || pr.Brokers[0].NodeID != p.Leader || pr.Brokers[0].Port <= 0 {
		t.Fatalf("node endpoints %+v, want the leader %d", pr.Brokers, p.Leader)
	}
	checkFetchNotLeader(t, b, topic, topicID, p)
}

// checkFetchNotLeader fetches p through b, which does not lead it:
// NOT_LEADER_OR_FOLLOWER naming the leader and its endpoint (KIP-951);
// and ListOffsets, which has no hint, NOT_LEADER_OR_FOLLOWER.
func checkFetchNotLeader(t *testing.T, b *brokertest.Broker, topic string, topicID [16]byte, p kmsg.MetadataResponseTopicPartition) {
	t.Helper()
	ctx := brokertest.Context(t, 10*time.Second)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID, fetch.MaxWaitMillis, fetch.MaxBytes = -1, 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = topicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.PartitionMaxBytes = p.Partition, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	resp, err := b.Client().SeedBrokers()[0].Request(ctx, fetch)
	if err != nil {
		t.Fatal(err)
	}
	fr := resp.(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch through a non-leader: %+v", fr)
	}
	sp := fr.Topics[0].Partitions[0]
	if sp.ErrorCode != kerr.NotLeaderForPartition.Code || sp.CurrentLeader.LeaderID != p.Leader ||
		sp.CurrentLeader.LeaderEpoch != p.LeaderEpoch {
		t.Fatalf("fetch of partition %d through a non-leader: error %d, current leader %+v, want %d@%d", p.Partition,
			sp.ErrorCode, sp.CurrentLeader, p.Leader, p.LeaderEpoch)
	}
	if len(fr.Brokers) != 1 || fr.Brokers[0].NodeID != p.Leader || fr.Brokers[0].Port <= 0 {
		t.Fatalf("fetch node endpoints %+v, want the leader %d", fr.Brokers, p.Leader)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp = p.Partition, -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	lresp, err := b.Client().SeedBrokers()[0].Request(ctx, lo)
	if err != nil {
		t.Fatal(err)
	}
	if lr := lresp.(*kmsg.ListOffsetsResponse); len(lr.Topics) != 1 ||
		lr.Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("ListOffsets of partition %d through a non-leader: %+v", p.Partition, lr)
	}
}

// With every broker reaching the controller over the CONTROLLER listener,
// even its own node's, admin requests, registration, heartbeats, producer
// ids and consumer groups work the same: the wire path of every
// controller RPC is exercised.
func TestClusterControllerOverTCP(t *testing.T) {
	c := brokertest.StartCluster(t, 3, map[string]string{"group.initial.rebalance.delay.ms": "0"}, true)
	ctx := brokertest.Context(t, 60*time.Second)
	adm := c.Admin()
	if _, err := adm.CreateTopic(ctx, 3, -1, map[string]*string{"retention.ms": kmsg.StringPtr("3600000")}, "t"); err != nil {
		t.Fatal(err)
	}
	everywhere(t, c, "t")
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("7200000")}}, "t")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter configs: %v %v", err, rs)
	}
	cps, err := adm.CreatePartitions(ctx, 2, "t")
	if err != nil || cps["t"].Err != nil {
		t.Fatalf("create partitions: %v %v", err, cps)
	}
	// Idempotent producers get ids from blocks the controller hands out.
	cl := c.Client(kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 10 {
		brokertest.Produce(t, cl, &kgo.Record{Partition: int32(i % 3), Value: []byte("v")})
	}
	// A consumer group commits through the coordinator wherever it is.
	g := c.Client(kgo.ConsumeTopics("t"), kgo.ConsumerGroup("g"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit())
	n := 0
	for n < 10 {
		fs := g.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 10: %v", n, err)
		}
		n += fs.NumRecords()
	}
	if err := g.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	offs, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	var committed int64
	offs.Each(func(o kadm.OffsetResponse) { committed += o.At })
	if committed != 10 {
		t.Fatalf("committed %d, want 10", committed)
	}
	// Every partition already has its preferred leader.
	el, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"t": {0: {}, 1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	for p, r := range el["t"] {
		if !errors.Is(r.Err, kerr.ElectionNotNeeded) {
			t.Fatalf("preferred election of t-%d: %v", p, r.Err)
		}
	}
	// DescribeQuorum through any broker reaches the raft leader.
	checkDescribeQuorum(t, c, c.Brokers[2])
	dt, err := adm.DeleteTopics(ctx, "t")
	if err != nil || dt["t"].Err != nil {
		t.Fatalf("delete: %v %v", err, dt)
	}
	for _, b := range c.Running() {
		eventually(t, "the topic deleted on every node", func() error {
			if b.Metadata().Topic("t") != nil {
				return fmt.Errorf("node %d still has it", b.Config().NodeID())
			}
			return nil
		})
	}
	if _, err := adm.CreateTopic(ctx, 1, 4, nil, "rf4"); !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Fatalf("replication factor 4 on 3 nodes: %v", err)
	}
}

// The active controller stops: another node takes over, and topics can be
// created through any node left.
func TestClusterControllerFailover(t *testing.T) {
	c := brokertest.StartCluster(t, 3, nil, false)
	ctx := brokertest.Context(t, 60*time.Second)
	active := c.Brokers[0].Metadata().Controller.Node
	c.Stop(active)
	var other *brokertest.Broker
	for _, b := range c.Running() {
		other = b
	}
	resp, err := other.AdminClient().CreateTopic(ctx, 3, -1, nil, "after-failover")
	if err != nil || resp.Err != nil {
		t.Fatalf("create after the controller stopped: %v %v", err, resp.Err)
	}
	if now := other.Metadata().Controller.Node; now == active || now < 1 {
		t.Fatalf("controller %d after node %d stopped", now, active)
	}
}

// checkDescribeQuorum asks b for the metadata quorum's state: the leader
// answers, through b, with its term, commit index, and every voter's log
// and metadata directory id (the one in that voter's raft-meta).
func checkDescribeQuorum(t *testing.T, c *brokertest.Cluster, b *brokertest.Broker) {
	t.Helper()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, rt)
	resp, err := b.Client().SeedBrokers()[0].Request(brokertest.Context(t, 10*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	dq := resp.(*kmsg.DescribeQuorumResponse)
	if dq.ErrorCode != 0 || len(dq.Topics) != 1 || len(dq.Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeQuorum: %+v", dq)
	}
	p := dq.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LeaderID != b.Metadata().Controller.Node || p.HighWatermark <= 0 || len(p.CurrentVoters) != 3 {
		t.Fatalf("DescribeQuorum partition: %+v (controller %d)", p, b.Metadata().Controller.Node)
	}
	for _, v := range p.CurrentVoters {
		if v.LogEndOffset <= 0 || v.LastFetchTimestamp <= 0 || v.LastCaughtUpTimestamp <= 0 {
			t.Fatalf("voter %+v", v)
		}
		meta, err := quorum.ReadMeta(vfs.OS(), cluster.MetadataDir(c.Dir(v.ReplicaID)))
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(v.ReplicaDirectoryID[:]); got != meta.DirectoryID {
			t.Errorf("voter %d directory id %s, its raft-meta says %s", v.ReplicaID, got, meta.DirectoryID)
		}
	}
	if len(dq.Nodes) != 3 || len(dq.Nodes[0].Listeners) != 1 || dq.Nodes[0].Listeners[0].Name != "CONTROLLER" {
		t.Fatalf("DescribeQuorum nodes %+v", dq.Nodes)
	}
}

// /readyz says whether a node has caught up with the metadata log: a node
// left without a quorum (two of three voters stopped) cannot confirm it,
// and after broker.session.timeout.ms its metadata condition turns not
// ready, saying the quorum has no leader; it turns ready again once a
// majority runs. Meanwhile InitProducerId is answered REQUEST_TIMED_OUT.
func TestReadyzFollowsMetadataCatchUp(t *testing.T) {
	c := brokertest.StartCluster(t, 3, nil, false)
	b := c.Brokers[0]
	if code, body := readyz(t, b); code != 200 || !strings.Contains(body, "[+]metadata ready since") ||
		!strings.Contains(body, "caught up with the metadata log at index") {
		t.Fatalf("/readyz of a caught-up node: %d\n%s", code, body)
	}
	c.Stop(3)
	c.Stop(2)
	var body string
	pollUntil(t, 20*time.Second, "node 1 not ready without a quorum", func() bool {
		var code int
		code, body = readyz(t, b)
		return code == 503
	})
	if !strings.Contains(body, "[-]metadata not ready") || !strings.Contains(body, "the metadata quorum has no leader") {
		t.Fatalf("/readyz without a quorum:\n%s", body)
	}
	// Without a controller no producer id block can be had: InitProducerId
	// is answered, retriably, instead of being held.
	start := time.Now()
	ip, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(brokertest.Context(t, 30*time.Second), b.Client())
	if err != nil || ip.ErrorCode != kerr.RequestTimedOut.Code || time.Since(start) > 10*time.Second {
		t.Fatalf("InitProducerId without a quorum: %v %+v after %v", err, ip, time.Since(start))
	}
	c.Restart(2)
	pollUntil(t, 20*time.Second, "node 1 ready again with a quorum", func() bool {
		code, _ := readyz(t, b)
		return code == 200
	})
}

// checkDescribeCluster asks b for the cluster (DescribeCluster v2): the
// live brokers and the active controller, and with IncludeFencedBrokers the
// stopped node too, marked fenced.
func checkDescribeCluster(t *testing.T, b *brokertest.Broker, stopped int32) {
	t.Helper()
	for _, fenced := range []bool{false, true} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeFencedBrokers = fenced
		resp, err := req.RequestWith(brokertest.Context(t, 10*time.Second), b.Client())
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("DescribeCluster: %v %+v", err, resp)
		}
		var live, gone []int32
		for _, br := range resp.Brokers {
			if br.IsFenced {
				gone = append(gone, br.NodeID)
			} else {
				live = append(live, br.NodeID)
			}
			if br.Host == "" || br.Port <= 0 {
				t.Errorf("DescribeCluster broker %d without an endpoint: %+v", br.NodeID, br)
			}
		}
		slices.Sort(live)
		wantGone := []int32(nil)
		if fenced {
			wantGone = []int32{stopped}
		}
		if len(live) != 2 || slices.Contains(live, stopped) || !slices.Equal(gone, wantGone) {
			t.Fatalf("DescribeCluster (fenced %v): live %v fenced %v", fenced, live, gone)
		}
		if resp.ControllerID != b.Metadata().Controller.Node || resp.ClusterID != b.Metadata().ClusterID {
			t.Fatalf("DescribeCluster controller %d cluster %s, the metadata says %d %s", resp.ControllerID, resp.ClusterID,
				b.Metadata().Controller.Node, b.Metadata().ClusterID)
		}
	}
}

// checkClusterView reads b's /v1/cluster: every broker with its state and
// epoch (the stopped one fenced), and the metadata quorum from its leader,
// the stopped voter lagging (or unknown to a leader elected since).
func checkClusterView(t *testing.T, b *brokertest.Broker, stopped int32) {
	t.Helper()
	var cv admin.ClusterView
	eventually(t, "/v1/cluster shows the stopped voter lagging", func() error {
		resp, err := http.Get("http://" + b.AdminAddr().String() + "/v1/cluster")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		cv = admin.ClusterView{}
		if err := json.NewDecoder(resp.Body).Decode(&cv); err != nil {
			return err
		}
		if cv.Quorum == nil || len(cv.Quorum.Voters) != 3 {
			return fmt.Errorf("quorum %+v", cv.Quorum)
		}
		// Lagging; or unknown (-1, as KRaft says) when the leader was
		// elected after the voter stopped and never heard from it.
		if v := cv.Quorum.Voters[stopped-1]; v.Lag <= 0 && !(v.LogEndOffset == -1 && v.Lag == -1 && v.LastCaughtUp == nil) {
			return fmt.Errorf("quorum %+v", cv.Quorum)
		}
		return nil
	})
	ctrl := b.Metadata().Controller.Node
	if len(cv.Brokers) != 3 {
		t.Fatalf("/v1/cluster brokers %+v", cv.Brokers)
	}
	for _, br := range cv.Brokers {
		want := admin.BrokerUnfenced
		if br.NodeID == stopped {
			want = admin.BrokerFenced
		}
		if br.State != want || br.Epoch <= 0 || br.Controller != (br.NodeID == ctrl) || br.Endpoints["PLAINTEXT"] == "" {
			t.Errorf("/v1/cluster broker %+v, want %s", br, want)
		}
	}
	q := cv.Quorum
	if q.LeaderID != ctrl || q.HighWatermark <= 0 || q.Error != "" || q.Local.AppliedIndex == 0 || q.Local.CaughtUpAt == nil {
		t.Fatalf("/v1/cluster quorum %+v", q)
	}
	for _, v := range q.Voters {
		if v.Endpoint == "" || (v.NodeID != stopped && (v.LogEndOffset <= 0 || v.Lag < 0 || v.DirectoryID == "")) {
			t.Errorf("/v1/cluster voter %+v", v)
		}
	}
}
