package cleaner

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/record"
)

// codecs is one worker's decompressors and compressors, kept across batches:
// the cleaner decompresses every compressed batch it reads and recompresses
// every one it rewrites, and building a zstd decoder or an lz4 writer per
// batch would cost more than the work. Decompression is capped at maxOut
// bytes, as record.Decompress caps it, so a batch that inflates beyond
// reason is corruption, not an allocation. The output buffer is reused: a
// body is valid until the next call.
type codecs struct {
	src     bytes.Reader
	out     bytes.Buffer
	snappy  []byte
	gz      *gzip.Reader
	lz      *lz4.Reader
	zd      *zstd.Decoder
	zdMax   int
	zdOut   []byte
	comp    map[record.Codec]kgo.Compressor
	compBuf bytes.Buffer
}

// records returns the uncompressed records section of batch.
func (c *codecs) records(batch []byte, h *record.Header, maxOut int) ([]byte, error) {
	body := batch[record.HeaderSize:h.Size()]
	out, err := c.decompress(h.Codec(), body, maxOut)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", record.ErrCorrupt, h.Codec(), err)
	}
	return out, nil
}

func (c *codecs) decompress(codec record.Codec, src []byte, maxOut int) ([]byte, error) {
	switch codec {
	case record.CodecNone:
		return src, nil
	case record.CodecGzip:
		c.src.Reset(src)
		if c.gz == nil {
			gz, err := gzip.NewReader(&c.src)
			if err != nil {
				return nil, err
			}
			c.gz = gz
		} else if err := c.gz.Reset(&c.src); err != nil {
			return nil, err
		}
		return c.readCapped(c.gz, maxOut)
	case record.CodecLz4:
		c.src.Reset(src)
		if c.lz == nil {
			c.lz = lz4.NewReader(&c.src)
		} else {
			c.lz.Reset(&c.src)
		}
		return c.readCapped(c.lz, maxOut)
	case record.CodecSnappy:
		return c.decompressSnappy(src, maxOut)
	case record.CodecZstd:
		if c.zd == nil || c.zdMax != maxOut {
			if c.zd != nil {
				c.zd.Close()
			}
			zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxMemory(uint64(maxOut)))
			if err != nil {
				return nil, err
			}
			c.zd, c.zdMax = zd, maxOut
		}
		out, err := c.zd.DecodeAll(src, c.zdOut[:0])
		if err != nil {
			return nil, err
		}
		c.zdOut = out
		return out, nil
	}
	return nil, fmt.Errorf("%w: %d", record.ErrUnsupportedCompression, codec)
}

func (c *codecs) readCapped(r io.Reader, maxOut int) ([]byte, error) {
	c.out.Reset()
	n, err := c.out.ReadFrom(io.LimitReader(r, int64(maxOut)+1))
	if err != nil {
		return nil, err
	}
	if n > int64(maxOut) {
		return nil, record.ErrDecompressTooLarge
	}
	return c.out.Bytes(), nil
}

var xerialMagic = []byte{130, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// decompressSnappy reads raw snappy blocks and the xerial framing the Java
// client writes (a 16-byte header, then length-prefixed blocks).
func (c *codecs) decompressSnappy(src []byte, maxOut int) ([]byte, error) {
	out := c.snappy[:0]
	block := func(b []byte) error {
		l, err := s2.DecodedLen(b)
		if err != nil {
			return err
		}
		if l > maxOut-len(out) {
			return record.ErrDecompressTooLarge
		}
		n := len(out)
		if cap(out)-n < l {
			grown := make([]byte, n, max(2*cap(out), n+l))
			copy(grown, out)
			out = grown
		}
		if _, err := s2.Decode(out[n:n+l], b); err != nil {
			return err
		}
		out = out[:n+l]
		return nil
	}
	if len(src) < 16 || !bytes.Equal(src[:8], xerialMagic) {
		if err := block(src); err != nil {
			return nil, err
		}
	} else {
		for p := src[16:]; len(p) > 0; {
			if len(p) < 4 {
				return nil, fmt.Errorf("truncated xerial chunk")
			}
			n := binary.BigEndian.Uint32(p)
			if uint64(n) > uint64(len(p)-4) {
				return nil, fmt.Errorf("xerial chunk beyond the input")
			}
			if err := block(p[4 : 4+n]); err != nil {
				return nil, err
			}
			p = p[4+n:]
		}
	}
	c.snappy = out
	return out, nil
}

// compress compresses src with codec; the result is valid until the next
// call.
func (c *codecs) compress(codec record.Codec, src []byte) ([]byte, error) {
	if codec == record.CodecNone {
		return src, nil
	}
	comp := c.comp[codec]
	if comp == nil {
		var kc kgo.CompressionCodec
		switch codec {
		case record.CodecGzip:
			kc = kgo.GzipCompression()
		case record.CodecSnappy:
			kc = kgo.SnappyCompression()
		case record.CodecLz4:
			kc = kgo.Lz4Compression()
		case record.CodecZstd:
			kc = kgo.ZstdCompression()
		default:
			return nil, fmt.Errorf("%w: %d", record.ErrUnsupportedCompression, codec)
		}
		var err error
		if comp, err = kgo.DefaultCompressor(kc); err != nil {
			return nil, err
		}
		if c.comp == nil {
			c.comp = make(map[record.Codec]kgo.Compressor)
		}
		c.comp[codec] = comp
	}
	c.compBuf.Reset()
	out, got := comp.Compress(&c.compBuf, src)
	if record.Codec(got) != codec {
		return nil, fmt.Errorf("compressing with %s failed", codec)
	}
	return out, nil
}

// iterate calls fn for each record of batch (Kafka's record iteration with
// the worker's decompressors); the Record is reused between calls.
func (c *codecs) iterate(batch []byte, h *record.Header, maxOut int, fn func(r *record.Record) error) error {
	body, err := c.records(batch, h, maxOut)
	if err != nil {
		return err
	}
	return record.IterateRaw(body, int(h.NumRecords), fn)
}

// build encodes a batch as record.Build does, compressing with the
// worker's compressor.
func (c *codecs) build(spec *record.BatchSpec) ([]byte, error) {
	codec := spec.Codec
	spec.Codec = record.CodecNone
	b, err := record.Build(spec)
	spec.Codec = codec
	if err != nil || codec == record.CodecNone {
		return b, err
	}
	body, err := c.compress(codec, b[record.HeaderSize:])
	if err != nil {
		return nil, err
	}
	out := make([]byte, record.HeaderSize, record.HeaderSize+len(body))
	copy(out, b[:record.HeaderSize])
	out = append(out, body...)
	be := binary.BigEndian
	be.PutUint32(out[8:], uint32(len(out)-record.LogOverhead))
	be.PutUint16(out[21:], be.Uint16(out[21:])&^record.AttrCodecMask|uint16(codec))
	be.PutUint32(out[17:], record.ComputeCRC(out))
	return out, nil
}
