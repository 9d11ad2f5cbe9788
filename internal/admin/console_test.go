package admin

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func newConsoleAdmin(t *testing.T, src Source) *Admin {
	t.Helper()
	a := newTestAdmin(t)
	a.now = func() time.Time { return fakeT0 }
	a.SetReady("log recovery", true)
	a.SetReady("metadata", true)
	RegisterConsole(a, src)
	return a
}

func TestConsolePagesRender(t *testing.T) {
	a := newConsoleAdmin(t, newFakeSource())
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/", []string{"q1Sh-9_ISia_zwGINzRvyQ", "gregor test", "PLAINTEXT", "127.0.0.1:9092", "/var/lib/gregor",
			"63% used", "11.8 MiB", "1d 2h", "log recovery", "under-replicated", `href="/v1/cluster"`,
			`data-broker-state="unfenced"`, `data-broker-state="controlled-shutdown"`, `data-broker-state="fenced"`,
			"rack-b", "127.0.0.1:9292", `<span class="hval">1 of 3</span>`, "not serving: 2 controlled-shutdown, 3 fenced",
			"leader (active controller) <strong>node 1</strong>, term 4, committed up to index 1,500",
			`<span class="warn">300</span>`, "AAECAwQFBgcICQoLDA0ODw", "127.0.0.1:9193", "behind: 3 (lag 300)",
			"this node: leader in term 4"}},
		{"/ui/topics", []string{`href="/ui/topics/orders"`, "users", "__consumer_offsets", "internal", "2.9 MiB",
			"1,234,737", "billing <b>47</b>", `href="/v1/topics"`}},
		{"/ui/topics?q=USE", []string{"users", "1 of 3 topics"}},
		{"/ui/topics/orders", []string{"retention.ms", "604800000 (7d)", "DYNAMIC_TOPIC_CONFIG", "STATIC_BROKER_CONFIG",
			"(sensitive)", `href="/ui/topics/orders/0"`, "1,234,567", "minibar", `href="/v1/topics/orders"`}},
		{"/ui/topics/orders/0", []string{`data-marker="log-start" data-offset="120"`, `data-marker="lso" data-offset="280"`,
			`data-marker="hw" data-offset="290"`, `data-marker="leo" data-offset="300"`, `data-replica="2"`,
			`data-marker="group" data-group="billing" data-offset="250"`, "retention deletes next", "Browse messages",
			"out of ISR", "deleted next", `href="/v1/partitions/orders/0"`, "segment 0 is older than retention.ms"}},
		{"/ui/topics/orders/1", []string{"empty log: log start offset = LEO = 1,234,567", `data-marker="hw" data-offset="1234567"`}},
		{"/ui/topics/users/0", []string{"dirty ratio 0.31 is below min.cleanable.dirty.ratio 0.50", `data-threshold="0.50"`,
			`data-marker="cleaner-point" data-offset="500"`, `class="uncleanable"`, "active segment", "Not eligible."}},
		{"/ui/compaction", []string{"__consumer_offsets / 0", "users / 0", "eligible", "below min.cleanable.dirty.ratio",
			"after more writes", "1 eligible"}},
		{"/ui/groups", []string{`href="/ui/groups/billing"`, "Stable", "cooperative-sticky", `href="/v1/groups"`}},
		{"/ui/groups/billing", []string{"billing-1-4f1c", "billing-svc", "orders</a>: 0, 1", "1,234,560", "<b>47</b>",
			`href="/v1/groups/billing"`}},
		{"/ui/topics/orders/0/messages", []string{"order-120", "50 records from offset <code>120</code>", "page full",
			`href="/ui/topics/orders/0/messages?offset=170"`, "data-stop-scan", `href="/v1/partitions/orders/0/records?max_records=50&amp;offset=120"`}},
	} {
		code, body, hdr := get(t, a.Handler(), tc.path)
		if code != http.StatusOK {
			t.Errorf("GET %s = %d, want 200:\n%s", tc.path, code, body)
			continue
		}
		if ct := hdr.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", tc.path, ct)
		}
		if hdr.Get("Content-Security-Policy") == "" {
			t.Errorf("GET %s: no Content-Security-Policy", tc.path)
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s: body lacks %q", tc.path, w)
			}
		}
		// The CSP forbids inline code and styles; the pages must not need them.
		if m := regexp.MustCompile(`<script>|<script [^>]*>[^<]|\sstyle=|\son[a-z]+=`).FindString(body); m != "" {
			t.Errorf("GET %s: inline script or style %q", tc.path, m)
		}
		if strings.Contains(body, "secret-do-not-show") {
			t.Errorf("GET %s shows a sensitive config value", tc.path)
		}
	}
}

