package group

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/coord"
	"github.com/gregor-broker/gregor/internal/transcript"
)

// TestShardTranscript runs testdata/shard/*.txt: conversations between
// consumers and one __consumer_offsets shard. Each command is a request (or
// the passing of time) and prints what the shard does: the replies it sends,
// to this request or to others parked earlier (w1, w2, … name the requests
// that wait for an answer), and the records it writes. -rewrite regenerates
// the expected output.
//
//	config [group.initial.rebalance.delay.ms=D] [group.min.session.timeout.ms=D]
//	       [group.max.session.timeout.ms=D] [group.max.size=N]
//	       [offsets.retention.ms=D] [offsets.retention.check.interval.ms=D]
//	join group=G client=C [member=ID] [instance=I] [session=D] [rebalance=D]
//	     [protocols=(range, …)] [topics=(T, …)] [v3] [v8]
//	sync group=G member=ID gen=N [assign=(ID=BYTES, …)]
//	heartbeat group=G member=ID gen=N [instance=I]
//	commit group=G [member=ID gen=N] [retention=D] offsets=(T/P=OFFSET, …)
//	leave group=G members=(ID, …) | instances=(I, …)
//	advance by=D                 time passes; timers fire at their deadlines
//	describe group=G             state, generation, members and their sessions
//	offsets group=G              the committed offsets (OffsetFetch)
//	restart                      a new shard replays every record written so far
//
// Member ids are the client id (or group.instance.id) and a sequence number.
// Times are shown relative to the start of the transcript.
func TestShardTranscript(t *testing.T) {
	datadriven.Walk(t, "testdata/shard", func(t *testing.T, path string) {
		c := newConversation(t)
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			args := transcript.NewCmd(t, td)
			defer args.Done()
			return c.run(t, td, args)
		})
	})
}

// conversation drives a Shard as the coord runtime does, keeping the log of
// records it writes so a restart can replay them.
type conversation struct {
	s       *Shard
	cfg     Config
	start   time.Time
	now     time.Time
	ids     int
	waiters coord.Waiter
	what    map[coord.Waiter]string // "join", "sync"
	records []coord.Record
}

func newConversation(t *testing.T) *conversation {
	c := &conversation{cfg: DefaultConfig(), start: t0, now: t0, what: map[coord.Waiter]string{}}
	c.s = c.newShard()
	c.s.Loaded(c.now)
	return c
}

