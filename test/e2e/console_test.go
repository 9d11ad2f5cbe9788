package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/admin/consoletest"
	"github.com/gregor-broker/gregor/internal/broker/brokertest"
)

// TestConsoleInBrowser loads every web console page from a real broker
// holding data — a topic of several segments whose log start offset
// DeleteRecords moved, a consumer group's committed offset, a compacted
// topic — in headless Chromium. No page may log an error; the partition
// page's offsets bar must draw log start ≤ LSO ≤ HW ≤ LEO at the broker's
// offsets; its screenshot is kept as a test artifact.
func TestConsoleInBrowser(t *testing.T) {
	b := brokertest.Start(t, map[string]string{"gregor.admin.record.browser.enable": "true"})
	base := "http://" + b.AdminAddr().String()
	ensureConsole(t, b, base)

	const topic, compacted, group = "console-orders", "console-users", "console-billing"
	const records, deleteBelow, committed = 600, 100, 420
	ctx := testCtx(t, 30*time.Second)
	adm := b.AdminClient()
	createTopic(t, b.Addr().String(), topic, 1, map[string]*string{"internal.segment.bytes": kadm.StringPtr("16384")})
	createTopic(t, b.Addr().String(), compacted, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact"),
		"internal.segment.bytes": kadm.StringPtr("16384")})

	// Uncompressed, in rounds: 600 records of ~100 bytes fill several
	// 16 KiB segments.
	cl := b.Client(kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	var rs []*kgo.Record
	for i := range records {
		r := &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("order-%d", i)), Value: []byte(fmt.Sprintf(`{"order":%d,"pad":"%s"}`, i, strings.Repeat("x", 64)))}
		switch i {
		case 150:
			r.Key = []byte(`<script>alert("k")</script>`)
			r.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte{0xff, 0x00}}}
		case 151:
			r.Value = nil // a tombstone
		}
		rs = append(rs, r, &kgo.Record{Topic: compacted, Key: []byte(fmt.Sprintf("user-%d", i%40)), Value: []byte(strconv.Itoa(i))})
		if len(rs) == 100 {
			produceSync(ctx, t, cl, rs...)
			rs = rs[:0]
		}
	}
	produceSync(ctx, t, cl, rs...)
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: topic, Partition: 0, At: deleteBelow})
	if resps, err := adm.DeleteRecords(ctx, del); err != nil || resps.Error() != nil {
		t.Fatalf("DeleteRecords: %v %v", err, resps.Error())
	}
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: topic, Partition: 0, At: committed, LeaderEpoch: -1})
	if resps, err := adm.CommitOffsets(ctx, group, commit); err != nil || resps.Error() != nil {
		t.Fatalf("CommitOffsets: %v %v", err, resps.Error())
	}

	br := consoletest.Start(t, 60*time.Second)
	partPage := fmt.Sprintf("%s/ui/topics/%s/0", base, topic)
	for _, page := range []string{
		base + "/", base + "/ui/topics", base + "/ui/topics/" + topic, partPage,
		fmt.Sprintf("%s/ui/topics/%s/0", base, compacted), base + "/ui/compaction",
		base + "/ui/groups", base + "/ui/groups/" + url.PathEscape(group),
		partPage + "/messages?from=timestamp&ts=" + url.QueryEscape(time.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04:05")),
	} {
		br.Visit(page, http.StatusOK)
	}
	br.Visit(partPage+"/messages?offset=148&limit=10", http.StatusOK)
	if got := br.Text("table.records tbody tr:nth-child(3) td:nth-child(3) code"); got != `<script>alert("k")</script>` {
		t.Errorf("message browser: offset 150's key reads %q", got)
	}
	br.Visit(base+"/ui/topics/no-such-topic", http.StatusNotFound)

	br.Visit(partPage, http.StatusOK)
	xs := br.CheckMarkerOrder()
	offsets := map[string]string{}
	segments, groupTicks := 0, 0
	for _, m := range br.Markers() {
		switch m.Kind {
		case "group":
			groupTicks++
			if m.Group == group && m.Offset != strconv.Itoa(committed) {
				t.Errorf("group tick at offset %s, want %d", m.Offset, committed)
			}
		default:
			offsets[m.Kind] = m.Offset
		}
	}
	if offsets["log-start"] != strconv.Itoa(deleteBelow) || offsets["leo"] != strconv.Itoa(records) {
		t.Errorf("markers: log start at %s, LEO at %s; want %d and %d", offsets["log-start"], offsets["leo"], deleteBelow, records)
	}
	if !(xs["log-start"] < xs["leo"]) {
		t.Errorf("log start (offset %d) and LEO (offset %d) drawn at x %.1f and %.1f", deleteBelow, records, xs["log-start"], xs["leo"])
	}
	if groupTicks != 1 {
		t.Errorf("%d group ticks, want 1", groupTicks)
	}
	br.Eval(`document.querySelectorAll("svg.offsets-bar .segments rect[data-from]:not(.below-start)").length`, &segments)
	if segments < 2 {
		t.Errorf("the offsets bar draws %d segments; %d records in 16 KiB segments make several", segments, records)
	}
	t.Logf("partition page screenshot: %s", br.Screenshot("console-partition-e2e.png"))
}

// ensureConsole registers the web console on the broker's admin listener
// unless the broker already does.
func ensureConsole(t *testing.T, b *brokertest.Broker, base string) {
	t.Helper()
	resp, err := http.Get(base + "/ui/topics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		admin.RegisterConsole(b.Admin(), b.Source())
	}
}
