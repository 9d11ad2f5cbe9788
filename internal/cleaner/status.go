package cleaner

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/internal/topicpart"
)

// PartitionStatus is everything the cleaner can say about one partition:
// where its clean and dirty sections are, whether and why it will be
// cleaned, how the last cleaning went, and what failed.
type PartitionStatus struct {
	Topic          string `json:"topic"`
	Partition      int32  `json:"partition"`
	LogDir         string `json:"log_dir"`
	CleanerEnabled bool   `json:"cleaner_enabled"`
	CleanupPolicy  string `json:"cleanup_policy"`
	Compacted      bool   `json:"compacted"`

	LogStartOffset   int64 `json:"log_start_offset"`
	LastStableOffset int64 `json:"last_stable_offset"`
	HighWatermark    int64 `json:"high_watermark"`
	LogEndOffset     int64 `json:"log_end_offset"`

	// CleanerPoint is the checkpointed offset below which the log is clean
	// (-1: never cleaned); FirstDirtyOffset is where the next cleaning starts.
	CleanerPoint           int64   `json:"cleaner_point"`
	FirstDirtyOffset       int64   `json:"first_dirty_offset"`
	FirstUncleanableOffset int64   `json:"first_uncleanable_offset"`
	UncleanableReason      Reason  `json:"first_uncleanable_reason"`
	CleanBytes             int64   `json:"clean_bytes"`
	DirtyBytes             int64   `json:"dirty_bytes"`
	UncleanableBytes       int64   `json:"uncleanable_bytes"`
	DirtyRatio             float64 `json:"dirty_ratio"`
	MinCleanableDirtyRatio float64 `json:"min_cleanable_dirty_ratio"`
	MinCompactionLagMs     int64   `json:"min_compaction_lag_ms"`
	MaxCompactionLagMs     int64   `json:"max_compaction_lag_ms"`
	DeleteRetentionMs      int64   `json:"delete_retention_ms"`
	MaxCompactionDelayMs   int64   `json:"max_compaction_delay_ms"`

	// Eligible: a candidate for the next round; Why explains either way.
	Eligible         bool   `json:"eligible"`
	Why              string `json:"why"`
	InProgress       bool   `json:"in_progress"`
	NextEligibleMs   int64  `json:"next_eligible_ms"` // -1: only more writes can make it eligible
	NextEligibleTime string `json:"next_eligible_time,omitempty"`

	Runs        int64              `json:"runs"`
	LastRun     *RunStats          `json:"last_run,omitempty"`
	Uncleanable *UncleanableStatus `json:"uncleanable,omitempty"`
}

// UncleanableStatus is a partition's cleaning failure.
type UncleanableStatus struct {
	Error     string `json:"error"`
	SinceMs   int64  `json:"since_ms"`
	Failures  int    `json:"failures"`
	RetryAtMs int64  `json:"retry_at_ms"`
}

// Status reports on tp; ok is false when the partition is not hosted.
func (c *Cleaner) Status(tp topicpart.TopicPartition) (PartitionStatus, bool) {
	p, ok := c.o.Logs.Partition(tp)
	if !ok {
		return PartitionStatus{}, false
	}
	part := &p
	nowMs := c.o.Clock.Now().UnixMilli()
	v, ok := c.assess(*part, nowMs)
	if !ok {
		return PartitionStatus{}, false
	}
	cfg := v.snap.Config
	var policy []string
	if cfg.Compact {
		policy = append(policy, "compact")
	}
	if cfg.Delete {
		policy = append(policy, "delete")
	}
	a := v.a
	s := PartitionStatus{
		Topic: tp.Topic, Partition: tp.Partition, LogDir: part.Dir,
		CleanerEnabled: c.Running(), CleanupPolicy: strings.Join(policy, ","), Compacted: cfg.Compact,
		LogStartOffset: v.snap.LogStartOffset, LastStableOffset: v.snap.LastStableOffset,
		HighWatermark: v.snap.HighWatermark, LogEndOffset: v.snap.LogEndOffset,
		CleanerPoint: v.st.CleanerPoint, FirstDirtyOffset: a.FirstDirtyOffset,
		FirstUncleanableOffset: a.FirstUncleanableOffset, UncleanableReason: a.UncleanableReason,
		CleanBytes: a.CleanBytes, DirtyBytes: a.DirtyBytes, UncleanableBytes: a.UncleanableBytes,
		DirtyRatio: a.DirtyRatio, MinCleanableDirtyRatio: cfg.MinCleanableDirtyRatio,
		MinCompactionLagMs: cfg.MinCompactionLagMs, MaxCompactionLagMs: cfg.MaxCompactionLagMs,
		DeleteRetentionMs: cfg.DeleteRetentionMs, MaxCompactionDelayMs: a.MaxCompactionDelayMs,
		Eligible: a.Eligible, Why: a.Why, InProgress: v.st.InProgress, NextEligibleMs: a.NextEligibleMs,
	}
	if !s.CleanerEnabled && cfg.Compact {
		s.Eligible = false
		s.Why = "the log cleaner is not running (log.cleaner.enable=false or no threads): " + a.Why
	}
	if a.NextEligibleMs >= 0 {
		s.NextEligibleTime = time.UnixMilli(a.NextEligibleMs).UTC().Format(time.RFC3339Nano)
	}
	c.mu.Lock()
	if ps := c.mu.parts[tp]; ps != nil {
		s.Runs = ps.runs
		if ps.last != nil {
			last := *ps.last
			s.LastRun = &last
		}
		if ps.err != "" {
			s.Uncleanable = &UncleanableStatus{Error: ps.err, SinceMs: ps.errSince, Failures: ps.failures, RetryAtMs: ps.retryAtMs}
		}
	}
	c.mu.Unlock()
	return s, true
}

// Handler serves GET /v1/partitions/{topic}/{partition}/cleaner: the
// partition's PartitionStatus as JSON (404 for a partition not hosted).
func (c *Cleaner) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := strconv.ParseInt(r.PathValue("partition"), 10, 32)
		if err != nil || p < 0 {
			http.Error(w, "partition must be a non-negative integer", http.StatusBadRequest)
			return
		}
		st, ok := c.Status(topicpart.TopicPartition{Topic: r.PathValue("topic"), Partition: int32(p)})
		if !ok {
			http.Error(w, "partition not hosted on this broker", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(st)
	})
}
