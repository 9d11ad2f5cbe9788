package controller

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/metadata"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestTranscripts runs the conversations in testdata/*.txt: a few
// controller nodes over a fake metadata log, brokers registering and
// heartbeating, admin requests, leader changes. Each command prints what
// was committed (entry by entry, record by record), the replies and any
// unclean election. Regenerate with -rewrite and read the diff.
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var c *cluster
		var out strings.Builder
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out.Reset()
			if d.Cmd == "cluster" {
				c = newTranscriptCluster(t, d, &out)
				return "ok"
			}
			if c == nil {
				t.Fatalf("%s: the file must start with cluster", d.Pos)
			}
			if s, ok := c.command(t, d); ok {
				out.WriteString(s)
			}
			return strings.TrimSuffix(out.String(), "\n")
		})
	})
}

func newTranscriptCluster(t *testing.T, d *datadriven.TestData, out *strings.Builder) *cluster {
	o := clusterOpts{nodes: 1, static: map[string]string{}}
	d.MaybeScanArgs(t, "nodes", &o.nodes)
	o.elr = d.HasArg("elr")
	for _, line := range lines(d.Input) {
		k, v, _ := strings.Cut(line, "=")
		o.static[k] = v
	}
	c := newCluster(t, o)
	c.onEntry = func(index uint64, e *metadata.Entry, prev, next *metadata.Image, p pendingEntry) {
		fmt.Fprintf(out, "entry %d: node %d term %d seq %d", index, e.Proposer, e.Term, e.Seq)
		if e.Term != p.raftTerm {
			fmt.Fprintf(out, " committed in term %d: skipped whole\n", p.raftTerm)
			return
		}
		if n := next.Skipped - prev.Skipped; n > 0 {
			fmt.Fprintf(out, " (%d record(s) skipped)", n)
		}
		out.WriteString("\n")
		for _, r := range e.Records {
			fmt.Fprintf(out, "  %s\n", c.fmtRecord(r))
		}
	}
	c.onReply = func(node int32, r Reply, _ Request) {
		s := c.fmtReply(r)
		if strings.Contains(s, "\n") {
			fmt.Fprintf(out, "reply from node %d:\n  %s\n", node, strings.ReplaceAll(s, "\n", "\n  "))
		} else {
			fmt.Fprintf(out, "reply from node %d: %s\n", node, s)
		}
	}
	c.onElection = func(node int32, e Election) {
		kind := "UNCLEAN ELECTION"
		if e.LastKnownLeader {
			kind = "LAST KNOWN LEADER ELECTED"
		}
		fmt.Fprintf(out, "%s: %s-%d leader=%d leader-epoch=%d\n", kind, e.Topic, e.Partition, e.Leader, e.LeaderEpoch)
	}
	return c
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// command runs one transcript command; the string is printed after what the
// cluster reported while it ran.
func (c *cluster) command(t *testing.T, d *datadriven.TestData) (string, bool) {
	node := int32(0)
	if d.HasArg("node") {
		var n int
		d.ScanArgs(t, "node", &n)
		node = int32(n)
	}
	switch d.Cmd {
	case "elect":
		var n int
		var term uint64
		d.ScanArgs(t, "node", &n)
		d.ScanArgs(t, "term", &term)
		c.elect(int32(n), term, !d.HasArg("drop-pending"))
	case "kill":
		var n int
		d.ScanArgs(t, "node", &n)
		c.dead[int32(n)] = true
	case "advance":
		var s string
		d.ScanArgs(t, "by", &s)
		dur, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		arg, ok := d.Arg("heartbeats")
		if !ok {
			c.advance(dur)
			return fmt.Sprintf("time +%v", dur), true
		}
		// The listed brokers heartbeat every second on the way; their
		// replies are not printed.
		brokers := int32s(t, arg.Vals)
		for step := time.Duration(0); step < dur; step += time.Second {
			c.advance(min(time.Second, dur-step))
			c.quiet = true
			for _, b := range brokers {
				c.submit(node, &BrokerHeartbeatRequest{BrokerID: b, BrokerEpoch: c.epochs[b], CurrentMetadataOffset: int64(c.im.Index)})
			}
			c.quiet = false
		}
		return fmt.Sprintf("time +%v", dur), true
	case "drop-proposals":
		d.ScanArgs(t, "n", &c.dropNext)
	case "pause":
		c.paused = true
	case "resume":
		c.paused = false
		c.settle()
	case "commit":
		n := len(c.pending)
		d.MaybeScanArgs(t, "n", &n)
		c.commit(n)
		c.settle()
	case "show":
		return describeImage(c.im), true
	case "register":
		c.submit(node, c.registerArgs(t, d))
	case "heartbeat":
		for _, b := range brokerList(t, d) {
			c.submit(node, c.heartbeatArgs(t, d, b))
		}
	default:
		req := c.adminRequest(t, d)
		if req == nil {
			t.Fatalf("%s: unknown command %s", d.Pos, d.Cmd)
		}
		c.submit(node, req)
	}
	return "", false
}

func brokerList(t *testing.T, d *datadriven.TestData) []int32 {
	arg, ok := d.Arg("broker")
	if !ok {
		t.Fatalf("%s: broker= missing", d.Pos)
	}
	return int32s(t, arg.Vals)
}

func int32s(t *testing.T, vals []string) []int32 {
	out := []int32{}
	for _, v := range vals {
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, int32(n))
	}
	return out
}

