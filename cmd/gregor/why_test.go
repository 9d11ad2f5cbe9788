package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/cleaner"
)

const mib = 1 << 20

// whyNow is the clock the explanation tests read the views at.
var whyNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func configs(kv ...string) []admin.ConfigView {
	var out []admin.ConfigView
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, admin.ConfigView{Name: kv[i], Value: kv[i+1], Source: "DEFAULT_CONFIG"})
	}
	return out
}

// compactedView is partition t/0 of a compacted topic whose cleaner status
// is st (with the offsets filled in).
func compactedView(st cleaner.PartitionStatus) admin.PartitionView {
	st.Topic, st.Partition, st.Compacted, st.CleanupPolicy = "t", 0, true, "compact"
	st.LogStartOffset, st.LastStableOffset, st.HighWatermark, st.LogEndOffset = 0, 5000, 5000, 5000
	v := admin.PartitionView{Topic: "t", Partition: 0, Cleaner: &st,
		Retention: admin.RetentionView{CleanupPolicy: "compact"},
		Configs:   configs("cleanup.policy", "compact", "segment.ms", "604800000", "segment.bytes", "1073741824", "min.cleanable.dirty.ratio", "0.5")}
	v.Offsets = admin.Offsets{LogStart: 0, LSO: 5000, HW: 5000, LEO: 5000}
	return v
}

