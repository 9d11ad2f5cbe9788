package record

import "errors"

// Sentinel errors. Callers wrap them with context; api maps them to Kafka codes
// with errors.Is.
var (
	// ErrCorrupt: the bytes are not a well-formed batch (bad length, CRC mismatch,
	// truncated). Kafka: CORRUPT_MESSAGE.
	ErrCorrupt = errors.New("corrupt record batch")
	// ErrInvalidRecord: the batch is well formed but breaks a rule (record count
	// vs last offset delta, key missing on a compacted topic, …). Kafka: INVALID_RECORD.
	ErrInvalidRecord = errors.New("invalid record")
	// ErrTooLarge: the batch exceeds max.message.bytes. Kafka: MESSAGE_TOO_LARGE.
	ErrTooLarge = errors.New("record batch too large")
	// ErrUnsupportedMagic: magic 0 or 1. Kafka: UNSUPPORTED_FOR_MESSAGE_FORMAT.
	ErrUnsupportedMagic = errors.New("unsupported message format")
	// ErrInvalidTimestamp: a timestamp outside message.timestamp.before/after.max.ms.
	// Kafka: INVALID_TIMESTAMP.
	ErrInvalidTimestamp = errors.New("invalid timestamp")
	// ErrDecompressTooLarge: decompressed output would exceed the caller's cap.
	ErrDecompressTooLarge = errors.New("decompressed batch exceeds limit")
	// ErrUnsupportedCompression: codec 5-7. Kafka: UNSUPPORTED_COMPRESSION_TYPE.
	ErrUnsupportedCompression = errors.New("unsupported compression codec")
)
