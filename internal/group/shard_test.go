package group

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/coord"
)

func TestTwoStepJoinAndInitialDelay(t *testing.T) {
	h := newHarness(t)
	id, w := h.newMember("g")
	if !h.pending(w) {
		t.Fatal("join answered before group.initial.rebalance.delay.ms")
	}
	h.advance(2999 * time.Millisecond)
	if !h.pending(w) {
		t.Fatal("join answered before the initial delay ended")
	}
	h.advance(time.Millisecond)
	r := h.joinReply(w)
	wantErr(t, "join", r.Err, nil)
	if r.Generation != 1 || r.Leader != id || r.MemberID != id || len(r.Members) != 1 || *r.Protocol != "range" || *r.ProtocolType != "consumer" {
		t.Fatalf("join result %+v", r)
	}
	if h.state("g") != CompletingRebalance {
		t.Fatalf("state %s", h.state("g"))
	}
	s := h.syncReply(h.sync("g", id, 1, Assignment{MemberID: id, Assignment: []byte("mine")}))
	wantErr(t, "sync", s.Err, nil)
	if string(s.Assignment) != "mine" || h.state("g") != Stable {
		t.Fatalf("sync %+v state %s", s, h.state("g"))
	}
	if len(h.records) != 1 {
		t.Fatalf("%d records, want the group metadata", len(h.records))
	}
	wantErr(t, "heartbeat", h.heartbeat("g", id, 1), nil)
}

func TestInitialDelayExtendsWhileMembersArrive(t *testing.T) {
	h := newHarness(t)
	_, w1 := h.newMember("g", withTimeouts(10*time.Second, 10*time.Second))
	h.advance(2 * time.Second)
	_, w2 := h.newMember("g", withTimeouts(10*time.Second, 10*time.Second))
	h.advance(time.Second) // t=3s: a member arrived, extend by min(3s, 7s)
	if !h.pending(w1) || !h.pending(w2) {
		t.Fatal("initial delay was not extended for the new member")
	}
	h.advance(3 * time.Second) // t=6s: nobody new, complete
	if h.pending(w1) || h.pending(w2) {
		t.Fatal("join not completed after the extended delay")
	}
	if r := h.joinReply(w1); r.Generation != 1 || len(r.Members) != 2 {
		t.Fatalf("leader's join %+v", r)
	}
}

func TestNewMemberTriggersRebalance(t *testing.T) {
	h := newHarness(t)
	ids := h.stableGroup("g", 2)
	id3, w3 := h.newMember("g")
	if h.state("g") != PreparingRebalance {
		t.Fatalf("state %s", h.state("g"))
	}
	wantErr(t, "heartbeat", h.heartbeat("g", ids[1], 1), kerr.RebalanceInProgress)
	wantErr(t, "sync", h.syncReply(h.sync("g", ids[1], 1)).Err, kerr.RebalanceInProgress)
	w0 := h.join("g", ids[0])
	if !h.pending(w0) || !h.pending(w3) {
		t.Fatal("join completed before every member rejoined")
	}
	w1 := h.join("g", ids[1])
	for _, w := range []coord.Waiter{w0, w1, w3} {
		if r := h.joinReply(w); r.Err != nil || r.Generation != 2 {
			t.Fatalf("join %+v", r)
		}
	}
	if r := h.joinReply(w0); len(r.Members) != 3 || r.Leader != ids[0] {
		t.Fatalf("leader got %d members, leader %s", len(r.Members), r.Leader)
	}
	if r := h.joinReply(w3); len(r.Members) != 0 || r.MemberID != id3 {
		t.Fatalf("follower got %+v", r)
	}
}

func TestFollowerRejoiningStableGroupGetsCurrentGeneration(t *testing.T) {
	h := newHarness(t)
	ids := h.stableGroup("g", 2)
	r := h.joinReply(h.join("g", ids[1]))
	if r.Err != nil || r.Generation != 1 || h.state("g") != Stable {
		t.Fatalf("rejoin %+v state %s", r, h.state("g"))
	}
	// The leader's join forces a rebalance.
	h.join("g", ids[0])
	if h.state("g") != PreparingRebalance {
		t.Fatalf("leader rejoin left the group %s", h.state("g"))
	}
}

