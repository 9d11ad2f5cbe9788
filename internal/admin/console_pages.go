package admin

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/internal/cleaner"
)

// capNote is the note a page shows when a list was cut at maxRows.
func capNote(shown, total int, what string) string {
	return fmt.Sprintf("showing the first %s of %s %s", formatInt(shown), formatInt(total), what)
}

func capRows[T any](rows []T, what string, notes *[]string) []T {
	if len(rows) > maxRows {
		*notes = append(*notes, capNote(maxRows, len(rows), what))
		return rows[:maxRows]
	}
	return rows
}

// ---- overview ----

type overviewBody struct {
	Cluster   ClusterView
	Listeners []nameValue
	Health    []healthItem
	Disks     []diskView
}

type nameValue struct{ Name, Value string }

// healthItem is one box of the health strip: State is ok, warn or bad.
type healthItem struct {
	Name   string
	State  string
	Value  string
	Detail string
	Href   string // the page with more, if any
}

// diskView is a log dir with its used/free bar in percent of the
// filesystem: this log dir's bytes, everything else used, free.
type diskView struct {
	LogDirView
	UsedBytes    int64
	LogW, OtherW float64
	UsedFraction float64
}

func (c *console) overviewPage(r *http.Request) (*page, error) {
	cv, err := c.src.Cluster(r.Context())
	if err != nil {
		return nil, err
	}
	body := overviewBody{Cluster: cv}
	for name, addr := range cv.Listeners {
		body.Listeners = append(body.Listeners, nameValue{name, addr})
	}
	slices.SortFunc(body.Listeners, func(a, b nameValue) int { return strings.Compare(a.Name, b.Name) })
	conds, _ := c.a.readiness()
	for _, cond := range conds {
		h := healthItem{Name: cond.name, State: "ok", Value: "ready", Detail: "since " + formatTime(cond.since)}
		switch {
		case !cond.ready:
			h.State, h.Value = "bad", "not ready"
		case cond.warn:
			h.State, h.Value = "warn", "warning"
		}
		if cond.detail != "" {
			h.Detail = cond.detail + " (since " + formatTime(cond.since) + ")"
		}
		body.Health = append(body.Health, h)
	}
	count := func(name string, n int, bad string, detail string) {
		h := healthItem{Name: name, State: "ok", Value: formatInt(n), Detail: detail}
		if n > 0 {
			h.State = bad
		}
		body.Health = append(body.Health, h)
	}
	body.Health = append(body.Health, brokersHealth(cv.Brokers))
	if cv.Quorum != nil {
		body.Health = append(body.Health, quorumHealth(cv.Quorum))
	}
	count("under-replicated", cv.UnderReplicated, "warn", "partitions with fewer in-sync replicas than replicas")
	count("under min ISR", cv.UnderMinISR, "bad", "partitions below min.insync.replicas: acks=all produce fails")
	count("offline", cv.Offline, "bad", "partitions without a leader")
	count("unclean elections", len(cv.UncleanElections), "bad",
		"partitions whose leader was elected from outside the ISR, not acknowledged yet: acknowledged records may be lost")
	dirErrors := 0
	for _, d := range cv.LogDirs {
		body.Disks = append(body.Disks, newDiskView(d))
		if d.Error != "" {
			dirErrors++
		}
	}
	count("log dir errors", dirErrors, "bad", "log dirs the broker cannot use")
	count("stray logs", cv.StrayLogs, "warn", "partition logs on disk that the metadata does not know: kept, not served")
	if h, ok := c.transactionsHealth(r.Context()); ok {
		body.Health = append(body.Health, h)
	}
	return &page{Template: "overview.html", Title: "Overview", Nav: "overview", JSON: "/v1/cluster", Body: body}, nil
}

// brokersHealth is the health box counting unfenced brokers.
func brokersHealth(bs []BrokerView) healthItem {
	up := 0
	var down []string
	for _, b := range bs {
		if b.State == BrokerUnfenced {
			up++
		} else {
			down = append(down, fmt.Sprintf("%d %s", b.NodeID, b.State))
		}
	}
	h := healthItem{Name: "brokers", State: "ok", Value: fmt.Sprintf("%d of %d", up, len(bs)), Detail: "unfenced brokers: serving"}
	if len(down) > 0 {
		h.State, h.Detail = "warn", "not serving: "+strings.Join(down, ", ")
	}
	return h
}