// TestConsoleOverviewStrays: stray logs show on the overview (a health box
// and a table naming each), and not at all when there are none.
func TestConsoleOverviewStrays(t *testing.T) {
	src := newFakeSource()
	a := newConsoleAdmin(t, src)
	if _, body, _ := get(t, a.Handler(), "/"); strings.Contains(body, `id="stray-logs"`) {
		t.Error("the overview shows a stray logs table without stray logs")
	}
	src.cluster.StrayLogs = 1
	src.cluster.MetadataDir = "/var/lib/gregor"
	src.cluster.LogDirs[0].Strays = []StrayLogView{{Name: "orders-3.0123456789abcdef0123456789abcdef-stray", Topic: "orders", Partition: 3, SizeBytes: 2048}}
	_, body, _ := get(t, a.Handler(), "/")
	for _, w := range []string{`id="stray-logs"`, "orders-3.0123456789abcdef0123456789abcdef-stray", "2.0 KiB",
		`<div class="hbox warn" title="partition logs on disk that the metadata does not know: kept, not served"><span class="hname">stray logs</span><span class="hval">1</span>`,
		"metadata dir"} {
		if !strings.Contains(body, w) {
			t.Errorf("overview with a stray log lacks %q", w)
		}
	}
}

// Without a quorum leader the overview says why it cannot show the
// voters' logs, and marks the quorum bad.
func TestConsoleOverviewNoQuorumLeader(t *testing.T) {
	src := newFakeSource()
	src.cluster.Quorum = &QuorumView{LeaderID: -1, Error: "no metadata quorum leader is known",
		Voters: []VoterView{{NodeID: 1, Endpoint: "127.0.0.1:9093", LogEndOffset: -1, Lag: -1}}}
	_, body, _ := get(t, newConsoleAdmin(t, src).Handler(), "/")
	for _, w := range []string{`<div class="hbox bad" title="no metadata quorum leader is known"><span class="hname">metadata quorum</span><span class="hval">no leader</span>`,
		`<p class="bad">no metadata quorum leader is known</p>`} {
		if !strings.Contains(body, w) {
			t.Errorf("overview without a quorum leader lacks %q", w)
		}
	}
}

func TestConsoleNotFound(t *testing.T) {
	a := newConsoleAdmin(t, newFakeSource())
	for _, path := range []string{
		"/ui/topics/nope", "/ui/topics/nope/0", "/ui/topics/orders/9", "/ui/topics/orders/x",
		"/ui/topics/orders/-1", "/ui/groups/nope", "/ui/topics/nope/0/messages", "/ui/nothing/here",
	} {
		code, body, _ := get(t, a.Handler(), path)
		if code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, code)
		}
		if !strings.Contains(body, "404 Not Found") || !strings.Contains(body, "not found") || !strings.Contains(body, "<nav") {
			t.Errorf("GET %s: not the console's 404 page:\n%s", path, body)
		}
	}
	for _, path := range []string{
		"/ui/topics/orders/0/messages?from=sideways", "/ui/topics/orders/0/messages?offset=-4",
		"/ui/topics/orders/0/messages?limit=100000", "/ui/topics/orders/0/messages?from=timestamp&ts=yesterday",
		"/ui/topics/orders/0/messages?isolation=dirty", "/ui/topics/orders/0/messages?as=hex",
	} {
		if code, body, _ := get(t, a.Handler(), path); code != http.StatusBadRequest || !strings.Contains(body, "400 Bad Request") {
			t.Errorf("GET %s = %d, want the 400 page:\n%s", path, code, body)
		}
	}
}

