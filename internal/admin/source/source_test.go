package source_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/broker/brokertest"
)

// browser turns the record browser on: it is off by default
// (gregor.admin.record.browser.enable), and these tests read records.
const browser = "gregor.admin.record.browser.enable"

var browse = map[string]string{browser: "true"}

// The admin JSON API against a real broker: topics produced to with kgo, a
// group offset committed and DeleteRecords run with kadm, then every /v1
// route read over HTTP.

const (
	hourMs = int64(3600_000)
	// Records of orders-0 are stamped tsStep apart from ts0 on.
	tsStep = int64(10_000)
)

// getJSON GETs path from the admin listener and decodes the body into v
// (when the status is 200); it returns the status and the raw body.
func getJSON(t *testing.T, b *brokertest.Broker, path string, v any) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + b.AdminAddr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q", path, ct)
	}
	if resp.StatusCode == http.StatusOK && v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, body)
		}
	}
	return resp.StatusCode, string(body)
}

func mustGet(t *testing.T, b *brokertest.Broker, path string, v any) string {
	t.Helper()
	if code, body := getJSON(t, b, path, v); code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	data, _ := json.MarshalIndent(v, "", "  ")
	return string(data)
}

// apiFixture is a broker with topic orders (2 partitions, small segments,
// retention.ms 3h): orders-0 holds offsets 0-59, timestamps ts0 + i*tsStep,
// with log start offset 10 after DeleteRecords; orders-1 holds 5 records.
// Group g1 committed 40 on orders-0 and 2 on orders-1.
type apiFixture struct {
	b   *brokertest.Broker
	adm *kadm.Client
	ts0 int64
}

func newAPIFixture(t *testing.T) *apiFixture {
	t.Helper()
	b := brokertest.Start(t, map[string]string{"group.initial.rebalance.delay.ms": "0", browser: "true"})
	f := &apiFixture{b: b, adm: b.AdminClient(), ts0: time.Now().Add(-2*time.Hour).UnixMilli() / 1000 * 1000}
	brokertest.CreateTopic(t, f.adm, "orders", 2, map[string]string{"internal.segment.bytes": "1024", "retention.ms": strconv.FormatInt(3*hourMs, 10)})
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("orders"))
	for i := range 60 {
		r := &kgo.Record{Partition: 0, Key: []byte(fmt.Sprintf("k-%02d", i)), Value: []byte(fmt.Sprintf("value %d", i)),
			Timestamp: time.UnixMilli(f.ts0 + int64(i)*tsStep), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i))}}}
		switch i {
		case 12:
			r.Value = nil // a tombstone
		case 13:
			r.Key = []byte{0xff, 0x00, 0xfe}
		}
		brokertest.Produce(t, cl, r)
	}
	for i := range 5 {
		brokertest.Produce(t, cl, &kgo.Record{Partition: 1, Key: []byte(fmt.Sprint(i)), Value: []byte("x")})
	}
	ctx := brokertest.Context(t, 30*time.Second)
	var del kadm.Offsets
	del.AddOffset("orders", 0, 10, -1)
	dr, err := f.adm.DeleteRecords(ctx, del)
	if err != nil {
		t.Fatal(err)
	}
	for _, ps := range dr {
		for _, p := range ps {
			if p.Err != nil || p.LowWatermark != 10 {
				t.Fatalf("DeleteRecords: %+v", p)
			}
		}
	}
	var commit kadm.Offsets
	commit.AddOffset("orders", 0, 40, -1)
	commit.AddOffset("orders", 1, 2, -1)
	cr, err := f.adm.CommitOffsets(ctx, "g1", commit)
	if err == nil {
		err = cr.Error()
	}
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	// The other __consumer_offsets partitions load in the background; the
	// group listing answers once all have.
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := getJSON(t, b, "/v1/groups", nil)
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /v1/groups: %d %s", code, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return f
}

