package record

import "encoding/binary"

// Compression is the codec a topic stores batches in: Kafka's
// compression.type with the compression.<codec>.level of its codec (KIP-390).
// The zero value is compression.type=producer: every batch keeps the codec
// it was produced with.
type Compression struct {
	// Recompress is false for compression.type=producer.
	Recompress bool
	Codec      Codec
	// Level is Kafka's level for Codec: gzip -1 (the codec's default) or
	// 1-9, lz4 1-17, zstd -131072-22. Snappy and none have no level.
	Level int
}

// Recompresses reports whether a batch produced with codec source must be
// rebuilt to be stored: Kafka's LogValidator rebuilds exactly when the
// topic's codec is not producer and differs from the batch's.
func (c Compression) Recompresses(source Codec) bool { return c.Recompress && c.Codec != source }

// Recompress rebuilds a client batch that ValidateProduce accepted (b holds
// exactly that batch) in codec c, as Kafka's LogValidator does when the
// topic's codec differs from the producer's: the records are decompressed
// (capped at o's MaxDecompressed) and each is checked as in Kafka's rebuild
// path (offset delta, key on a compacted topic, timestamp bounds unless
// LogAppendTime), then written again with offset deltas 0..n-1, timestamps
// relative to the first record's and record attributes 0, and compressed. The
// producer id, epoch, base sequence, transactional flag and partition leader
// epoch are kept; the length and CRC are new; the max timestamp is the
// largest record timestamp (Log.Append then applies LogAppendTime, as it
// does to any batch). The result is a new slice; b is not modified.
func Recompress(b []byte, h *Header, c Compression, o *ProduceOptions) ([]byte, Header, error) {
	body, err := recordsOf(b, h, o.maxOut())
	if err != nil {
		return nil, *h, err
	}
	if err := o.walkRecords(body, h, !o.LogAppendTime); err != nil {
		return nil, *h, err
	}
	out := make([]byte, HeaderSize, HeaderSize+len(body))
	first, maxTS := NoTimestamp, NoTimestamp
	i := 0
	err = IterateRaw(body, int(h.NumRecords), func(r *Record) error {
		ts := h.BaseTimestamp + r.TimestampDelta
		if i == 0 {
			first = ts
		}
		maxTS = max(maxTS, ts)
		out = AppendRecord(out, &Record{TimestampDelta: ts - first, OffsetDelta: int32(i),
			Key: r.Key, Value: r.Value, Headers: r.Headers})
		i++
		return nil
	})
	if err != nil {
		return nil, *h, err
	}
	if c.Codec != CodecNone {
		comp, err := compressWith(c, out[HeaderSize:])
		if err != nil {
			return nil, *h, err
		}
		out = append(out[:HeaderSize], comp...)
	}
	nh := *h
	nh.Length = int32(len(out) - LogOverhead)
	nh.Attributes = h.Attributes&^(AttrCodecMask|AttrLogAppendTime|AttrHasDeleteHorizon) | int16(c.Codec)
	nh.BaseTimestamp, nh.MaxTimestamp = first, maxTS
	nh.LastOffsetDelta = nh.NumRecords - 1
	writeHeader(out, &nh)
	nh.CRC = binary.BigEndian.Uint32(out[17:])
	return out, nh, nil
}

// writeHeader encodes h into the first HeaderSize bytes of b and sets the
// CRC over the rest.
func writeHeader(b []byte, h *Header) {
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(h.BaseOffset))
	be.PutUint32(b[8:], uint32(h.Length))
	be.PutUint32(b[12:], uint32(h.LeaderEpoch))
	b[16] = Magic
	be.PutUint16(b[21:], uint16(h.Attributes))
	be.PutUint32(b[23:], uint32(h.LastOffsetDelta))
	be.PutUint64(b[27:], uint64(h.BaseTimestamp))
	be.PutUint64(b[35:], uint64(h.MaxTimestamp))
	be.PutUint64(b[43:], uint64(h.ProducerID))
	be.PutUint16(b[51:], uint16(h.ProducerEpoch))
	be.PutUint32(b[53:], uint32(h.BaseSequence))
	be.PutUint32(b[57:], uint32(h.NumRecords))
	be.PutUint32(b[17:], ComputeCRC(b))
}
