package admin

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gregor-broker/gregor/internal/cleaner"
)

// fakeSource is an in-memory Source for the console tests: a few topics,
// partitions with every marker the offsets bar draws, groups and records.
// It applies Records' rules (bounds, limits, context) itself, so the
// message browser is tested against the contract, not a canned answer.
type fakeSource struct {
	cluster    ClusterView
	topics     map[string]TopicView
	partitions map[string]PartitionView // "topic/partition"
	groups     map[string]GroupView
	records    map[string][]RecordView
	// slowTopic's Records wait for their context to end, like a scan of a
	// huge partition, then report "canceled" and close canceled (if set).
	slowTopic string
	canceled  chan struct{}
	ongoing   OngoingView
	autoAbort AutoAbortView
}

func tpKey(topic string, p int32) string { return fmt.Sprintf("%s/%d", topic, p) }

func (f *fakeSource) Cluster(ctx context.Context) (ClusterView, error) { return f.cluster, ctx.Err() }

func (f *fakeSource) Topics(ctx context.Context) ([]TopicSummary, error) {
	var out []TopicSummary
	for _, t := range f.topics {
		out = append(out, t.TopicSummary)
	}
	slices.SortFunc(out, func(a, b TopicSummary) int { return strings.Compare(a.Name, b.Name) })
	return out, ctx.Err()
}

func (f *fakeSource) Topic(ctx context.Context, name string) (TopicView, error) {
	t, ok := f.topics[name]
	if !ok {
		return TopicView{}, ErrNotFound
	}
	return t, ctx.Err()
}

func (f *fakeSource) Partition(ctx context.Context, topic string, p int32) (PartitionView, error) {
	pv, ok := f.partitions[tpKey(topic, p)]
	if !ok {
		return PartitionView{}, ErrNotFound
	}
	return pv, ctx.Err()
}

func (f *fakeSource) Cleaner(ctx context.Context, topic string, p int32) (*cleaner.PartitionStatus, error) {
	pv, err := f.Partition(ctx, topic, p)
	return pv.Cleaner, err
}

func (f *fakeSource) Groups(ctx context.Context) ([]GroupSummary, error) {
	var out []GroupSummary
	for _, g := range f.groups {
		out = append(out, g.GroupSummary)
	}
	slices.SortFunc(out, func(a, b GroupSummary) int { return strings.Compare(a.ID, b.ID) })
	return out, ctx.Err()
}

func (f *fakeSource) Group(ctx context.Context, id string) (GroupView, error) {
	g, ok := f.groups[id]
	if !ok {
		return GroupView{}, ErrNotFound
	}
	return g, ctx.Err()
}

