package admin

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// The offsets bar is an SVG in a fixed viewBox, scaled to the page width.
// It maps offsets linearly onto [barLeft, barRight]; the mapping is
// monotonic for every int64, so markers can never be drawn out of order,
// however large the offsets.
const (
	barWidth  = 1000.0
	barLeft   = 10.0
	barRight  = 990.0
	barPlot   = barRight - barLeft
	labelRowH = 14.0
	// labelCharW is the width budget per label character at the bar's
	// 11-unit font, used to keep labels from overlapping.
	labelCharW   = 6.4
	maxLabelRows = 4
	// maxBarSegments caps the segments drawn one by one; the middle of a
	// longer list is drawn as one merged block.
	maxBarSegments = 240
	// maxBarGroups caps the consumer groups drawn as ticks.
	maxBarGroups = 50
	// maxBarReplicas caps the replicas drawn as markers.
	maxBarReplicas = 16
)

// offsetsBar is everything the offsets bar template draws, in viewBox units.
type offsetsBar struct {
	Height float64
	Lo, Hi int64
	Empty  bool

	SegY, SegH     float64
	SegBottom      float64
	Segments       []barRect
	BelowStart     *barRect // [first base offset, log start offset): on disk, not readable
	Separators     []float64
	Cleaner        []barRect // clean, dirty (cleanable), uncleanable
	CleanerY       float64
	Retention      *barRect
	RetentionY     float64
	RetentionLabel barText
	StripH         float64
	Markers        []barMarker
	Labels         []barText
	Groups         []barMarker
	GroupLabels    []barText
	AxisY          float64
	Axis           []barText
	BytesY, BytesH float64
	ByBytes        []barRect
	BytesOutlined  bool // few enough blocks to outline each
	BytesLabel     barText

	TotalSegments  int
	MergedSegments int
	Notes          []string
	// LSOHeld is why the LSO is below the HW; nil when it is not.
	LSOHeld *lsoHeld
}

// lsoHeld is the transaction that holds the LSO below the HW (the one
// starting at the LSO), as the hanging-transaction detector classified it.
type lsoHeld struct {
	TransactionView
	Records int64 // HW − LSO: invisible to read_committed consumers
	Others  int   // further transactions holding offsets above it
}

// barRect is one drawn range of offsets (or of bytes, in the second row).
type barRect struct {
	X, W     float64
	From, To int64 // offsets [From, To)
	Bytes    int64
	Class    string
	Title    string
	Label    string
	LabelX   float64
	Overlay  bool // the next retention pass deletes it
}

// barMarker is one offset drawn as a vertical line (or a group's tick).
// Kind and Offset become the element's data-marker and data-offset, which
// the browser test reads back.
type barMarker struct {
	Kind    string // log-start, lso, hw, leo, replica-leo, cleaner-point, group
	Name    string
	Offset  int64
	X       float64
	Y1, Y2  float64
	Title   string
	Replica string // broker id, for replica-leo
	Group   string // group id, for group
	Clamped bool   // outside the drawn range: pinned to its edge
}

type barText struct {
	X, Y   float64
	Anchor string // start, middle, end
	Text   string
	Class  string
}

// barScale maps offsets in [lo, hi] onto the plot. Offsets are clamped to
// the range first, so o−lo never overflows and the result is monotonic.
type barScale struct{ lo, hi int64 }

func (s barScale) x(o int64) float64 {
	o = min(max(o, s.lo), s.hi)
	if s.hi == s.lo {
		return barLeft
	}
	return barLeft + float64(o-s.lo)/float64(s.hi-s.lo)*barPlot
}

func (s barScale) clamped(o int64) bool { return o < s.lo || o > s.hi }