// TestConsoleEscapes checks that keys, header names and group ids that are
// HTML reach the page as text, wherever they appear.
func TestConsoleEscapes(t *testing.T) {
	a := newConsoleAdmin(t, newFakeSource())
	for _, path := range []string{
		"/ui/topics/orders/0/messages?offset=125", "/ui/topics", "/ui/topics/orders/0", "/ui/groups",
		"/ui/groups/" + url.PathEscape(xssGroup),
	} {
		code, body, _ := get(t, a.Handler(), path)
		if code != http.StatusOK {
			t.Fatalf("GET %s = %d:\n%s", path, code, body)
		}
		for _, raw := range []string{`<script>alert(`, `trace<b>`} {
			if strings.Contains(body, raw) {
				t.Errorf("GET %s: unescaped %q in the page", path, raw)
			}
		}
	}
	_, body, _ := get(t, a.Handler(), "/ui/topics/orders/0/messages?offset=125")
	for _, want := range []string{`&lt;script&gt;alert(&#34;k&#34;)&lt;/script&gt;`, `trace&lt;b&gt;`} {
		if !strings.Contains(body, want) {
			t.Errorf("messages page lacks the escaped %q", want)
		}
	}
	// The group link keeps the id one path segment.
	_, body, _ = get(t, a.Handler(), "/ui/groups")
	if !strings.Contains(body, `href="/ui/groups/audit%3Cscript%3Ealert%28%22g%22%29%3C%2Fscript%3E"`) {
		t.Errorf("groups page: group link not path-escaped:\n%s", body)
	}
}

func TestConsoleMessageBrowser(t *testing.T) {
	src := newFakeSource()
	a := newConsoleAdmin(t, src)
	page := func(q string) string {
		t.Helper()
		code, body, _ := get(t, a.Handler(), "/ui/topics/orders/0/messages?"+q)
		if code != http.StatusOK {
			t.Fatalf("messages?%s = %d:\n%s", q, code, body)
		}
		return body
	}
	body := page("offset=128&limit=10")
	for _, want := range []string{"order-128", "order-137", `data-stop-reason="max_records"`,
		`<span class="badge delete">tombstone</span>`, `<span class="null">null</span>`, "/wD&#43;AQ==", "base64",
		"2,953 more characters", `<tr class="tombstone">`, `href="/ui/topics/orders/0/messages?limit=10&amp;offset=138"`,
		`href="/ui/topics/orders/0/messages?limit=10&amp;offset=120"`} {
		if !strings.Contains(body, want) {
			t.Errorf("offset=128&limit=10: lacks %q", want)
		}
	}
	if strings.Contains(body, "order-138") || strings.Contains(body, "order-127") {
		t.Errorf("offset=128&limit=10 shows records outside [128, 138)")
	}

	// The bound: read_committed stops at the LSO (280), read_uncommitted at the HW (290).
	body = page("offset=270&isolation=read_committed")
	if !strings.Contains(body, "order-279") || strings.Contains(body, "order-280") || !strings.Contains(body, "reached the end (LSO <code>280</code>)") {
		t.Errorf("read_committed from 270: want records up to 279 and the end at the LSO")
	}
	// "newest" is the last page below the bound the page reads to.
	if !strings.Contains(body, `href="/ui/topics/orders/0/messages?isolation=read_committed&amp;offset=230">newest</a>`) {
		t.Errorf("read_committed: the newest link does not end at the LSO (280)")
	}
	body = page("offset=270")
	if !strings.Contains(body, `href="/ui/topics/orders/0/messages?offset=240">newest</a>`) {
		t.Errorf("read_uncommitted: the newest link does not end at the HW (290)")
	}
	if !strings.Contains(body, "order-289") || strings.Contains(body, "order-290") || !strings.Contains(body, "reached the end (HW <code>290</code>)") {
		t.Errorf("read_uncommitted from 270: want records up to 289 and the end at the HW")
	}

	// By time: record o has timestamp t0 + (o−300)s; 2025-01-02T03:01:05 is o=120+...=120.
	ts := fakeT0.Add(-100 * time.Second) // offset 200
	body = page("from=timestamp&limit=10&ts=" + url.QueryEscape(ts.Format("2006-01-02T15:04:05")))
	if !strings.Contains(body, "from offset <code>200</code>") || !strings.Contains(body, "order-200") || strings.Contains(body, "order-199") {
		t.Errorf("from a timestamp: want the page to start at offset 200")
	}
	if !strings.Contains(body, `value="`+ts.Format("2006-01-02T15:04:05")+`"`) {
		t.Errorf("from a timestamp: the time input lost its value")
	}

	// base64 on demand, for text too.
	body = page("offset=120&limit=1&as=base64")
	if !strings.Contains(body, "b3JkZXItMTIw") { // "order-120"
		t.Errorf("as=base64: key not shown in base64")
	}

	// Below the log start offset the scan starts at it.
	body = page("offset=3&limit=1")
	if !strings.Contains(body, "from offset <code>120</code>") {
		t.Errorf("offset below the log start: want the scan to start at 120")
	}
}

