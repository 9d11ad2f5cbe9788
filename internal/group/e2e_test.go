package group_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
)

// brokerProps make rebalances fast: no initial delay, short sessions allowed.
func brokerProps() map[string]string {
	return map[string]string{
		"offsets.topic.replication.factor": "1",
		"offsets.topic.num.partitions":     "5",
		"group.initial.rebalance.delay.ms": "0",
		"group.min.session.timeout.ms":     "100",
	}
}

// member is a kgo group consumer that tracks its assigned partitions.
type member struct {
	name string
	cl   *kgo.Client
	mu   sync.Mutex
	own  map[int32]bool
	seen map[int32]int64 // partition → next offset consumed
	stop chan struct{}
	done chan struct{}
}

func newMember(t *testing.T, b *brokertest.Broker, name, grp, topic string, opts ...kgo.Opt) *member {
	t.Helper()
	m := &member{name: name, own: map[int32]bool{}, seen: map[int32]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	base := []kgo.Opt{
		kgo.SeedBrokers(b.Addr().String()),
		kgo.ConsumerGroup(grp), kgo.ConsumeTopics(topic),
		kgo.ClientID(name),
		kgo.SessionTimeout(1500 * time.Millisecond), kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.RebalanceTimeout(5 * time.Second),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range a[topic] {
				m.own[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range r[topic] {
				delete(m.own, p)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range r[topic] {
				delete(m.own, p)
			}
		}),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	go func() {
		defer close(m.done)
		for {
			select {
			case <-m.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			fs := cl.PollFetches(ctx)
			cancel()
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				m.mu.Lock()
				m.seen[r.Partition] = r.Offset + 1
				m.mu.Unlock()
			})
		}
	}()
	t.Cleanup(m.close)
	return m
}

func (m *member) owned() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int32
	for p := range m.own {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// close leaves the group (kgo sends LeaveGroup on Close).
func (m *member) close() {
	select {
	case <-m.stop:
		return
	default:
	}
	close(m.stop)
	<-m.done
	m.cl.Close()
}

// waitSplit polls until the members together own exactly partitions 0..n-1,
// each once, every member owning at least one.
func waitSplit(t *testing.T, n int, ms ...*member) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var desc string
	for time.Now().Before(deadline) {
		seen := map[int32]int{}
		ok := true
		var parts []string
		for _, m := range ms {
			o := m.owned()
			parts = append(parts, fmt.Sprintf("%s=%v", m.name, o))
			if len(o) == 0 {
				ok = false
			}
			for _, p := range o {
				seen[p]++
			}
		}
		desc = strings.Join(parts, " ")
		if ok && len(seen) == n {
			for _, c := range seen {
				if c != 1 {
					ok = false
				}
			}
			if ok {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("partitions never split across %d members: %s", len(ms), desc)
}

func TestThreeConsumersShareTwelvePartitions(t *testing.T) {
	b := brokertest.Start(t, brokerProps())
	brokertest.CreateTopic(t, b.AdminClient(), "orders", 12, nil)
	a := newMember(t, b, "a", "g1", "orders")
	bb := newMember(t, b, "b", "g1", "orders")
	c := newMember(t, b, "c", "g1", "orders")
	waitSplit(t, 12, a, bb, c)

	// One leaves: its partitions move to the other two.
	c.close()
	waitSplit(t, 12, a, bb)

	adm := b.AdminClient()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	described, err := adm.DescribeGroups(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	d := described["g1"]
	if d.Err != nil || d.State != "Stable" || len(d.Members) != 2 || d.ProtocolType != "consumer" {
		t.Fatalf("describe: err %v state %s members %d protocol type %q", d.Err, d.State, len(d.Members), d.ProtocolType)
	}
}

// TestMain lets the test binary double as a consumer process that the
// SIGKILL test kills.
func TestMain(m *testing.M) {
	if addr := os.Getenv("GREGOR_GROUP_CHILD_BROKER"); addr != "" {
		runChildConsumer(addr, os.Getenv("GREGOR_GROUP_CHILD_GROUP"), os.Getenv("GREGOR_GROUP_CHILD_TOPIC"))
		return
	}
	os.Exit(m.Run())
}

func runChildConsumer(addr, grp, topic string) {
	assigned := make(chan struct{}, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(grp), kgo.ConsumeTopics(topic), kgo.ClientID("child"),
		kgo.SessionTimeout(1500*time.Millisecond), kgo.HeartbeatInterval(100*time.Millisecond), kgo.RebalanceTimeout(5*time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			if len(a[topic]) > 0 {
				select {
				case assigned <- struct{}{}:
				default:
				}
			}
		}))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	go func() {
		<-assigned
		fmt.Println("assigned")
	}()
	for {
		cl.PollFetches(context.Background())
	}
}

func TestKilledConsumerLosesPartitionsAfterSessionTimeout(t *testing.T) {
	b := brokertest.Start(t, brokerProps())
	brokertest.CreateTopic(t, b.AdminClient(), "jobs", 12, nil)
	a := newMember(t, b, "a", "g2", "jobs")
	bb := newMember(t, b, "b", "g2", "jobs")
	waitSplit(t, 12, a, bb)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GREGOR_GROUP_CHILD_BROKER="+b.Addr().String(),
		"GREGOR_GROUP_CHILD_GROUP=g2", "GREGOR_GROUP_CHILD_TOPIC=jobs")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case l := <-line:
		if l != "assigned" {
			t.Fatalf("child said %q", l)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("child consumer never got partitions")
	}
	// The parent members now own less than everything.
	deadline := time.Now().Add(10 * time.Second)
	for len(a.owned())+len(bb.owned()) == 12 {
		if time.Now().After(deadline) {
			t.Fatal("the child's partitions never left the other members")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitSplit(t, 12, a, bb)
	if took := time.Since(killed); took < time.Second {
		t.Fatalf("partitions moved %v after SIGKILL, before the 1.5s session timeout could pass", took)
	}
}

func TestEagerRangeBalancer(t *testing.T) {
	b := brokertest.Start(t, brokerProps())
	brokertest.CreateTopic(t, b.AdminClient(), "eager", 12, nil)
	opt := kgo.Balancers(kgo.RangeBalancer())
	a := newMember(t, b, "a", "g3", "eager", opt)
	bb := newMember(t, b, "b", "g3", "eager", opt)
	c := newMember(t, b, "c", "g3", "eager", opt)
	waitSplit(t, 12, a, bb, c)
	bb.close()
	waitSplit(t, 12, a, c)
}

func TestStaticConsumerRejoinsWithoutRebalance(t *testing.T) {
	b := brokertest.Start(t, brokerProps())
	brokertest.CreateTopic(t, b.AdminClient(), "static", 12, nil)
	// The dynamic member leads: a leader (kgo) rejoins by itself when it
	// notices topics it did not assign, which is a rebalance by design.
	d := newMember(t, b, "d", "g4", "static")
	waitSplit(t, 12, d)
	s1 := newMember(t, b, "s", "g4", "static", kgo.InstanceID("instance-s"), kgo.SessionTimeout(10*time.Second))
	waitSplit(t, 12, s1, d)
	_, gen := d.cl.GroupMetadata()
	before := s1.owned()

	// A static member does not leave the group when it closes; its
	// replacement with the same group.instance.id takes its place.
	s1.close()
	s2 := newMember(t, b, "s2", "g4", "static", kgo.InstanceID("instance-s"), kgo.SessionTimeout(10*time.Second))
	waitSplit(t, 12, s2, d)
	if got := s2.owned(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("static member came back with %v, had %v", got, before)
	}
	if _, g := d.cl.GroupMetadata(); g != gen {
		t.Fatalf("generation moved from %d to %d: the static rejoin rebalanced", gen, g)
	}
}

func TestCommittedOffsetsSurviveRestart(t *testing.T) {
	props := brokerProps()
	b := brokertest.Start(t, props)
	brokertest.CreateTopic(t, b.AdminClient(), "durable", 3, nil)
	cl := b.Client(kgo.DefaultProduceTopic("durable"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 30 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 3), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A group consumer reads everything and commits.
	cons := b.Client(kgo.ConsumerGroup("g5"), kgo.ConsumeTopics("durable"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	n := 0
	for n < 30 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		n += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	cons.Close()
	// And an admin commit for a group outside group management.
	adm := b.AdminClient()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "durable", Partition: 1, At: 4, LeaderEpoch: -1, Metadata: "admin"})
	if err := adm.CommitAllOffsets(ctx, "g6", offs); err != nil {
		t.Fatal(err)
	}
	b.Stop()

	b2 := brokertest.StartIn(t, b.Dir, props)
	adm2 := b2.AdminClient()
	got, err := adm2.FetchOffsets(ctx, "g5")
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		o, ok := got.Lookup("durable", p)
		if !ok || o.Err != nil || o.At != 10 {
			t.Fatalf("g5 partition %d after restart: %+v", p, o)
		}
	}
	got, err = adm2.FetchOffsets(ctx, "g6")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := got.Lookup("durable", 1); o.At != 4 || o.Metadata != "admin" {
		t.Fatalf("g6 after restart: %+v", o)
	}
	// The group itself is back too, Empty after its member left.
	described, err := adm2.DescribeGroups(ctx, "g5")
	if err != nil {
		t.Fatal(err)
	}
	if d := described["g5"]; d.Err != nil || d.State != "Empty" || d.ProtocolType != "consumer" {
		t.Fatalf("g5 after restart: %+v", d)
	}
}

func TestLag(t *testing.T) {
	b := brokertest.Start(t, brokerProps())
	brokertest.CreateTopic(t, b.AdminClient(), "lagging", 2, nil)
	cl := b.Client(kgo.DefaultProduceTopic("lagging"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := b.AdminClient()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "lagging", Partition: 0, At: 3, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "lagging", Partition: 1, At: 10, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "g7", offs); err != nil {
		t.Fatal(err)
	}
	lags, err := adm.Lag(ctx, "g7")
	if err != nil {
		t.Fatal(err)
	}
	l := lags["g7"]
	if l.Error() != nil {
		t.Fatal(l.Error())
	}
	for p, want := range map[int32]int64{0: 7, 1: 0} {
		ml, ok := l.Lag.Lookup("lagging", p)
		if !ok || ml.Err != nil || ml.Lag != want || ml.End.Offset != 10 || ml.Start.Offset != 0 {
			t.Fatalf("partition %d lag %+v, want %d", p, ml, want)
		}
	}
	if l.State != "Empty" {
		t.Fatalf("state %s", l.State)
	}
}

func TestDeleteGroupsAndOffsetDelete(t *testing.T) {
	b := brokertest.Start(t, brokerProps())
	brokertest.CreateTopic(t, b.AdminClient(), "del", 4, nil)
	brokertest.CreateTopic(t, b.AdminClient(), "other", 1, nil)
	m := newMember(t, b, "m", "g8", "del")
	waitSplit(t, 4, m)
	adm := b.AdminClient()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "del", Partition: 0, At: 1, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "other", Partition: 0, At: 2, LeaderEpoch: -1})
	// A live group takes commits only from its members: the admin commit is
	// refused.
	if resp, err := adm.CommitOffsets(ctx, "g8", offs); err == nil && resp.Error() == nil {
		t.Fatal("admin commit to a live group was accepted")
	}
	gen := func() (string, int32) { return m.cl.GroupMetadata() }
	memberID, g := gen()
	topics, err := adm.ListTopics(ctx, "del", "other")
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = "g8", g, memberID
	for _, o := range []struct {
		topic string
		at    int64
	}{{"del", 1}, {"other", 2}} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = o.topic, topics[o.topic].ID
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = o.at
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		if rt.Partitions[0].ErrorCode != 0 {
			t.Fatalf("member commit %s: %v", rt.Topic, kerr.ErrorForCode(rt.Partitions[0].ErrorCode))
		}
	}

	// OffsetDelete: refused for the subscribed topic, done for the other.
	deleted, err := adm.DeleteOffsets(ctx, "g8", kadm.TopicsSet{"del": {0: {}}, "other": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if e := deleted["del"][0]; !errors.Is(e, kerr.GroupSubscribedToTopic) {
		t.Fatalf("delete subscribed offset: %v", e)
	}
	if e := deleted["other"][0]; e != nil {
		t.Fatalf("delete unsubscribed offset: %v", e)
	}
	fetched, err := adm.FetchOffsets(ctx, "g8")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fetched.Lookup("other", 0); ok {
		t.Fatal("deleted offset still fetched")
	}

	// DeleteGroups: refused while the group has members.
	dr, err := adm.DeleteGroups(ctx, "g8", "never-existed")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(dr["g8"].Err, kerr.NonEmptyGroup) || !errors.Is(dr["never-existed"].Err, kerr.GroupIDNotFound) {
		t.Fatalf("delete groups: %v / %v", dr["g8"].Err, dr["never-existed"].Err)
	}
	m.close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		dr, err = adm.DeleteGroups(ctx, "g8")
		if err != nil {
			t.Fatal(err)
		}
		if dr["g8"].Err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("delete empty group: %v", dr["g8"].Err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed["g8"]; ok {
		t.Fatal("deleted group still listed")
	}
	described, err := adm.DescribeGroups(ctx, "g8")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(described["g8"].Err, kerr.GroupIDNotFound) {
		t.Fatalf("describe deleted group: %v", described["g8"].Err)
	}
}

// BenchmarkOffsetCommit10Partitions measures a simple consumer committing
// the same 10 partitions over and over (each commit durable).
func BenchmarkOffsetCommit10Partitions(b *testing.B) {
	br := brokertest.Start(b, brokerProps())
	adm := br.AdminClient()
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 10, 1, nil, "bench"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		var offs kadm.Offsets
		for p := range int32(10) {
			offs.Add(kadm.Offset{Topic: "bench", Partition: p, At: int64(i), LeaderEpoch: -1})
		}
		if err := adm.CommitAllOffsets(ctx, "bench-group", offs); err != nil {
			b.Fatal(err)
		}
	}
}