// buildOffsetsBar lays out the offsets bar of one partition; now dates the
// next retention deletion.
func buildOffsetsBar(pv *PartitionView, now time.Time) *offsetsBar {
	o := pv.Offsets
	b := &offsetsBar{TotalSegments: len(pv.SegmentList)}
	lo, hi := max(o.LogStart, 0), max(o.LEO, 0)
	if len(pv.SegmentList) > 0 {
		lo = min(lo, max(pv.SegmentList[0].BaseOffset, 0))
		hi = max(hi, pv.SegmentList[len(pv.SegmentList)-1].EndOffset)
	}
	hi = max(hi, lo)
	b.Lo, b.Hi = lo, hi
	sc := barScale{lo, hi}
	b.Empty = o.LEO <= o.LogStart

	b.LSOHeld = heldLSO(pv)
	main := b.mainMarkers(pv, sc)
	rows := b.markerLabels(main)
	b.SegY = float64(rows)*labelRowH + 6
	b.SegH = 34
	b.SegBottom = b.SegY + b.SegH
	b.drawSegments(pv, sc)
	if o.LogStart > lo && !b.Empty {
		x := sc.x(o.LogStart)
		b.BelowStart = &barRect{X: barLeft, W: x - barLeft, From: lo, To: o.LogStart, Class: "below-start",
			Title: fmt.Sprintf("offsets [%s, %s) are below the log start offset: still on disk, no longer readable", formatInt(lo), formatInt(o.LogStart))}
	}

	y := b.SegY + b.SegH + 3
	b.StripH = 8
	if cs := pv.Cleaner; cs != nil && cs.Compacted {
		b.CleanerY = y
		b.cleanerStrip(pv, sc)
		y += b.StripH + 3
	}
	if n := pv.Retention.Next; n != nil {
		b.RetentionY = y
		x1, x2 := sc.x(n.FromOffset), sc.x(n.ToOffset)
		class := "ret-next"
		if n.DueMs > now.UnixMilli() {
			class += " later"
		}
		b.Retention = &barRect{X: x1, W: max(x2-x1, 1.5), From: n.FromOffset, To: n.ToOffset, Bytes: n.Bytes,
			Class: class, Title: fmt.Sprintf("retention (%s) deletes offsets [%s, %s): %d %s, %s",
				n.Reason, formatInt(n.FromOffset), formatInt(n.ToOffset), n.Segments, plural(n.Segments, "segment", "segments"), formatBytes(n.Bytes))}
		y += b.StripH + 3
	}
	markerBottom := y - 3
	for i := range main {
		main[i].Y2 = markerBottom
	}
	b.Markers = main

	y = b.groupTicks(pv, sc, markerBottom+2)
	if n := pv.Retention.Next; n != nil {
		when := "at the next check"
		if n.DueMs > now.UnixMilli() {
			when = relative(now, n.DueMs)
		}
		b.RetentionLabel = barText{X: b.Retention.X, Y: y + 11, Anchor: "start", Class: "ret-label",
			Text: fmt.Sprintf("retention deletes next: %s – %s (%s), %s", shortOffset(n.FromOffset), shortOffset(n.ToOffset), n.Reason, when)}
		if b.Retention.X > barWidth/2 {
			b.RetentionLabel.X, b.RetentionLabel.Anchor = b.Retention.X+b.Retention.W, "end"
		}
		y += 14
	}
	b.AxisY = y + 12
	b.Axis = []barText{
		{X: barLeft, Y: b.AxisY, Anchor: "start", Text: "offset " + formatInt(lo), Class: "axis"},
		{X: barRight, Y: b.AxisY, Anchor: "end", Text: formatInt(hi), Class: "axis"},
	}
	b.BytesY, b.BytesH = b.AxisY+18, 12
	b.drawBytes(pv)
	b.Height = b.BytesY + b.BytesH + 16
	return b
}

