package main

// `gregor why compaction|retention TOPIC/PARTITION` (and `why isr`, why_isr.go): a plain explanation,
// from the broker's own state, of why a partition is or is not being
// compacted and what retention deletes next, with the config to change.
//
// Kafka's protocol carries none of this, so unlike the other client tools
// `why` reads Gregor's admin HTTP API (GET /v1/partitions/{topic}/{partition},
// an admin.PartitionView). The verdicts (eligible or not, what is due) are
// the broker's; this file only words them and picks the knob that matters.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/cleaner"
	"github.com/gregor-broker/gregor/internal/config"
)

func whyCmd() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:   "why",
		Short: "Explain, from the broker's own state, why a partition is or is not compacted, what retention deletes next, what holds its last stable offset, and why a replica is out of the ISR",
		Long: `Ask the broker why: its log cleaner's verdict on a partition (dirty ratio
against min.cleanable.dirty.ratio, what stops the cleanable range, when it is
eligible next), what its retention check deletes next and when, each with
the config to change, which transactions hold its last stable offset back
and what will end them (the hanging-transaction detector), or, from the
partition's leader, why a replica is out of the ISR and what it waits for to
rejoin.

Kafka's protocol does not carry this state, so why reads Gregor's admin HTTP
API (gregor serve --admin-listen, default 127.0.0.1:9644) instead of the
Kafka listener: point --admin or GREGOR_ADMIN at it. -o json prints the
broker's partition document (GET /v1/partitions/TOPIC/PARTITION) under
"partition_view", next to the sentences.`,
	}
	f.register(cmd, "table (sentences)")
	cmd.AddCommand(whyCompactionCmd(&f), whyRetentionCmd(&f), whyLSOCmd(&f), whyISRCmd(&f))
	return cmd
}