func TestRebalanceTimeoutRemovesMembersThatDidNotRejoin(t *testing.T) {
	h := newHarness(t)
	ids := h.stableGroup("g", 2, withTimeouts(10*time.Second, 5*time.Second))
	w0 := h.join("g", ids[0], withTimeouts(10*time.Second, 5*time.Second))
	for range 4 { // the other member keeps heartbeating but never rejoins
		h.advance(time.Second)
		wantErr(t, "heartbeat", h.heartbeat("g", ids[1], 1), kerr.RebalanceInProgress)
	}
	if !h.pending(w0) {
		t.Fatal("join completed early")
	}
	h.advance(time.Second)
	r := h.joinReply(w0)
	if r.Err != nil || r.Generation != 2 || len(r.Members) != 1 {
		t.Fatalf("join %+v", r)
	}
	wantErr(t, "heartbeat of removed member", h.heartbeat("g", ids[1], 2), kerr.UnknownMemberID)
}

func TestSessionTimeoutRemovesSilentMember(t *testing.T) {
	h := newHarness(t)
	ids := h.stableGroup("g", 2, withTimeouts(6*time.Second, 30*time.Second))
	for range 5 {
		h.advance(time.Second)
		wantErr(t, "heartbeat", h.heartbeat("g", ids[0], 1), nil)
	}
	h.advance(time.Second) // ids[1] silent for 6s
	if _, ok := h.s.groups["g"].members[ids[1]]; ok {
		t.Fatal("silent member still in the group after its session timeout")
	}
	wantErr(t, "heartbeat", h.heartbeat("g", ids[0], 1), kerr.RebalanceInProgress)
	r := h.joinReply(h.join("g", ids[0], withTimeouts(6*time.Second, 30*time.Second)))
	if r.Err != nil || r.Generation != 2 || len(r.Members) != 1 {
		t.Fatalf("rejoin %+v", r)
	}
}

func TestPendingSyncTimeout(t *testing.T) {
	h := newHarness(t)
	a, wa := h.newMember("g", withTimeouts(20*time.Second, 5*time.Second))
	b, wb := h.newMember("g", withTimeouts(20*time.Second, 5*time.Second))
	h.advance(5 * time.Second) // 3s initial delay, extended by the remaining 2s
	gen := h.joinReply(wa).Generation
	h.joinReply(wb)
	leader := h.joinReply(wa).Leader
	follower := b
	if leader == b {
		follower = a
	}
	wantErr(t, "leader sync", h.syncReply(h.sync("g", leader, gen)).Err, nil)
	h.advance(5 * time.Second)
	if _, ok := h.s.groups["g"].members[follower]; ok {
		t.Fatal("member that never synced is still in the group")
	}
	if h.state("g") != PreparingRebalance {
		t.Fatalf("state %s", h.state("g"))
	}
}

func TestStaticMemberRejoinsWithoutRebalance(t *testing.T) {
	h := newHarness(t)
	// Static members skip MEMBER_ID_REQUIRED: the first join parks.
	sw := h.join("g", "", withInstance("i1"))
	if !h.pending(sw) {
		t.Fatalf("static first join answered: %+v", h.joinReply(sw))
	}
	dyn, dw := h.newMember("g")
	h.advanceUntilAnswered(sw)
	sr := h.joinReply(sw)
	wantErr(t, "static join", sr.Err, nil)
	static := sr.MemberID
	if sr.Leader != static {
		t.Fatalf("leader %s, want the static member %s", sr.Leader, static)
	}
	h.joinReply(dw)
	fs := h.sync("g", dyn, 1)
	h.sync("g", static, 1, Assignment{MemberID: static, Assignment: []byte("s")}, Assignment{MemberID: dyn, Assignment: []byte("d")})
	wantErr(t, "follower sync", h.syncReply(fs).Err, nil)
	records := len(h.records)

	// The static member restarts: same instance id, no member id.
	r := h.joinReply(h.join("g", "", withInstance("i1")))
	wantErr(t, "static rejoin", r.Err, nil)
	if r.MemberID == static || r.Generation != 1 || !r.SkipAssignment || len(r.Members) != 2 {
		t.Fatalf("static rejoin %+v", r)
	}
	if h.state("g") != Stable {
		t.Fatalf("static rejoin moved the group to %s", h.state("g"))
	}
	if len(h.records) != records+1 {
		t.Fatal("the new member id was not persisted")
	}
	s := h.syncReply(h.sync("g", r.MemberID, 1))
	if s.Err != nil || string(s.Assignment) != "s" {
		t.Fatalf("static member's sync %+v", s)
	}
	// The old incarnation is fenced.
	wantErr(t, "old heartbeat", h.s.Heartbeat(h.now, &HeartbeatRequest{Group: "g", MemberID: static, Generation: 1, InstanceID: strPtr("i1")}), kerr.FencedInstanceID)
	wantErr(t, "follower heartbeat", h.heartbeat("g", dyn, 1), nil)

	// Before v9, the leader is not told to skip assignment, nor given members.
	r = h.joinReply(h.join("g", "", withInstance("i1"), v8()))
	if r.Err != nil || r.SkipAssignment || len(r.Members) != 0 || h.state("g") != Stable {
		t.Fatalf("v8 static rejoin %+v", r)
	}
}