// quorumHealth is the metadata quorum's health box: its leader, and the
// voters whose logs are behind.
func quorumHealth(q *QuorumView) healthItem {
	if q.Error != "" || q.LeaderID < 0 {
		return healthItem{Name: "metadata quorum", State: "bad", Value: "no leader", Detail: q.Error}
	}
	h := healthItem{Name: "metadata quorum", State: "ok", Value: fmt.Sprintf("leader %d", q.LeaderID),
		Detail: fmt.Sprintf("term %d, committed up to index %d", q.LeaderEpoch, q.HighWatermark)}
	var lagging []string
	for _, v := range q.Voters {
		if v.Lag != 0 {
			lagging = append(lagging, fmt.Sprintf("%d (lag %d)", v.NodeID, v.Lag))
		}
	}
	if len(lagging) > 0 {
		h.Detail += "; behind: " + strings.Join(lagging, ", ")
	}
	return h
}

func newDiskView(d LogDirView) diskView {
	v := diskView{LogDirView: d}
	if d.TotalBytes <= 0 {
		return v
	}
	total := float64(d.TotalBytes)
	v.UsedBytes = max(d.TotalBytes-d.FreeBytes, 0)
	logB := min(max(d.LogBytes, 0), v.UsedBytes)
	v.LogW = 100 * float64(logB) / total
	v.OtherW = 100 * float64(v.UsedBytes-logB) / total
	v.UsedFraction = float64(v.UsedBytes) / total
	return v
}

// ---- topics ----

type topicsBody struct {
	Query  string
	Total  int
	Topics []topicRow
}

type topicRow struct {
	TopicSummary
	Lag      []GroupLag
	MoreLags int
}

const maxLagChips = 6

func (c *console) topicsPage(r *http.Request) (*page, error) {
	ts, err := c.src.Topics(r.Context())
	if err != nil {
		return nil, err
	}
	p := &page{Template: "topics.html", Title: "Topics", Nav: "topics", JSON: "/v1/topics"}
	body := topicsBody{Query: strings.TrimSpace(r.URL.Query().Get("q")), Total: len(ts)}
	if body.Query != "" {
		ts = slices.DeleteFunc(slices.Clone(ts), func(t TopicSummary) bool {
			return !strings.Contains(strings.ToLower(t.Name), strings.ToLower(body.Query))
		})
	}
	ts = capRows(ts, "topics", &p.Notes)
	for _, t := range ts {
		row := topicRow{TopicSummary: t, Lag: t.ConsumerLag}
		if len(row.Lag) > maxLagChips {
			row.Lag, row.MoreLags = row.Lag[:maxLagChips], len(row.Lag)-maxLagChips
		}
		body.Topics = append(body.Topics, row)
	}
	p.Body = body
	return p, nil
}

// ---- topic ----

type topicBody struct {
	Topic      TopicView
	Partitions []partitionRow
	Configs    []ConfigView
}

type partitionRow struct {
	PartitionSummary
	Mini miniBar
}

func (c *console) topicPage(r *http.Request) (*page, error) {
	name := r.PathValue("topic")
	tv, err := c.src.Topic(r.Context(), name)
	if err != nil {
		return nil, fmt.Errorf("topic %q: %w", name, err)
	}
	p := &page{Template: "topic.html", Title: name, Nav: "topics", JSON: "/v1/topics/" + url.PathEscape(name),
		Crumbs: []crumb{{"Topics", "/ui/topics"}, {name, ""}}}
	body := topicBody{Topic: tv, Configs: capRows(tv.Configs, "configs", &p.Notes)}
	for _, ps := range capRows(tv.PartitionDetail, "partitions", &p.Notes) {
		body.Partitions = append(body.Partitions, partitionRow{PartitionSummary: ps, Mini: buildMiniBar(ps.Offsets)})
	}
	p.Body = body
	return p, nil
}

// ---- partition ----

type partitionBody struct {
	P          PartitionView
	Bar        *offsetsBar
	OffsetRows []offsetRow
	// Segments are the first and last segmentRows/2 of a long list, with
	// SegmentsOmitted between them.
	Segments        []SegmentView
	SegmentsTail    []SegmentView
	SegmentsOmitted int
	Cleaner         *cleaner.PartitionStatus
	Gauge           *ratioGauge
	Retention       RetentionView
	Groups          []GroupOffset
	Configs         []ConfigView
	Replicas        []replicaRow
}

// segmentRows caps the partition page's segment table: a long list shows
// its oldest and newest segments (the JSON has all).
const segmentRows = 100

// offsetRow is one line of the table under the offsets bar.
type offsetRow struct {
	Kind    string
	Name    string
	Offset  int64
	BelowHW int64 // HW − offset
	Meaning string
}

type replicaRow struct {
	ReplicaView
	BehindLEO int64
}

