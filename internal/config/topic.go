package config

// Topic is the effective configuration of one topic, typed for the storage
// engine. Field names follow the Kafka topic configs they come from.
type Topic struct {
	CleanupPolicyDelete  bool // cleanup.policy contains delete
	CleanupPolicyCompact bool // cleanup.policy contains compact

	SegmentBytes       int64 // segment.bytes (internal.segment.bytes when set)
	SegmentMs          int64 // segment.ms
	SegmentJitterMs    int64 // segment.jitter.ms
	SegmentIndexBytes  int32 // segment.index.bytes
	IndexIntervalBytes int32 // index.interval.bytes

	RetentionMs    int64 // retention.ms; -1 means no time limit
	RetentionBytes int64 // retention.bytes; negative means no size limit

	MaxMessageBytes             int32  // max.message.bytes
	MessageTimestampType        string // message.timestamp.type: "CreateTime" or "LogAppendTime"
	MessageTimestampBeforeMaxMs int64  // message.timestamp.before.max.ms
	MessageTimestampAfterMaxMs  int64  // message.timestamp.after.max.ms

	FileDeleteDelayMs int64 // file.delete.delay.ms
	FlushMessages     int64 // flush.messages
	FlushMs           int64 // flush.ms

	MinInsyncReplicas int32 // min.insync.replicas

	DeleteRetentionMs      int64   // delete.retention.ms
	MinCompactionLagMs     int64   // min.compaction.lag.ms
	MaxCompactionLagMs     int64   // max.compaction.lag.ms
	MinCleanableDirtyRatio float64 // min.cleanable.dirty.ratio

	CompressionType      string // compression.type: uncompressed, zstd, lz4, snappy, gzip or producer
	CompressionGzipLevel int32  // compression.gzip.level
	CompressionLz4Level  int32  // compression.lz4.level
	CompressionZstdLevel int32  // compression.zstd.level

	Preallocate                 bool // preallocate
	UncleanLeaderElectionEnable bool // unclean.leader.election.enable
}

// MaxSegmentMs is how long the active segment may stay open: segment.ms, or
// max.compaction.lag.ms when that is shorter on a compacted topic, so the
// cleaner can reach every record in time (Kafka's LogConfig.maxSegmentMs).
func (t Topic) MaxSegmentMs() int64 {
	if t.CleanupPolicyCompact && t.MaxCompactionLagMs > 0 && t.MaxCompactionLagMs < t.SegmentMs {
		return t.MaxCompactionLagMs
	}
	return t.SegmentMs
}

// ResolveTopic returns the effective config of a topic with the given
// overrides. Each config comes from the override if there is one, else from
// the first of its broker synonyms that is set in b (per-broker dynamic, then
// cluster dynamic, then static, then the broker default; minutes and hours
// converted to milliseconds), else from the topic default. b may be nil, which
// means a broker with every config at its default.
//
// The overrides are validated as CreateTopics and AlterConfigs validate them:
// unknown names, bad types, values out of range and conflicting settings give
// an error wrapping ErrInvalidConfig.
func ResolveTopic(b *Broker, overrides map[string]string) (Topic, error) {
	vals, err := resolveTopic(b, overrides)
	if err != nil {
		return Topic{}, err
	}
	return topicFromValues(vals), nil
}

// ValidateTopicOverrides checks topic overrides against the topic defs and
// default broker settings; see ResolveTopic for a check against a broker.
func ValidateTopicOverrides(overrides map[string]string) error {
	_, err := resolveTopic(nil, overrides)
	return err
}

func resolveTopic(b *Broker, overrides map[string]string) (map[string]any, error) {
	for _, k := range sortedKeys(overrides) {
		if _, ok := topicReg.byName[k]; !ok {
			return nil, invalidf("Unknown topic config name: %s", k)
		}
	}
	vals := make(map[string]any, len(topicReg.defs))
	for _, d := range topicReg.defs {
		v, _, err := topicValue(b, d, overrides)
		if err != nil {
			return nil, err
		}
		vals[d.Name] = v
	}
	if minLag, maxLag := vals["min.compaction.lag.ms"].(int64), vals["max.compaction.lag.ms"].(int64); minLag > maxLag {
		return nil, invalidf("conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", minLag, maxLag)
	}
	if vals["remote.storage.enable"].(bool) {
		return nil, invalidf("Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.")
	}
	return vals, nil
}

// topicValue resolves one topic config and says where its value came from.
func topicValue(b *Broker, d *Def, overrides map[string]string) (any, Source, error) {
	if raw, ok := overrides[d.Name]; ok {
		v, err := d.parse(raw)
		return v, SourceDynamicTopic, err
	}
	for _, s := range topicSynonyms[d.Name] {
		bv, src := b.lookup(s.name)
		if bv == nil {
			continue
		}
		v := convert(bv, s.conv)
		if n, ok := v.(int64); ok && d.Name == "retention.ms" && n < 0 {
			v = int64(-1) // Kafka's broker retention getter maps every negative value to -1
		}
		for _, c := range d.checks {
			if err := c(d.Name, v); err != nil {
				return nil, src, err
			}
		}
		return v, src, nil
	}
	return d.defaultValue(), SourceDefault, nil
}

func convert(v any, c conversion) any {
	n, ok := v.(int64)
	switch {
	case !ok:
		return v
	case c == minutesToMs:
		return n * 60 * 1000
	case c == hoursToMs:
		return n * 60 * 60 * 1000
	}
	return n
}

func topicFromValues(v map[string]any) Topic {
	i64 := func(name string) int64 { return v[name].(int64) }
	i32 := func(name string) int32 { return int32(v[name].(int64)) }
	policy := v["cleanup.policy"].([]string)
	segBytes := i64("segment.bytes")
	if n, ok := v["internal.segment.bytes"].(int64); ok {
		segBytes = n
	}
	return Topic{
		CleanupPolicyDelete:         contains(policy, "delete"),
		CleanupPolicyCompact:        contains(policy, "compact"),
		SegmentBytes:                segBytes,
		SegmentMs:                   i64("segment.ms"),
		SegmentJitterMs:             i64("segment.jitter.ms"),
		SegmentIndexBytes:           i32("segment.index.bytes"),
		IndexIntervalBytes:          i32("index.interval.bytes"),
		RetentionMs:                 i64("retention.ms"),
		RetentionBytes:              i64("retention.bytes"),
		MaxMessageBytes:             i32("max.message.bytes"),
		MessageTimestampType:        v["message.timestamp.type"].(string),
		MessageTimestampBeforeMaxMs: i64("message.timestamp.before.max.ms"),
		MessageTimestampAfterMaxMs:  i64("message.timestamp.after.max.ms"),
		FileDeleteDelayMs:           i64("file.delete.delay.ms"),
		FlushMessages:               i64("flush.messages"),
		FlushMs:                     i64("flush.ms"),
		MinInsyncReplicas:           i32("min.insync.replicas"),
		DeleteRetentionMs:           i64("delete.retention.ms"),
		MinCompactionLagMs:          i64("min.compaction.lag.ms"),
		MaxCompactionLagMs:          i64("max.compaction.lag.ms"),
		MinCleanableDirtyRatio:      v["min.cleanable.dirty.ratio"].(float64),
		CompressionType:             v["compression.type"].(string),
		CompressionGzipLevel:        i32("compression.gzip.level"),
		CompressionLz4Level:         i32("compression.lz4.level"),
		CompressionZstdLevel:        i32("compression.zstd.level"),
		Preallocate:                 v["preallocate"].(bool),
		UncleanLeaderElectionEnable: v["unclean.leader.election.enable"].(bool),
	}
}