func TestExplainCompaction(t *testing.T) {
	for _, tc := range []struct {
		name string
		view admin.PartitionView
		want []string
		not  []string
	}{{
		name: "ratio below threshold",
		view: compactedView(cleaner.PartitionStatus{CleanerEnabled: true, CleanerPoint: 3000, FirstDirtyOffset: 3000,
			FirstUncleanableOffset: 4500, UncleanableReason: cleaner.ReasonActiveSegment,
			CleanBytes: 69 * mib / 10, DirtyBytes: 31 * mib / 10, UncleanableBytes: 1 * mib, DirtyRatio: 0.31, MinCleanableDirtyRatio: 0.5,
			MaxCompactionLagMs: math.MaxInt64, NextEligibleMs: -1,
			Why: "dirty ratio 0.310 not above min.cleanable.dirty.ratio=0.5"}),
		want: []string{
			"partition t/0 will not be compacted yet: dirty ratio 0.310 not above min.cleanable.dirty.ratio=0.5.",
			"dirty ratio 0.31 against min.cleanable.dirty.ratio 0.5: dirty 3.1 MiB of 10.0 MiB cleanable (offsets 0–4,499, clean below 3,000); offsets 4,500–4,999 (1.0 MiB) are not cleanable: active segment.",
			"eligible again only when more data arrives.",
			"lower min.cleanable.dirty.ratio below 0.31: gregor topic alter-config t --set min.cleanable.dirty.ratio=0.3",
			"gregor topic alter-config t --set max.compaction.lag.ms=3600000",
		},
	}, {
		name: "eligible",
		view: compactedView(cleaner.PartitionStatus{CleanerEnabled: true, FirstDirtyOffset: 0, FirstUncleanableOffset: 4500,
			UncleanableReason: cleaner.ReasonActiveSegment, DirtyBytes: 4 * mib, DirtyRatio: 1, MinCleanableDirtyRatio: 0.5,
			Eligible: true, NextEligibleMs: whyNow.UnixMilli(), Why: "dirty ratio 1.000 above min.cleanable.dirty.ratio=0.5",
			Runs: 2, LastRun: &cleaner.RunStats{StartMs: whyNow.Add(-time.Minute).UnixMilli(), FirstDirtyOffset: 0, EndOffset: 2000,
				RecordsRead: 2000, RecordsRemoved: 1500, TombstonesRemoved: 3, BytesRead: 2 * mib, BytesWritten: 512 << 10}}),
		want: []string{
			"partition t/0 will be compacted: dirty ratio 1.000 above min.cleanable.dirty.ratio=0.5;",
			"last cleaned at 2026-03-01T11:59:00Z (1m0s ago): offsets 0–1,999, 1500 of 2000 records removed (3 tombstones), 2.0 MiB → 512.0 KiB; 2 cleaning(s)",
		},
		not: []string{"eligible again", "alter-config"},
	}, {
		name: "only the active segment",
		view: compactedView(cleaner.PartitionStatus{CleanerEnabled: true, FirstDirtyOffset: 0, FirstUncleanableOffset: 0,
			UncleanableReason: cleaner.ReasonActiveSegment, UncleanableBytes: 4096, MinCleanableDirtyRatio: 0.5, NextEligibleMs: -1,
			Why: "nothing to clean below the active segment"}),
		want: []string{
			"partition t/0 will not be compacted yet: nothing to clean below the active segment.",
			"nothing is cleanable yet (min.cleanable.dirty.ratio 0.5); offsets 0–4,999 (4.0 KiB) are not cleanable: active segment.",
			"the active segment is never cleaned; it rolls at segment.bytes=1073741824 or segment.ms=604800000, whichever comes first; to roll it sooner: gregor topic alter-config t --set segment.ms=60000",
		},
		not: []string{"min.cleanable.dirty.ratio="},
	}, {
		name: "min compaction lag",
		view: compactedView(cleaner.PartitionStatus{CleanerEnabled: true, FirstUncleanableOffset: 0,
			UncleanableReason: cleaner.ReasonMinCompactionLag, UncleanableBytes: mib, MinCompactionLagMs: 3_600_000,
			NextEligibleMs: whyNow.Add(90 * time.Second).UnixMilli(), Why: "nothing to clean below the min.compaction.lag.ms"}),
		want: []string{
			"eligible again at 2026-03-01T12:01:30Z (in 1m30s) without more writes.",
			"records younger than min.compaction.lag.ms=3600000 are not cleaned; to clean them sooner: gregor topic alter-config t --set min.compaction.lag.ms=0",
		},
	}, {
		name: "open transaction",
		view: func() admin.PartitionView {
			v := compactedView(cleaner.PartitionStatus{CleanerEnabled: true, UncleanableReason: cleaner.ReasonOpenTransaction,
				NextEligibleMs: -1, Why: "nothing to clean below the open transaction (last stable offset)"})
			v.Cleaner.LastStableOffset = 1234
			return v
		}(),
		want: []string{"an open transaction holds the last stable offset at 1,234", "gregor offsets t/0"},
	}, {
		name: "cleaner off",
		view: compactedView(cleaner.PartitionStatus{CleanerEnabled: false, DirtyBytes: mib, DirtyRatio: 1, MinCleanableDirtyRatio: 0.5,
			Why: "the log cleaner is not running (log.cleaner.enable=false or no threads): dirty ratio 1.000 above min.cleanable.dirty.ratio=0.5"}),
		want: []string{"will not be compacted yet: the log cleaner is not running", "set log.cleaner.enable=true"},
		not:  []string{"eligible again"},
	}, {
		name: "uncleanable",
		view: compactedView(cleaner.PartitionStatus{CleanerEnabled: true, DirtyBytes: mib, DirtyRatio: 1,
			Why: "uncleanable after an error; retried later", Uncleanable: &cleaner.UncleanableStatus{Error: "corrupt batch at position 42",
				SinceMs: whyNow.Add(-time.Hour).UnixMilli(), Failures: 3, RetryAtMs: whyNow.Add(time.Minute).UnixMilli()}}),
		want: []string{"partition t/0 is uncleanable: cleaning failed 3 time(s) since 2026-03-01T11:00:00Z (1h0m0s ago): corrupt batch at position 42; the cleaner retries at 2026-03-01T12:01:00Z (in 1m0s)."},
	}, {
		name: "not compacted",
		view: admin.PartitionView{Topic: "logs", Partition: 2, Retention: admin.RetentionView{CleanupPolicy: "delete"}},
		want: []string{
			"partition logs/2 is not compacted: cleanup.policy=delete does not include compact",
			"gregor topic alter-config logs --set cleanup.policy=compact",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(explainCompaction(tc.view, whyNow), "\n")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("unexpected %q in:\n%s", n, got)
				}
			}
		})
	}
}

