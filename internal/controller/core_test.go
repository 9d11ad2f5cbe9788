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

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/transcript"
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
			a := transcript.NewCmd(t, d)
			defer a.Done()
			if d.Cmd == "cluster" {
				c = newTranscriptCluster(t, d, a, &out)
				return "ok"
			}
			if c == nil {
				t.Fatalf("%s: the file must start with cluster", d.Pos)
			}
			if s, ok := c.command(t, d, a); ok {
				out.WriteString(s)
			}
			return strings.TrimSuffix(out.String(), "\n")
		})
	})
}

func newTranscriptCluster(t *testing.T, d *datadriven.TestData, a *transcript.Cmd, out *strings.Builder) *cluster {
	o := clusterOpts{nodes: int(a.Int("nodes", 1)), static: map[string]string{}, elr: a.Has("elr")}
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
func (c *cluster) command(t *testing.T, d *datadriven.TestData, a *transcript.Cmd) (string, bool) {
	node := int32(a.Int("node", 0))
	switch d.Cmd {
	case "elect":
		c.elect(node, uint64(a.Int("term", 0)), !a.Has("drop-pending"))
	case "kill":
		c.dead[node] = true
	case "advance":
		dur, err := time.ParseDuration(a.String("by", ""))
		if err != nil {
			t.Fatal(err)
		}
		if !a.Has("heartbeats") {
			c.advance(dur)
			return fmt.Sprintf("time +%v", dur), true
		}
		// The listed brokers heartbeat every second on the way; their
		// replies are not printed.
		brokers := int32s(t, a.List("heartbeats"))
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
		c.dropNext = int(a.Int("n", 1))
	case "pause":
		c.paused = true
	case "resume":
		c.paused = false
		c.settle()
	case "commit":
		c.commit(int(a.Int("n", int64(len(c.pending)))))
		c.settle()
	case "show":
		return describeImage(c.im), true
	case "register":
		c.submit(node, c.registerArgs(a))
	case "heartbeat":
		for _, b := range int32s(t, a.List("broker")) {
			c.submit(node, c.heartbeatArgs(a, b))
		}
	default:
		req := c.adminRequest(t, d, a)
		if req == nil {
			t.Fatalf("%s: unknown command %s", d.Pos, d.Cmd)
		}
		c.submit(node, req)
	}
	return "", false
}

func int32s(t testing.TB, vals []string) []int32 {
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

func (c *cluster) registerArgs(a *transcript.Cmd) *BrokerRegistrationRequest {
	b := int32(a.Int("broker", 0))
	r := registration(b, a.String("inc", fmt.Sprintf("inc-%d", b)), a.Int("prev", -1))
	r.ClusterID = a.String("cluster", r.ClusterID)
	if a.Has("reserved-dir") {
		r.LogDirs = [][16]byte{{15: 1}} // Kafka's DirectoryId.LOST
	}
	if a.Has("dirs") {
		r.LogDirs = nil
		for _, n := range int32s(c.tb, a.List("dirs")) {
			r.LogDirs = append(r.LogDirs, logDir(n/100, int(n%100)))
		}
	}
	return r
}

func (c *cluster) heartbeatArgs(a *transcript.Cmd, b int32) *BrokerHeartbeatRequest {
	return &BrokerHeartbeatRequest{BrokerID: b, BrokerEpoch: a.Int("epoch", c.epochs[b]),
		CurrentMetadataOffset: a.Int("offset", int64(c.im.Index)), WantFence: a.Has("want-fence"), WantShutDown: a.Has("want-shutdown")}
}

// adminRequest builds the request of the other commands, nil when the
// command is unknown.
func (c *cluster) adminRequest(t *testing.T, d *datadriven.TestData, a *transcript.Cmd) Request {
	switch d.Cmd {
	case "create-topic":
		return createTopicArgs(t, d, a)
	case "delete-topic":
		return &DeleteTopicsRequest{Topics: []DeleteTopicState{{Name: a.String("name", "")}}}
	case "create-partitions":
		ct := CreatePartitionsTopic{Name: a.String("topic", ""), Count: int32(a.Int("count", 0))}
		for _, l := range lines(d.Input) {
			ct.Assignments = append(ct.Assignments, int32s(t, strings.Split(l, ",")))
		}
		return &CreatePartitionsRequest{Topics: []CreatePartitionsTopic{ct}, ValidateOnly: a.Has("validate-only")}
	case "alter-partition":
		return c.alterPartitionArgs(t, d, a)
	case "alter-config":
		return alterConfigArgs(d, a)
	case "replace-configs":
		rr := AlterConfigsResource{Type: resourceType(a.String("type", "")), Name: a.String("name", "")}
		for _, l := range lines(d.Input) {
			k, v, _ := strings.Cut(l, "=")
			rr.Configs = append(rr.Configs, ConfigValue{Name: k, Value: &v})
		}
		return &AlterConfigsRequest{Resources: []AlterConfigsResource{rr}}
	case "allocate-producer-ids":
		b := int32(a.Int("broker", 0))
		return &AllocateProducerIDsRequest{BrokerID: b, BrokerEpoch: c.epochs[b]}
	case "elect-leaders":
		return electArgs(t, a)
	case "reassign":
		rp := ReassignablePartition{Partition: int32(a.Int("partition", 0))}
		if a.Has("replicas") {
			rp.Replicas = int32s(t, a.List("replicas"))
		}
		return &AlterPartitionReassignmentsRequest{AllowReplicationFactorChange: !a.Has("keep-rf"),
			Topics: []ReassignableTopic{{Name: a.String("topic", ""), Partitions: []ReassignablePartition{rp}}}}
	case "list-reassignments":
		return &ListPartitionReassignmentsRequest{}
	case "create-acls":
		r := &CreateAclsRequest{}
		for _, l := range lines(d.Input) {
			r.Creations = append(r.Creations, parseBinding(t, l))
		}
		return r
	case "delete-acls":
		r := &DeleteAclsRequest{}
		for _, l := range lines(d.Input) {
			r.Filters = append(r.Filters, parseFilter(t, l))
		}
		return r
	case "alter-scram":
		return scramArgs(t, d)
	case "update-features":
		r := &UpdateFeaturesRequest{ValidateOnly: a.Has("validate-only")}
		for _, l := range lines(d.Input) {
			kv, typ, _ := strings.Cut(l, " ")
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.Atoi(v)
			ty, _ := strconv.Atoi(strings.TrimPrefix(typ, "type="))
			r.Updates = append(r.Updates, FeatureUpdate{Feature: k, Level: int16(n), Type: int8(ty)})
		}
		return r
	case "ack-unclean":
		return &AckUncleanElectionRequest{Topic: a.String("topic", ""), Partition: int32(a.Int("partition", 0)),
			LeaderEpoch: int32(a.Int("leader-epoch", -1))}
	}
	return nil
}

// parseBinding reads "PERMISSION PRINCIPAL HOST OPERATION TYPE NAME PATTERN",
// e.g. "allow User:alice * read topic t literal"; "-" is an empty string.
func parseBinding(t *testing.T, l string) auth.Binding {
	f := parseFilter(t, l)
	b := auth.Binding{ResourceType: f.ResourceType, PatternType: f.PatternType, Operation: f.Operation, Permission: f.Permission}
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	b.ResourceName, b.Principal, b.Host = deref(f.ResourceName), deref(f.Principal), deref(f.Host)
	return b
}

// parseFilter reads a binding's fields; "-" is a null string and any, match
// and unknown are allowed.
func parseFilter(t *testing.T, l string) auth.Filter {
	fs := strings.Fields(l)
	if len(fs) != 7 {
		t.Fatalf("ACL %q: want PERMISSION PRINCIPAL HOST OPERATION TYPE NAME PATTERN", l)
	}
	str := func(s string) *string {
		if s == "-" {
			return nil
		}
		return &s
	}
	enum := func(s string, parse func(string) (int8, bool)) int8 {
		n, ok := parse(s)
		if !ok {
			t.Fatalf("ACL %q: bad field %q", l, s)
		}
		return n
	}
	named := func(names ...string) func(string) (int8, bool) {
		return func(s string) (int8, bool) {
			for i, n := range names {
				if strings.EqualFold(n, s) {
					return int8(i), true
				}
			}
			return 0, false
		}
	}
	return auth.Filter{
		Permission:   auth.Permission(enum(fs[0], named("unknown", "any", "deny", "allow"))),
		Principal:    str(fs[1]),
		Host:         str(fs[2]),
		Operation:    auth.Operation(enum(fs[3], named("unknown", "any", "all", "read", "write", "create", "delete", "alter", "describe", "cluster_action", "describe_configs", "alter_configs", "idempotent_write"))),
		ResourceType: auth.ResourceType(enum(fs[4], named("unknown", "any", "topic", "group", "cluster", "transactional_id", "delegation_token", "user"))),
		ResourceName: str(fs[5]),
		PatternType:  auth.PatternType(enum(fs[6], named("unknown", "any", "match", "literal", "prefixed"))),
	}
}

// scramArgs reads "upsert USER MECHANISM ITERATIONS PASSWORD" and
// "delete USER MECHANISM" lines; the salt is the user's name.
func scramArgs(t *testing.T, d *datadriven.TestData) *AlterUserScramCredentialsRequest {
	r := &AlterUserScramCredentialsRequest{}
	for _, l := range lines(d.Input) {
		fs := strings.Fields(l)
		if len(fs) < 3 {
			t.Fatalf("%s: bad line %q", d.Pos, l)
		}
		user := fs[1]
		if user == "-" {
			user = ""
		}
		mech := auth.ScramMechanismNamed(fs[2])
		switch {
		case fs[0] == "delete":
			r.Deletions = append(r.Deletions, ScramDeletion{Name: user, Mechanism: mech})
		case fs[0] == "upsert" && len(fs) == 5:
			iters, _ := strconv.Atoi(fs[3])
			m := mech
			if m == auth.ScramUnknown {
				m = auth.ScramSHA256
			}
			salted, err := auth.SaltPassword(m, fs[4], []byte(user), iters)
			if err != nil {
				t.Fatal(err)
			}
			r.Upsertions = append(r.Upsertions, ScramUpsertion{Name: user, Mechanism: mech, Iterations: int32(iters),
				Salt: []byte(user), SaltedPassword: salted})
		default:
			t.Fatalf("%s: bad line %q", d.Pos, l)
		}
	}
	return r
}

func resourceType(s string) int8 {
	if s == "broker" {
		return metadata.ResourceBroker
	}
	return metadata.ResourceTopic
}

func createTopicArgs(t *testing.T, d *datadriven.TestData, a *transcript.Cmd) *CreateTopicsRequest {
	ct := CreatableTopic{Name: a.String("name", ""), NumPartitions: int32(a.Int("partitions", -1)),
		ReplicationFactor: int16(a.Int("rf", -1))}
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
	return &CreateTopicsRequest{Topics: []CreatableTopic{ct}, ValidateOnly: a.Has("validate-only")}
}

// alterPartitionArgs is a leader's AlterPartition for one partition, its
// epochs and the members' broker epochs taken from the image unless given.
func (c *cluster) alterPartitionArgs(t *testing.T, d *datadriven.TestData, a *transcript.Cmd) *AlterPartitionRequest {
	b, topic, p := int32(a.Int("broker", 0)), a.String("topic", ""), int32(a.Int("partition", 0))
	tp := c.im.Topic(topic)
	if tp == nil {
		t.Fatalf("%s: no topic %s", d.Pos, topic)
	}
	cur := tp.Partitions[p]
	rp := AlterPartitionPartition{Partition: p, LeaderEpoch: int32(a.Int("leader-epoch", int64(cur.LeaderEpoch))),
		PartitionEpoch: int32(a.Int("partition-epoch", int64(cur.PartitionEpoch))), LeaderRecoveryState: cur.LeaderRecoveryState}
	if a.Has("recovered") {
		rp.LeaderRecoveryState = metadata.Recovered
	}
	for _, id := range int32s(t, a.List("isr")) {
		epoch := int64(-1)
		if br := c.im.Brokers[id]; br != nil {
			epoch = br.Epoch
		}
		rp.NewISR = append(rp.NewISR, BrokerState{BrokerID: id, BrokerEpoch: epoch})
	}
	for i, v := range a.List("member-epochs") {
		n, _ := strconv.ParseInt(v, 10, 64)
		rp.NewISR[i].BrokerEpoch = n
	}
	r := &AlterPartitionRequest{BrokerID: b, BrokerEpoch: a.Int("sender-epoch", c.epochs[b]),
		Topics: []AlterPartitionTopic{{TopicID: tp.ID, Partitions: []AlterPartitionPartition{rp}}}}
	if a.Has("unknown-topic") {
		r.Topics[0].TopicID = metadata.TopicID{15: 0xEE}
	}
	return r
}

func alterConfigArgs(d *datadriven.TestData, a *transcript.Cmd) *IncrementalAlterConfigsRequest {
	rr := IncrementalAlterConfigsResource{Type: resourceType(a.String("type", "")), Name: a.String("name", "")}
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
	return &IncrementalAlterConfigsRequest{Resources: []IncrementalAlterConfigsResource{rr}, ValidateOnly: a.Has("validate-only")}
}

func electArgs(t *testing.T, a *transcript.Cmd) *ElectLeadersRequest {
	r := &ElectLeadersRequest{ElectionType: ElectionPreferred}
	if a.Has("unclean") {
		r.ElectionType = ElectionUnclean
	}
	if a.Has("topic") {
		r.Topics = []TopicPartitions{{Topic: a.String("topic", ""), Partitions: int32s(t, a.List("partitions"))}}
	}
	return r
}