func (c *console) partitionPage(r *http.Request) (*page, error) {
	topic := r.PathValue("topic")
	part, err := partitionParam(r)
	if err != nil {
		return nil, err
	}
	pv, err := c.src.Partition(r.Context(), topic, part)
	if err != nil {
		return nil, fmt.Errorf("partition %s/%d: %w", topic, part, err)
	}
	p := &page{Template: "partition.html", Title: fmt.Sprintf("%s / %d", topic, part), Nav: "topics",
		JSON:   fmt.Sprintf("/v1/partitions/%s/%d", url.PathEscape(topic), part),
		Crumbs: []crumb{{"Topics", "/ui/topics"}, {topic, topicURL(topic)}, {"partition " + strconv.Itoa(int(part)), ""}}}
	body := partitionBody{P: pv, Bar: buildOffsetsBar(&pv, c.a.now()), Cleaner: pv.Cleaner, Retention: pv.Retention,
		Configs: capRows(pv.Configs, "configs", &p.Notes)}
	body.OffsetRows = offsetRows(&pv)
	if pv.Cleaner != nil && pv.Cleaner.Compacted {
		body.Gauge = newRatioGauge(pv.Cleaner.DirtyRatio, pv.Cleaner.MinCleanableDirtyRatio)
	}
	body.Segments = pv.SegmentList
	if n := len(pv.SegmentList); n > segmentRows {
		body.Segments, body.SegmentsTail = pv.SegmentList[:segmentRows/2], pv.SegmentList[n-segmentRows/2:]
		body.SegmentsOmitted = n - segmentRows
	}
	body.Groups = capRows(pv.Groups, "groups", &p.Notes)
	for _, rv := range capRows(pv.ReplicaState, "replicas", &p.Notes) {
		body.Replicas = append(body.Replicas, replicaRow{ReplicaView: rv, BehindLEO: pv.LEO - rv.LogEndOffset})
	}
	p.Body = body
	return p, nil
}

func offsetRows(pv *PartitionView) []offsetRow {
	o := pv.Offsets
	rows := []offsetRow{
		{"log-start", "log start offset", o.LogStart, o.HW - o.LogStart, "first offset a consumer can read; retention and DeleteRecords move it"},
		{"lso", "last stable offset (LSO)", o.LSO, o.HW - o.LSO, "read_committed consumers read below it; an open transaction holds it back"},
		{"hw", "high watermark (HW)", o.HW, 0, "every in-sync replica has the records below it; read_uncommitted consumers read below it"},
		{"leo", "log end offset (LEO)", o.LEO, o.HW - o.LEO, "the offset the next appended record gets"},
		{"recovery-point", "recovery point", o.RecoveryPoint, o.HW - o.RecoveryPoint, "flushed to disk below it; recovery after a crash starts here"},
	}
	if h := heldLSO(pv); h != nil {
		rows[1].Meaning = fmt.Sprintf("held back by the transaction from offset %s [%s]: %s", formatInt(h.FirstOffset),
			strings.ToUpper(h.Class), h.Explanation)
	}
	if cs := pv.Cleaner; cs != nil && cs.Compacted {
		if cs.CleanerPoint >= 0 {
			rows = append(rows, offsetRow{"cleaner-point", "cleaner point", cs.CleanerPoint, o.HW - cs.CleanerPoint, "compacted below it (cleaner-offset-checkpoint)"})
		}
		rows = append(rows,
			offsetRow{"first-dirty", "first dirty offset", cs.FirstDirtyOffset, o.HW - cs.FirstDirtyOffset, "the next cleaning starts here"},
			offsetRow{"first-uncleanable", "first uncleanable offset", cs.FirstUncleanableOffset, o.HW - cs.FirstUncleanableOffset,
				"the cleaner stops here: " + string(cs.UncleanableReason)})
	}
	for _, rv := range pv.ReplicaState {
		role := "follower"
		if rv.Leader {
			role = "leader"
		}
		isr := "in the ISR"
		if !rv.InISR {
			isr = "not in the ISR"
		}
		rows = append(rows, offsetRow{"replica-leo", fmt.Sprintf("LEO of replica %d", rv.BrokerID), rv.LogEndOffset,
			o.HW - rv.LogEndOffset, role + ", " + isr})
	}
	if n := pv.Retention.Next; n != nil {
		rows = append(rows, offsetRow{"retention-next", "retention deletes next up to", n.ToOffset, o.HW - n.ToOffset,
			fmt.Sprintf("offsets [%s, %s) by %s", formatInt(n.FromOffset), formatInt(n.ToOffset), n.Reason)})
	}
	for i, g := range pv.Groups {
		if i == maxBarGroups {
			break
		}
		rows = append(rows, offsetRow{"group", "committed by " + g.Group, g.Committed, g.Lag, "consumer group offset (lag = HW − committed)"})
	}
	return rows
}

// ratioGauge draws a dirty ratio against min.cleanable.dirty.ratio.
type ratioGauge struct {
	Ratio, Threshold  float64
	FillW, ThresholdX float64
	Over              bool
}

const gaugeW = 200.0