// mainMarkers are the four offsets, the cleaner point and each replica's
// LEO, ordered by offset (ties in Kafka's order log start, LSO, HW, LEO).
func (b *offsetsBar) mainMarkers(pv *PartitionView, sc barScale) []barMarker {
	o := pv.Offsets
	ms := []barMarker{
		{Kind: "log-start", Name: "log start", Offset: o.LogStart, Title: "log start offset: the first offset a consumer can read"},
		{Kind: "lso", Name: "LSO", Offset: o.LSO, Title: "last stable offset: read_committed consumers read below it" + b.LSOHeld.title()},
		{Kind: "hw", Name: "HW", Offset: o.HW, Title: "high watermark: every in-sync replica has the records below it"},
		{Kind: "leo", Name: "LEO", Offset: o.LEO, Title: "log end offset: the offset the next record gets"},
	}
	if cs := pv.Cleaner; cs != nil && cs.Compacted && cs.CleanerPoint >= 0 {
		ms = append(ms, barMarker{Kind: "cleaner-point", Name: "cleaned", Offset: cs.CleanerPoint,
			Title: "cleaner point: the log is compacted below this offset"})
	}
	reps := pv.ReplicaState
	if len(reps) > maxBarReplicas {
		b.Notes = append(b.Notes, fmt.Sprintf("%d replicas; the first %d are drawn", len(reps), maxBarReplicas))
		reps = reps[:maxBarReplicas]
	}
	for _, r := range reps {
		id := fmt.Sprint(r.BrokerID)
		title := "LEO of the replica on broker " + id
		if r.Leader {
			title += " (leader)"
		}
		if !r.InISR {
			title += ", out of the ISR"
		}
		ms = append(ms, barMarker{Kind: "replica-leo", Name: "r" + id, Offset: r.LogEndOffset, Replica: id, Title: title})
	}
	for i := range ms {
		m := &ms[i]
		m.X = sc.x(m.Offset)
		m.Clamped = sc.clamped(m.Offset)
		m.Title = fmt.Sprintf("%s %s — %s", m.Name, formatInt(m.Offset), m.Title)
		if m.Clamped {
			m.Title += " (outside the drawn range: pinned to its edge)"
		}
	}
	slices.SortStableFunc(ms, func(a, c barMarker) int { return cmp.Compare(a.Offset, c.Offset) })
	return ms
}

// markerLabel is the label of markers sharing an offset: "HW = LEO 1,234".
func markerLabel(ms []barMarker) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return strings.Join(names, " = ") + " " + shortOffset(ms[0].Offset)
}

// labelRun is the one label of a run of markers at the same x.
type labelRun struct {
	i, j     int // the markers ms[i:j]
	x        float64
	text     string
	from, to float64
	anchor   string
	row      int // -1: not labelled
}

// layoutLabels gives each run of markers at the same x one label and a row
// (0 is the top). Labels left of the middle extend right and those right of
// it extend left, both away from the centre; a label goes one row below
// every label it would touch that was placed before it, placing from the
// edges inwards. That way a marker's line, which runs down from its own
// label, never crosses a label on its side, and labels never overlap. Runs
// for which keep is false, and runs that would need more than maxRows rows,
// get no label (their marker's title still tells).
func layoutLabels(ms []barMarker, maxRows int, label func([]barMarker) string, keep func([]barMarker) bool) []labelRun {
	var runs []labelRun
	for i := 0; i < len(ms); {
		j := i + 1
		for j < len(ms) && ms[j].X == ms[i].X {
			j++
		}
		r := labelRun{i: i, j: j, x: ms[i].X, text: label(ms[i:j]), row: -1}
		w := float64(utf8.RuneCountInString(r.text))*labelCharW + 4
		if r.x < barWidth/2 {
			r.from, r.to, r.anchor = r.x, r.x+w, "start"
		} else {
			r.from, r.to, r.anchor = r.x-w, r.x, "end"
		}
		runs = append(runs, r)
		i = j
	}
	// Left half left to right, then right half right to left.
	order := make([]int, 0, len(runs))
	for k := range runs {
		if runs[k].anchor == "start" {
			order = append(order, k)
		}
	}
	for k := len(runs) - 1; k >= 0; k-- {
		if runs[k].anchor == "end" {
			order = append(order, k)
		}
	}
	const gap = 6
	var placed []int
	for _, k := range order {
		r := &runs[k]
		if keep != nil && !keep(ms[r.i:r.j]) {
			continue
		}
		row := 0
		for _, p := range placed {
			if q := runs[p]; q.from < r.to+gap && r.from < q.to+gap {
				row = max(row, q.row+1)
			}
		}
		if row >= maxRows {
			continue
		}
		r.row = row
		placed = append(placed, k)
	}
	return runs
}

func rowsUsed(runs []labelRun) int {
	n := 1
	for _, r := range runs {
		n = max(n, r.row+1)
	}
	return n
}