// retentionView is partition t/0 of a delete topic with the given
// retention state and segments.
func retentionView(r admin.RetentionView, segs ...admin.SegmentView) admin.PartitionView {
	if r.CleanupPolicy == "" {
		r.CleanupPolicy = "delete"
	}
	r.CheckIntervalMs = 300000
	v := admin.PartitionView{Topic: "t", Partition: 0, Retention: r, SegmentList: segs,
		Configs: configs("cleanup.policy", r.CleanupPolicy, "segment.ms", "604800000", "segment.bytes", "1073741824")}
	v.Offsets = admin.Offsets{LogStart: segs[0].BaseOffset, HW: segs[len(segs)-1].EndOffset, LEO: segs[len(segs)-1].EndOffset}
	v.LSO = v.HW
	return v
}

func TestExplainRetention(t *testing.T) {
	twoSegs := []admin.SegmentView{
		{BaseOffset: 0, EndOffset: 2048, SizeBytes: mib, DeleteNext: true},
		{BaseOffset: 2048, EndOffset: 4096, SizeBytes: mib, DeleteNext: true},
		{BaseOffset: 4096, EndOffset: 4100, SizeBytes: 4096, Active: true},
	}
	for _, tc := range []struct {
		name string
		view admin.PartitionView
		want []string
	}{{
		name: "due now by retention.ms",
		view: retentionView(admin.RetentionView{RetentionMs: 3_600_000, RetentionBytes: -1,
			Next: &admin.RetentionNext{FromOffset: 0, ToOffset: 4096, Segments: 2, Bytes: 2 * mib, Reason: "retention.ms", DueMs: whyNow.Add(-time.Second).UnixMilli()},
			Why:  "2 segments (offsets 0–4095, 2097152 bytes) reached retention.ms=3600000"}, twoSegs...),
		want: []string{
			"the next retention check deletes offsets 0–4,095 of partition t/0 (2 segments, 2.0 MiB): retention.ms=3600000 passed for their newest record at 2026-03-01T11:59:59Z (1s ago); checks run every log.retention.check.interval.ms=300000.",
			"log start offset 0, high watermark 4,100, log end offset 4,100; 3 segment(s), 2.0 MiB, the active one from offset 4,096 (4.0 KiB).",
			"to keep records longer, raise retention.ms: gregor topic alter-config t --set retention.ms=7200000",
		},
	}, {
		name: "due later",
		view: retentionView(admin.RetentionView{RetentionMs: 3_600_000, RetentionBytes: -1,
			Next: &admin.RetentionNext{FromOffset: 0, ToOffset: 2048, Segments: 1, Bytes: mib, Reason: "retention.ms", DueMs: whyNow.Add(10 * time.Minute).UnixMilli()},
			Why:  "the oldest segment (offsets 0–2047) passes retention.ms=3600000 at 2026-03-01T12:10:00Z; 1 segment (1048576 bytes) go then; retention.bytes=-1"}, twoSegs...),
		want: []string{
			"retention will delete offsets 0–2,047 of partition t/0 (1 segment, 1.0 MiB) at 2026-03-01T12:10:00Z (in 10m0s): retention.ms=3600000 passes then for their newest record.",
			"broker: the oldest segment (offsets 0–2047) passes retention.ms=3600000",
		},
	}, {
		name: "by retention.bytes",
		view: retentionView(admin.RetentionView{RetentionMs: -1, RetentionBytes: mib,
			Next: &admin.RetentionNext{FromOffset: 0, ToOffset: 2048, Segments: 1, Bytes: mib, Reason: "retention.bytes", DueMs: whyNow.UnixMilli()},
			Why:  "the log is over retention.bytes"}, twoSegs...),
		want: []string{"the partition is over retention.bytes=1048576", "raise retention.bytes (-1: no size limit): gregor topic alter-config t --set retention.bytes=2097152"},
	}, {
		name: "below the log start offset",
		view: func() admin.PartitionView {
			v := retentionView(admin.RetentionView{RetentionMs: -1, RetentionBytes: -1,
				Next: &admin.RetentionNext{FromOffset: 0, ToOffset: 2048, Segments: 1, Bytes: mib, Reason: "log start offset", DueMs: whyNow.UnixMilli()}}, twoSegs...)
			v.LogStart = 3000
			return v
		}(),
		want: []string{
			"they lie wholly below the log start offset, which DeleteRecords (gregor topic trim) moved",
			"log start offset 3,000,",
			"Offsets below 3,000 are gone: retention and DeleteRecords move the log start offset; compaction never does.",
		},
	}, {
		name: "only the active segment, due later by retention.ms",
		view: retentionView(admin.RetentionView{RetentionMs: 3_600_000, RetentionBytes: -1,
			Next: &admin.RetentionNext{FromOffset: 0, ToOffset: 10, Segments: 1, Bytes: 1024, Reason: "retention.ms", DueMs: whyNow.Add(10 * time.Minute).UnixMilli()},
			Why: "the active segment (offsets 0–9, largest timestamp 2026-03-01T11:10:00Z) passes retention.ms=3600000 at 2026-03-01T12:10:00.001Z; " +
				"the retention check after that deletes 1 segment (1024 bytes), rolling the active segment first, so the log start offset becomes the log end offset 10; retention.bytes=-1"},
			admin.SegmentView{BaseOffset: 0, EndOffset: 10, SizeBytes: 1024, Active: true}),
		want: []string{
			"retention will delete offsets 0–9 of partition t/0 (1 segment, 1.0 KiB) at 2026-03-01T12:10:00Z (in 10m0s)",
			"broker: the active segment (offsets 0–9, largest timestamp 2026-03-01T11:10:00Z) passes retention.ms=3600000",
			"rolling the active segment first, so the log start offset becomes the log end offset 10",
			"to keep records longer, raise retention.ms: gregor topic alter-config t --set retention.ms=7200000",
		},
	}, {
		name: "only the active segment, over retention.bytes",
		view: retentionView(admin.RetentionView{RetentionMs: -1, RetentionBytes: 1000,
			Why: "retention.ms=-1; the log is 24 bytes over retention.bytes=1000, all in the active segment; a segment goes only when the segments after it hold retention.bytes, " +
				"so it goes after it rolls (at segment.bytes=1073741824 or the first append after 2026-03-08T12:00:00Z, segment.ms=604800000) and 1000 more bytes arrive"},
			admin.SegmentView{BaseOffset: 0, EndOffset: 10, SizeBytes: 1024, Active: true}),
		want: []string{
			"nothing will be deleted from partition t/0: retention.ms=-1; the log is 24 bytes over retention.bytes=1000, all in the active segment",
			"retention.bytes deletes a segment only once the segments after it hold retention.bytes; to roll the active segment sooner: gregor topic alter-config t --set segment.ms=3600000",
		},
	}, {
		name: "an empty log after retention deleted everything",
		view: func() admin.PartitionView {
			v := retentionView(admin.RetentionView{RetentionMs: 3_600_000, RetentionBytes: -1, Why: "the log is empty"},
				admin.SegmentView{BaseOffset: 4100, EndOffset: 4100, Active: true})
			v.LogStart = 4100
			return v
		}(),
		want: []string{
			"nothing will be deleted from partition t/0: the log is empty.",
			"log start offset 4,100, high watermark 4,100, log end offset 4,100; 1 segment(s), 0 B, the active one from offset 4,100 (0 B).",
		},
	}, {
		name: "compact policy",
		view: retentionView(admin.RetentionView{CleanupPolicy: "compact", RetentionMs: 604800000, RetentionBytes: -1,
			Why: "cleanup.policy=compact: retention.ms and retention.bytes do not apply"}, twoSegs...),
		want: []string{
			"nothing will be deleted from partition t/0: cleanup.policy=compact: retention.ms and retention.bytes do not apply.",
			"to delete by age or size as well: gregor topic alter-config t --set cleanup.policy=compact,delete",
		},
	}, {
		name: "unbounded",
		view: retentionView(admin.RetentionView{RetentionMs: -1, RetentionBytes: -1, Why: "retention.ms=-1 and retention.bytes=-1: retention deletes nothing"}, twoSegs...),
		want: []string{"both -1", "--set retention.ms=604800000"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(explainRetention(tc.view, whyNow), "\n")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
		})
	}
}