func newRatioGauge(ratio, threshold float64) *ratioGauge {
	clamp := func(f float64) float64 { return min(max(f, 0), 1) }
	return &ratioGauge{Ratio: ratio, Threshold: threshold, FillW: clamp(ratio) * gaugeW,
		ThresholdX: clamp(threshold) * gaugeW, Over: ratio >= threshold}
}

// ---- compaction board ----

type compactionBody struct {
	Rows                          []boardRow
	Eligible, InProgress, Failing int
}

type boardRow struct {
	Topic     string
	Partition int32
	Ratio     float64
	Gauge     *ratioGauge
	Status    *cleaner.PartitionStatus
	SizeBytes int64
}

func (c *console) compactionPage(r *http.Request) (*page, error) {
	ctx := r.Context()
	ts, err := c.src.Topics(ctx)
	if err != nil {
		return nil, err
	}
	p := &page{Template: "compaction.html", Title: "Compaction", Nav: "compaction", JSON: "/v1/topics"}
	var body compactionBody
	var compacted []TopicSummary
	for _, t := range ts {
		if isCompact(t.CleanupPolicy) {
			compacted = append(compacted, t)
		}
	}
	for _, t := range capRows(compacted, "compacted topics", &p.Notes) {
		tv, err := c.src.Topic(ctx, t.Name)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			continue // deleted since Topics
		}
		threshold := configFloat(tv.Configs, "min.cleanable.dirty.ratio", 0.5)
		for _, ps := range tv.PartitionDetail {
			body.Rows = append(body.Rows, boardRow{Topic: t.Name, Partition: ps.Partition, Ratio: ps.DirtyRatio,
				Gauge: newRatioGauge(ps.DirtyRatio, threshold), SizeBytes: ps.SizeBytes})
		}
	}
	slices.SortStableFunc(body.Rows, func(a, b boardRow) int {
		return cmp.Or(cmp.Compare(b.Ratio, a.Ratio), strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	body.Rows = capRows(body.Rows, "compacted partitions", &p.Notes)
	for i := range body.Rows {
		if i == maxBoardDetails {
			p.Notes = append(p.Notes, fmt.Sprintf("the cleaner's reasons are shown for the %d dirtiest partitions", maxBoardDetails))
			break
		}
		row := &body.Rows[i]
		st, err := c.src.Cleaner(ctx, row.Topic, row.Partition)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			continue
		}
		if st != nil {
			row.Status = st
			row.Ratio = st.DirtyRatio
			row.Gauge = newRatioGauge(st.DirtyRatio, st.MinCleanableDirtyRatio)
			switch {
			case st.InProgress:
				body.InProgress++
			case st.Eligible:
				body.Eligible++
			}
			if st.Uncleanable != nil {
				body.Failing++
			}
		}
	}
	p.Body = body
	return p, nil
}

func configFloat(cs []ConfigView, name string, def float64) float64 {
	for _, c := range cs {
		if c.Name == name {
			if f, err := strconv.ParseFloat(c.Value, 64); err == nil {
				return f
			}
		}
	}
	return def
}

// ---- groups ----

type groupsBody struct {
	Groups []GroupSummary
}

func (c *console) groupsPage(r *http.Request) (*page, error) {
	gs, err := c.src.Groups(r.Context())
	if err != nil {
		return nil, err
	}
	p := &page{Template: "groups.html", Title: "Consumer groups", Nav: "groups", JSON: "/v1/groups"}
	p.Body = groupsBody{Groups: capRows(gs, "groups", &p.Notes)}
	return p, nil
}

type groupBody struct {
	G         GroupView
	Members   []MemberView
	Offsets   []GroupOffset
	TopicLags []GroupLag // per topic: Group holds the topic name
}

func (c *console) groupPage(r *http.Request) (*page, error) {
	id := r.PathValue("group")
	gv, err := c.src.Group(r.Context(), id)
	if err != nil {
		return nil, fmt.Errorf("group %q: %w", id, err)
	}
	p := &page{Template: "group.html", Title: id, Nav: "groups", JSON: "/v1/groups/" + url.PathEscape(id),
		Crumbs: []crumb{{"Groups", "/ui/groups"}, {id, ""}}}
	body := groupBody{G: gv, Members: capRows(gv.MemberList, "members", &p.Notes), Offsets: capRows(gv.Offsets, "committed offsets", &p.Notes)}
	lag := map[string]int64{}
	for _, o := range gv.Offsets {
		if _, ok := lag[o.Topic]; !ok {
			body.TopicLags = append(body.TopicLags, GroupLag{Group: o.Topic})
		}
		lag[o.Topic] += o.Lag
	}
	for i := range body.TopicLags {
		body.TopicLags[i].Lag = lag[body.TopicLags[i].Group]
	}
	p.Body = body
	return p, nil
}
