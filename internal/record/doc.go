// Package record reads, validates and rewrites Kafka v2 record batches (magic 2)
// as raw bytes.
//
// A batch is kept exactly as it came over the wire; this package only reads
// the fixed 61-byte header, checks it, and patches the few fields the broker
// owns (base offset, partition leader epoch, max timestamp for LogAppendTime,
// and the CRC that covers the attributes-to-end range). Records are decoded
// only when a caller must see them (keys on compacted topics, the cleaner,
// idempotent sequence checks do not need them), and decompression is always
// bounded by a caller-supplied output cap: a length field is never trusted
// to size an allocation.
//
// Recompress is the one place a batch is rebuilt rather than patched:
// Kafka's LogValidator rebuilds a client batch whose codec differs from the
// topic's compression.type (unless that is producer). It decompresses with
// the cap, checks every record, re-encodes them (offset deltas 0..n-1,
// timestamps relative to the first record's) and compresses with kgo's
// compressor for the codec at the topic's compression.<codec>.level; the
// producer fields and transactional flag are kept, the length and CRC are
// new.
//
// A produced batch's header is decoded once, by ParseProduce (which also
// frames the partition's records as Kafka's validateRecords does), and the
// resulting Produced is what the api layer's transactional check,
// Produced.Validate, the producer-state checks and the log's append all
// read: nothing on the produce path decodes it again.
//
// ValidateProduce walks a produced batch's records (Kafka's LogValidator
// does) with a skim that decodes nothing into a Record; a record it refuses
// is decoded again by checkRecord, which words the error. The two must agree
// on every input: FuzzWalkRecords holds them to it.
//
// Batch layout (big-endian):
//
//	offset  size  field
//	0       8     baseOffset
//	8       4     batchLength (bytes that follow this field)
//	12      4     partitionLeaderEpoch
//	16      1     magic (2)
//	17      4     crc (CRC32C of bytes 21..end)
//	21      2     attributes: bits 0-2 codec, 3 timestamp type (1 = LogAppendTime),
//	              4 transactional, 5 control, 6 delete horizon present
//	23      4     lastOffsetDelta
//	27      8     baseTimestamp (the delete horizon when bit 6 is set)
//	35      8     maxTimestamp
//	43      8     producerId
//	51      2     producerEpoch
//	53      4     baseSequence
//	57      4     record count
//	61      ...   records (compressed as a whole when codec != 0)
//
// Control batches (control.go): ParseControl reads a control record's type
// and a transaction marker's coordinator epoch; BuildMarker writes Kafka's
// EndTransactionMarker batch (transactional and control attributes, base
// sequence -1, one record with key {int16 0, int16 type} and the 6-byte
// value {int16 0, int32 coordinator epoch}).
//
// Errors are sentinel values that map one-to-one onto Kafka error codes
// (ErrCorrupt → CORRUPT_MESSAGE, ErrInvalidRecord → INVALID_RECORD, …); see
// errors.go. Nothing in this package keeps state; every function is safe for
// concurrent use on distinct buffers.
package record