func whyCompactionCmd(f *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "compaction TOPIC/PARTITION",
		Short: "Why the log cleaner will or will not compact a partition, and when it may",
		Example: `  gregor why compaction users/0
  gregor why compaction __consumer_offsets/7 --admin 10.0.0.5:9644 -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeAdminPartitions(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWhy(cmd, f, args[0], explainCompaction)
		},
	}
}

func whyRetentionCmd(f *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "retention TOPIC/PARTITION",
		Short: "What the next retention check deletes from a partition, when, and why",
		Example: `  gregor why retention orders/3
  gregor why retention orders/3 -o json | jq .partition_view.retention`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeAdminPartitions(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWhy(cmd, f, args[0], explainRetention)
		},
	}
}

func whyLSOCmd(f *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "lso TOPIC/PARTITION",
		Short: "What holds a partition's last stable offset back (read_committed consumers stop there), and what ends it",
		Example: `  gregor why lso payments/0
  gregor why lso payments/0 -o json | jq .partition_view.transactions`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeAdminPartitions(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWhy(cmd, f, args[0], explainLSO)
		},
	}
}

// explainLSO words the hanging-transaction detector's verdicts.
func explainLSO(v admin.PartitionView, _ time.Time) []string {
	name := fmt.Sprintf("%s/%d", v.Topic, v.Partition)
	held := v.HW - v.LSO
	if len(v.Transactions) == 0 {
		return []string{fmt.Sprintf("%s: nothing holds the last stable offset back: it is the high watermark, %d.", name, v.HW)}
	}
	out := []string{fmt.Sprintf("%s: the last stable offset is %d, %d record(s) below the high watermark %d: read_committed consumers stop there.",
		name, v.LSO, held, v.HW)}
	for _, t := range v.Transactions {
		line := fmt.Sprintf("  [%s] from offset %d", strings.ToUpper(t.Class), t.FirstOffset)
		if t.AgeMs >= 0 {
			line += fmt.Sprintf(", %s old", (time.Duration(t.AgeMs) * time.Millisecond).Round(time.Millisecond))
		}
		out = append(out, line+": "+t.Explanation+".")
		if t.Action != "" {
			out = append(out, "    To end it: "+t.Action)
		}
	}
	return out
}

// whyOutput is `why -o json`: the sentences and the broker's document.
type whyOutput struct {
	Topic         string          `json:"topic"`
	Partition     int32           `json:"partition"`
	Explanation   []string        `json:"explanation"`
	PartitionView json.RawMessage `json:"partition_view"`
}

func runWhy(cmd *cobra.Command, f *adminFlags, arg string, explain func(admin.PartitionView, time.Time) []string) error {
	if err := f.check(); err != nil {
		return err
	}
	tp, err := parseTopicPartition(arg)
	if err != nil {
		return err
	}
	if tp.partition < 0 {
		return fmt.Errorf("%q: want TOPIC/PARTITION (why explains one partition)", arg)
	}
	base, err := f.baseURL()
	if err != nil {
		return err
	}
	ctx, cancel := f.context(cmd)
	defer cancel()
	raw, view, err := fetchPartitionView(ctx, base, tp.topic, tp.partition)
	if err != nil {
		return err
	}
	lines := explain(view, time.Now())
	w := cmd.OutOrStdout()
	if f.output == "json" {
		return writeJSON(w, whyOutput{Topic: tp.topic, Partition: tp.partition, Explanation: lines, PartitionView: raw})
	}
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	return nil
}

func partitionPath(topic string, partition int32) string {
	return "/v1/partitions/" + url.PathEscape(topic) + "/" + strconv.Itoa(int(partition))
}

// fetchPartitionView gets the broker's PartitionView, raw and decoded, and
// turns every way of failing into a sentence that says what to do.
func fetchPartitionView(ctx context.Context, base, topic string, partition int32) (json.RawMessage, admin.PartitionView, error) {
	var v admin.PartitionView
	path := partitionPath(topic, partition)
	status, body, err := adminGet(ctx, base, path)
	if err != nil {
		return nil, v, fmt.Errorf("cannot reach the admin listener at %s: %w\n%s", base, err, notGregorHint("why", base))
	}
	switch {
	case status == http.StatusNotFound:
		if msg, ok := gregorNotFound(body); ok || isGregorAdmin(ctx, base) {
			if !ok {
				msg = bodyText(body)
			}
			return nil, v, fmt.Errorf("partition %s/%d is not on the broker behind %s: %s; see gregor topic describe %s",
				topic, partition, base, msg, topic)
		}
		return nil, v, fmt.Errorf("%s has no %s (it answered 404: %s)\n%s", base, path, bodyText(body), notGregorHint("why", base))
	case status != http.StatusOK:
		return nil, v, fmt.Errorf("GET %s%s: %d %s: %s", base, path, status, http.StatusText(status), bodyText(body))
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Topic == "" {
		why := "no topic in it"
		if err != nil {
			why = err.Error()
		}
		return nil, v, fmt.Errorf("GET %s%s did not answer a partition document (%s)\n%s", base, path, why, notGregorHint("why", base))
	}
	return json.RawMessage(body), v, nil
}

// gregorNotFound recognises the /v1 API's own 404 body,
// {"error": "...", "code": "not_found"}, and returns its message.
func gregorNotFound(body []byte) (string, bool) {
	var e admin.APIError
	if json.Unmarshal(body, &e) != nil || e.Code != admin.APICodeNotFound {
		return "", false
	}
	return e.Error, true
}

// isGregorAdmin reports whether base serves Gregor's /v1 JSON API, to tell
// a missing partition from a listener that is not Gregor's.
func isGregorAdmin(ctx context.Context, base string) bool {
	status, body, err := adminGet(ctx, base, "/v1/cluster")
	if err != nil || status != http.StatusOK {
		return false
	}
	var c admin.ClusterView
	return json.Unmarshal(body, &c) == nil && c.ClusterID != ""
}

// completeAdminPartitions offers TOPIC/PARTITION names from the admin
// API's topic list; it gives up quickly when nothing answers.
func completeAdminPartitions(f *adminFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		base, err := f.baseURL()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		status, body, err := adminGet(ctx, base, "/v1/topics")
		var topics []admin.TopicSummary
		if err != nil || status != http.StatusOK || json.Unmarshal(body, &topics) != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, t := range topics {
			for p := range t.Partitions {
				if s := fmt.Sprintf("%s/%d", t.Name, p); strings.HasPrefix(s, toComplete) {
					out = append(out, s)
				}
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// configValue is the effective value of a config in the partition's view.
func configValue(v admin.PartitionView, name string) (string, bool) {
	for _, c := range v.Configs {
		if c.Name == name {
			return c.Value, true
		}
	}
	return "", false
}

func alterHint(topic, name, value string) string {
	return fmt.Sprintf("gregor topic alter-config %s --set %s=%s", topic, name, value)
}

// explainCompaction words the cleaner's status of v.
func explainCompaction(v admin.PartitionView, now time.Time) []string {
	name := fmt.Sprintf("%s/%d", v.Topic, v.Partition)
	c := v.Cleaner
	if c == nil || !c.Compacted {
		policy := v.Retention.CleanupPolicy
		if c != nil {
			policy = c.CleanupPolicy
		}
		if policy == "" {
			policy, _ = configValue(v, "cleanup.policy")
		}
		return []string{
			fmt.Sprintf("partition %s is not compacted: cleanup.policy=%s does not include compact, so the log cleaner never looks at it; retention alone removes its records (see gregor why retention %s).", name, policy, name),
			"to compact it (keeping the last record per key): " + alterHint(v.Topic, "cleanup.policy", "compact") +
				" (or compact,delete to keep retention as well)",
		}
	}
	var lines []string
	switch {
	case c.Uncleanable != nil:
		u := c.Uncleanable
		lines = append(lines, fmt.Sprintf("partition %s is uncleanable: cleaning failed %d time(s) since %s: %s; the cleaner retries at %s.",
			name, u.Failures, whenMs(u.SinceMs, now), u.Error, whenMs(u.RetryAtMs, now)))
	case c.InProgress:
		lines = append(lines, fmt.Sprintf("partition %s is being compacted now (%s).", name, c.Why))
	case c.Eligible:
		lines = append(lines, fmt.Sprintf("partition %s will be compacted: %s; the cleaner takes the eligible partition with the highest dirty ratio first.", name, c.Why))
	default:
		lines = append(lines, fmt.Sprintf("partition %s will not be compacted yet: %s.", name, c.Why))
	}
	lines = append(lines, compactionNumbers(c))
	if !c.Eligible && !c.InProgress && c.Uncleanable == nil && c.CleanerEnabled {
		if c.NextEligibleMs < 0 {
			lines = append(lines, "eligible again only when more data arrives.")
		} else {
			lines = append(lines, fmt.Sprintf("eligible again at %s without more writes.", whenMs(c.NextEligibleMs, now)))
		}
	}
	if r := c.LastRun; r != nil {
		lines = append(lines, fmt.Sprintf("last cleaned at %s: offsets %s–%s, %d of %d records removed (%d tombstones), %s → %s; %d cleaning(s) since the broker started.",
			whenMs(r.StartMs, now), groupDigits(r.FirstDirtyOffset), groupDigits(r.EndOffset-1), r.RecordsRemoved, r.RecordsRead,
			r.TombstonesRemoved, bytesText(r.BytesRead), bytesText(r.BytesWritten), c.Runs))
	}
	if h := compactionHint(v, c); h != "" {
		lines = append(lines, h)
	}
	return lines
}

// compactionNumbers is the clean/dirty split the verdict rests on.
func compactionNumbers(c *cleaner.PartitionStatus) string {
	var s string
	if cleanable := c.CleanBytes + c.DirtyBytes; cleanable > 0 {
		s = fmt.Sprintf("dirty ratio %.2f against min.cleanable.dirty.ratio %g: dirty %s of %s cleanable (offsets %s–%s, clean below %s)",
			c.DirtyRatio, c.MinCleanableDirtyRatio, bytesText(c.DirtyBytes), bytesText(cleanable),
			groupDigits(c.LogStartOffset), groupDigits(c.FirstUncleanableOffset-1), groupDigits(c.FirstDirtyOffset))
	} else {
		s = fmt.Sprintf("nothing is cleanable yet (min.cleanable.dirty.ratio %g)", c.MinCleanableDirtyRatio)
	}
	if c.FirstUncleanableOffset < c.LogEndOffset {
		s += fmt.Sprintf("; offsets %s–%s (%s) are not cleanable: %s", groupDigits(c.FirstUncleanableOffset),
			groupDigits(c.LogEndOffset-1), bytesText(c.UncleanableBytes), c.UncleanableReason)
	}
	return s + "."
}

// compactionHint is the config to change, picked by what stops cleaning.
func compactionHint(v admin.PartitionView, c *cleaner.PartitionStatus) string {
	switch {
	case !c.CleanerEnabled:
		return "the broker's log cleaner is not running: set log.cleaner.enable=true and log.cleaner.threads≥1 in its config (server.properties, or gregor serve --set log.cleaner.enable=true) and restart it."
	case c.Uncleanable != nil:
		return "the broker's log (component=log-cleaner) has the full error; the cleaner retries by itself."
	case c.InProgress || c.Eligible:
		return ""
	case c.CleanBytes+c.DirtyBytes == 0:
		return uncleanableHint(v, c)
	}
	var hints []string
	if next := suggestRatio(c.DirtyRatio); next > 0 {
		hints = append(hints, fmt.Sprintf("to clean sooner, lower min.cleanable.dirty.ratio below %.2f: %s", c.DirtyRatio,
			alterHint(v.Topic, "min.cleanable.dirty.ratio", strconv.FormatFloat(next, 'f', -1, 64))))
	}
	if c.MaxCompactionLagMs <= 0 || c.MaxCompactionLagMs == math.MaxInt64 {
		hints = append(hints, "to bound how long a record stays uncompacted whatever the ratio: "+
			alterHint(v.Topic, "max.compaction.lag.ms", "3600000"))
	}
	if c.UncleanableReason == cleaner.ReasonMinCompactionLag && c.UncleanableBytes > 0 {
		hints = append(hints, fmt.Sprintf("min.compaction.lag.ms=%d holds back newer segments; to let them count: %s",
			c.MinCompactionLagMs, alterHint(v.Topic, "min.compaction.lag.ms", "0")))
	}
	return strings.Join(hints, "; ")
}

// uncleanableHint explains an empty cleanable range by what ends it.
func uncleanableHint(v admin.PartitionView, c *cleaner.PartitionStatus) string {
	switch c.UncleanableReason {
	case cleaner.ReasonActiveSegment:
		segMs, _ := configValue(v, "segment.ms")
		segBytes, _ := configValue(v, "segment.bytes")
		s := fmt.Sprintf("the active segment is never cleaned; it rolls at segment.bytes=%s or segment.ms=%s, whichever comes first", segBytes, segMs)
		if ms, err := strconv.ParseInt(segMs, 10, 64); err == nil && ms > 60_000 {
			s += "; to roll it sooner: " + alterHint(v.Topic, "segment.ms", "60000")
		}
		return s
	case cleaner.ReasonMinCompactionLag:
		return fmt.Sprintf("records younger than min.compaction.lag.ms=%d are not cleaned; to clean them sooner: %s",
			c.MinCompactionLagMs, alterHint(v.Topic, "min.compaction.lag.ms", "0"))
	case cleaner.ReasonOpenTransaction:
		return fmt.Sprintf("an open transaction holds the last stable offset at %s; it moves when the transaction commits or aborts (at the latest after its transaction.timeout.ms); see gregor offsets %s/%d",
			groupDigits(c.LastStableOffset), v.Topic, v.Partition)
	case cleaner.ReasonHighWatermark:
		return fmt.Sprintf("records from the high watermark %s on are not yet on every in-sync replica; the cleaner waits for them", groupDigits(c.HighWatermark))
	}
	return ""
}

// suggestRatio is a round min.cleanable.dirty.ratio just under ratio
// (the cleaner wants the ratio above it), or 0 when nothing is dirty.
func suggestRatio(ratio float64) float64 {
	s := math.Floor(ratio*100) / 100
	if s >= ratio {
		s -= 0.01
	}
	if s < 0.01 {
		return 0
	}
	return math.Round(s*100) / 100
}

// explainRetention words what the broker's retention check deletes next.
func explainRetention(v admin.PartitionView, now time.Time) []string {
	name := fmt.Sprintf("%s/%d", v.Topic, v.Partition)
	r := v.Retention
	var lines []string
	switch n := r.Next; {
	case n == nil:
		lines = append(lines, fmt.Sprintf("nothing will be deleted from partition %s: %s.", name, strings.TrimSuffix(r.Why, ".")))
	case n.DueMs <= now.UnixMilli():
		lines = append(lines, fmt.Sprintf("the next retention check deletes offsets %s of partition %s (%s): %s; checks run every log.retention.check.interval.ms=%d.",
			offsetRange(n), name, segmentsText(n), retentionCause(r, n, now), r.CheckIntervalMs))
	default:
		lines = append(lines, fmt.Sprintf("retention will delete offsets %s of partition %s (%s) at %s: %s.",
			offsetRange(n), name, segmentsText(n), whenMs(n.DueMs, now), retentionCause(r, n, now)))
		if r.Why != "" {
			lines = append(lines, "broker: "+r.Why+".")
		}
	}
	lines = append(lines, retentionState(v))
	if h := retentionHint(v); h != "" {
		lines = append(lines, h)
	}
	return lines
}

func offsetRange(n *admin.RetentionNext) string {
	return groupDigits(n.FromOffset) + "–" + groupDigits(n.ToOffset-1)
}

func segmentsText(n *admin.RetentionNext) string {
	s := "segments"
	if n.Segments == 1 {
		s = "segment"
	}
	return fmt.Sprintf("%d %s, %s", n.Segments, s, bytesText(n.Bytes))
}

// retentionCause words RetentionNext.Reason with the config's value.
func retentionCause(r admin.RetentionView, n *admin.RetentionNext, now time.Time) string {
	switch n.Reason {
	case "retention.ms":
		if n.DueMs <= now.UnixMilli() {
			return fmt.Sprintf("retention.ms=%d passed for their newest record at %s", r.RetentionMs, whenMs(n.DueMs, now))
		}
		return fmt.Sprintf("retention.ms=%d passes then for their newest record", r.RetentionMs)
	case "retention.bytes":
		return fmt.Sprintf("the partition is over retention.bytes=%d", r.RetentionBytes)
	case "log start offset":
		return "they lie wholly below the log start offset, which DeleteRecords (gregor topic trim) moved"
	}
	return n.Reason
}

// retentionState is the offsets and segments line retention acts on.
func retentionState(v admin.PartitionView) string {
	segs := v.SegmentList
	var size int64
	for _, s := range segs {
		size += s.SizeBytes
	}
	s := fmt.Sprintf("log start offset %s, high watermark %s, log end offset %s; %d segment(s), %s",
		groupDigits(v.LogStart), groupDigits(v.HW), groupDigits(v.LEO), len(segs), bytesText(size))
	if len(segs) > 0 {
		a := segs[len(segs)-1]
		s += fmt.Sprintf(", the active one from offset %s (%s)", groupDigits(a.BaseOffset), bytesText(a.SizeBytes))
	}
	s += "."
	if v.LogStart > 0 {
		s += fmt.Sprintf(" Offsets below %s are gone: retention and DeleteRecords move the log start offset; compaction never does.", groupDigits(v.LogStart))
	}
	return s
}

// retentionHint is the config that changes what retention does next.
func retentionHint(v admin.PartitionView) string {
	r := v.Retention
	switch {
	case r.Next == nil && !config.ListContains(r.CleanupPolicy, "delete"):
		return "to delete by age or size as well: " + alterHint(v.Topic, "cleanup.policy", "compact,delete")
	case r.Next != nil && r.Next.Reason == "retention.ms":
		return "to keep records longer, raise retention.ms: " + alterHint(v.Topic, "retention.ms", strconv.FormatInt(doubled(r.RetentionMs), 10))
	case r.Next != nil && r.Next.Reason == "retention.bytes":
		return "to keep more, raise retention.bytes (-1: no size limit): " + alterHint(v.Topic, "retention.bytes", strconv.FormatInt(doubled(r.RetentionBytes), 10))
	case r.Next != nil:
		return ""
	case r.RetentionMs < 0 && r.RetentionBytes < 0:
		return "retention.ms and retention.bytes are both -1, so nothing is deleted by age or size; to bound it: " +
			alterHint(v.Topic, "retention.ms", "604800000")
	case len(v.SegmentList) == 1 && r.RetentionBytes >= 0 && v.SegmentList[0].SizeBytes > r.RetentionBytes:
		// retention.bytes takes a segment only while the segments after it
		// still hold retention.bytes: the only one waits for a roll.
		segMs, _ := configValue(v, "segment.ms")
		if ms, err := strconv.ParseInt(segMs, 10, 64); err == nil && ms > 3_600_000 {
			return "retention.bytes deletes a segment only once the segments after it hold retention.bytes; to roll the active segment sooner: " +
				alterHint(v.Topic, "segment.ms", "3600000")
		}
	}
	return ""
}

// doubled is a suggested larger limit: twice n, saturating.
func doubled(n int64) int64 {
	if n > math.MaxInt64/2 {
		return math.MaxInt64
	}
	return max(2*n, 1)
}

// groupDigits prints n with thousands separators (4,095).
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func bytesText(n int64) string { return humanBytes(&n) }

// whenMs prints a unix-ms time in UTC with how far it is from now.
func whenMs(ms int64, now time.Time) string {
	if ms <= 0 {
		return "-"
	}
	t := time.UnixMilli(ms).UTC()
	d := t.Sub(now).Round(time.Second)
	switch {
	case d > 0:
		return fmt.Sprintf("%s (in %s)", t.Format(time.RFC3339), d)
	case d < 0:
		return fmt.Sprintf("%s (%s ago)", t.Format(time.RFC3339), -d)
	}
	return t.Format(time.RFC3339) + " (now)"
}