func (c *conversation) newShard() *Shard {
	s := NewShard(0, func() Config { return c.cfg }, func() string {
		c.ids++
		return strconv.Itoa(c.ids)
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return s
}

func (c *conversation) run(t *testing.T, td *datadriven.TestData, a *transcript.Cmd) string {
	var out coord.Output
	var b strings.Builder
	switch td.Cmd {
	case "config":
		c.configure(a)
	case "join":
		w := c.waiter("join")
		c.s.Join(c.now, w, c.joinRequest(a), &out)
		c.show(&b, &out, w)
	case "sync":
		w := c.waiter("sync")
		req := &SyncRequest{Group: a.String("group", ""), MemberID: a.String("member", ""), Generation: int32(a.Int("gen", -1))}
		for _, v := range a.List("assign") {
			id, bytes, _ := strings.Cut(v, "=")
			req.Assignments = append(req.Assignments, Assignment{MemberID: id, Assignment: []byte(bytes)})
		}
		c.s.Sync(c.now, w, req, &out)
		c.show(&b, &out, w)
	case "heartbeat":
		req := &HeartbeatRequest{Group: a.String("group", ""), MemberID: a.String("member", ""), Generation: int32(a.Int("gen", -1))}
		if a.Has("instance") {
			id := a.String("instance", "")
			req.InstanceID = &id
		}
		fmt.Fprintf(&b, "heartbeat: %s\n", errCode(c.s.Heartbeat(c.now, req)))
	case "commit":
		c.commit(t, td, a, &b)
	case "leave":
		c.leave(a, &b)
	case "advance":
		c.advance(a.Ms("by", 0), &b)
	case "describe":
		c.describe(a.String("group", ""), &b)
	case "offsets":
		c.offsets(a.String("group", ""), &b)
	case "restart":
		c.restart(t, &b)
	default:
		td.Fatalf(t, "unknown command %s", td.Cmd)
	}
	return b.String()
}

func (c *conversation) configure(a *transcript.Cmd) {
	c.cfg.InitialRebalanceDelayMs = int32(a.Ms("group.initial.rebalance.delay.ms", int64(c.cfg.InitialRebalanceDelayMs)))
	c.cfg.MinSessionTimeoutMs = int32(a.Ms("group.min.session.timeout.ms", int64(c.cfg.MinSessionTimeoutMs)))
	c.cfg.MaxSessionTimeoutMs = int32(a.Ms("group.max.session.timeout.ms", int64(c.cfg.MaxSessionTimeoutMs)))
	c.cfg.MaxSize = int32(a.Int("group.max.size", int64(c.cfg.MaxSize)))
	c.cfg.OffsetsRetentionMs = a.Ms("offsets.retention.ms", c.cfg.OffsetsRetentionMs)
	c.cfg.RetentionCheckMs = a.Ms("offsets.retention.check.interval.ms", c.cfg.RetentionCheckMs)
}

func (c *conversation) waiter(what string) coord.Waiter {
	c.waiters++
	c.what[c.waiters] = what
	return c.waiters
}

func (c *conversation) joinRequest(a *transcript.Cmd) *JoinRequest {
	req := &JoinRequest{Group: a.String("group", ""), MemberID: a.String("member", ""), ClientID: a.String("client", "client"),
		ClientHost: "/127.0.0.1", ProtocolType: ConsumerProtocolType,
		SessionTimeoutMs: int32(a.Ms("session", 10000)), RebalanceTimeoutMs: int32(a.Ms("rebalance", 30000)),
		RequireKnownMemberID: !a.Has("v3"), SupportsSkipAssignment: !a.Has("v8")}
	if a.Has("instance") {
		id := a.String("instance", "")
		req.InstanceID = &id
	}
	topics := []string{"t"}
	if a.Has("topics") {
		topics = a.List("topics")
	}
	names := []string{"range"}
	if a.Has("protocols") {
		names = a.List("protocols")
	}
	for _, n := range names {
		req.Protocols = append(req.Protocols, Protocol{Name: n, Metadata: consumerMetadata(topics...)})
	}
	return req
}

func (c *conversation) commit(t *testing.T, td *datadriven.TestData, a *transcript.Cmd, b *strings.Builder) {
	req := &CommitRequest{Group: a.String("group", ""), MemberID: a.String("member", ""), Generation: int32(a.Int("gen", -1)),
		RetentionMs: a.Ms("retention", -1)}
	for _, v := range a.List("offsets") {
		tp, off, ok1 := strings.Cut(v, "=")
		topic, p, ok2 := strings.Cut(tp, "/")
		pn, err1 := strconv.ParseInt(p, 10, 32)
		on, err2 := strconv.ParseInt(off, 10, 64)
		if !ok1 || !ok2 || err1 != nil || err2 != nil {
			td.Fatalf(t, "offset %q: want TOPIC/PARTITION=OFFSET", v)
		}
		i := slices.IndexFunc(req.Topics, func(ct CommitTopic) bool { return ct.Topic == topic })
		if i < 0 {
			req.Topics = append(req.Topics, CommitTopic{Topic: topic})
			i = len(req.Topics) - 1
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, CommitPartition{Partition: int32(pn), Offset: on, LeaderEpoch: -1})
	}
	var out coord.Output
	res := c.s.Commit(c.now, req, &out)
	for ti, ct := range req.Topics {
		for pi := range ct.Partitions {
			fmt.Fprintf(b, "commit %s/%d: %s\n", ct.Topic, ct.Partitions[pi].Partition, errCode(res.Errs[ti][pi]))
		}
	}
	c.show(b, &out, 0)
}

func (c *conversation) leave(a *transcript.Cmd, b *strings.Builder) {
	req := &LeaveRequest{Group: a.String("group", "")}
	for _, id := range a.List("members") {
		req.Members = append(req.Members, LeaveMember{MemberID: id})
	}
	for _, id := range a.List("instances") {
		req.Members = append(req.Members, LeaveMember{InstanceID: &id})
	}
	var out coord.Output
	res := c.s.Leave(c.now, req, &out)
	if res.Err != nil {
		fmt.Fprintf(b, "leave: %s\n", errCode(res.Err))
	}
	for i, lm := range req.Members {
		who := lm.MemberID
		if who == "" {
			who = "instance " + *lm.InstanceID
		}
		fmt.Fprintf(b, "leave %s: %s\n", who, errCode(res.Members[i]))
	}
	c.show(b, &out, 0)
}

// advance moves time forward by ms, firing every timer at its deadline.
func (c *conversation) advance(ms int64, b *strings.Builder) {
	c.now = advanceShard(c.s, c.now, c.now.Add(time.Duration(ms)*time.Millisecond), func(at time.Time, out *coord.Output) {
		if len(out.Replies)+len(out.Records) > 0 {
			fmt.Fprintf(b, "at %s:\n", c.at(at))
			c.show(b, out, 0)
		}
	})
	if b.Len() == 0 {
		fmt.Fprintf(b, "nothing happens; now %s\n", c.at(c.now))
	}
}

// at shows t as the time since the transcript started ("+3s").
func (c *conversation) at(t time.Time) string {
	if t.Equal(c.start) {
		return "+0s"
	}
	return strings.TrimPrefix(transcript.Rel(c.start.UnixMilli(), t.UnixMilli()), "now")
}

// show prints out's records, then its replies, in the order the coord
// runtime acts on them (replies go once the records are durable); w is the
// request's own waiter, shown as waiting when it was not answered.
func (c *conversation) show(b *strings.Builder, out *coord.Output, w coord.Waiter) {
	for _, r := range out.Records {
		fmt.Fprintf(b, "record %s\n", showRecord(r))
	}
	c.records = append(c.records, out.Records...)
	answered := false
	for _, r := range out.Replies {
		answered = answered || r.Waiter == w
		fmt.Fprintf(b, "w%d %s: %s\n", r.Waiter, c.what[r.Waiter], showReply(r))
	}
	if w != 0 && !answered {
		fmt.Fprintf(b, "w%d %s waits\n", w, c.what[w])
	}
}

func showReply(r coord.Reply) string {
	if r.Err != nil {
		return errCode(r.Err)
	}
	switch v := r.Value.(type) {
	case *JoinResult:
		if v.Err != nil {
			return fmt.Sprintf("%s; member %s", errCode(v.Err), v.MemberID)
		}
		s := fmt.Sprintf("generation %d, %s/%s, leader %s, member %s", v.Generation, deref(v.ProtocolType), deref(v.Protocol), v.Leader, v.MemberID)
		if v.SkipAssignment {
			s += ", skip assignment"
		}
		if len(v.Members) > 0 {
			var ids []string
			for _, m := range v.Members {
				ids = append(ids, m.MemberID)
			}
			s += ", members (" + strings.Join(ids, ", ") + ")"
		}
		return s
	case *SyncResult:
		if v.Err != nil {
			return errCode(v.Err)
		}
		return fmt.Sprintf("assignment %q", v.Assignment)
	}
	return fmt.Sprintf("%v", r.Value)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

// errCode shows a Kafka error as its code and the detail after it, "ok"
// for nil.
func errCode(err error) string {
	if err == nil {
		return "ok"
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return err.Error()
	}
	detail, _ := strings.CutPrefix(err.Error(), ke.Error())
	if detail = strings.TrimPrefix(detail, ": "); detail != "" {
		return ke.Message + " (" + detail + ")"
	}
	return ke.Message
}

// showRecord decodes a __consumer_offsets record.
func showRecord(r coord.Record) string {
	k, err := decodeKey(r.Key)
	if err != nil {
		return "undecodable: " + err.Error()
	}
	switch {
	case k.kind == kindOffset && r.Value == nil:
		return fmt.Sprintf("offset %s %s/%d: tombstone", k.group, k.topic, k.partition)
	case k.kind == kindOffset:
		o, err := decodeOffsetValue(r.Value)
		if err != nil {
			return "undecodable: " + err.Error()
		}
		s := fmt.Sprintf("offset %s %s/%d: %d", k.group, k.topic, k.partition, o.Offset)
		if o.ExpireTimestamp >= 0 {
			s += fmt.Sprintf(", expires %s", transcript.Rel(t0.UnixMilli(), o.ExpireTimestamp))
		}
		return s
	case k.kind == kindGroup && r.Value == nil:
		return fmt.Sprintf("group %s: tombstone", k.group)
	case k.kind == kindGroup:
		g, err := decodeGroupValue(r.Value)
		if err != nil {
			return "undecodable: " + err.Error()
		}
		s := fmt.Sprintf("group %s: generation %d, %s/%s, leader %s", k.group, g.generation, g.protocolType, orNone(g.protocol), orNone(g.leader))
		var ms []string
		for _, m := range g.members {
			ms = append(ms, fmt.Sprintf("%s=%q", m.id, m.assignment))
		}
		if len(ms) > 0 {
			s += ", members (" + strings.Join(ms, ", ") + ")"
		}
		return s
	}
	return fmt.Sprintf("key version %d", k.version)
}

func (c *conversation) describe(id string, b *strings.Builder) {
	g := c.s.groups[id]
	if g == nil {
		fmt.Fprintf(b, "%s: Dead\n", id)
		return
	}
	fmt.Fprintf(b, "%s: %s, generation %d", id, g.state, g.generation)
	if g.protocol != "" {
		fmt.Fprintf(b, ", %s/%s, leader %s", g.protocolType, g.protocol, g.leader)
	}
	b.WriteString("\n")
	for _, m := range g.sortedMembers() {
		fmt.Fprintf(b, "  %s", m.id)
		if m.static() {
			fmt.Fprintf(b, " (instance %s)", *m.instanceID)
		}
		switch {
		case m.awaitingJoin():
			b.WriteString(", in join")
		case m.awaitingSync():
			b.WriteString(", in sync")
		}
		if e, ok := c.s.timers.live[heartbeatKey(g, m.id)]; ok {
			fmt.Fprintf(b, ", session ends %s", c.at(time.UnixMilli(e.at)))
		}
		fmt.Fprintf(b, ", assignment %q\n", m.assignment)
	}
	for _, id := range sortedKeys(g.pending) {
		fmt.Fprintf(b, "  %s (pending: told MEMBER_ID_REQUIRED)\n", id)
	}
}

func (c *conversation) offsets(id string, b *strings.Builder) {
	res := c.s.Fetch(&FetchRequest{Group: id})
	if res.Err != nil {
		fmt.Fprintf(b, "offsets: %s\n", errCode(res.Err))
		return
	}
	n := 0
	for _, ft := range res.Topics {
		for _, p := range ft.Partitions {
			fmt.Fprintf(b, "%s/%d: %d\n", ft.Topic, p.Partition, p.Offset)
			n++
		}
	}
	if n == 0 {
		b.WriteString("no committed offsets\n")
	}
}

// restart replays every record written so far into a new shard, as a new
// coordinator loading the partition does; parked requests are lost.
func (c *conversation) restart(t *testing.T, b *strings.Builder) {
	c.s = c.newShard()
	for i, r := range c.records {
		if err := c.s.Replay(int64(i), r); err != nil {
			t.Fatal(err)
		}
	}
	c.s.Loaded(c.now)
	fmt.Fprintf(b, "replayed %d records; groups: %d\n", len(c.records), c.s.Groups())
}