// markerLabels lays out the main markers' labels above the bar, dropping
// the labels of replicas alone at an offset when they do not all fit (the
// table has them), and starts each marker's line just under its label. It
// returns the number of label rows.
func (b *offsetsBar) markerLabels(ms []barMarker) int {
	all := func([]barMarker) bool { return true }
	runs := layoutLabels(ms, maxLabelRows, markerLabel, all)
	if slices.ContainsFunc(runs, func(r labelRun) bool { return r.row < 0 }) {
		runs = layoutLabels(ms, maxLabelRows, markerLabel, func(m []barMarker) bool {
			return slices.ContainsFunc(m, func(x barMarker) bool { return x.Kind != "replica-leo" })
		})
	}
	rows := rowsUsed(runs)
	for _, r := range runs {
		top := float64(rows) * labelRowH // unlabelled: the line starts at the bar
		if r.row >= 0 {
			y := float64(r.row) * labelRowH
			b.Labels = append(b.Labels, barText{X: r.x, Y: y + 11, Anchor: r.anchor, Text: r.text,
				Class: "mlabel mlabel-" + ms[r.i].Kind})
			top = y + 13
		}
		for k := r.i; k < r.j; k++ {
			ms[k].Y1 = top
		}
	}
	return rows
}

// drawSegments draws the segments to scale by offset, merging the middle of
// a long list into one block.
func (b *offsetsBar) drawSegments(pv *PartitionView, sc barScale) {
	if b.Empty && len(pv.SegmentList) <= 1 {
		b.Segments = []barRect{{X: barLeft, W: barPlot, From: pv.LogStart, To: pv.LEO, Class: "seg-empty",
			Title: "the log is empty: log start offset = LEO = " + formatInt(pv.LEO),
			Label: "empty log: log start offset = LEO = " + formatInt(pv.LEO), LabelX: barLeft + 8}}
		return
	}
	groups := segmentGroups(pv.SegmentList)
	if len(groups) < len(pv.SegmentList) {
		b.MergedSegments = len(pv.SegmentList) - len(groups) + 1
		head, tail := barHeadTail()
		b.Notes = append(b.Notes, fmt.Sprintf("%s segments: the first %d and the last %d are drawn one by one, the %s between them as one block",
			formatInt(len(pv.SegmentList)), head, tail, formatInt(b.MergedSegments)))
	}
	compacted := isCompacted(pv)
	prevEnd := -1.0
	for _, g := range groups {
		first, last := g[0], g[len(g)-1]
		x1, x2 := sc.x(first.BaseOffset), sc.x(last.EndOffset)
		r := barRect{X: x1, W: x2 - x1, From: first.BaseOffset, To: last.EndOffset, Bytes: sumBytes(g)}
		switch {
		case len(g) > 1:
			r.Class = "seg-merged"
			r.Label = formatInt(len(g)) + " segments"
			r.Title = fmt.Sprintf("%s segments merged: offsets [%s, %s), %s", formatInt(len(g)),
				formatInt(r.From), formatInt(r.To), formatBytes(r.Bytes))
		case first.Active:
			r.Class = "seg-active"
			r.Label = "active"
			r.Title = fmt.Sprintf("active segment: offsets [%s, %s), %s", formatInt(r.From), formatInt(r.To), formatBytes(r.Bytes))
			// An empty active segment still gets a sliver, at the end.
			r.W = max(r.W, 3)
		default:
			r.Class = segClass(first, compacted)
			r.Title = fmt.Sprintf("segment %s: offsets [%s, %s), %s", formatInt(first.BaseOffset),
				formatInt(r.From), formatInt(r.To), formatBytes(r.Bytes))
			if first.Clean {
				r.Title += ", clean"
			}
		}
		r.Overlay = len(g) == 1 && first.DeleteNext
		if r.Overlay {
			r.Title += "; the next retention pass deletes it"
		}
		r.W = max(r.W, 0.4)
		if r.W < 64 {
			r.Label = ""
		}
		r.LabelX = r.X + 6
		if prevEnd >= 0 && x1-prevEnd >= 0 && len(groups) <= maxBarSegments {
			if len(b.Separators) == 0 || x1-b.Separators[len(b.Separators)-1] >= 3 {
				b.Separators = append(b.Separators, x1)
			}
		}
		prevEnd = x2
		b.Segments = append(b.Segments, r)
	}
}

func isCompacted(pv *PartitionView) bool {
	return pv.Compacted || (pv.Cleaner != nil && pv.Cleaner.Compacted)
}

// segClass is the fill of a closed segment: clean or dirty on a compacted
// log, plain otherwise.
func segClass(s SegmentView, compacted bool) string {
	switch {
	case !compacted:
		return "seg"
	case s.Clean:
		return "seg-clean"
	default:
		return "seg-dirty"
	}
}