func TestGroupDigitsAndRatio(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 4095: "4,095", 1234567: "1,234,567", -4096: "-4,096"} {
		if got := groupDigits(n); got != want {
			t.Errorf("groupDigits(%d) = %q, want %q", n, got, want)
		}
	}
	for ratio, want := range map[float64]float64{0.31: 0.3, 0.3: 0.29, 0.5: 0.49, 0.009: 0, 0: 0, 1: 0.99} {
		if got := suggestRatio(ratio); got != want {
			t.Errorf("suggestRatio(%v) = %v, want %v", ratio, got, want)
		}
	}
}

// whySource is an admin.Source holding a few partition views: the real
// /v1 API serves it, so why is tested against the routes and error bodies
// the broker really sends.
type whySource struct{ views []admin.PartitionView }

func (s whySource) Transactions(context.Context) ([]admin.HeldPartition, error) { return nil, nil }

func (s whySource) OngoingTransactions(context.Context) (admin.OngoingView, error) {
	return admin.OngoingView{}, nil
}

func (s whySource) AutoAbort(context.Context) (admin.AutoAbortView, error) {
	return admin.AutoAbortView{}, nil
}

func (s whySource) Cluster(context.Context) (admin.ClusterView, error) {
	return admin.ClusterView{ClusterID: "test-cluster", NodeID: 1}, nil
}

