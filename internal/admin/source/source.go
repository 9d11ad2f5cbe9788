package source

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/cleaner"
	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/logmgr"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/replica"
	"github.com/gregor-broker/gregor/internal/replica/isr"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Metadata is the metadata image the source describes topics from: the
// one the broker has published.
type Metadata interface {
	Image() *metadata.Image
}

// Partitions finds the partitions this broker hosts (*replica.Manager).
type Partitions interface {
	Get(tp topicpart.TopicPartition) (*replica.Partition, bool)
	// ReplicaViews is every replica as the leader sees it (nil unless
	// this broker leads the partition with followers).
	ReplicaViews(p *replica.Partition) []isr.ReplicaView
}

// Logs is the broker's log dirs and the logs in them (*logmgr.Manager).
type Logs interface {
	All() map[topicpart.TopicPartition]*log.Log
	Dirs() []string
	DirOf(tp topicpart.TopicPartition) string
	FS() vfs.FS
	// Strays are the logs found in the dirs that the metadata does not know.
	Strays() []logmgr.StrayLog
	// DirStates is each dir's health: online, full or offline.
	DirStates() []logmgr.DirState
}

// CleanerStatus is the log cleaner's per-partition status (*cleaner.Cleaner).
type CleanerStatus interface {
	Status(tp topicpart.TopicPartition) (cleaner.PartitionStatus, bool)
}

// Groups is the group coordinator (*group.Coordinator); its calls run on the
// coordinator's owner goroutines and honour ctx.
type Groups interface {
	List(ctx context.Context, f group.ListFilter) ([]group.Listing, error)
	Fetch(ctx context.Context, req *group.FetchRequest) (*group.FetchResult, error)
	Describe(ctx context.Context, id string) (*group.Description, error)
}

// Deps are the broker parts a Source reads. Cleaner, Groups, Txns and
// Orphans may be nil.
type Deps struct {
	Metadata   Metadata
	Partitions Partitions
	Logs       Logs
	Cleaner    CleanerStatus
	Groups     Groups
	Txns       Txns
	Orphans    Orphans
	// Config is the current broker configuration; TopicConfig resolves a
	// topic's configuration against it.
	Config      func() *config.Broker
	TopicConfig func(topic string) config.Topic
	// Listener is the client listener's name: brokers are shown with
	// their endpoint of that name.
	Listener string
	// AdminAddr is the admin HTTP listener's address.
	AdminAddr func() string
	// MetadataDir is the log dir holding the cluster metadata.
	MetadataDir string
	// Quorum describes the metadata quorum (ClusterView.Quorum); nil: not
	// shown. It reports failures in QuorumView.Error.
	Quorum func(ctx context.Context) *admin.QuorumView
	Clock  clock.Clock
	// AckUnclean acknowledges unclean elections through this node's
	// controller (nil: this source cannot; the API answers not_controller).
	AckUnclean AckUnclean
}

// Source is the broker's admin.Source: the JSON API and the web console
// read the broker's in-process state through it, never over the Kafka
// protocol. Each partition is described from one log.Snapshot, so its
// offsets are ordered (log start ≤ LSO ≤ HW ≤ LEO), its segments sum to its
// size and its retention plan is the one the next retention pass applies.
// Group offsets go through the group coordinator's owner goroutines like
// OffsetFetch.
type Source struct {
	d         Deps
	startedAt time.Time
}

var _ admin.Source = (*Source)(nil)

// New returns a Source over d; its uptime counts from now.
func New(d Deps) *Source { return &Source{d: d, startedAt: d.Clock.Now()} }

// partitionConfigs are the topic configs that shape a partition's log,
// shown with each partition (internal.segment.bytes only when set).
var partitionConfigs = map[string]bool{
	"cleanup.policy": true, "internal.segment.bytes": true, "retention.ms": true, "retention.bytes": true, "segment.bytes": true, "segment.ms": true,
	"segment.jitter.ms": true, "segment.index.bytes": true, "min.cleanable.dirty.ratio": true, "min.compaction.lag.ms": true,
	"max.compaction.lag.ms": true, "delete.retention.ms": true, "file.delete.delay.ms": true, "message.timestamp.type": true,
	"min.insync.replicas": true, "max.message.bytes": true,
}

// hostedPartition is one partition of the metadata image and, when this
// broker hosts it, a snapshot of its log.
type hostedPartition struct {
	topic  *metadata.TopicImage
	index  int32
	part   *replica.Partition // nil: not hosted (offline)
	snap   log.Snapshot
	minISR int32
}

