package log

import "errors"

var (
	// ErrOffsetOutOfRange: a read or seek below the log start offset or above
	// the log end offset. Kafka: OFFSET_OUT_OF_RANGE.
	ErrOffsetOutOfRange = errors.New("offset out of range")
	// ErrCorruptSegment: bytes on disk that are not a valid log (found by
	// recovery or a reader). The distinct corruption error.
	ErrCorruptSegment = errors.New("corrupt log segment")
	// ErrOutOfOrderSequence: an idempotent batch whose sequence does not follow
	// the producer's last one. Kafka: OUT_OF_ORDER_SEQUENCE_NUMBER.
	ErrOutOfOrderSequence = errors.New("out of order sequence number")
	// ErrInvalidProducerEpoch: a batch from a fenced (older) producer epoch.
	// Kafka: INVALID_PRODUCER_EPOCH.
	ErrInvalidProducerEpoch = errors.New("invalid producer epoch")
	// ErrInvalidTxnState: a transactional batch that opens a transaction the
	// coordinator did not verify, or a plain batch from a producer with a
	// transaction open. Kafka: INVALID_TXN_STATE.
	ErrInvalidTxnState = errors.New("invalid transaction state")
	// ErrTransactionCoordinatorFenced: a marker from a coordinator epoch older
	// than the last marker's. Kafka: TRANSACTION_COORDINATOR_FENCED.
	ErrTransactionCoordinatorFenced = errors.New("transaction coordinator fenced")
	// ErrStorageFailed: a write or fsync of the log, or of another file in
	// its log dir, failed; the log is out of service until a restart (see
	// FailureDomain). Kafka: KAFKA_STORAGE_ERROR (the log dir is offline).
	ErrStorageFailed = errors.New("log dir storage failed")
	// ErrNoSpace: an append refused for want of disk space. Nothing of it
	// stays (a partial write is cut back to the last whole batch) and the
	// log stays writable. Kafka: KAFKA_STORAGE_ERROR, which clients retry.
	ErrNoSpace = errors.New("no space left for the log")
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("log closed")
	// ErrOffsetMismatch: a replicated batch whose base offset is not the log
	// end offset.
	ErrOffsetMismatch = errors.New("batch offset does not follow the log end offset")
	// ErrTruncated: SyncTo was asked for offsets a truncation (a leader
	// become follower) has since removed; they can never be durable.
	ErrTruncated = errors.New("the log was truncated below the offsets to sync")
)
