package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Decompress inflates src with codec, failing with ErrDecompressTooLarge as
// soon as the output would exceed max bytes. Length fields inside the
// compressed stream (snappy's, xerial's chunk sizes) are checked against max
// before any buffer is sized from them.
func Decompress(codec Codec, src []byte, max int) ([]byte, error) {
	switch codec {
	case CodecNone:
		if len(src) > max {
			return nil, ErrDecompressTooLarge
		}
		return src, nil
	case CodecGzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)
		}
		defer zr.Close()
		return readCapped(zr, max)
	case CodecSnappy:
		return decompressSnappy(src, max)
	case CodecLz4:
		zr := lz4Readers.Get().(*lz4.Reader)
		defer lz4Readers.Put(zr)
		zr.Reset(bytes.NewReader(src))
		return readCapped(zr, max)
	case CodecZstd:
		dec, err := zstd.NewReader(bytes.NewReader(src), zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(max)+1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
		}
		defer dec.Close()
		return readCapped(dec, max)
	}
	return nil, fmt.Errorf("%w: %d", ErrUnsupportedCompression, codec)
}

var lz4Readers = sync.Pool{New: func() any { return lz4.NewReader(nil) }}

func readCapped(r io.Reader, max int) ([]byte, error) {
	var out bytes.Buffer
	n, err := out.ReadFrom(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: decompress: %v", ErrCorrupt, err)
	}
	if n > int64(max) {
		return nil, ErrDecompressTooLarge
	}
	return out.Bytes(), nil
}

var xerialMagic = []byte{130, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// decompressSnappy handles raw snappy blocks and the xerial framing Kafka's
// Java client writes (16-byte header, then size-prefixed blocks).
func decompressSnappy(src []byte, max int) ([]byte, error) {
	if len(src) < 16 || !bytes.Equal(src[:8], xerialMagic) {
		return snappyBlock(nil, src, max)
	}
	var out []byte
	for p := src[16:]; len(p) > 0; {
		if len(p) < 4 {
			return nil, fmt.Errorf("%w: snappy: truncated xerial chunk", ErrCorrupt)
		}
		n := binary.BigEndian.Uint32(p)
		p = p[4:]
		if uint64(n) > uint64(len(p)) {
			return nil, fmt.Errorf("%w: snappy: xerial chunk beyond input", ErrCorrupt)
		}
		var err error
		if out, err = snappyBlock(out, p[:n], max); err != nil {
			return nil, err
		}
		p = p[n:]
	}
	return out, nil
}

func snappyBlock(dst, src []byte, max int) ([]byte, error) {
	l, err := s2.DecodedLen(src)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
	}
	if l > max-len(dst) {
		return nil, ErrDecompressTooLarge
	}
	if cap(dst)-len(dst) < l {
		grown := make([]byte, len(dst), len(dst)+l)
		copy(grown, dst)
		dst = grown
	}
	if _, err := s2.Decode(dst[len(dst):len(dst)+l], src); err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
	}
	return dst[:len(dst)+l], nil
}

// Compress compresses src with codec using the same compressors Kafka clients
// use. It returns src itself for CodecNone.
func Compress(codec Codec, src []byte) ([]byte, error) {
	if codec == CodecNone {
		return src, nil
	}
	c, err := compressorFor(codec)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	out, got := c.Compress(&buf, src)
	if Codec(got) != codec {
		return nil, fmt.Errorf("compress with %v produced codec %d", codec, got)
	}
	return append([]byte(nil), out...), nil
}

func codecFor(c Codec) kgo.CompressionCodec {
	switch c {
	case CodecGzip:
		return kgo.GzipCompression()
	case CodecSnappy:
		return kgo.SnappyCompression()
	case CodecLz4:
		return kgo.Lz4Compression()
	case CodecZstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// compressors caches one kgo compressor per codec: building one per call
// allocates megabytes of encoder state (lz4, zstd) each time.
var compressors sync.Map // Codec → kgo.Compressor

func compressorFor(codec Codec) (kgo.Compressor, error) {
	if c, ok := compressors.Load(codec); ok {
		return c.(kgo.Compressor), nil
	}
	c, err := kgo.DefaultCompressor(codecFor(codec))
	if err != nil {
		return nil, err
	}
	actual, _ := compressors.LoadOrStore(codec, c)
	return actual.(kgo.Compressor), nil
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