func TestStaticMemberLeaveByInstanceID(t *testing.T) {
	h := newHarness(t)
	sw := h.join("g", "", withInstance("i1"))
	h.advance(3 * time.Second)
	id := h.joinReply(sw).MemberID
	h.sync("g", id, 1, Assignment{MemberID: id})
	res := h.leave("g", LeaveMember{InstanceID: strPtr("i1")}, LeaveMember{InstanceID: strPtr("nope")})
	wantErr(t, "leave", res.Members[0], nil)
	wantErr(t, "leave unknown instance", res.Members[1], kerr.UnknownMemberID)
	if h.state("g") != Empty || h.generation("g") != 2 {
		t.Fatalf("state %s generation %d", h.state("g"), h.generation("g"))
	}
}

func TestJoinErrors(t *testing.T) {
	h := newHarness(t)
	r := h.joinReply(h.join("g", "", withTimeouts(time.Second, time.Second)))
	wantErr(t, "short session", r.Err, kerr.InvalidSessionTimeout)
	r = h.joinReply(h.join("g", "someone"))
	wantErr(t, "unknown member of unknown group", r.Err, kerr.UnknownMemberID)
	r = h.joinReply(h.join("", ""))
	wantErr(t, "empty group", r.Err, kerr.InvalidGroupID)

	ids := h.stableGroup("g", 2)
	r = h.joinReply(h.join("g", "", withProtocols(Protocol{Name: "roundrobin"})))
	wantErr(t, "inconsistent protocol", r.Err, kerr.InconsistentGroupProtocol)
	r = h.joinReply(h.join("g", "ghost"))
	wantErr(t, "unknown member", r.Err, kerr.UnknownMemberID)
	h.cfg.MaxSize = 2
	r = h.joinReply(h.join("g", ""))
	wantErr(t, "third member", r.Err, kerr.GroupMaxSizeReached)
	wantErr(t, "old generation", h.heartbeat("g", ids[0], 0), kerr.IllegalGeneration)
	wantErr(t, "sync old generation", h.syncReply(h.sync("g", ids[0], 7)).Err, kerr.IllegalGeneration)
	wantErr(t, "heartbeat unknown group", h.heartbeat("nope", "x", 1), kerr.UnknownMemberID)
	pt := "other"
	var out coord.Output
	w := h.waiter()
	h.s.Sync(h.now, w, &SyncRequest{Group: "g", MemberID: ids[0], Generation: 1, ProtocolType: &pt}, &out)
	h.absorb(&out)
	wantErr(t, "sync protocol type", h.syncReply(w).Err, kerr.InconsistentGroupProtocol)
}

