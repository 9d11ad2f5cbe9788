package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
)

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
	body, err := Records(b, o.maxOut())
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

// leveled caches one kgo compressor per codec and level: building one
// allocates megabytes of encoder state (lz4, zstd).
var leveled sync.Map // Compression{Codec, Level} → kgo.Compressor

// compressWith compresses src with c's codec at c's level, kgo's default
// compressors underneath.
func compressWith(c Compression, src []byte) ([]byte, error) {
	key := Compression{Codec: c.Codec, Level: c.Level}
	comp, ok := leveled.Load(key)
	if !ok {
		kc, err := kgoCodec(c)
		if err != nil {
			return nil, err
		}
		made, err := kgo.DefaultCompressor(kc)
		if err != nil {
			return nil, err
		}
		comp, _ = leveled.LoadOrStore(key, made)
	}
	var buf bytes.Buffer
	out, got := comp.(kgo.Compressor).Compress(&buf, src)
	if Codec(got) != c.Codec {
		return nil, fmt.Errorf("compress with %v produced codec %d", c.Codec, got)
	}
	return append([]byte(nil), out...), nil
}

// kgoCodec maps Kafka's levels onto the compressors kgo builds on:
//   - gzip: the same scale (-1 is the codec's default);
//   - lz4: Kafka's default, 9, is lz4-java's fast compressor and any other
//     level its high-compression one at that level; pierrec/lz4 has the
//     fast mode and high-compression levels 1-9, so 9 → fast, 1-8 → that
//     level, 10-17 → 9;
//   - zstd: klauspost/compress has four speeds, chosen from the zstd level as
//     that package maps them (below 3 fastest, 3-5 default, 6-9 better,
//     10 and above best).
func kgoCodec(c Compression) (kgo.CompressionCodec, error) {
	switch c.Codec {
	case CodecGzip:
		return kgo.GzipCompression().WithLevel(c.Level), nil
	case CodecSnappy:
		return kgo.SnappyCompression(), nil
	case CodecLz4:
		if c.Level == 9 {
			return kgo.Lz4Compression(), nil
		}
		level := min(max(c.Level, 1), 9)
		return kgo.Lz4Compression().WithLevel(int(lz4.Level1) << (level - 1)), nil
	case CodecZstd:
		return kgo.ZstdCompression().WithLevel(int(zstd.EncoderLevelFromZstd(c.Level))), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("%w: %d", ErrUnsupportedCompression, c.Codec)
}