// TestConsoleMessageScanStops checks that a scan that would run long ends
// when the client goes away, and that the page's first part (with the Stop
// button) was written before the scan.
func TestConsoleMessageScanStops(t *testing.T) {
	src := newFakeSource()
	src.slowTopic = "orders"
	a := newConsoleAdmin(t, src)
	ctx, cancel := context.WithCancel(context.Background())
	rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder(), flushed: make(chan string, 1)}
	req := httptest.NewRequest(http.MethodGet, "/ui/topics/orders/0/messages", nil).WithContext(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Handler().ServeHTTP(rec, req)
	}()
	select {
	case head := <-rec.flushed:
		if !strings.Contains(head, "data-stop-scan") || strings.Contains(head, "</html>") {
			t.Errorf("first part of the page:\n%s", head)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the page's first part was not flushed before the scan")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the scan did not end when the request was canceled")
	}
}

type flushRecorder struct {
	*httptest.ResponseRecorder
	flushed chan string
}

func (r *flushRecorder) Flush() {
	select {
	case r.flushed <- r.Body.String():
	default:
	}
	r.ResponseRecorder.Flush()
}

func TestConsoleStatic(t *testing.T) {
	a := newConsoleAdmin(t, newFakeSource())
	c := &console{}
	c.loadStatic()
	for name, ct := range map[string]string{"console.css": "text/css", "console.js": "text/javascript", "favicon.svg": "image/svg+xml"} {
		code, body, hdr := get(t, a.Handler(), c.staticURL(name))
		if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), ct) || len(body) == 0 {
			t.Errorf("%s: %d %q (%d bytes)", name, code, hdr.Get("Content-Type"), len(body))
		}
		if !strings.Contains(hdr.Get("Cache-Control"), "immutable") {
			t.Errorf("%s: versioned URL not cacheable: %q", name, hdr.Get("Cache-Control"))
		}
	}
	if code, _, _ := get(t, a.Handler(), "/ui/static/nope.js"); code != http.StatusNotFound {
		t.Errorf("unknown asset: %d", code)
	}
	// No page refers to anything off this server.
	_, body, _ := get(t, a.Handler(), "/ui/topics/orders/0")
	if m := regexp.MustCompile(`(src|href)="(https?:)?//`).FindString(body); m != "" {
		t.Errorf("partition page loads from elsewhere: %s", m)
	}
}

var markerRE = regexp.MustCompile(`<line class="marker [^"]*" data-marker="([a-z-]+)" data-offset="(-?\d+)"[^>]* x1="([0-9.]+)"`)

// drawnMarkers reads the main markers back from a rendered partition page.
func drawnMarkers(t *testing.T, body string) map[string]float64 {
	t.Helper()
	xs := map[string]float64{}
	for _, m := range markerRE.FindAllStringSubmatch(body, -1) {
		x, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("marker %s: x %q", m[1], m[3])
		}
		if m[1] != "replica-leo" {
			xs[m[1]] = x
		}
	}
	for _, k := range []string{"log-start", "lso", "hw", "leo"} {
		if _, ok := xs[k]; !ok {
			t.Fatalf("no %s marker drawn", k)
		}
	}
	return xs
}

func TestOffsetsBarMarkersInOrder(t *testing.T) {
	a := newConsoleAdmin(t, newFakeSource())
	_, body, _ := get(t, a.Handler(), "/ui/topics/orders/0")
	xs := drawnMarkers(t, body)
	if !(xs["log-start"] < xs["lso"] && xs["lso"] < xs["hw"] && xs["hw"] < xs["leo"]) {
		t.Errorf("markers out of order: %v", xs)
	}
	// Scale: [0, 300) over the plot, so offset 120 is at 40%.
	if want := barLeft + 0.4*barPlot; math.Abs(xs["log-start"]-want) > 0.1 {
		t.Errorf("log start drawn at x=%.1f, want %.1f", xs["log-start"], want)
	}
}