func TestLeaveRebalancesAndEmptiesGroup(t *testing.T) {
	h := newHarness(t)
	ids := h.stableGroup("g", 2)
	res := h.leave("g", LeaveMember{MemberID: ids[1]}, LeaveMember{MemberID: "ghost"})
	wantErr(t, "leave", res.Members[0], nil)
	wantErr(t, "leave ghost", res.Members[1], kerr.UnknownMemberID)
	if h.state("g") != PreparingRebalance {
		t.Fatalf("state %s", h.state("g"))
	}
	r := h.joinReply(h.join("g", ids[0]))
	if r.Generation != 2 || len(r.Members) != 1 {
		t.Fatalf("rejoin %+v", r)
	}
	h.leave("g", LeaveMember{MemberID: ids[0]})
	if h.state("g") != Empty || h.generation("g") != 3 {
		t.Fatalf("state %s generation %d", h.state("g"), h.generation("g"))
	}
	wantErr(t, "leave unknown group", h.leave("nope", LeaveMember{MemberID: "x"}).Err, kerr.UnknownMemberID)
}

func TestLeavingMemberParkedJoinIsAnswered(t *testing.T) {
	h := newHarness(t)
	ids := h.stableGroup("g", 2)
	// New metadata forces a rebalance; the join parks until ids[0] rejoins.
	w := h.join("g", ids[1], withProtocols(Protocol{Name: "range", Metadata: consumerMetadata("t", "u")}))
	if !h.pending(w) {
		t.Fatal("join not parked")
	}
	h.leave("g", LeaveMember{MemberID: ids[1]})
	wantErr(t, "parked join of a leaving member", h.joinReply(w).Err, kerr.UnknownMemberID)
}

func commitReq(group string, gen int32, member string, offsets map[string]int64) *CommitRequest {
	req := &CommitRequest{Group: group, Generation: gen, MemberID: member, RetentionMs: -1}
	for topic, off := range offsets {
		req.Topics = append(req.Topics, CommitTopic{Topic: topic, Partitions: []CommitPartition{{Partition: 0, Offset: off, LeaderEpoch: 3}}})
	}
	return req
}

func firstErr(r *CommitResult) error {
	for _, ts := range r.Errs {
		for _, e := range ts {
			if e != nil {
				return e
			}
		}
	}
	return nil
}

func TestCommitAndFetch(t *testing.T) {
	h := newHarness(t)
	// A simple consumer (no group management) commits with generation -1.
	wantErr(t, "simple commit", firstErr(h.commit(commitReq("simple", -1, "", map[string]int64{"t": 42}))), nil)
	f := h.s.Fetch(&FetchRequest{Group: "simple", Topics: []TopicPartitions{{Topic: "t", Partitions: []int32{0, 1}}}})
	if p := f.Topics[0].Partitions; p[0].Offset != 42 || p[0].LeaderEpoch != 3 || p[1].Offset != -1 {
		t.Fatalf("fetch %+v", p)
	}
	if all := h.s.Fetch(&FetchRequest{Group: "simple"}); len(all.Topics) != 1 || all.Topics[0].Partitions[0].Offset != 42 {
		t.Fatalf("fetch all %+v", all)
	}
	if none := h.s.Fetch(&FetchRequest{Group: "nope", Topics: []TopicPartitions{{Topic: "t", Partitions: []int32{0}}}}); none.Err != nil || none.Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("fetch of unknown group %+v", none)
	}

	ids := h.stableGroup("g", 2)
	wantErr(t, "member commit", firstErr(h.commit(commitReq("g", 1, ids[1], map[string]int64{"t": 7}))), nil)
	wantErr(t, "old generation", firstErr(h.commit(commitReq("g", 0, ids[1], map[string]int64{"t": 8}))), kerr.IllegalGeneration)
	wantErr(t, "unknown member", firstErr(h.commit(commitReq("g", 1, "ghost", map[string]int64{"t": 8}))), kerr.UnknownMemberID)
	wantErr(t, "outsider on a live group", firstErr(h.commit(commitReq("g", -1, "", map[string]int64{"t": 8}))), kerr.UnknownMemberID)
	wantErr(t, "unknown group", firstErr(h.commit(commitReq("zzz", 3, "m", map[string]int64{"t": 8}))), kerr.IllegalGeneration)
	req := commitReq("zzz", 3, "m", map[string]int64{"t": 8})
	req.ReportUnknownGroup = true
	wantErr(t, "unknown group v9", firstErr(h.commit(req)), kerr.GroupIDNotFound)

	big := commitReq("g", 1, ids[0], nil)
	md := string(bytes.Repeat([]byte("x"), 5000))
	big.Topics = []CommitTopic{{Topic: "t", Partitions: []CommitPartition{{Partition: 1, Offset: 1, Metadata: &md}}}}
	wantErr(t, "metadata too large", firstErr(h.commit(big)), kerr.OffsetMetadataTooLarge)

	// During CompletingRebalance commits are refused.
	h.newMember("g")
	w0, w1 := h.join("g", ids[0]), h.join("g", ids[1])
	_, _ = w0, w1
	if h.state("g") != CompletingRebalance {
		t.Fatalf("state %s", h.state("g"))
	}
	wantErr(t, "commit while completing", firstErr(h.commit(commitReq("g", 2, ids[1], map[string]int64{"t": 9}))), kerr.RebalanceInProgress)
}

