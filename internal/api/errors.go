package api

import (
	"context"
	"errors"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
)

// errorTable maps domain sentinels to Kafka errors. kerr values pass through.
var errorTable = []struct {
	err  error
	code *kerr.Error
}{
	{record.ErrCorrupt, kerr.CorruptMessage},
	{record.ErrInvalidRecord, kerr.InvalidRecord},
	{record.ErrTooLarge, kerr.MessageTooLarge},
	{record.ErrUnsupportedMagic, kerr.UnsupportedForMessageFormat},
	{record.ErrInvalidTimestamp, kerr.InvalidTimestamp},
	{record.ErrDecompressTooLarge, kerr.CorruptMessage},
	{record.ErrUnsupportedCompression, kerr.UnsupportedCompressionType},
	{log.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{log.ErrCorruptSegment, kerr.KafkaStorageError},
	{log.ErrStorageFailed, kerr.KafkaStorageError},
	{log.ErrNoSpace, kerr.KafkaStorageError}, // retriable: clients back off and retry
	{log.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{log.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{log.ErrInvalidTxnState, kerr.InvalidTxnState},
	{log.ErrTransactionCoordinatorFenced, kerr.TransactionCoordinatorFenced},
	{log.ErrClosed, kerr.NotLeaderForPartition},
	{config.ErrInvalidConfig, kerr.InvalidConfig},
	{config.ErrInvalidRequest, kerr.InvalidRequest},
	{context.DeadlineExceeded, kerr.RequestTimedOut},
	{context.Canceled, kerr.RequestTimedOut},
}

// kafkaError returns the Kafka error for err (nil for nil). Unknown errors
// become UNKNOWN_SERVER_ERROR and are logged, since they are Gregor bugs or
// I/O failures an operator must see.
func kafkaError(logger *slog.Logger, err error) *kerr.Error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	logger.Error("unexpected error answered as UNKNOWN_SERVER_ERROR", "err", err)
	return kerr.UnknownServerError
}

// errCode is kafkaError as a wire code.
func errCode(logger *slog.Logger, err error) int16 {
	if ke := kafkaError(logger, err); ke != nil {
		return ke.Code
	}
	return 0
}

// errMessage is the message Kafka puts beside the code (nil when none).
func errMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