func TestOffsetsBarEdgeCases(t *testing.T) {
	t.Run("empty log", func(t *testing.T) {
		pv := newFakeSource().partitions[tpKey("orders", 1)]
		b := buildOffsetsBar(&pv, fakeT0)
		if !b.Empty || len(b.Segments) != 1 || b.Segments[0].Class != "seg-empty" {
			t.Fatalf("empty log drawn as %+v", b.Segments)
		}
		for _, m := range b.Markers {
			if m.X != barLeft {
				t.Errorf("%s at %.1f, want every marker at the left edge", m.Kind, m.X)
			}
		}
	})
	t.Run("one huge segment", func(t *testing.T) {
		pv := PartitionView{PartitionSummary: PartitionSummary{Offsets: Offsets{LogStart: 0, LSO: math.MaxInt64 - 2, HW: math.MaxInt64 - 1, LEO: math.MaxInt64}},
			SegmentList: []SegmentView{{BaseOffset: 0, EndOffset: math.MaxInt64, SizeBytes: math.MaxInt64 / 2, Active: true}}}
		b := buildOffsetsBar(&pv, fakeT0)
		checkBar(t, b)
		if len(b.Segments) != 1 || math.Abs(b.Segments[0].W-barPlot) > 0.01 {
			t.Errorf("one segment should span the plot: %+v", b.Segments)
		}
	})
	t.Run("thousands of segments near 2^62", func(t *testing.T) {
		pv := hugePartition(5000)
		b := buildOffsetsBar(&pv, fakeT0)
		checkBar(t, b)
		if len(b.Segments) != maxBarSegments || b.MergedSegments != 5000-maxBarSegments+1 {
			t.Errorf("drew %d segment blocks with %d merged, want %d blocks", len(b.Segments), b.MergedSegments, maxBarSegments)
		}
		if len(b.Notes) == 0 || !strings.Contains(b.Notes[0], "5,000 segments") {
			t.Errorf("no note about merged segments: %q", b.Notes)
		}
		merged := b.Segments[maxBarSegments/2]
		if merged.Class != "seg-merged" || merged.From != pv.SegmentList[maxBarSegments/2].BaseOffset {
			t.Errorf("middle block %+v", merged)
		}
		if last := b.Segments[len(b.Segments)-1]; last.Class != "seg-active" || last.To != pv.LEO {
			t.Errorf("last block %+v is not the active segment", last)
		}
		if got := shortOffset(pv.LEO); got != "4.62E" {
			t.Errorf("shortOffset(%d) = %q", pv.LEO, got)
		}
		// The page renders it, with exact numbers in the table.
		src := newFakeSource()
		src.partitions[tpKey("huge", 0)] = pv
		a := newConsoleAdmin(t, src)
		code, body, _ := get(t, a.Handler(), "/ui/topics/huge/0")
		if code != http.StatusOK {
			t.Fatalf("huge partition page: %d", code)
		}
		if !strings.Contains(body, formatInt(pv.LEO)) || !strings.Contains(body, "5,000 segments: the first 120 and the last 119") {
			t.Errorf("huge partition page lacks the exact LEO or the merge note")
		}
		xs := drawnMarkers(t, body)
		if !(xs["log-start"] <= xs["lso"] && xs["lso"] <= xs["hw"] && xs["hw"] <= xs["leo"]) {
			t.Errorf("markers out of order: %v", xs)
		}
	})
	t.Run("group offsets outside the log", func(t *testing.T) {
		pv := newFakeSource().partitions[tpKey("orders", 0)]
		// Drop the oldest segment so the drawn range starts above offset 0.
		pv.SegmentList = pv.SegmentList[1:]
		pv.Groups = append(pv.Groups, GroupOffset{Group: "ahead", Committed: 10_000}, GroupOffset{Group: "behind", Committed: 0})
		b := buildOffsetsBar(&pv, fakeT0)
		checkBar(t, b)
		seen := map[string]bool{}
		for _, g := range b.Groups {
			seen[g.Group] = true
			switch g.Group {
			case "ahead":
				if g.X != barRight || !g.Clamped {
					t.Errorf("group ahead of the LEO at %.1f, pinned %v; want pinned at the right edge %.1f", g.X, g.Clamped, barRight)
				}
			case "behind":
				if g.X != barLeft || !g.Clamped {
					t.Errorf("group behind the drawn range at %.1f, pinned %v; want pinned at the left edge %.1f", g.X, g.Clamped, barLeft)
				}
			}
		}
		if !seen["ahead"] || !seen["behind"] {
			t.Errorf("groups drawn: %v, want ahead and behind", seen)
		}
	})
	t.Run("retention due later", func(t *testing.T) {
		pv := newFakeSource().partitions[tpKey("orders", 0)]
		n := *pv.Retention.Next
		n.DueMs = fakeT0.Add(90 * time.Minute).UnixMilli()
		pv.Retention.Next = &n
		b := buildOffsetsBar(&pv, fakeT0)
		if b.Retention == nil || b.Retention.Class != "ret-next later" || !strings.HasSuffix(b.RetentionLabel.Text, "(retention.ms), in 1h 30m") {
			t.Errorf("retention %+v, label %q", b.Retention, b.RetentionLabel.Text)
		}
		b = buildOffsetsBar(&pv, fakeT0.Add(2*time.Hour))
		if b.Retention.Class != "ret-next" || !strings.HasSuffix(b.RetentionLabel.Text, "at the next check") {
			t.Errorf("due retention %+v, label %q", b.Retention, b.RetentionLabel.Text)
		}
	})
	t.Run("compacted", func(t *testing.T) {
		pv := newFakeSource().partitions[tpKey("users", 0)]
		b := buildOffsetsBar(&pv, fakeT0)
		checkBar(t, b)
		var classes []string
		for _, r := range b.Cleaner {
			classes = append(classes, r.Class+":"+strconv.FormatInt(r.From, 10)+"-"+strconv.FormatInt(r.To, 10))
		}
		if got := strings.Join(classes, " "); got != "clean:0-500 dirty:500-900 uncleanable:900-1000" {
			t.Errorf("cleaner strip %s", got)
		}
	})
}