func TestOffsetExpirationKIP211(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.OffsetsRetentionMs = time.Hour.Milliseconds()
		c.RetentionCheckMs = time.Minute.Milliseconds()
	})
	ids := h.stableGroup("g", 1, withTimeouts(20*time.Minute, time.Minute)) // subscribed to "t"
	h.commit(commitReq("g", 1, ids[0], map[string]int64{"t": 5, "old": 6}))
	h.commit(commitReq("simple", -1, "", map[string]int64{"t": 1}))
	for range 90 { // 90 minutes, heartbeating
		h.advance(time.Minute)
		wantErr(t, "heartbeat", h.heartbeat("g", ids[0], 1), nil)
	}
	g := h.s.groups["g"]
	if g.offsets["old"] != nil {
		t.Fatal("offset of a topic the stable group does not subscribe to did not expire")
	}
	if g.offsets["t"] == nil {
		t.Fatal("offset of a subscribed topic expired while the group is stable")
	}
	if h.s.groups["simple"] != nil {
		t.Fatal("simple group with only expired offsets was not deleted")
	}
	h.leave("g", LeaveMember{MemberID: ids[0]})
	emptyAt := h.now
	h.advance(59 * time.Minute)
	if h.s.groups["g"] == nil || h.s.groups["g"].offsets["t"] == nil {
		t.Fatal("offsets expired before offsets.retention.minutes after the group became empty")
	}
	h.advance(2 * time.Minute)
	if h.s.groups["g"] != nil {
		t.Fatalf("empty group still present %v after it became empty", h.now.Sub(emptyAt))
	}
	last := h.records[len(h.records)-1]
	k, _ := decodeKey(last.Key)
	if k.kind != kindGroup || k.group != "g" || last.Value != nil {
		t.Fatalf("last record %+v is not the group's tombstone", k)
	}
}

func TestOffsetCommitRetentionTimeV2(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RetentionCheckMs = time.Minute.Milliseconds() })
	req := commitReq("s", -1, "", map[string]int64{"t": 1})
	req.RetentionMs = (10 * time.Minute).Milliseconds()
	h.commit(req)
	h.advance(11 * time.Minute)
	if h.s.groups["s"] != nil {
		t.Fatal("offset with an expire timestamp did not expire")
	}
}