func (h *hostedPartition) tp() topicpart.TopicPartition {
	return topicpart.TopicPartition{Topic: h.topic.Name, Partition: h.index}
}

func (h *hostedPartition) size() int64 {
	var n int64
	for _, s := range h.snap.Segments {
		n += s.Size
	}
	return n
}

func (s *Source) topic(name string) (*metadata.TopicImage, error) {
	t := s.d.Metadata.Image().Topic(name)
	if t == nil {
		return nil, fmt.Errorf("topic %q: %w", name, admin.ErrNotFound)
	}
	return t, nil
}

// partition snapshots partition p of t; part is nil when it is not hosted.
func (s *Source) partition(t *metadata.TopicImage, p int32, minISR int32) hostedPartition {
	h := hostedPartition{topic: t, index: p, minISR: minISR}
	if part, ok := s.d.Partitions.Get(h.tp()); ok {
		if snap, err := part.Log.Snapshot(); err == nil { // ErrClosed: being deleted
			h.part, h.snap = part, snap
		}
	}
	return h
}

func (s *Source) partitions(t *metadata.TopicImage) []hostedPartition {
	minISR := s.d.TopicConfig(t.Name).MinInsyncReplicas
	out := make([]hostedPartition, len(t.Partitions))
	for p := range t.Partitions {
		out[p] = s.partition(t, int32(p), minISR)
	}
	return out
}

// Cluster describes this broker, its log dirs and partition health.
func (s *Source) Cluster(ctx context.Context) (admin.ClusterView, error) {
	cfg, im := s.d.Config(), s.d.Metadata.Image()
	node := cfg.NodeID()
	v := admin.ClusterView{
		ClusterID: im.ClusterID, NodeID: node, ControllerID: im.Controller.Node, Version: version(), StartedAt: s.startedAt,
		Listeners: map[string]string{},
		Brokers:   []admin.BrokerView{},
		Topics:    im.NumTopics(),
		AdminAddr: s.d.AdminAddr(),
	}
	for _, b := range im.SortedBrokers() {
		bv := brokerView(b, s.d.Listener, im.Controller.Node)
		v.Brokers = append(v.Brokers, bv)
		if b.ID == node && bv.Host != "" {
			v.Listeners[s.d.Listener] = net.JoinHostPort(bv.Host, strconv.Itoa(int(bv.Port)))
		}
	}
	if s.d.Quorum != nil {
		v.Quorum = s.d.Quorum(ctx)
	}
	for _, t := range im.SortedTopics() {
		minISR := s.d.TopicConfig(t.Name).MinInsyncReplicas
		for _, p := range t.Partitions {
			v.Partitions++
			if p.Leader < 0 {
				v.Offline++
				continue
			}
			if int32(len(p.ISR)) < min(minISR, int32(len(p.Replicas))) { // Kafka's effectiveMinIsr
				v.UnderMinISR++
			}
		}
	}
	v.UncleanElections = uncleanElections(im, func(t *metadata.TopicImage, p int32) *replica.Partition {
		if part, ok := s.d.Partitions.Get(topicpart.TopicPartition{Topic: t.Name, Partition: p}); ok {
			return part
		}
		return nil
	})
	logs := s.d.Logs
	all := logs.All()
	v.MetadataDir = s.d.MetadataDir
	strays := logs.Strays()
	health := map[string]logmgr.DirState{}
	for _, st := range logs.DirStates() {
		health[st.Path] = st
	}
	for _, dir := range logs.Dirs() {
		d := admin.LogDirView{Path: dir, State: admin.LogDirOnline, Strays: strayViews(strays, dir)}
		v.StrayLogs += len(d.Strays)
		if u, err := logs.FS().DiskUsage(dir); err != nil {
			d.Error = err.Error()
		} else {
			d.TotalBytes, d.FreeBytes = u.Total, u.Usable
		}
		if st, ok := health[dir]; ok {
			d.MinFreeBytes = st.MinFree
			switch {
			case st.Offline != nil:
				d.State, d.Error = admin.LogDirOffline, st.Offline.Error()
			case st.Full:
				d.State = admin.LogDirFull
			}
		}
		for tp, l := range all {
			if logs.DirOf(tp) == dir {
				d.Partitions++
				d.LogBytes += l.Size()
			}
		}
		v.LogBytes += d.LogBytes
		v.LogDirs = append(v.LogDirs, d)
	}
	groups, err := s.listGroups(ctx)
	if err != nil && !errors.Is(err, admin.ErrUnavailable) {
		return v, err
	}
	v.Groups = len(groups)
	return v, nil
}

