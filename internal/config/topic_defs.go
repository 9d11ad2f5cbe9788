package config

// Topic configs: every topic config of Kafka 4.2 (LogConfig), with Kafka's
// types, defaults and validators. Kafka 4.0 removed message.format.version,
// message.timestamp.difference.max.ms and message.downconversion.enable, so
// they are unknown here too.

func topic(name string, t Type, dflt, doc string, opts ...option) Def {
	return mkDef(name, t, dflt, doc, false, opts)
}

var topicReg = newRegistry([]Def{
	topic("cleanup.policy", List, "delete",
		"delete drops old segments by time or size, compact keeps the latest record per key, both do both; an empty list keeps everything.",
		listOf(true, "compact", "delete")),
	topic("compression.type", String, "producer", "Compression of stored batches; producer keeps the producer's codec.",
		oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
	topic("compression.gzip.level", Int, "-1", "gzip level when compression.type is gzip.", gzipLevel()),
	topic("compression.lz4.level", Int, "9", "lz4 level when compression.type is lz4.", between(1, 17)),
	topic("compression.zstd.level", Int, "3", "zstd level when compression.type is zstd.", between(-131072, 22)),
	topic("delete.retention.ms", Long, "86400000", "How long tombstones survive on a compacted topic after the cleaner first passes them.", atLeast(0)),
	topic("file.delete.delay.ms", Long, "60000", "Time a deleted segment's files linger before removal.", atLeast(0)),
	topic("flush.messages", Long, maxLong, "Messages appended before the log is fsynced.", atLeast(1)),
	topic("flush.ms", Long, maxLong, "Longest time appended data stays unflushed.", atLeast(0)),
	topic("follower.replication.throttled.replicas", List, "", "Replicas throttled on the follower side, as partition:broker entries or *.", throttledReplicas()),
	topic("index.interval.bytes", Int, "4096", "Bytes of log between two offset index entries.", atLeast(0)),
	topic("leader.replication.throttled.replicas", List, "", "Replicas throttled on the leader side, as partition:broker entries or *.", throttledReplicas()),
	topic("local.retention.bytes", Long, "-2", "Local size limit of a tiered topic; -2 means retention.bytes.", atLeast(-2)),
	topic("local.retention.ms", Long, "-2", "Local time limit of a tiered topic; -2 means retention.ms.", atLeast(-2)),
	topic("max.compaction.lag.ms", Long, maxLong, "Longest time a record may stay ineligible for compaction.", atLeast(1)),
	topic("max.message.bytes", Int, "1048588", "Largest record batch accepted (after compression).", atLeast(0)),
	topic("message.timestamp.after.max.ms", Long, "3600000", "How far in the future a CreateTime timestamp may be.", atLeast(0)),
	topic("message.timestamp.before.max.ms", Long, maxLong, "How far in the past a CreateTime timestamp may be.", atLeast(0)),
	topic("message.timestamp.type", String, "CreateTime", "Whether record timestamps are the producer's (CreateTime) or the broker's (LogAppendTime).",
		oneOf("CreateTime", "LogAppendTime")),
	topic("min.cleanable.dirty.ratio", Double, "0.5", "Dirty/total ratio above which the log is compacted.", betweenFloat(0, 1)),
	topic("min.compaction.lag.ms", Long, "0", "Shortest time a record stays uncompacted.", atLeast(0)),
	topic("min.insync.replicas", Int, "1", "In-sync replicas needed for an acks=all write.", atLeast(1)),
	topic("preallocate", Boolean, "false", "Preallocate segment files when they are created."),
	topic("remote.log.copy.disable", Boolean, "false", "Stop copying segments to tiered storage."),
	topic("remote.log.delete.on.disable", Boolean, "false", "Delete tiered data when tiered storage is turned off."),
	topic("remote.storage.enable", Boolean, "false", "Keep old segments in tiered storage. Not supported by Gregor."),
	topic("retention.bytes", Long, "-1", "Largest size of a partition before old segments are deleted; -1 means no limit."),
	topic("retention.ms", Long, "604800000", "Time old segments are kept before deletion; -1 keeps forever.", atLeast(-1)),
	topic("segment.bytes", Int, "1073741824", "Largest size of one segment file.", atLeast(1048576)),
	topic("segment.index.bytes", Int, "10485760", "Size of the offset index file of a segment.", atLeast(4)),
	topic("segment.jitter.ms", Long, "0", "Largest random jitter subtracted from the roll time.", atLeast(0)),
	topic("segment.ms", Long, "604800000", "Time after which the active segment is rolled.", atLeast(1)),
	topic("unclean.leader.election.enable", Boolean, "false", "Allow an out-of-sync replica to become leader, losing data."),
	// Kafka's test-only override of segment.bytes; Gregor requires it to be positive.
	topic("internal.segment.bytes", Int, "", "Segment size override below segment.bytes' minimum, for tests.", null, internal, atLeast(1)),
})

// TopicDefs returns every topic config, in name order.
func TopicDefs() []Def { return topicReg.copies() }

// TopicDef returns the topic config called name.
func TopicDef(name string) (Def, bool) {
	d, ok := topicReg.byName[name]
	if !ok {
		return Def{}, false
	}
	return d.clone(), true
}

// conversion turns a broker synonym's value into the topic config's unit.
type conversion int

const (
	sameUnit conversion = iota
	minutesToMs
	hoursToMs
)

type synonym struct {
	name string
	conv conversion
}

// topicSynonyms is Kafka's ServerTopicConfigSynonyms: for each topic config,
// the broker configs that supply its default, highest priority first.
// Topic configs missing here have no broker default.
var topicSynonyms = map[string][]synonym{
	"segment.bytes":                   {{"log.segment.bytes", sameUnit}},
	"segment.ms":                      {{"log.roll.ms", sameUnit}, {"log.roll.hours", hoursToMs}},
	"segment.jitter.ms":               {{"log.roll.jitter.ms", sameUnit}, {"log.roll.jitter.hours", hoursToMs}},
	"segment.index.bytes":             {{"log.index.size.max.bytes", sameUnit}},
	"flush.messages":                  {{"log.flush.interval.messages", sameUnit}},
	"flush.ms":                        {{"log.flush.interval.ms", sameUnit}, {"log.flush.scheduler.interval.ms", sameUnit}},
	"retention.bytes":                 {{"log.retention.bytes", sameUnit}},
	"retention.ms":                    {{"log.retention.ms", sameUnit}, {"log.retention.minutes", minutesToMs}, {"log.retention.hours", hoursToMs}},
	"max.message.bytes":               {{"message.max.bytes", sameUnit}},
	"index.interval.bytes":            {{"log.index.interval.bytes", sameUnit}},
	"delete.retention.ms":             {{"log.cleaner.delete.retention.ms", sameUnit}},
	"min.compaction.lag.ms":           {{"log.cleaner.min.compaction.lag.ms", sameUnit}},
	"max.compaction.lag.ms":           {{"log.cleaner.max.compaction.lag.ms", sameUnit}},
	"file.delete.delay.ms":            {{"log.segment.delete.delay.ms", sameUnit}},
	"min.cleanable.dirty.ratio":       {{"log.cleaner.min.cleanable.ratio", sameUnit}},
	"cleanup.policy":                  {{"log.cleanup.policy", sameUnit}},
	"unclean.leader.election.enable":  {{"unclean.leader.election.enable", sameUnit}},
	"min.insync.replicas":             {{"min.insync.replicas", sameUnit}},
	"compression.type":                {{"compression.type", sameUnit}},
	"compression.gzip.level":          {{"compression.gzip.level", sameUnit}},
	"compression.lz4.level":           {{"compression.lz4.level", sameUnit}},
	"compression.zstd.level":          {{"compression.zstd.level", sameUnit}},
	"preallocate":                     {{"log.preallocate", sameUnit}},
	"message.timestamp.type":          {{"log.message.timestamp.type", sameUnit}},
	"message.timestamp.before.max.ms": {{"log.message.timestamp.before.max.ms", sameUnit}},
	"message.timestamp.after.max.ms":  {{"log.message.timestamp.after.max.ms", sameUnit}},
	"local.retention.ms":              {{"log.local.retention.ms", sameUnit}},
	"local.retention.bytes":           {{"log.local.retention.bytes", sameUnit}},
}

// TopicSynonyms returns the broker configs that supply the default of a topic
// config, highest priority first (retention.ms → log.retention.ms,
// log.retention.minutes, log.retention.hours). It is empty for topic configs
// without a broker default.
func TopicSynonyms(topicConfig string) []string {
	syns := topicSynonyms[topicConfig]
	out := make([]string, len(syns))
	for i, s := range syns {
		out[i] = s.name
	}
	return out
}

// brokerConfigSynonyms is Kafka's DynamicBrokerConfig.brokerConfigSynonyms
// without listener prefixes: the names one broker setting may be given under.
func brokerConfigSynonyms(name string) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	}
	return []string{name}
}