func TestDeleteGroupsAndOffsets(t *testing.T) {
	h := newHarness(t)
	ids := h.stableGroup("g", 1)
	h.commit(commitReq("g", 1, ids[0], map[string]int64{"t": 5, "u": 6}))
	var out coord.Output
	errs := h.s.Delete([]string{"g", "nope"}, &out)
	wantErr(t, "delete live group", errs[0], kerr.NonEmptyGroup)
	wantErr(t, "delete unknown group", errs[1], kerr.GroupIDNotFound)

	del := h.s.DeleteOffsets(&FetchRequest{Group: "g", Topics: []TopicPartitions{{Topic: "t", Partitions: []int32{0}}, {Topic: "u", Partitions: []int32{0}}}}, &out)
	wantErr(t, "offset delete", del.Err, nil)
	wantErr(t, "subscribed topic", del.Errs[0][0], kerr.GroupSubscribedToTopic)
	wantErr(t, "unsubscribed topic", del.Errs[1][0], nil)
	if h.s.groups["g"].offsets["u"] != nil || len(out.Records) != 1 || out.Records[0].Value != nil {
		t.Fatalf("offset not tombstoned: %d records", len(out.Records))
	}
	if r := h.s.DeleteOffsets(&FetchRequest{Group: "nope", Topics: []TopicPartitions{}}, &out); !errors.Is(r.Err, kerr.GroupIDNotFound) {
		t.Fatalf("offset delete of unknown group: %v", r.Err)
	}

	h.leave("g", LeaveMember{MemberID: ids[0]})
	out = coord.Output{}
	errs = h.s.Delete([]string{"g"}, &out)
	wantErr(t, "delete empty group", errs[0], nil)
	if len(out.Records) != 2 || out.Records[0].Value != nil || out.Records[1].Value != nil {
		t.Fatalf("want an offset tombstone and a group tombstone, got %d records", len(out.Records))
	}
	if d := h.s.Describe("g"); !errors.Is(d.Err, kerr.GroupIDNotFound) {
		t.Fatalf("describe deleted group: %v", d.Err)
	}
}

func TestListAndDescribe(t *testing.T) {
	h := newHarness(t)
	ids := h.stableGroup("g", 2)
	h.commit(commitReq("simple", -1, "", map[string]int64{"t": 1}))
	all := h.s.List(ListFilter{})
	if len(all) != 2 || all[0].Group != "g" || all[0].State != "Stable" || all[1].ProtocolType != "" || all[1].Type != "classic" {
		t.Fatalf("list %+v", all)
	}
	if l := h.s.List(ListFilter{States: []string{"empty"}}); len(l) != 1 || l[0].Group != "simple" {
		t.Fatalf("state filter %+v", l)
	}
	if l := h.s.List(ListFilter{Types: []string{"consumer"}}); len(l) != 0 {
		t.Fatalf("type filter %+v", l)
	}
	d := h.s.Describe("g")
	if d.Err != nil || d.State != "Stable" || d.Protocol != "range" || len(d.Members) != 2 ||
		d.Members[0].MemberID != ids[0] || string(d.Members[0].Assignment) != "a0" || d.Members[0].ClientHost != "/127.0.0.1" {
		t.Fatalf("describe %+v", d)
	}
}

func TestReplayRebuildsGroupsAndOffsets(t *testing.T) {
	h := newHarness(t)
	ids := h.stableGroup("g", 2)
	h.commit(commitReq("g", 1, ids[0], map[string]int64{"t": 11}))
	h.commit(commitReq("simple", -1, "", map[string]int64{"x": 3}))
	h.stableGroup("gone", 1)
	h.leave("gone", LeaveMember{MemberID: h.s.groups["gone"].leader})
	var out coord.Output
	h.s.Delete([]string{"gone"}, &out)
	h.absorb(&out)

	r := newHarness(t)
	for i, rec := range h.records {
		if err := r.s.Replay(int64(i), rec); err != nil {
			t.Fatal(err)
		}
	}
	r.now = h.now
	r.s.Loaded(r.now)
	if r.s.groups["gone"] != nil {
		t.Fatal("deleted group came back")
	}
	g := r.s.groups["g"]
	if g.state != Stable || g.generation != 1 || g.protocol != "range" || g.leader != ids[0] || len(g.members) != 2 {
		t.Fatalf("replayed group: state %s gen %d protocol %s leader %s members %d", g.state, g.generation, g.protocol, g.leader, len(g.members))
	}
	if string(g.members[ids[1]].assignment) != "a1" || g.offsets["t"][0].Offset != 11 || r.s.groups["simple"].offsets["x"][0].Offset != 3 {
		t.Fatal("replayed assignments or offsets differ")
	}
	// The loaded members must heartbeat: one does, the other is expired.
	r.advance(5 * time.Second)
	wantErr(t, "heartbeat after load", r.heartbeat("g", ids[0], 1), nil)
	r.advance(6 * time.Second)
	if _, ok := r.s.groups["g"].members[ids[1]]; ok {
		t.Fatal("loaded member that never heartbeats was not expired")
	}
}
