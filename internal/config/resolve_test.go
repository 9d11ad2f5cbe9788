package config

import (
	"errors"
	"strings"
	"testing"
)

func TestSynonymPrecedence(t *testing.T) {
	const hour, minute = int64(3600000), int64(60000)
	for _, tc := range []struct {
		name      string
		static    map[string]string
		dynamic   map[string]string
		overrides map[string]string
		get       func(Topic) int64
		want      int64
	}{
		{"retention default", nil, nil, nil, retention, 168 * hour},
		{"hours", kv("log.retention.hours", "24"), nil, nil, retention, 24 * hour},
		{"minutes beat hours", kv("log.retention.hours", "24", "log.retention.minutes", "30"), nil, nil, retention, 30 * minute},
		{"ms beats minutes", kv("log.retention.hours", "24", "log.retention.minutes", "30", "log.retention.ms", "1234"), nil, nil, retention, 1234},
		{"dynamic ms beats static ms", kv("log.retention.ms", "1234"), kv("log.retention.ms", "5678"), nil, retention, 5678},
		{"dynamic ms beats static hours", kv("log.retention.hours", "1"), kv("log.retention.ms", "5678"), nil, retention, 5678},
		{"override beats all", kv("log.retention.ms", "1234"), kv("log.retention.ms", "5678"), kv("retention.ms", "42"), retention, 42},
		{"negative broker retention means forever", kv("log.retention.ms", "-5"), nil, nil, retention, -1},
		{"negative hours too", kv("log.retention.hours", "-1"), nil, nil, retention, -1},
		{"roll hours", kv("log.roll.hours", "2"), nil, nil, func(t Topic) int64 { return t.SegmentMs }, 2 * hour},
		{"roll ms beats hours", kv("log.roll.hours", "2", "log.roll.ms", "900"), nil, nil, func(t Topic) int64 { return t.SegmentMs }, 900},
		{"jitter hours", kv("log.roll.jitter.hours", "1"), nil, nil, func(t Topic) int64 { return t.SegmentJitterMs }, hour},
		{"flush.ms falls back to the scheduler interval", kv("log.flush.scheduler.interval.ms", "3000"), nil, nil, func(t Topic) int64 { return t.FlushMs }, 3000},
		{"flush.interval.ms beats the scheduler", kv("log.flush.scheduler.interval.ms", "3000", "log.flush.interval.ms", "100"), nil, nil, func(t Topic) int64 { return t.FlushMs }, 100},
		{"message.max.bytes", kv("message.max.bytes", "2000000"), nil, nil, func(t Topic) int64 { return int64(t.MaxMessageBytes) }, 2000000},
		{"log.segment.bytes", kv("log.segment.bytes", "2097152"), nil, nil, func(t Topic) int64 { return t.SegmentBytes }, 2097152},
		{"internal.segment.bytes beats segment.bytes", nil, nil, kv("segment.bytes", "2097152", "internal.segment.bytes", "4096"), func(t Topic) int64 { return t.SegmentBytes }, 4096},
		{"cleaner lag", kv("log.cleaner.min.compaction.lag.ms", "77"), nil, nil, func(t Topic) int64 { return t.MinCompactionLagMs }, 77},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := mustBroker(t, merge(minimal(), tc.static))
			if tc.dynamic != nil {
				var err error
				if b, err = b.WithDynamic(tc.dynamic); err != nil {
					t.Fatal(err)
				}
			}
			topic, err := ResolveTopic(b, tc.overrides)
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.get(topic); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func retention(t Topic) int64 { return t.RetentionMs }

func kv(pairs ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

func merge(a, b map[string]string) map[string]string {
	out := cloneMap(a)
	for k, v := range b {
		out[k] = v
	}
	return out
}

func TestResolveTopicTypedFields(t *testing.T) {
	b := mustBroker(t, minimal("log.cleanup.policy", "compact", "log.cleaner.min.cleanable.ratio", "0.25", "compression.type", "zstd"))
	topic, err := ResolveTopic(b, kv("cleanup.policy", "compact, delete", "message.timestamp.type", "LogAppendTime",
		"max.compaction.lag.ms", "1000", "segment.ms", "5000", "preallocate", "true", "min.insync.replicas", "2"))
	if err != nil {
		t.Fatal(err)
	}
	want := Topic{
		CleanupPolicyDelete: true, CleanupPolicyCompact: true, SegmentBytes: 1073741824, SegmentMs: 5000,
		SegmentIndexBytes: 10485760, IndexIntervalBytes: 4096, RetentionMs: 604800000, RetentionBytes: -1,
		MaxMessageBytes: 1048588, MessageTimestampType: "LogAppendTime", MessageTimestampBeforeMaxMs: 1<<63 - 1,
		MessageTimestampAfterMaxMs: 3600000, FileDeleteDelayMs: 60000, FlushMessages: 1<<63 - 1, FlushMs: 1<<63 - 1,
		MinInsyncReplicas: 2, DeleteRetentionMs: 86400000, MaxCompactionLagMs: 1000, MinCleanableDirtyRatio: 0.25,
		CompressionType: "zstd", CompressionGzipLevel: -1, CompressionLz4Level: 9, CompressionZstdLevel: 3, Preallocate: true,
	}
	if topic != want {
		t.Errorf("ResolveTopic =\n%+v\nwant\n%+v", topic, want)
	}
	if topic.MaxSegmentMs() != 1000 {
		t.Errorf("MaxSegmentMs = %d, want max.compaction.lag.ms on a compacted topic", topic.MaxSegmentMs())
	}
	empty, err := ResolveTopic(b, kv("cleanup.policy", ""))
	if err != nil || empty.CleanupPolicyDelete || empty.CleanupPolicyCompact {
		t.Errorf("empty cleanup.policy: %+v, %v", empty, err)
	}
}

func TestValidateTopicOverrides(t *testing.T) {
	for _, tc := range []struct {
		overrides map[string]string
		want      string
	}{
		{kv("retention.ms", "1000", "cleanup.policy", "compact"), ""},
		{kv("segment.bytes", "1048576"), ""},
		{kv("cleanup.policy", ""), ""},
		{kv("min.cleanable.dirty.ratio", "1"), ""},
		{kv("leader.replication.throttled.replicas", "0:1,1:2"), ""},
		{kv("follower.replication.throttled.replicas", "*"), ""},
		{kv("compression.gzip.level", "-1"), ""},
		{kv("retention.mss", "1"), "Unknown topic config name: retention.mss"},
		{kv("message.downconversion.enable", "true"), "Unknown topic config name: message.downconversion.enable"},
		{kv("segment.bytes", "1048575"), "Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576"},
		{kv("segment.bytes", "2147483648"), "Invalid value 2147483648 for configuration segment.bytes: Not a number of type INT"},
		{kv("retention.ms", "-2"), "Invalid value -2 for configuration retention.ms: Value must be at least -1"},
		{kv("retention.ms", "1h"), "Not a number of type LONG"},
		{kv("index.interval.bytes", "-1"), "Value must be at least 0"},
		{kv("min.cleanable.dirty.ratio", "1.01"), "Invalid value 1.01 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"},
		{kv("min.cleanable.dirty.ratio", "-0.1"), "Value must be at least 0"},
		{kv("min.cleanable.dirty.ratio", "half"), "Not a number of type DOUBLE"},
		{kv("cleanup.policy", "delete,archive"), "Invalid value archive for configuration cleanup.policy: String must be one of: compact, delete"},
		{kv("cleanup.policy", "delete,delete"), "Configuration 'cleanup.policy' values must not be duplicated."},
		{kv("message.timestamp.type", "createtime"), "String must be one of: CreateTime, LogAppendTime"},
		{kv("compression.type", "brotli"), "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{kv("compression.gzip.level", "0"), "Value must be between 1 and 9 or equal to -1"},
		{kv("compression.zstd.level", "23"), "Value must be no more than 22"},
		{kv("min.insync.replicas", "0"), "Value must be at least 1"},
		{kv("preallocate", "1"), "Expected value to be either true or false"},
		{kv("segment.ms", "0"), "Value must be at least 1"},
		{kv("leader.replication.throttled.replicas", "0-1"), "must be the literal '*' or a list of replicas"},
		{kv("min.compaction.lag.ms", "10", "max.compaction.lag.ms", "5"), "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"},
		{kv("remote.storage.enable", "true"), "Tiered Storage functionality is disabled in the broker"},
	} {
		err := ValidateTopicOverrides(tc.overrides)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%v: unexpected %v", tc.overrides, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.overrides, err, tc.want)
		}
	}
}

// An override is checked against the broker it lands on: a topic
// min.compaction.lag.ms above the broker's max lag conflicts.
func TestResolveTopicChecksAgainstBroker(t *testing.T) {
	b := mustBroker(t, minimal("log.cleaner.max.compaction.lag.ms", "100"))
	_, err := ResolveTopic(b, kv("min.compaction.lag.ms", "200"))
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "(200) > max.compaction.lag.ms (100)") {
		t.Errorf("err = %v", err)
	}
	if err := ValidateTopicOverrides(kv("min.compaction.lag.ms", "200")); err != nil {
		t.Errorf("without a broker the default max lag applies: %v", err)
	}
}