// TestOffsetsBarProperties draws random partitions: markers never leave the
// drawing and their x order follows their offset order.
func TestOffsetsBarProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		span := rapid.OneOf(rapid.Int64Range(0, 1000), rapid.Int64Range(0, math.MaxInt64/4)).Draw(t, "span")
		start := rapid.Int64Range(0, math.MaxInt64/2).Draw(t, "start")
		pick := func(name string, lo, hi int64) int64 { return rapid.Int64Range(lo, hi).Draw(t, name) }
		leo := start + span
		hw := pick("hw", start, leo)
		lso := pick("lso", start, hw)
		nseg := rapid.IntRange(1, 600).Draw(t, "segments")
		pv := PartitionView{PartitionSummary: PartitionSummary{Offsets: Offsets{LogStart: start, LSO: lso, HW: hw, LEO: leo}}}
		base := pick("base", max(start-1000, 0), start)
		for i := 0; i < nseg; i++ {
			end := leo
			if i < nseg-1 {
				end = pick("end", base, leo)
			}
			pv.SegmentList = append(pv.SegmentList, SegmentView{BaseOffset: base, EndOffset: end, SizeBytes: pick("size", 0, 1<<40), Active: i == nseg-1})
			base = end
		}
		for i := range rapid.IntRange(0, 5).Draw(t, "groups") {
			pv.Groups = append(pv.Groups, GroupOffset{Group: strconv.Itoa(i), Committed: pick("committed", 0, math.MaxInt64)})
		}
		b := buildOffsetsBar(&pv, fakeT0)
		checkBar(t, b)
	})
}

// checkBar checks what holds for every bar: finite coordinates inside the
// viewBox, markers in offset order, and log start ≤ LSO ≤ HW ≤ LEO in x.
func checkBar(t interface {
	Helper()
	Errorf(string, ...any)
}, b *offsetsBar) {
	t.Helper()
	ok := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 && v <= barWidth }
	if !sortedByOffset(b.Markers) {
		t.Errorf("markers not sorted by offset")
	}
	xs := map[string]float64{}
	for i, m := range b.Markers {
		if !ok(m.X) || m.Y1 > m.Y2 || !ok(m.Y1) {
			t.Errorf("marker %s at (%v, %v–%v)", m.Kind, m.X, m.Y1, m.Y2)
		}
		if i > 0 && m.X < b.Markers[i-1].X {
			t.Errorf("marker %s (%d) drawn left of %s (%d)", m.Kind, m.Offset, b.Markers[i-1].Kind, b.Markers[i-1].Offset)
		}
		if m.Kind != "replica-leo" {
			xs[m.Kind] = m.X
		}
	}
	if !(xs["log-start"] <= xs["lso"] && xs["lso"] <= xs["hw"] && xs["hw"] <= xs["leo"]) {
		t.Errorf("main markers out of order: %v", xs)
	}
	for _, r := range append(append(append([]barRect{}, b.Segments...), b.ByBytes...), b.Cleaner...) {
		if !ok(r.X) || !ok(r.X+r.W) || r.W < 0 {
			t.Errorf("%s rect at x=%v w=%v", r.Class, r.X, r.W)
		}
	}
	for _, g := range b.Groups {
		if !ok(g.X) {
			t.Errorf("group %s at %v", g.Group, g.X)
		}
	}
	if len(b.Segments) > maxBarSegments || len(b.Groups) > maxBarGroups {
		t.Errorf("%d segments, %d groups drawn", len(b.Segments), len(b.Groups))
	}
	if !ok(b.Height) || b.Height < b.BytesY {
		t.Errorf("height %v", b.Height)
	}
}