// segmentGroups returns one group per segment, or for more than
// maxBarSegments the first and last maxBarSegments/2 alone and everything
// between them as one group.
func segmentGroups(segs []SegmentView) [][]SegmentView {
	n := len(segs)
	if n <= maxBarSegments {
		out := make([][]SegmentView, n)
		for i := range segs {
			out[i] = segs[i : i+1]
		}
		return out
	}
	head, tail := barHeadTail()
	out := make([][]SegmentView, 0, maxBarSegments)
	for i := 0; i < head; i++ {
		out = append(out, segs[i:i+1])
	}
	out = append(out, segs[head:n-tail])
	for i := n - tail; i < n; i++ {
		out = append(out, segs[i:i+1])
	}
	return out
}

// barHeadTail is how many segments are drawn one by one before and after
// the merged block, which takes the last of maxBarSegments places.
func barHeadTail() (head, tail int) {
	return maxBarSegments / 2, maxBarSegments - maxBarSegments/2 - 1
}

func sumBytes(segs []SegmentView) int64 {
	var n int64
	for _, s := range segs {
		n += s.SizeBytes
	}
	return n
}

// cleanerStrip draws the cleaner's split of the log: clean below the first
// dirty offset, dirty (cleanable) up to the first uncleanable offset, and
// uncleanable above it.
func (b *offsetsBar) cleanerStrip(pv *PartitionView, sc barScale) {
	cs := pv.Cleaner
	start := pv.LogStart
	dirty := min(max(cs.FirstDirtyOffset, start), pv.LEO)
	uncleanable := min(max(cs.FirstUncleanableOffset, dirty), pv.LEO)
	add := func(from, to int64, class, title string) {
		if to <= from {
			return
		}
		x1, x2 := sc.x(from), sc.x(to)
		b.Cleaner = append(b.Cleaner, barRect{X: x1, W: max(x2-x1, 0.8), From: from, To: to, Class: class,
			Title: fmt.Sprintf("%s: offsets [%s, %s)", title, formatInt(from), formatInt(to))})
	}
	add(start, dirty, "clean", fmt.Sprintf("clean (%s)", formatBytes(cs.CleanBytes)))
	add(dirty, uncleanable, "dirty", fmt.Sprintf("dirty, cleanable (%s)", formatBytes(cs.DirtyBytes)))
	reason := string(cs.UncleanableReason)
	if reason == "" {
		reason = "not cleanable yet"
	}
	add(uncleanable, pv.LEO, "uncleanable", fmt.Sprintf("uncleanable: %s (%s)", reason, formatBytes(cs.UncleanableBytes)))
}

// groupTicks draws each group's committed offset as a tick under the bar
// with its name below, and returns the y under the lowest label.
func (b *offsetsBar) groupTicks(pv *PartitionView, sc barScale, y float64) float64 {
	gs := slices.Clone(pv.Groups)
	if len(gs) == 0 {
		return y
	}
	slices.SortStableFunc(gs, func(a, c GroupOffset) int { return cmp.Compare(a.Committed, c.Committed) })
	if len(gs) > maxBarGroups {
		b.Notes = append(b.Notes, fmt.Sprintf("%d groups have committed offsets; %d are drawn", len(gs), maxBarGroups))
		gs = gs[:maxBarGroups]
	}
	for _, g := range gs {
		m := barMarker{Kind: "group", Name: g.Group, Offset: g.Committed, X: sc.x(g.Committed), Y1: y, Y2: y + 7,
			Group: g.Group, Clamped: sc.clamped(g.Committed)}
		m.Title = fmt.Sprintf("group %s committed %s (lag %s)", g.Group, formatInt(g.Committed), formatInt(g.Lag))
		if m.Clamped {
			m.Title += " (outside the drawn range: pinned to its edge)"
		}
		b.Groups = append(b.Groups, m)
	}
	const groupRows = 3
	label := func(ms []barMarker) string {
		if len(ms) > 1 {
			return fmt.Sprintf("%d groups", len(ms))
		}
		return truncateRunes(ms[0].Group, 24)
	}
	runs := layoutLabels(b.Groups, groupRows, label, nil)
	for _, r := range runs {
		if r.row >= 0 {
			b.GroupLabels = append(b.GroupLabels, barText{X: r.x, Y: y + 19 + float64(r.row)*12, Anchor: r.anchor, Text: r.text, Class: "glabel"})
		}
	}
	return y + 9 + float64(rowsUsed(runs))*12
}