// brokerView is b as the metadata has it, with its endpoint on listener.
func brokerView(b *metadata.Broker, listener string, controller int32) admin.BrokerView {
	v := admin.BrokerView{NodeID: b.ID, Rack: b.Rack, Epoch: b.Epoch, IncarnationID: base64.RawURLEncoding.EncodeToString(b.Incarnation[:]),
		Endpoints: map[string]string{}, Controller: b.ID == controller, State: admin.BrokerUnfenced}
	// A broker keeps InControlledShutdown until it registers again, and
	// is fenced once it is gone: fenced is what matters then.
	switch {
	case b.Fenced:
		v.State = admin.BrokerFenced
	case b.InControlledShutdown:
		v.State = admin.BrokerControlledShutdown
	}
	for _, ep := range b.Endpoints {
		v.Endpoints[ep.Name] = net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	}
	if ep, ok := b.Endpoint(listener); ok {
		v.Host, v.Port = ep.Host, ep.Port
	}
	return v
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// Topics lists every topic with its size and each group's lag on it.
func (s *Source) Topics(ctx context.Context) ([]admin.TopicSummary, error) {
	offsets, err := s.decorations(ctx)
	if err != nil {
		return nil, err
	}
	var out []admin.TopicSummary
	for _, t := range s.d.Metadata.Image().SortedTopics() {
		out = append(out, s.topicSummary(t, s.partitions(t), offsets[t.Name]))
	}
	return out, nil
}

func policyName(tc config.Topic) string {
	var p []string
	if tc.CleanupPolicyCompact {
		p = append(p, "compact")
	}
	if tc.CleanupPolicyDelete {
		p = append(p, "delete")
	}
	return strings.Join(p, ",")
}

// topicSummary sums t's partitions; committed are the groups' offsets on t.
func (s *Source) topicSummary(t *metadata.TopicImage, parts []hostedPartition, committed []admin.GroupOffset) admin.TopicSummary {
	rf := 0
	if len(t.Partitions) > 0 {
		rf = len(t.Partitions[0].Replicas)
	}
	ts := admin.TopicSummary{Name: t.Name, ID: t.ID.String(), Internal: topicpart.Internal(t.Name), Partitions: len(t.Partitions),
		ReplicationFactor: rf, CleanupPolicy: policyName(s.d.TopicConfig(t.Name)), ConsumerLag: []admin.GroupLag{}}
	hw := map[int32]int64{}
	for _, h := range parts {
		if h.part == nil {
			continue
		}
		ts.SizeBytes += h.size()
		ts.Records += h.snap.HighWatermark - h.snap.LogStartOffset
		hw[h.index] = h.snap.HighWatermark
	}
	lag := map[string]int64{}
	for _, o := range committed {
		if h, ok := hw[o.Partition]; ok {
			lag[o.Group] += h - o.Committed
		} else if _, seen := lag[o.Group]; !seen {
			lag[o.Group] = 0
		}
	}
	for _, g := range slices.Sorted(maps.Keys(lag)) {
		ts.ConsumerLag = append(ts.ConsumerLag, admin.GroupLag{Group: g, Lag: lag[g]})
	}
	return ts
}

// Topic describes one topic: its partitions and its configs.
func (s *Source) Topic(ctx context.Context, name string) (admin.TopicView, error) {
	t, err := s.topic(name)
	if err != nil {
		return admin.TopicView{}, err
	}
	offsets, err := s.decorations(ctx)
	if err != nil {
		return admin.TopicView{}, err
	}
	parts := s.partitions(t)
	v := admin.TopicView{TopicSummary: s.topicSummary(t, parts, offsets[t.Name]), Configs: s.configs(t, nil)}
	for i := range parts {
		st := s.cleanerStatus(&parts[i])
		v.PartitionDetail = append(v.PartitionDetail, s.partitionSummary(&parts[i], st))
	}
	return v, nil
}

// configs are t's effective configs as DescribeConfigs reports them,
// restricted to the names in only when it is not nil.
func (s *Source) configs(t *metadata.TopicImage, only map[string]bool) []admin.ConfigView {
	out := []admin.ConfigView{}
	for _, e := range config.DescribeTopic(s.d.Config(), s.d.Metadata.Image().TopicConfigs(t.Name)) {
		if only != nil && !only[e.Name] {
			continue
		}
		c := admin.ConfigView{Name: e.Name, Source: e.Source.String(), ReadOnly: e.ReadOnly, Sensitive: e.Sensitive}
		if e.Value != nil {
			c.Value = *e.Value
		}
		out = append(out, c)
	}
	return out
}

// cleanerStatus is the cleaner's view of a compacted hosted partition, or
// nil.
func (s *Source) cleanerStatus(h *hostedPartition) *cleaner.PartitionStatus {
	if h.part == nil || s.d.Cleaner == nil {
		return nil
	}
	st, ok := s.d.Cleaner.Status(topicpart.TopicPartition{Topic: h.topic.Name, Partition: h.index})
	if !ok || !st.Compacted && st.LastRun == nil && st.Uncleanable == nil {
		return nil
	}
	return &st
}

func (s *Source) partitionSummary(h *hostedPartition, st *cleaner.PartitionStatus) admin.PartitionSummary {
	pi := h.topic.Partitions[h.index]
	ps := admin.PartitionSummary{Partition: h.index, Leader: pi.Leader, LeaderEpoch: pi.LeaderEpoch,
		Replicas: append([]int32{}, pi.Replicas...), ISR: append([]int32{}, pi.ISR...)}
	if h.part == nil {
		ps.UncleanElection = uncleanView(h.topic, h.index, nil)
		return ps
	}
	ps.UncleanElection = uncleanView(h.topic, h.index, h.part)
	snap := &h.snap
	ps.Offsets = admin.Offsets{LogStart: snap.LogStartOffset, LSO: snap.LastStableOffset, HW: snap.HighWatermark,
		LEO: snap.LogEndOffset, RecoveryPoint: snap.RecoveryPoint}
	ps.SizeBytes, ps.Segments, ps.Compacted = h.size(), len(snap.Segments), snap.Config.Compact
	if st != nil && st.Compacted {
		ps.DirtyRatio = st.DirtyRatio
	}
	return ps
}

// replicaViews is every replica as the leader sees it, or this broker's own
// replica alone when it is a follower or the only replica.
func (s *Source) replicaViews(h *hostedPartition, now time.Time) []admin.ReplicaView {
	views := s.d.Partitions.ReplicaViews(h.part)
	if views == nil {
		node := s.d.Config().NodeID()
		pi := h.topic.Partitions[h.index]
		return []admin.ReplicaView{{BrokerID: node, LogEndOffset: h.snap.LogEndOffset, InISR: slices.Contains(pi.ISR, node),
			Leader: h.part.IsLeader(), LastCaughtUpMs: now.UnixMilli()}}
	}
	out := make([]admin.ReplicaView, 0, len(views))
	for _, rv := range views {
		av := admin.ReplicaView{BrokerID: rv.ID, LogEndOffset: rv.LogEndOffset, InISR: rv.InISR, Leader: rv.Leader,
			LagOffsets: max(h.snap.LogEndOffset-rv.LogEndOffset, 0)}
		if !rv.LastCaughtUp.IsZero() {
			av.LastCaughtUpMs = rv.LastCaughtUp.UnixMilli()
			av.LagMs = max(now.Sub(rv.LastCaughtUp).Milliseconds(), 0)
		}
		if d := rv.Departure; d != nil {
			av.OutOfISR = &admin.ISRDeparture{Cause: d.Cause, Detail: d.Detail, AtMs: d.At.UnixMilli()}
		}
		for _, b := range rv.Blockers {
			av.WaitsFor = append(av.WaitsFor, b.Detail)
		}
		out = append(out, av)
	}
	return out
}

// Partition describes one hosted partition in full.
func (s *Source) Partition(ctx context.Context, topic string, partition int32) (admin.PartitionView, error) {
	h, err := s.hosted(topic, partition)
	if err != nil {
		return admin.PartitionView{}, err
	}
	now := s.d.Clock.Now()
	st := s.cleanerStatus(&h)
	snap := &h.snap
	v := admin.PartitionView{Topic: topic, TopicID: h.topic.ID.String(), Partition: partition, Dir: h.part.Log.Dir(),
		PartitionSummary: s.partitionSummary(&h, st), Cleaner: st, Configs: s.configs(h.topic, partitionConfigs)}
	v.ReplicaState = s.replicaViews(&h, now)

	plan := log.PlanRetention(snap, now.UnixMilli())
	for i, seg := range snap.Segments {
		sv := admin.SegmentView{BaseOffset: seg.BaseOffset, EndOffset: snap.LogEndOffset, SizeBytes: seg.Size,
			LargestTimestampMs: seg.LargestTimestamp, Active: i == len(snap.Segments)-1, DeleteNext: i < plan.Now.Segments}
		if !sv.Active {
			sv.EndOffset = snap.Segments[i+1].BaseOffset
		}
		sv.Clean = st != nil && st.Compacted && sv.EndOffset <= st.FirstDirtyOffset
		v.SegmentList = append(v.SegmentList, sv)
	}
	v.Retention = admin.RetentionView{CleanupPolicy: policyName(s.d.TopicConfig(h.topic.Name)), RetentionMs: snap.Config.RetentionMs,
		RetentionBytes: snap.Config.RetentionBytes, CheckIntervalMs: s.d.Config().Long("log.retention.check.interval.ms"), Why: plan.Why}
	if n := plan.Next; n != nil {
		v.Retention.Next = &admin.RetentionNext{FromOffset: n.FromOffset, ToOffset: n.ToOffset, Segments: n.Segments,
			Bytes: n.Bytes, Reason: n.Reason, DueMs: n.DueMs}
	}

	v.Transactions = s.transactions(ctx, h.tp(), h.part.Log)
	offsets, err := s.decorations(ctx)
	if err != nil {
		return v, err
	}
	v.Groups = []admin.GroupOffset{}
	for _, o := range offsets[topic] {
		if o.Partition == partition {
			o.HW, o.Lag = snap.HighWatermark, snap.HighWatermark-o.Committed
			v.Groups = append(v.Groups, o)
		}
	}
	return v, nil
}

// hosted finds a partition this broker hosts.
func (s *Source) hosted(topic string, partition int32) (hostedPartition, error) {
	t, err := s.topic(topic)
	if err != nil {
		return hostedPartition{}, err
	}
	if partition < 0 || int(partition) >= len(t.Partitions) {
		return hostedPartition{}, fmt.Errorf("partition %s-%d (the topic has %d): %w", topic, partition, len(t.Partitions), admin.ErrNotFound)
	}
	h := s.partition(t, partition, s.d.TopicConfig(t.Name).MinInsyncReplicas)
	if h.part == nil {
		return h, fmt.Errorf("partition %s-%d is not hosted on this broker: %w", topic, partition, admin.ErrNotFound)
	}
	return h, nil
}

// Cleaner is one partition's cleaner status.
func (s *Source) Cleaner(ctx context.Context, topic string, partition int32) (*cleaner.PartitionStatus, error) {
	h, err := s.hosted(topic, partition)
	if err != nil {
		return nil, err
	}
	return s.cleanerStatus(&h), ctx.Err()
}

// listGroups lists the groups of every loaded __consumer_offsets partition.
func (s *Source) listGroups(ctx context.Context) ([]group.Listing, error) {
	if s.d.Groups == nil || s.d.Metadata.Image().Topic(group.OffsetsTopic) == nil {
		return nil, nil
	}
	ls, err := s.d.Groups.List(ctx, group.ListFilter{})
	if err != nil {
		return nil, fmt.Errorf("listing consumer groups: %w", transient(err))
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].Group < ls[j].Group })
	return ls, nil
}