func TestAPIPartition(t *testing.T) {
	f := newAPIFixture(t)
	var pv admin.PartitionView
	body := mustGet(t, f.b, "/v1/partitions/orders/0", &pv)
	t.Logf("GET /v1/partitions/orders/0:\n%s", body)

	o := pv.Offsets
	if o.LogStart != 10 || o.LEO != 60 || !(o.LogStart <= o.LSO && o.LSO <= o.HW && o.HW <= o.LEO) || o.HW != 60 {
		t.Fatalf("offsets %+v: want log start 10 ≤ LSO ≤ HW = LEO = 60", o)
	}
	if pv.Topic != "orders" || pv.Partition != 0 || pv.Leader != 1 || len(pv.ISR) != 1 || pv.Compacted ||
		filepath.Base(pv.Dir) != "orders-0" || pv.TopicID == "" {
		t.Fatalf("partition %+v", pv.PartitionSummary)
	}
	if len(pv.ReplicaState) != 1 || !pv.ReplicaState[0].Leader || pv.ReplicaState[0].LogEndOffset != 60 {
		t.Fatalf("replicas %+v", pv.ReplicaState)
	}
	segs := pv.SegmentList
	if len(segs) < 3 || len(segs) != pv.Segments {
		t.Fatalf("%d segments (summary %d); want several", len(segs), pv.Segments)
	}
	var sum int64
	for i, s := range segs {
		sum += s.SizeBytes
		if s.Active != (i == len(segs)-1) || s.DeleteNext || s.EndOffset <= s.BaseOffset {
			t.Errorf("segment %d: %+v", i, s)
		}
		if i > 0 && segs[i-1].EndOffset != s.BaseOffset {
			t.Errorf("segment %d starts at %d, previous ends at %d", i, s.BaseOffset, segs[i-1].EndOffset)
		}
	}
	if sum != pv.SizeBytes || segs[0].BaseOffset > o.LogStart || segs[len(segs)-1].EndOffset != o.LEO {
		t.Fatalf("segments sum to %d (size %d), span [%d, %d), offsets %+v", sum, pv.SizeBytes, segs[0].BaseOffset,
			segs[len(segs)-1].EndOffset, o)
	}

	// Retention: nothing due; the oldest segment expires 3h after its
	// largest timestamp (its last record's).
	r := pv.Retention
	if r.CleanupPolicy != "delete" || r.RetentionMs != 3*hourMs || r.RetentionBytes != -1 || r.CheckIntervalMs != 300000 {
		t.Fatalf("retention %+v", r)
	}
	lastOfFirst := segs[0].EndOffset - 1
	if want := f.ts0 + lastOfFirst*tsStep; segs[0].LargestTimestampMs != want {
		t.Fatalf("first segment's largest timestamp %d, want %d (record %d)", segs[0].LargestTimestampMs, want, lastOfFirst)
	}
	if r.Next == nil || r.Next.Reason != "retention.ms" || r.Next.Segments != 1 || r.Next.FromOffset != segs[0].BaseOffset ||
		r.Next.ToOffset != segs[1].BaseOffset || r.Next.Bytes != segs[0].SizeBytes ||
		r.Next.DueMs != segs[0].LargestTimestampMs+3*hourMs+1 || !strings.Contains(r.Why, "passes retention.ms=10800000") {
		t.Fatalf("retention next %+v, why %q; segments %+v", r.Next, r.Why, segs[:2])
	}

	if len(pv.Groups) != 1 || pv.Groups[0] != (admin.GroupOffset{Group: "g1", Topic: "orders", Partition: 0, Committed: 40,
		LeaderEpoch: -1, HW: 60, Lag: 20}) {
		t.Fatalf("groups %+v", pv.Groups)
	}
	cfgs := map[string]admin.ConfigView{}
	for _, c := range pv.Configs {
		cfgs[c.Name] = c
	}
	if c := cfgs["retention.ms"]; c.Value != "10800000" || c.Source != "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("retention.ms %+v", c)
	}
	if c := cfgs["cleanup.policy"]; c.Value != "delete" || c.Source != "DEFAULT_CONFIG" {
		t.Errorf("cleanup.policy %+v", c)
	}
	if c := cfgs["internal.segment.bytes"]; c.Value != "1024" || c.Source != "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("internal.segment.bytes %+v", c)
	}
	if _, ok := cfgs["compression.type"]; ok {
		t.Errorf("partition configs hold compression.type, which does not shape the log")
	}
	if pv.Cleaner != nil {
		t.Errorf("cleaner status on a delete-only topic: %+v", pv.Cleaner)
	}

	// Make the oldest segment due (and only it): the view marks it, and the
	// next retention pass deletes exactly that.
	due := time.Now().UnixMilli() - segs[0].LargestTimestampMs - 1 - 30_000 // 30 s of slack
	if segs[1].LargestTimestampMs-segs[0].LargestTimestampMs < 60_000 {
		t.Fatalf("segments too close in time for the test: %+v", segs[:2])
	}
	alter(t, f.adm, "orders", "retention.ms", strconv.FormatInt(due, 10))
	var after admin.PartitionView
	mustGet(t, f.b, "/v1/partitions/orders/0", &after)
	n := after.Retention.Next
	if n == nil || n.Segments != 1 || n.DueMs > time.Now().UnixMilli() || !after.SegmentList[0].DeleteNext ||
		after.SegmentList[1].DeleteNext || !strings.Contains(after.Retention.Why, "the next retention check deletes 1 segment") {
		t.Fatalf("after lowering retention.ms: %+v, why %q", n, after.Retention.Why)
	}
	f.b.Logs().RunRetention()
	var pass admin.PartitionView
	mustGet(t, f.b, "/v1/partitions/orders/0", &pass)
	if pass.LogStart != n.ToOffset || len(pass.SegmentList) != len(segs)-1 || pass.SegmentList[0].BaseOffset != n.ToOffset {
		t.Fatalf("retention pass: log start %d, %d segments; plan was %+v", pass.LogStart, len(pass.SegmentList), *n)
	}

	// Expire everything: the plan takes the active segment too (the HW is
	// at the LEO), and the pass leaves one empty segment at the LEO.
	alter(t, f.adm, "orders", "retention.ms", "1")
	var all admin.PartitionView
	mustGet(t, f.b, "/v1/partitions/orders/0", &all)
	n = all.Retention.Next
	last := all.SegmentList[len(all.SegmentList)-1]
	if n == nil || n.Segments != len(all.SegmentList) || n.ToOffset != 60 || !last.Active || !last.DeleteNext ||
		!strings.Contains(all.Retention.Why, "the check rolls it") {
		t.Fatalf("everything expired: %+v, active %+v, why %q", n, last, all.Retention.Why)
	}
	f.b.Logs().RunRetention()
	var empty admin.PartitionView
	mustGet(t, f.b, "/v1/partitions/orders/0", &empty)
	if o := empty.Offsets; o.LogStart != 60 || o.LSO != 60 || o.HW != 60 || o.LEO != 60 || len(empty.SegmentList) != 1 ||
		empty.SegmentList[0].BaseOffset != 60 || empty.SegmentList[0].SizeBytes != 0 || empty.Retention.Why != "the log is empty" {
		t.Fatalf("after retention deleted everything: offsets %+v, segments %+v, why %q", o, empty.SegmentList, empty.Retention.Why)
	}
}