func (s whySource) Topics(context.Context) ([]admin.TopicSummary, error) {
	return []admin.TopicSummary{{Name: "t", Partitions: 2}}, nil
}

func (s whySource) Topic(_ context.Context, name string) (admin.TopicView, error) {
	return admin.TopicView{}, fmt.Errorf("topic %q: %w", name, admin.ErrNotFound)
}

func (s whySource) Partition(_ context.Context, topic string, p int32) (admin.PartitionView, error) {
	for _, v := range s.views {
		if v.Topic == topic && v.Partition == p {
			return v, nil
		}
	}
	return admin.PartitionView{}, fmt.Errorf("topic %s has no partition %d: %w", topic, p, admin.ErrNotFound)
}

func (s whySource) Cleaner(ctx context.Context, topic string, p int32) (*cleaner.PartitionStatus, error) {
	v, err := s.Partition(ctx, topic, p)
	return v.Cleaner, err
}

func (s whySource) Groups(context.Context) ([]admin.GroupSummary, error) { return nil, nil }

func (s whySource) Group(_ context.Context, id string) (admin.GroupView, error) {
	return admin.GroupView{}, fmt.Errorf("group %q: %w", id, admin.ErrNotFound)
}

func (s whySource) Records(context.Context, admin.RecordQuery) (admin.RecordPage, error) {
	return admin.RecordPage{}, admin.ErrNotFound
}

// adminServer serves views through Gregor's own /v1 JSON API.
func adminServer(t *testing.T, views ...admin.PartitionView) *httptest.Server {
	t.Helper()
	a := admin.New(admin.Config{Logger: slog.New(slog.DiscardHandler)})
	admin.RegisterAPI(a, whySource{views})
	s := httptest.NewServer(a.Handler())
	t.Cleanup(s.Close)
	return s
}