// Transactions lists the partitions whose PartitionView holds
// transactions, as the broker's source derives both from the same logs.
func (f *fakeSource) Transactions(ctx context.Context) ([]HeldPartition, error) {
	out := []HeldPartition{}
	for _, pv := range f.partitions {
		if len(pv.Transactions) > 0 {
			out = append(out, HeldPartition{Topic: pv.Topic, Partition: pv.Partition, LastStableOffset: pv.LSO,
				HighWatermark: pv.HW, Transactions: pv.Transactions})
		}
	}
	slices.SortFunc(out, func(a, b HeldPartition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out, ctx.Err()
}

func (f *fakeSource) OngoingTransactions(ctx context.Context) (OngoingView, error) {
	return f.ongoing, ctx.Err()
}

func (f *fakeSource) AutoAbort(ctx context.Context) (AutoAbortView, error) {
	return f.autoAbort, ctx.Err()
}

func (f *fakeSource) Records(ctx context.Context, q RecordQuery) (RecordPage, error) {
	pv, ok := f.partitions[tpKey(q.Topic, q.Partition)]
	if !ok {
		return RecordPage{}, ErrNotFound
	}
	bound := pv.HW
	if q.ReadCommitted {
		bound = pv.LSO
	}
	page := RecordPage{Topic: q.Topic, Partition: q.Partition, Bound: bound, Records: []RecordView{}}
	if q.Topic == f.slowTopic {
		<-ctx.Done()
		if f.canceled != nil {
			close(f.canceled)
		}
		page.StopReason = "canceled"
		return page, nil
	}
	limit := q.MaxRecords
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 1000)
	recs := f.records[tpKey(q.Topic, q.Partition)]
	start := max(q.Offset, pv.LogStart)
	if q.TimestampMs >= 0 {
		start = bound
		for _, r := range recs {
			if r.TimestampMs >= q.TimestampMs {
				start = r.Offset
				break
			}
		}
	}
	page.StartOffset, page.NextOffset, page.StopReason = start, start, "end"
	for _, r := range recs {
		if r.Offset < start {
			continue
		}
		if r.Offset >= bound {
			page.NextOffset = bound
			break
		}
		if len(page.Records) == limit {
			page.StopReason = "max_records"
			break
		}
		page.Records = append(page.Records, r)
		page.NextOffset = r.Offset + 1
		page.ScannedBytes += int64(len(r.Key) + len(r.Value) + 20)
	}
	if page.StopReason == "end" {
		page.NextOffset = max(page.NextOffset, bound)
	}
	return page, ctx.Err()
}

var fakeT0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// xssGroup is a group id a browser would run if the console did not escape.
const xssGroup = `audit<script>alert("g")</script>`

// newFakeSource builds the fixture the console tests check pages against.
// orders/0 has every marker at a different offset:
//
//	segments [0,100) [100,250) [250,300 active); log start 120 (DeleteRecords
//	moved it into the second segment); LSO 280, HW 290, LEO 300;
//	replicas: 1 leader LEO 300, 2 LEO 295, 3 LEO 290; retention deletes
//	[0,100) next; groups billing@250, xssGroup@150.
func newFakeSource() *fakeSource {
	f := &fakeSource{
		topics:     map[string]TopicView{},
		partitions: map[string]PartitionView{},
		groups:     map[string]GroupView{},
		records:    map[string][]RecordView{},
	}
	f.cluster = ClusterView{
		ClusterID: "q1Sh-9_ISia_zwGINzRvyQ", NodeID: 1, ControllerID: 1, Version: "gregor test",
		StartedAt: fakeT0.Add(-26 * time.Hour), AdminAddr: "127.0.0.1:9644",
		Listeners: map[string]string{"PLAINTEXT": "127.0.0.1:9092", "CONTROLLER": "127.0.0.1:9093"},
		Brokers: []BrokerView{
			{NodeID: 1, Host: "127.0.0.1", Port: 9092, State: BrokerUnfenced, Epoch: 12, Controller: true,
				Endpoints: map[string]string{"PLAINTEXT": "127.0.0.1:9092"}},
			{NodeID: 2, Host: "127.0.0.1", Port: 9192, State: BrokerControlledShutdown, Epoch: 30, Rack: "rack-b"},
			{NodeID: 3, Host: "127.0.0.1", Port: 9292, State: BrokerFenced, Epoch: 7},
		},
		Quorum: &QuorumView{LeaderID: 1, LeaderEpoch: 4, HighWatermark: 1500, Voters: []VoterView{
			{NodeID: 1, Endpoint: "127.0.0.1:9093", LogEndOffset: 1500, DirectoryID: "AAECAwQFBgcICQoLDA0ODw",
				LastFetch: &fakeT0, LastCaughtUp: &fakeT0},
			{NodeID: 2, Endpoint: "127.0.0.1:9193", LogEndOffset: 1500, LastFetch: &fakeT0, LastCaughtUp: &fakeT0},
			{NodeID: 3, Endpoint: "127.0.0.1:9293", LogEndOffset: 1200, Lag: 300},
		}, Local: LocalQuorumView{Role: "leader", Term: 4, CommitIndex: 1500, AppliedIndex: 1500, LastIndex: 1500}},
		LogDirs: []LogDirView{{Path: "/var/lib/gregor", TotalBytes: 100 << 30, FreeBytes: 37 << 30,
			LogBytes: 12345678, Partitions: 5}},
		Topics: 3, Partitions: 5, UnderReplicated: 1, Groups: 2, LogBytes: 12345678,
	}

	ordersCfg := []ConfigView{
		{Name: "cleanup.policy", Value: "delete", Source: "DEFAULT_CONFIG"},
		{Name: "retention.ms", Value: "604800000", Source: "DYNAMIC_TOPIC_CONFIG"},
		{Name: "segment.bytes", Value: "1048576", Source: "STATIC_BROKER_CONFIG"},
		{Name: "sasl.jaas.config", Value: "secret-do-not-show", Source: "STATIC_BROKER_CONFIG", Sensitive: true},
	}
	p0 := PartitionView{
		Topic: "orders", TopicID: "b3JkZXJzLXRvcGljLWlk", Partition: 0, Dir: "/var/lib/gregor/orders-0",
		PartitionSummary: PartitionSummary{Partition: 0, Leader: 1, LeaderEpoch: 7, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 3},
			Offsets:   Offsets{LogStart: 120, LSO: 280, HW: 290, LEO: 300, RecoveryPoint: 250},
			SizeBytes: 3_000_000, Segments: 3},
		ReplicaState: []ReplicaView{
			{BrokerID: 1, LogEndOffset: 300, InISR: true, Leader: true, LastCaughtUpMs: fakeT0.UnixMilli()},
			{BrokerID: 2, LogEndOffset: 295, InISR: false, LastCaughtUpMs: fakeT0.Add(-time.Minute).UnixMilli()},
			{BrokerID: 3, LogEndOffset: 290, InISR: true, LastCaughtUpMs: fakeT0.UnixMilli()},
		},
		SegmentList: []SegmentView{
			{BaseOffset: 0, EndOffset: 100, SizeBytes: 1_000_000, LargestTimestampMs: fakeT0.Add(-8 * 24 * time.Hour).UnixMilli(), DeleteNext: true},
			{BaseOffset: 100, EndOffset: 250, SizeBytes: 1_500_000, LargestTimestampMs: fakeT0.Add(-time.Hour).UnixMilli()},
			{BaseOffset: 250, EndOffset: 300, SizeBytes: 500_000, LargestTimestampMs: fakeT0.UnixMilli(), Active: true},
		},
		Retention: RetentionView{CleanupPolicy: "delete", RetentionMs: 604800000, RetentionBytes: -1, CheckIntervalMs: 300000,
			Next: &RetentionNext{FromOffset: 0, ToOffset: 100, Segments: 1, Bytes: 1_000_000, Reason: "retention.ms", DueMs: fakeT0.Add(-time.Hour).UnixMilli()},
			Why:  "segment 0 is older than retention.ms=604800000: deleted at the next check"},
		Groups: []GroupOffset{
			{Group: "billing", Topic: "orders", Partition: 0, Committed: 250, HW: 290, Lag: 40},
			{Group: xssGroup, Topic: "orders", Partition: 0, Committed: 150, HW: 290, Lag: 140},
		},
		Configs: ordersCfg[:3],
	}
	f.partitions[tpKey("orders", 0)] = p0
	orders := TopicView{TopicSummary: TopicSummary{Name: "orders", ID: "b3JkZXJzLXRvcGljLWlk", Partitions: 2, ReplicationFactor: 3,
		CleanupPolicy: "delete", SizeBytes: 3_000_000, Records: 170 + 1234567, UnderReplicated: 1,
		ConsumerLag: []GroupLag{{Group: "billing", Lag: 40 + 7}, {Group: xssGroup, Lag: 140}}},
		Configs: ordersCfg, PartitionDetail: []PartitionSummary{p0.PartitionSummary}}
	// orders/1: an empty log after retention deleted everything.
	p1 := PartitionView{Topic: "orders", Partition: 1, PartitionSummary: PartitionSummary{Partition: 1, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3},
		Offsets: Offsets{LogStart: 1234567, LSO: 1234567, HW: 1234567, LEO: 1234567, RecoveryPoint: 1234567}, Segments: 1},
		SegmentList:  []SegmentView{{BaseOffset: 1234567, EndOffset: 1234567, Active: true}},
		ReplicaState: []ReplicaView{{BrokerID: 1, LogEndOffset: 1234567, InISR: true, Leader: true}},
		Retention:    RetentionView{CleanupPolicy: "delete", RetentionMs: 604800000, RetentionBytes: -1, Why: "the log is empty"},
		Groups:       []GroupOffset{{Group: "billing", Topic: "orders", Partition: 1, Committed: 1234560, HW: 1234567, Lag: 7}},
	}
	f.partitions[tpKey("orders", 1)] = p1
	orders.PartitionDetail = append(orders.PartitionDetail, p1.PartitionSummary)
	f.topics["orders"] = orders

	// users: compacted, below its dirty-ratio threshold.
	st := &cleaner.PartitionStatus{Topic: "users", Partition: 0, CleanerEnabled: true, CleanupPolicy: "compact", Compacted: true,
		LogStartOffset: 0, LastStableOffset: 1000, HighWatermark: 1000, LogEndOffset: 1000,
		CleanerPoint: 500, FirstDirtyOffset: 500, FirstUncleanableOffset: 900, UncleanableReason: cleaner.ReasonActiveSegment,
		CleanBytes: 690_000, DirtyBytes: 310_000, UncleanableBytes: 100_000, DirtyRatio: 0.31, MinCleanableDirtyRatio: 0.5,
		DeleteRetentionMs: 86400000, NextEligibleMs: -1,
		Why: "dirty ratio 0.31 is below min.cleanable.dirty.ratio 0.50; more writes make it eligible"}
	users := PartitionView{Topic: "users", Partition: 0,
		PartitionSummary: PartitionSummary{Partition: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1},
			Offsets: Offsets{LogStart: 0, LSO: 1000, HW: 1000, LEO: 1000, RecoveryPoint: 1000}, SizeBytes: 1_100_000, Segments: 3,
			Compacted: true, DirtyRatio: 0.31},
		SegmentList: []SegmentView{
			{BaseOffset: 0, EndOffset: 500, SizeBytes: 690_000, Clean: true},
			{BaseOffset: 500, EndOffset: 900, SizeBytes: 310_000},
			{BaseOffset: 900, EndOffset: 1000, SizeBytes: 100_000, Active: true},
		},
		ReplicaState: []ReplicaView{{BrokerID: 1, LogEndOffset: 1000, InISR: true, Leader: true}},
		Cleaner:      st,
		Retention:    RetentionView{CleanupPolicy: "compact", RetentionMs: -1, RetentionBytes: -1, Why: "cleanup.policy=compact: retention does not delete"},
	}
	f.partitions[tpKey("users", 0)] = users
	f.topics["users"] = TopicView{TopicSummary: TopicSummary{Name: "users", Partitions: 1, ReplicationFactor: 1, CleanupPolicy: "compact",
		SizeBytes: 1_100_000, Records: 1000},
		Configs:         []ConfigView{{Name: "cleanup.policy", Value: "compact", Source: "DYNAMIC_TOPIC_CONFIG"}, {Name: "min.cleanable.dirty.ratio", Value: "0.5", Source: "DEFAULT_CONFIG"}},
		PartitionDetail: []PartitionSummary{users.PartitionSummary}}
	// A second compacted partition that is dirtier, to check the board's order.
	hot := users
	hot.Topic = "__consumer_offsets"
	hotSt := *st
	hotSt.Topic, hotSt.DirtyRatio, hotSt.Eligible, hotSt.Why = "__consumer_offsets", 0.87, true, "dirty ratio 0.87 ≥ min.cleanable.dirty.ratio 0.50"
	hot.Cleaner, hot.DirtyRatio = &hotSt, 0.87
	f.partitions[tpKey("__consumer_offsets", 0)] = hot
	f.topics["__consumer_offsets"] = TopicView{TopicSummary: TopicSummary{Name: "__consumer_offsets", Internal: true, Partitions: 1,
		ReplicationFactor: 1, CleanupPolicy: "compact"}, PartitionDetail: []PartitionSummary{hot.PartitionSummary}}

	f.groups["billing"] = GroupView{
		GroupSummary: GroupSummary{ID: "billing", State: "Stable", ProtocolType: "consumer", Protocol: "cooperative-sticky", Members: 1,
			Coordinator: 1, Topics: []string{"orders"}, Lag: 47},
		MemberList: []MemberView{{MemberID: "billing-1-4f1c", ClientID: "billing-svc", ClientHost: "/127.0.0.1",
			Assignment: []TopicPartitions{{Topic: "orders", Partitions: []int32{0, 1}}}}},
		Offsets: []GroupOffset{p0.Groups[0], p1.Groups[0]},
	}
	f.groups[xssGroup] = GroupView{GroupSummary: GroupSummary{ID: xssGroup, State: "Empty", ProtocolType: "consumer", Topics: []string{"orders"}, Lag: 140},
		Offsets: []GroupOffset{p0.Groups[1]}}

	// Records 120..299 of orders/0, one a second; a few odd ones.
	var recs []RecordView
	for o := int64(120); o < 300; o++ {
		r := RecordView{Offset: o, TimestampMs: fakeT0.Add(time.Duration(o-300) * time.Second).UnixMilli(), TimestampType: "CreateTime",
			LeaderEpoch: 7, ProducerID: -1, Compression: "none",
			Key: fmt.Sprintf("order-%d", o), KeyEncoding: "utf8", Value: fmt.Sprintf(`{"order":%d}`, o), ValueEncoding: "utf8"}
		switch o {
		case 130:
			r.Key = `<script>alert("k")</script>`
			r.Headers = []HeaderView{{Key: "trace<b>", Value: "abc", ValueEncoding: "utf8"}, {Key: "nil", ValueNull: true}}
		case 131:
			bin := []byte{0xff, 0x00, 0xfe, 0x01}
			r.Value, r.ValueEncoding = base64.StdEncoding.EncodeToString(bin), "base64"
		case 132:
			r.ValueNull, r.Value, r.ValueEncoding = true, "", ""
		case 133:
			r.KeyNull, r.Key, r.KeyEncoding = true, "", ""
			r.Value = strings.Repeat("v", 5000)
		}
		recs = append(recs, r)
	}
	f.records[tpKey("orders", 0)] = recs
	return f
}

// hugePartition is a partition of n segments with offsets near 2^62.
func hugePartition(n int) PartitionView {
	const base = int64(1) << 62
	pv := PartitionView{Topic: "huge", Partition: 0}
	step := int64(1) << 40
	for i := 0; i < n; i++ {
		pv.SegmentList = append(pv.SegmentList, SegmentView{BaseOffset: base + int64(i)*step, EndOffset: base + int64(i+1)*step,
			SizeBytes: 1 << 30, Active: i == n-1})
	}
	end := base + int64(n)*step
	pv.Offsets = Offsets{LogStart: base + 5, LSO: end - 3, HW: end - 2, LEO: end, RecoveryPoint: end - 2}
	pv.Segments = n
	pv.ReplicaState = []ReplicaView{{BrokerID: 1, LogEndOffset: end, Leader: true, InISR: true}, {BrokerID: 2, LogEndOffset: end - 1, InISR: true}}
	return pv
}

// runeLen is the number of characters in s.
func runeLen(s string) int { return utf8.RuneCountInString(s) }

func sortedByOffset(ms []barMarker) bool {
	return slices.IsSortedFunc(ms, func(a, b barMarker) int { return cmp.Compare(a.Offset, b.Offset) })
}