func (c *cluster) registerArgs(t *testing.T, d *datadriven.TestData) *BrokerRegistrationRequest {
	var b int
	d.ScanArgs(t, "broker", &b)
	inc := fmt.Sprintf("inc-%d", b)
	d.MaybeScanArgs(t, "inc", &inc)
	prev := int64(-1)
	d.MaybeScanArgs(t, "prev", &prev)
	r := registration(int32(b), inc, prev)
	d.MaybeScanArgs(t, "cluster", &r.ClusterID)
	if d.HasArg("reserved-dir") {
		r.LogDirs = [][16]byte{{15: 1}} // Kafka's DirectoryId.LOST
	}
	if arg, ok := d.Arg("dirs"); ok {
		r.LogDirs = nil
		for _, n := range int32s(t, arg.Vals) {
			r.LogDirs = append(r.LogDirs, logDir(n/100, int(n%100)))
		}
	}
	return r
}

func (c *cluster) heartbeatArgs(t *testing.T, d *datadriven.TestData, b int32) *BrokerHeartbeatRequest {
	r := &BrokerHeartbeatRequest{BrokerID: b, BrokerEpoch: c.epochs[b], CurrentMetadataOffset: int64(c.im.Index),
		WantFence: d.HasArg("want-fence"), WantShutDown: d.HasArg("want-shutdown")}
	d.MaybeScanArgs(t, "epoch", &r.BrokerEpoch)
	d.MaybeScanArgs(t, "offset", &r.CurrentMetadataOffset)
	return r
}

// adminRequest builds the request of the other commands, nil when the
// command is unknown.
func (c *cluster) adminRequest(t *testing.T, d *datadriven.TestData) Request {
	switch d.Cmd {
	case "create-topic":
		return c.createTopicArgs(t, d)
	case "delete-topic":
		var name string
		d.ScanArgs(t, "name", &name)
		return &DeleteTopicsRequest{Topics: []DeleteTopicState{{Name: name}}}
	case "create-partitions":
		var name string
		var count int32
		d.ScanArgs(t, "topic", &name)
		d.ScanArgs(t, "count", &count)
		ct := CreatePartitionsTopic{Name: name, Count: count}
		for _, l := range lines(d.Input) {
			ct.Assignments = append(ct.Assignments, int32s(t, strings.Split(l, ",")))
		}
		return &CreatePartitionsRequest{Topics: []CreatePartitionsTopic{ct}, ValidateOnly: d.HasArg("validate-only")}
	case "alter-partition":
		return c.alterPartitionArgs(t, d)
	case "alter-config":
		return alterConfigArgs(t, d)
	case "replace-configs":
		var typ, name string
		d.ScanArgs(t, "type", &typ)
		d.MaybeScanArgs(t, "name", &name)
		rr := AlterConfigsResource{Type: metadata.ResourceTopic, Name: name}
		if typ == "broker" {
			rr.Type = metadata.ResourceBroker
		}
		for _, l := range lines(d.Input) {
			k, v, _ := strings.Cut(l, "=")
			rr.Configs = append(rr.Configs, ConfigValue{Name: k, Value: &v})
		}
		return &AlterConfigsRequest{Resources: []AlterConfigsResource{rr}}
	case "allocate-producer-ids":
		var b int32
		d.ScanArgs(t, "broker", &b)
		return &AllocateProducerIDsRequest{BrokerID: b, BrokerEpoch: c.epochs[b]}
	case "elect-leaders":
		return electArgs(t, d)
	case "reassign":
		var topic string
		var p int32
		d.ScanArgs(t, "topic", &topic)
		d.ScanArgs(t, "partition", &p)
		rp := ReassignablePartition{Partition: p}
		if arg, ok := d.Arg("replicas"); ok {
			rp.Replicas = int32s(t, arg.Vals)
		}
		return &AlterPartitionReassignmentsRequest{AllowReplicationFactorChange: !d.HasArg("keep-rf"),
			Topics: []ReassignableTopic{{Name: topic, Partitions: []ReassignablePartition{rp}}}}
	case "list-reassignments":
		return &ListPartitionReassignmentsRequest{}
	}
	return nil
}