func TestWhyCommand(t *testing.T) {
	view := compactedView(cleaner.PartitionStatus{CleanerEnabled: true, CleanBytes: 3 * mib, DirtyBytes: mib, DirtyRatio: 0.25,
		MinCleanableDirtyRatio: 0.5, FirstDirtyOffset: 100, FirstUncleanableOffset: 200, NextEligibleMs: -1,
		Why: "dirty ratio 0.250 not above min.cleanable.dirty.ratio=0.5"})
	view.Retention = admin.RetentionView{CleanupPolicy: "compact", Why: "cleanup.policy=compact: retention.ms and retention.bytes do not apply"}
	view.SegmentList = []admin.SegmentView{{BaseOffset: 0, EndOffset: 200, SizeBytes: 4 * mib}, {BaseOffset: 200, EndOffset: 5000, SizeBytes: mib, Active: true}}
	srv := adminServer(t, view)
	c := cli{t: t}

	out, _, err := c.exec("", true, "why", "compaction", "t/0", "--admin", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if want := "partition t/0 will not be compacted yet: dirty ratio 0.250 not above min.cleanable.dirty.ratio=0.5.\n"; !strings.HasPrefix(out, want) {
		t.Errorf("why compaction:\n%s\nwant it to start with %q", out, want)
	}

	// -o json: the sentences and the broker's document as it sent it.
	out, _, err = c.exec("", true, "why", "compaction", "t/0", "--admin", srv.URL, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Topic         string              `json:"topic"`
		Partition     int32               `json:"partition"`
		Explanation   []string            `json:"explanation"`
		PartitionView admin.PartitionView `json:"partition_view"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("why -o json: %v\n%s", err, out)
	}
	if diff := cmp.Diff(view, got.PartitionView); diff != "" {
		t.Errorf("partition_view differs from what the broker sent (-sent +printed):\n%s", diff)
	}
	if got.Topic != "t" || got.Partition != 0 || len(got.Explanation) == 0 || !strings.Contains(got.Explanation[0], view.Cleaner.Why) {
		t.Errorf("why -o json: %+v", got)
	}

	// GREGOR_ADMIN, as HOST:PORT without a scheme.
	t.Setenv("GREGOR_ADMIN", strings.TrimPrefix(srv.URL, "http://"))
	out, _, err = c.exec("", true, "why", "retention", "t/0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "nothing will be deleted from partition t/0: cleanup.policy=compact") {
		t.Errorf("why retention:\n%s", out)
	}

	// Shell completion lists partitions from the admin API.
	out, _, err = c.exec("", true, "__complete", "why", "compaction", "t/")
	if err != nil || !strings.Contains(out, "t/0\n") || !strings.Contains(out, "t/1\n") {
		t.Errorf("completion: %v\n%s", err, out)
	}

	// A Gregor listener whose 404 is not the API's own JSON body: the
	// /v1/cluster probe tells it from a listener that is not Gregor's.
	mux := http.NewServeMux()
	mux.Handle("GET /v1/cluster", srv.Config.Handler)
	plain := httptest.NewServer(mux)
	t.Cleanup(plain.Close)
	_, _, err = c.exec("", true, "why", "compaction", "t/0", "--admin", plain.URL)
	if err == nil || !strings.Contains(err.Error(), "partition t/0 is not on the broker behind "+plain.URL+": 404 page not found") {
		t.Errorf("plain 404 from Gregor: %v", err)
	}

	// A partition the broker does not have.
	_, _, err = c.exec("", true, "why", "compaction", "t/7", "--admin", srv.URL)
	if err == nil || !strings.Contains(err.Error(), "partition t/7 is not on the broker behind "+srv.URL+": topic t has no partition 7: not found") {
		t.Errorf("missing partition: %v", err)
	}
}

func TestWhyNeedsGregorAdmin(t *testing.T) {
	c := cli{t: t}
	// A listener that is not Gregor's (no /v1 API): every path is 404.
	other := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(other.Close)
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct{ admin, want string }{
		{other.URL, "has no /v1/partitions/t/0 (it answered 404: 404 page not found)"},
		{closed, "cannot reach the admin listener at http://" + closed},
	} {
		_, _, err := c.exec("", true, "why", "retention", "t/0", "--admin", tc.admin, "--timeout", "5s")
		if err == nil {
			t.Fatalf("--admin %s: no error", tc.admin)
		}
		for _, w := range []string{tc.want, "Gregor's admin HTTP listener", "--admin http://HOST:PORT or GREGOR_ADMIN"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("--admin %s: error lacks %q:\n%v", tc.admin, w, err)
			}
		}
	}
	for _, args := range [][]string{
		{"why", "compaction", "t"},
		{"why", "compaction", "t/x"},
		{"why", "retention", "t/0", "-o", "yaml"},
		{"why", "retention", "t/0", "--admin", "ftp://x"},
	} {
		if _, _, err := c.exec("", true, args...); err == nil {
			t.Errorf("gregor %s: no error", strings.Join(args, " "))
		}
	}
}