func alter(t *testing.T, adm *kadm.Client, topic, name, value string) {
	t.Helper()
	resp, err := adm.AlterTopicConfigs(brokertest.Context(t, 10*time.Second), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: &value}}, topic)
	if err == nil {
		_, err = resp.On(topic, nil)
	}
	if err != nil {
		t.Fatalf("alter %s %s=%s: %v", topic, name, value, err)
	}
}

func TestAPIClusterTopicsGroups(t *testing.T) {
	f := newAPIFixture(t)
	var cv admin.ClusterView
	mustGet(t, f.b, "/v1/cluster", &cv)
	if cv.NodeID != 1 || cv.ControllerID != 1 || cv.ClusterID == "" || cv.Listeners["PLAINTEXT"] != f.b.Addr().String() ||
		cv.AdminAddr != f.b.AdminAddr().String() || len(cv.Brokers) != 1 || cv.StartedAt.IsZero() || cv.Version == "" {
		t.Fatalf("cluster %+v", cv)
	}
	// orders (2 partitions) and __consumer_offsets.
	if cv.Topics != 2 || cv.Groups != 1 || cv.Offline != 0 || cv.Partitions < 3 || len(cv.LogDirs) != 1 {
		t.Fatalf("cluster counts %+v", cv)
	}
	d := cv.LogDirs[0]
	if d.Path != f.b.Dir || d.TotalBytes <= 0 || d.FreeBytes <= 0 || d.FreeBytes > d.TotalBytes || d.LogBytes <= 0 ||
		d.Partitions != cv.Partitions || d.Error != "" || cv.LogBytes != d.LogBytes {
		t.Fatalf("log dir %+v (cluster log bytes %d)", d, cv.LogBytes)
	}

	var topics []admin.TopicSummary
	mustGet(t, f.b, "/v1/topics", &topics)
	if len(topics) != 2 || topics[0].Name != "__consumer_offsets" || !topics[0].Internal || topics[0].CleanupPolicy != "compact" ||
		topics[1].Name != "orders" {
		t.Fatalf("topics %+v", topics)
	}
	orders := topics[1]
	// HW − log start: 60 − 10 on orders-0, 5 on orders-1; g1 lags 20 + 3.
	if orders.Partitions != 2 || orders.Records != 55 || orders.SizeBytes <= 0 || orders.CleanupPolicy != "delete" ||
		len(orders.ConsumerLag) != 1 || orders.ConsumerLag[0] != (admin.GroupLag{Group: "g1", Lag: 23}) {
		t.Fatalf("orders %+v", orders)
	}

	var tv admin.TopicView
	mustGet(t, f.b, "/v1/topics/orders", &tv)
	if tv.TopicSummary.Name != "orders" || len(tv.PartitionDetail) != 2 || len(tv.Configs) < 20 {
		t.Fatalf("topic %+v", tv)
	}
	var size int64
	for _, p := range tv.PartitionDetail {
		size += p.SizeBytes
	}
	p1 := tv.PartitionDetail[1]
	if size != tv.SizeBytes || tv.PartitionDetail[0].LogStart != 10 || p1.Partition != 1 || p1.LogStart != 0 || p1.HW != 5 || p1.LEO != 5 {
		t.Fatalf("partitions %+v", tv.PartitionDetail)
	}

	// A live consumer group: one member assigned both partitions.
	cons := f.b.Client(kgo.ConsumerGroup("live"), kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if fs := cons.PollRecords(brokertest.Context(t, 20*time.Second), 1); fs.Err0() != nil || fs.NumRecords() == 0 {
		t.Fatalf("consume: %v", fs.Err0())
	}
	var live admin.GroupView
	deadline := time.Now().Add(20 * time.Second)
	for {
		mustGet(t, f.b, "/v1/groups/live", &live)
		if live.State == "Stable" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if live.State != "Stable" || live.ProtocolType != "consumer" || live.Members != 1 || len(live.MemberList) != 1 ||
		len(live.MemberList[0].Assignment) != 1 || live.MemberList[0].Assignment[0].Topic != "orders" ||
		len(live.MemberList[0].Assignment[0].Partitions) != 2 || len(live.Topics) != 1 || live.Coordinator != 1 {
		t.Fatalf("live group %+v", live)
	}

	var g admin.GroupView
	mustGet(t, f.b, "/v1/groups/g1", &g)
	want := []admin.GroupOffset{
		{Group: "g1", Topic: "orders", Partition: 0, Committed: 40, LeaderEpoch: -1, HW: 60, Lag: 20},
		{Group: "g1", Topic: "orders", Partition: 1, Committed: 2, LeaderEpoch: -1, HW: 5, Lag: 3},
	}
	if g.State != "Empty" || g.Members != 0 || g.Lag != 23 || fmt.Sprint(g.Offsets) != fmt.Sprint(want) || fmt.Sprint(g.Topics) != "[orders]" {
		t.Fatalf("group g1 %+v", g)
	}
	var groups []admin.GroupSummary
	mustGet(t, f.b, "/v1/groups", &groups)
	if len(groups) != 2 || groups[0].ID != "g1" || groups[0].Lag != 23 || groups[1].ID != "live" || groups[1].Members != 1 {
		t.Fatalf("groups %+v", groups)
	}
}

func TestAPIRecords(t *testing.T) {
	f := newAPIFixture(t)
	page := func(query string) admin.RecordPage {
		t.Helper()
		var p admin.RecordPage
		mustGet(t, f.b, "/v1/partitions/orders/0/records?"+query, &p)
		return p
	}
	// From offset 0: clamped up to the log start offset.
	p := page("offset=0&max_records=5")
	if p.StartOffset != 10 || p.NextOffset != 15 || p.StopReason != "max_records" || p.Bound != 60 || len(p.Records) != 5 {
		t.Fatalf("page %+v", p)
	}
	for i, r := range p.Records {
		off := int64(10 + i)
		if r.Offset != off || r.TimestampMs != f.ts0+off*tsStep || r.TimestampType != "CreateTime" || r.Compression == "" ||
			len(r.Headers) != 1 || r.Headers[0].Key != "h" || r.Headers[0].Value != strconv.FormatInt(off, 10) {
			t.Errorf("record %d: %+v", off, r)
		}
	}
	if r := p.Records[2]; r.Key != "k-12" || r.KeyEncoding != "utf8" || !r.ValueNull || r.Value != "" {
		t.Errorf("tombstone: %+v", r)
	}
	if r := p.Records[3]; r.Key != "/wD+" || r.KeyEncoding != "base64" || r.Value != "value 13" || r.ValueEncoding != "utf8" {
		t.Errorf("binary key: %+v", r)
	}
	// The page goes on where the last one stopped, to the end.
	p = page("offset=55&max_records=100")
	if p.StartOffset != 55 || p.NextOffset != 60 || p.StopReason != "end" || len(p.Records) != 5 || p.Records[4].Offset != 59 {
		t.Fatalf("last page %+v", p)
	}
	if p = page("offset=20&isolation=read_committed&max_records=1000"); p.Bound != 60 || len(p.Records) != 40 || p.StopReason != "end" {
		t.Fatalf("read_committed page: bound %d, %d records, %s", p.Bound, len(p.Records), p.StopReason)
	}
	// max_bytes stops after the first batch (one record per batch here).
	if p = page("offset=20&max_bytes=1"); p.StopReason != "max_bytes" || len(p.Records) != 1 || p.NextOffset != 21 || p.ScannedBytes <= 1 {
		t.Fatalf("max_bytes page %+v", p)
	}
	// By timestamp: the first record at or after it.
	if p = page(fmt.Sprintf("timestamp=%d&max_records=2", f.ts0+25*tsStep-tsStep/2)); p.StartOffset != 25 || len(p.Records) != 2 || p.Records[0].Offset != 25 {
		t.Fatalf("by timestamp: %+v", p)
	}
	// Before the log start: from the log start; after the last: nothing.
	if p = page(fmt.Sprintf("timestamp=%d&max_records=1", f.ts0)); p.StartOffset != 10 {
		t.Fatalf("timestamp before log start: %+v", p)
	}
	if p = page(fmt.Sprintf("timestamp=%d", time.Now().Add(time.Hour).UnixMilli())); len(p.Records) != 0 || p.StopReason != "end" {
		t.Fatalf("timestamp after the last record: %+v", p)
	}
}

func TestAPIErrorsOnBroker(t *testing.T) {
	b := brokertest.Start(t, browse)
	brokertest.CreateTopic(t, b.AdminClient(), "t", 1, nil)
	for _, tc := range []struct {
		path   string
		status int
		code   string
	}{
		{"/v1/topics/nope", 404, "not_found"},
		{"/v1/partitions/nope/0", 404, "not_found"},
		{"/v1/partitions/t/1", 404, "not_found"},
		{"/v1/partitions/t/1/records", 404, "not_found"},
		{"/v1/groups/nope", 404, "not_found"}, // no __consumer_offsets yet
		{"/v1/partitions/t/zero", 400, "bad_request"},
		{"/v1/partitions/t/0/records?offset=-3", 400, "bad_request"},
		{"/v1/partitions/t/0/records?timestamp=now", 400, "bad_request"},
		{"/v1/partitions/t/0/records?isolation=dirty", 400, "bad_request"},
	} {
		code, body := getJSON(t, b, tc.path, nil)
		var e struct{ Error, Code string }
		if err := json.Unmarshal([]byte(body), &e); err != nil || code != tc.status || e.Code != tc.code || e.Error == "" {
			t.Errorf("GET %s: %d %s; want %d %s", tc.path, code, body, tc.status, tc.code)
		}
	}
	// An empty partition: no records, nothing for retention to delete.
	var pv admin.PartitionView
	mustGet(t, b, "/v1/partitions/t/0", &pv)
	if pv.Retention.Next != nil || pv.Retention.Why != "the log is empty" || len(pv.SegmentList) != 1 || len(pv.Groups) != 0 {
		t.Fatalf("empty partition %+v", pv)
	}
	var rp admin.RecordPage
	mustGet(t, b, "/v1/partitions/t/0/records", &rp)
	if len(rp.Records) != 0 || rp.StopReason != "end" || rp.Bound != 0 {
		t.Fatalf("empty page %+v", rp)
	}
	// The cleaner's route still answers beside the API's.
	resp, err := http.Get("http://" + b.AdminAddr().String() + "/v1/partitions/t/0/cleaner")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("cleaner route: %s", resp.Status)
	}
}

func TestAPICompactedPartition(t *testing.T) {
	b := brokertest.Start(t, map[string]string{"log.cleaner.backoff.ms": "20", browser: "true"})
	brokertest.CreateTopic(t, b.AdminClient(), "changelog", 1, map[string]string{"cleanup.policy": "compact", "internal.segment.bytes": "1024"})
	cl := b.Client(kgo.DefaultProduceTopic("changelog"))
	for i := range 60 {
		brokertest.Produce(t, cl, &kgo.Record{Key: []byte(fmt.Sprint(i % 3)), Value: []byte(strings.Repeat("v", 40))})
	}
	var pv admin.PartitionView
	deadline := time.Now().Add(30 * time.Second)
	for {
		mustGet(t, b, "/v1/partitions/changelog/0", &pv)
		if pv.Cleaner != nil && pv.Cleaner.Runs > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pv.Cleaner == nil || pv.Cleaner.Runs == 0 || !pv.Compacted || pv.LogStart != 0 {
		t.Fatalf("compacted partition: %+v, cleaner %+v", pv.PartitionSummary, pv.Cleaner)
	}
	if !pv.SegmentList[0].Clean || pv.SegmentList[len(pv.SegmentList)-1].Clean {
		t.Fatalf("clean flags %+v (first dirty offset %d)", pv.SegmentList, pv.Cleaner.FirstDirtyOffset)
	}
	if pv.Retention.Next != nil || !strings.Contains(pv.Retention.Why, "cleanup.policy=compact") {
		t.Fatalf("retention %+v", pv.Retention)
	}
	// The status alone, as the compaction board reads it.
	st, err := b.Source().Cleaner(context.Background(), "changelog", 0)
	if err != nil || st == nil || st.Topic != "changelog" || st.Runs < pv.Cleaner.Runs || st.CleanerPoint < pv.Cleaner.CleanerPoint {
		t.Fatalf("Source.Cleaner: %+v, %v; the partition view had %+v", st, err, pv.Cleaner)
	}
	if _, err := b.Source().Cleaner(context.Background(), "changelog", 1); !errors.Is(err, admin.ErrNotFound) {
		t.Fatalf("Source.Cleaner of a partition that does not exist: %v", err)
	}
}