func (c *cluster) createTopicArgs(t *testing.T, d *datadriven.TestData) *CreateTopicsRequest {
	ct := CreatableTopic{NumPartitions: -1, ReplicationFactor: -1}
	d.ScanArgs(t, "name", &ct.Name)
	d.MaybeScanArgs(t, "partitions", &ct.NumPartitions)
	d.MaybeScanArgs(t, "rf", &ct.ReplicationFactor)
	for _, l := range lines(d.Input) {
		kind, rest, _ := strings.Cut(l, " ")
		switch kind {
		case "config":
			k, v, _ := strings.Cut(rest, "=")
			ct.Configs = append(ct.Configs, ConfigValue{Name: k, Value: &v})
		case "assign":
			p, replicas, _ := strings.Cut(rest, ":")
			n, _ := strconv.Atoi(strings.TrimSpace(p))
			ct.Assignments = append(ct.Assignments, ReplicaAssignment{Partition: int32(n),
				Replicas: int32s(t, strings.Split(strings.TrimSpace(replicas), ","))})
		default:
			t.Fatalf("%s: bad line %q", d.Pos, l)
		}
	}
	return &CreateTopicsRequest{Topics: []CreatableTopic{ct}, ValidateOnly: d.HasArg("validate-only")}
}

func (c *cluster) alterPartitionArgs(t *testing.T, d *datadriven.TestData) *AlterPartitionRequest {
	var b int32
	var topic string
	var p int32
	d.ScanArgs(t, "broker", &b)
	d.ScanArgs(t, "topic", &topic)
	d.ScanArgs(t, "partition", &p)
	tp := c.im.Topic(topic)
	if tp == nil {
		t.Fatalf("%s: no topic %s", d.Pos, topic)
	}
	cur := tp.Partitions[p]
	rp := AlterPartitionPartition{Partition: p, LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch,
		LeaderRecoveryState: cur.LeaderRecoveryState}
	d.MaybeScanArgs(t, "leader-epoch", &rp.LeaderEpoch)
	d.MaybeScanArgs(t, "partition-epoch", &rp.PartitionEpoch)
	if d.HasArg("recovered") {
		rp.LeaderRecoveryState = metadata.Recovered
	}
	arg, _ := d.Arg("isr")
	for _, id := range int32s(t, arg.Vals) {
		epoch := int64(-1)
		if br := c.im.Brokers[id]; br != nil {
			epoch = br.Epoch
		}
		rp.NewISR = append(rp.NewISR, BrokerState{BrokerID: id, BrokerEpoch: epoch})
	}
	if arg, ok := d.Arg("member-epochs"); ok {
		for i, v := range arg.Vals {
			n, _ := strconv.ParseInt(v, 10, 64)
			rp.NewISR[i].BrokerEpoch = n
		}
	}
	r := &AlterPartitionRequest{BrokerID: b, BrokerEpoch: c.epochs[b],
		Topics: []AlterPartitionTopic{{TopicID: tp.ID, Partitions: []AlterPartitionPartition{rp}}}}
	d.MaybeScanArgs(t, "sender-epoch", &r.BrokerEpoch)
	if d.HasArg("unknown-topic") {
		r.Topics[0].TopicID = metadata.TopicID{15: 0xEE}
	}
	return r
}

func alterConfigArgs(t *testing.T, d *datadriven.TestData) *IncrementalAlterConfigsRequest {
	var typ, name string
	d.ScanArgs(t, "type", &typ)
	d.MaybeScanArgs(t, "name", &name)
	rr := IncrementalAlterConfigsResource{Type: metadata.ResourceTopic, Name: name}
	if typ == "broker" {
		rr.Type = metadata.ResourceBroker
	}
	ops := map[string]config.AlterOp{"set": config.AlterSet, "delete": config.AlterDelete, "append": config.AlterAppend, "subtract": config.AlterSubtract}
	for _, l := range lines(d.Input) {
		op, rest, _ := strings.Cut(l, " ")
		k, v, hasValue := strings.Cut(rest, "=")
		e := config.AlterEntry{Name: k, Op: ops[op]}
		if hasValue {
			e.Value = &v
		}
		rr.Ops = append(rr.Ops, e)
	}
	return &IncrementalAlterConfigsRequest{Resources: []IncrementalAlterConfigsResource{rr}, ValidateOnly: d.HasArg("validate-only")}
}

func electArgs(t *testing.T, d *datadriven.TestData) *ElectLeadersRequest {
	r := &ElectLeadersRequest{ElectionType: ElectionPreferred}
	if d.HasArg("unclean") {
		r.ElectionType = ElectionUnclean
	}
	if d.HasArg("topic") {
		var topic string
		d.ScanArgs(t, "topic", &topic)
		arg, _ := d.Arg("partitions")
		r.Topics = []TopicPartitions{{Topic: topic, Partitions: int32s(t, arg.Vals)}}
	}
	return r
}