func TestFormatters(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{formatInt(int64(0)), "0"},
		{formatInt(int64(-1234)), "-1,234"},
		{formatInt(int64(math.MaxInt64)), "9,223,372,036,854,775,807"},
		{formatInt(int32(999)), "999"},
		{formatBytes(1023), "1023 B"},
		{formatBytes(1536), "1.5 KiB"},
		{formatBytes(100 << 30), "100 GiB"},
		{shortOffset(999_999), "999,999"},
		{shortOffset(1_250_000), "1.25M"},
		{formatDuration(26 * time.Hour), "1d 2h"},
		{formatDuration(90 * time.Second), "1m 30s"},
		{formatDurationMs(-1), "unlimited"},
		{configMs("retention.ms", "604800000"), "604800000 (7d)"},
		{configMs("segment.bytes", "1024"), "1024"},
		{relative(fakeT0, fakeT0.Add(5*time.Minute).UnixMilli()), "in 5m"},
		{relative(fakeT0, fakeT0.Add(-time.Hour).UnixMilli()), "1h ago"},
		{truncateRunes("héllo wörld", 5), "héll…"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if n := runeLen(showBytes(false, strings.Repeat("é", 3000), "utf8", "text", maxShownValue).Text); n != maxShownValue {
		t.Errorf("shown value has %d characters, want %d", n, maxShownValue)
	}
}

// TestConsoleUnavailable: state the Source cannot read for a moment (groups
// while __consumer_offsets loads) is a 503 page with Retry-After, as in the
// JSON API, not an internal error.
func TestConsoleUnavailable(t *testing.T) {
	src := newAPIFakeSource()
	src.failWith = fmt.Errorf("listing consumer groups: %w: COORDINATOR_LOAD_IN_PROGRESS", ErrUnavailable)
	a := newConsoleAdmin(t, src)
	for _, path := range []string{"/ui/groups", "/ui/groups/g"} {
		code, body, hdr := get(t, a.Handler(), path)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "COORDINATOR_LOAD_IN_PROGRESS") || hdr.Get("Retry-After") != "1" {
			t.Errorf("GET %s = %d, Retry-After %q, want 503 with Retry-After 1 and the reason:\n%s", path, code, hdr.Get("Retry-After"), body)
		}
	}
}

// The overview shows each log dir's state: a full one amber with what it
// refuses, an offline one red with its cause; the readiness strip shows the
// full dir's warning.
func TestConsoleShowsLogDirStates(t *testing.T) {
	src := newFakeSource()
	src.cluster.LogDirs = []LogDirView{
		{Path: "/d1", TotalBytes: 40 << 20, FreeBytes: 300 << 10, State: LogDirFull, MinFreeBytes: 400 << 10},
		{Path: "/d2", TotalBytes: 40 << 20, FreeBytes: 20 << 20, State: LogDirOffline, Error: "sync /d2/a-0/x.log: input/output error"},
		{Path: "/d3", TotalBytes: 40 << 20, FreeBytes: 20 << 20, State: LogDirOnline},
	}
	a := newConsoleAdmin(t, src)
	a.SetCondition("log dir /d1", Warning, "full: 0.3 MiB usable")
	code, body, _ := get(t, a.Handler(), "/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d", code)
	}
	for _, w := range []string{`data-logdir-state="full"`, "full: produce refused until space is freed",
		`data-logdir-state="offline"`, "sync /d2/a-0/x.log: input/output error", `data-logdir-state="online"`,
		`class="hbox warn"`, "full: 0.3 MiB usable", "log dir errors"} {
		if !strings.Contains(body, w) {
			t.Errorf("overview lacks %q", w)
		}
	}
}