// drawBytes draws the same segments by size, so one huge segment or a
// compacted prefix shows where the bytes are.
func (b *offsetsBar) drawBytes(pv *PartitionView) {
	total := sumBytes(pv.SegmentList)
	b.BytesLabel = barText{X: barLeft, Y: b.BytesY - 4, Anchor: "start", Class: "axis",
		Text: "by size: " + formatBytes(total) + " in " + formatInt(len(pv.SegmentList)) + plural(len(pv.SegmentList), " segment", " segments")}
	if total <= 0 {
		b.ByBytes = []barRect{{X: barLeft, W: barPlot, Class: "seg-empty", Title: "no bytes on disk"}}
		return
	}
	var cum int64
	groups := segmentGroups(pv.SegmentList)
	b.BytesOutlined = len(groups) <= 100
	for _, g := range groups {
		n := sumBytes(g)
		x1 := barLeft + float64(cum)/float64(total)*barPlot
		cum += n
		x2 := barLeft + float64(cum)/float64(total)*barPlot
		r := barRect{X: x1, W: max(x2-x1, 0.4), From: g[0].BaseOffset, To: g[len(g)-1].EndOffset, Bytes: n,
			Class: segClass(g[0], isCompacted(pv))}
		switch {
		case len(g) > 1:
			r.Class = "seg-merged"
		case g[0].Active:
			r.Class = "seg-active"
		}
		r.Title = fmt.Sprintf("offsets [%s, %s): %s", formatInt(r.From), formatInt(r.To), formatBytes(n))
		b.ByBytes = append(b.ByBytes, r)
	}
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// miniBar is the small offsets bar of a row of the topic page: offsets
// [0, LEO] with the deleted prefix, the committed range up to the HW, the
// uncommitted tail, and the LSO.
type miniBar struct {
	DeletedW, CommittedX, CommittedW, TailX, TailW, LSOX float64
	Title                                                string
}

const miniBarW = 160.0

func buildMiniBar(o Offsets) miniBar {
	hi := max(o.LEO, o.HW, o.LSO, o.LogStart, 0)
	sc := func(v int64) float64 {
		if hi == 0 {
			return 0
		}
		return float64(min(max(v, 0), hi)) / float64(hi) * miniBarW
	}
	m := miniBar{
		DeletedW:   sc(o.LogStart),
		CommittedX: sc(o.LogStart),
		TailX:      sc(o.HW),
		LSOX:       sc(o.LSO),
	}
	m.CommittedW = sc(o.HW) - m.CommittedX
	m.TailW = sc(o.LEO) - m.TailX
	m.Title = fmt.Sprintf("log start %s ≤ LSO %s ≤ HW %s ≤ LEO %s",
		formatInt(o.LogStart), formatInt(o.LSO), formatInt(o.HW), formatInt(o.LEO))
	return m
}

// heldLSO finds the transaction holding the LSO below the HW: the one whose
// first offset is the LSO (the earliest when none is, e.g. a decided
// transaction whose marker is not replicated yet). Nil when LSO = HW.
func heldLSO(pv *PartitionView) *lsoHeld {
	if pv.LSO >= pv.HW || len(pv.Transactions) == 0 {
		return nil
	}
	h := &lsoHeld{TransactionView: pv.Transactions[0], Records: pv.HW - pv.LSO, Others: len(pv.Transactions) - 1}
	for _, t := range pv.Transactions {
		if t.FirstOffset == pv.LSO {
			h.TransactionView = t
			break
		}
	}
	return h
}

// title is what the LSO marker's tooltip adds: the holder's class,
// explanation and first offset.
func (h *lsoHeld) title() string {
	if h == nil {
		return ""
	}
	return fmt.Sprintf("; held %s %s below the HW by the transaction from offset %s [%s]: %s",
		formatInt(h.Records), plural(int(min(h.Records, 2)), "record", "records"), formatInt(h.FirstOffset),
		strings.ToUpper(h.Class), h.Explanation)
}
