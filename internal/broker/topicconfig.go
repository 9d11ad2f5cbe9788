package broker

import (
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
)

// LogConfig turns a resolved topic config, and the broker-level settings a
// partition log uses (producer.id.expiration.ms), into the log's
// configuration (producer.id.expiration.ms,
// transaction.partition.verification.enable).
func LogConfig(t config.Topic, b *config.Broker) log.Config {
	return log.Config{
		SegmentBytes:       t.SegmentBytes,
		SegmentMs:          t.MaxSegmentMs(),
		SegmentJitterMs:    t.SegmentJitterMs,
		SegmentIndexBytes:  t.SegmentIndexBytes,
		IndexIntervalBytes: t.IndexIntervalBytes,
		MaxMessageBytes:    t.MaxMessageBytes,
		LogAppendTime:      t.MessageTimestampType == "LogAppendTime",
		TimestampBeforeMs:  t.MessageTimestampBeforeMaxMs,
		TimestampAfterMs:   t.MessageTimestampAfterMaxMs,
		Compact:            t.CleanupPolicyCompact,
		Delete:             t.CleanupPolicyDelete,
		RetentionMs:        t.RetentionMs,
		RetentionBytes:     t.RetentionBytes,
		FileDeleteDelayMs:  t.FileDeleteDelayMs,
		FlushMessages:      t.FlushMessages,
		FlushMs:            t.FlushMs,
		Preallocate:        t.Preallocate,
		Compression:        compression(t),

		DeleteRetentionMs:      t.DeleteRetentionMs,
		MinCompactionLagMs:     t.MinCompactionLagMs,
		MaxCompactionLagMs:     t.MaxCompactionLagMs,
		MinCleanableDirtyRatio: t.MinCleanableDirtyRatio,

		ProducerIDExpirationMs:  b.Long("producer.id.expiration.ms"),
		TransactionVerification: b.Bool("transaction.partition.verification.enable"),
	}
}

// compression turns compression.type and its codec's level into what the log
// stores batches in.
func compression(t config.Topic) record.Compression {
	switch t.CompressionType {
	case "uncompressed":
		return record.Compression{Recompress: true, Codec: record.CodecNone}
	case "gzip":
		return record.Compression{Recompress: true, Codec: record.CodecGzip, Level: int(t.CompressionGzipLevel)}
	case "snappy":
		return record.Compression{Recompress: true, Codec: record.CodecSnappy}
	case "lz4":
		return record.Compression{Recompress: true, Codec: record.CodecLz4, Level: int(t.CompressionLz4Level)}
	case "zstd":
		return record.Compression{Recompress: true, Codec: record.CodecZstd, Level: int(t.CompressionZstdLevel)}
	}
	return record.Compression{} // producer
}