// committed is a group's committed offsets, with the high watermark and lag
// of each hosted partition (HW -1 and lag 0 for one not hosted).
func (s *Source) committed(ctx context.Context, id string) ([]admin.GroupOffset, error) {
	res, err := s.d.Groups.Fetch(ctx, &group.FetchRequest{Group: id})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return nil, fmt.Errorf("fetching offsets of group %q: %w", id, transient(err))
	}
	var out []admin.GroupOffset
	for _, t := range res.Topics {
		for _, p := range t.Partitions {
			if p.Err != nil || p.Offset < 0 {
				continue
			}
			o := admin.GroupOffset{Group: id, Topic: t.Topic, Partition: p.Partition, Committed: p.Offset,
				LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata, HW: -1}
			if part, ok := s.d.Partitions.Get(topicpart.TopicPartition{Topic: t.Topic, Partition: p.Partition}); ok {
				o.HW = part.Log.HighWatermark()
				o.Lag = o.HW - o.Committed
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// transient marks the coordinator's retriable errors (loading, moving) as
// admin.ErrUnavailable.
func transient(err error) error {
	if errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.CoordinatorNotAvailable) ||
		errors.Is(err, kerr.NotCoordinator) {
		return fmt.Errorf("%w: %w", admin.ErrUnavailable, err)
	}
	return err
}

// decorations is allCommitted for views that only show lag beside their own
// state: while the groups cannot be read they go without.
func (s *Source) decorations(ctx context.Context) (map[string][]admin.GroupOffset, error) {
	offsets, err := s.allCommitted(ctx)
	if errors.Is(err, admin.ErrUnavailable) {
		return map[string][]admin.GroupOffset{}, nil
	}
	return offsets, err
}

// allCommitted is every group's committed offsets by topic.
func (s *Source) allCommitted(ctx context.Context) (map[string][]admin.GroupOffset, error) {
	groups, err := s.listGroups(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]admin.GroupOffset{}
	for _, g := range groups {
		offs, err := s.committed(ctx, g.Group)
		if err != nil {
			return nil, err
		}
		for _, o := range offs {
			out[o.Topic] = append(out[o.Topic], o)
		}
	}
	return out, nil
}

// Groups lists every consumer group with its members and total lag.
func (s *Source) Groups(ctx context.Context) ([]admin.GroupSummary, error) {
	groups, err := s.listGroups(ctx)
	if err != nil {
		return nil, err
	}
	out := []admin.GroupSummary{}
	for _, g := range groups {
		v, err := s.group(ctx, g.Group)
		if errors.Is(err, admin.ErrNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v.GroupSummary)
	}
	return out, nil
}

// Group describes one group: members, assignments, offsets and lag.
func (s *Source) Group(ctx context.Context, id string) (admin.GroupView, error) {
	return s.group(ctx, id)
}

func (s *Source) group(ctx context.Context, id string) (admin.GroupView, error) {
	if s.d.Groups == nil || s.d.Metadata.Image().Topic(group.OffsetsTopic) == nil {
		return admin.GroupView{}, fmt.Errorf("group %q (no %s yet): %w", id, group.OffsetsTopic, admin.ErrNotFound)
	}
	d, err := s.d.Groups.Describe(ctx, id)
	if err != nil {
		return admin.GroupView{}, fmt.Errorf("describing group %q: %w", id, transient(err))
	}
	if d.Err != nil {
		if errors.Is(d.Err, kerr.GroupIDNotFound) {
			return admin.GroupView{}, fmt.Errorf("group %q: %w", id, admin.ErrNotFound)
		}
		return admin.GroupView{}, fmt.Errorf("describing group %q: %w", id, transient(d.Err))
	}
	offs, err := s.committed(ctx, id)
	if err != nil {
		return admin.GroupView{}, err
	}
	v := admin.GroupView{
		GroupSummary: admin.GroupSummary{ID: id, State: d.State, ProtocolType: d.ProtocolType, Protocol: d.Protocol,
			Members: len(d.Members), Coordinator: s.d.Config().NodeID(), Topics: []string{}},
		MemberList: []admin.MemberView{},
		Offsets:    []admin.GroupOffset{},
	}
	topics := map[string]bool{}
	for _, m := range d.Members {
		mv := admin.MemberView{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, Assignment: []admin.TopicPartitions{}}
		if m.InstanceID != nil {
			mv.InstanceID = *m.InstanceID
		}
		if d.ProtocolType == "consumer" && len(m.Assignment) > 0 {
			if tps, ok := group.AssignedPartitions(m.Assignment); ok {
				for _, tp := range tps {
					mv.Assignment = append(mv.Assignment, admin.TopicPartitions{Topic: tp.Topic, Partitions: tp.Partitions})
					topics[tp.Topic] = true
				}
			}
		}
		v.MemberList = append(v.MemberList, mv)
	}
	for _, o := range offs {
		v.Offsets = append(v.Offsets, o)
		v.Lag += o.Lag
		topics[o.Topic] = true
	}
	v.Topics = append(v.Topics, slices.Sorted(maps.Keys(topics))...)
	return v, nil
}

// strayViews are the stray logs of dir, for the log dir view.
func strayViews(strays []logmgr.StrayLog, dir string) []admin.StrayLogView {
	out := []admin.StrayLogView{}
	for _, s := range strays {
		if s.Dir == dir {
			out = append(out, admin.StrayLogView{Name: s.Name, Topic: s.TP.Topic, Partition: s.TP.Partition, SizeBytes: s.Bytes})
		}
	}
	return out
}
