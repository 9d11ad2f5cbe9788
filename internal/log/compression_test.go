package log

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

func codecBatch(t *testing.T, codec record.Codec, pid int64, seq int32, ts int64, n int) []byte {
	t.Helper()
	spec := &record.BatchSpec{Codec: codec, ProducerID: pid, ProducerEpoch: 0, BaseSequence: seq}
	if pid < 0 {
		spec.ProducerEpoch, spec.BaseSequence = -1, -1
	}
	for i := 0; i < n; i++ {
		spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: ts,
			Key: []byte{byte(i)}, Value: bytes.Repeat([]byte("value "), 50)})
	}
	b, err := record.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// compression.type other than producer: client batches are stored in the
// topic's codec (offsets, leader epoch and LogAppendTime applied to the
// rebuilt batch), batches already in it are stored byte for byte, an
// idempotent retry of a rebuilt batch is still recognised, and the config
// follows SetConfig.
func TestAppendRecompressesToTheTopicCodec(t *testing.T) {
	clk := clock.NewFake(t0)
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.Compression = record.Compression{Recompress: true, Codec: record.CodecZstd, Level: 3}
	l := openTest(t, vfs.NewMem(), clk, cfg, false)
	now := t0.UnixMilli()

	plain := codecBatch(t, record.CodecNone, 7, 0, now, 5)
	res, err := l.Append(plain, OriginClient, 4)
	if err != nil {
		t.Fatal(err)
	}
	zstd := codecBatch(t, record.CodecZstd, -1, -1, now, 3)
	zstdCopy := append([]byte(nil), zstd...)
	if _, err := l.Append(zstd, OriginClient, 4); err != nil {
		t.Fatal(err)
	}
	// The idempotent producer retries its first batch: the original offsets.
	dup, err := l.Append(codecBatch(t, record.CodecNone, 7, 0, now, 5), OriginClient, 4)
	if err != nil || !dup.Duplicate || dup.BaseOffset != res.BaseOffset {
		t.Fatalf("retry of a rebuilt batch: %+v, %v", dup, err)
	}
	cfg.Compression = record.Compression{Recompress: true, Codec: record.CodecNone}
	cfg.LogAppendTime = true
	l.SetConfig(cfg)
	if _, err := l.Append(codecBatch(t, record.CodecGzip, -1, -1, now-5, 2), OriginClient, 4); err != nil {
		t.Fatal(err)
	}

	data, err := l.Read(nil, 0, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	var hs []record.Header
	var batches [][]byte
	for len(data) > 0 {
		b, rest, ok := record.Split(data)
		if !ok {
			t.Fatal("partial batch")
		}
		h, err := record.ValidateStored(b)
		if err != nil {
			t.Fatal(err)
		}
		hs, batches, data = append(hs, h), append(batches, b), rest
	}
	if len(hs) != 3 {
		t.Fatalf("%d batches stored, want 3", len(hs))
	}
	if h := hs[0]; h.Codec() != record.CodecZstd || h.BaseOffset != 0 || h.NumRecords != 5 || h.LeaderEpoch != 4 ||
		h.ProducerID != 7 || h.BaseSequence != 0 {
		t.Fatalf("rebuilt plain batch: %+v", h)
	}
	// Already zstd: stored as produced, only offset and leader epoch set.
	record.SetBaseOffset(zstdCopy, 5)
	record.SetLeaderEpoch(zstdCopy, 4)
	if !bytes.Equal(batches[1], zstdCopy) {
		t.Fatal("a batch in the topic's codec was rewritten")
	}
	if h := hs[2]; h.Codec() != record.CodecNone || h.BaseOffset != 8 || !h.LogAppendTime() || h.MaxTimestamp != now {
		t.Fatalf("gzip batch stored uncompressed with LogAppendTime: %+v", h)
	}
	var n int
	if err := record.Iterate(batches[0], 1<<20, func(r *record.Record) error {
		if r.Key[0] != byte(n) || len(r.Value) != 300 {
			t.Fatalf("record %d: key %v, %d value bytes", n, r.Key, len(r.Value))
		}
		n++
		return nil
	}); err != nil || n != 5 {
		t.Fatalf("records of the rebuilt batch: %d, %v", n, err)
	}
}

// A batch that grows past max.message.bytes when it is stored uncompressed
// is refused, as Kafka re-checks sizes after a rebuild.
func TestRecompressedBatchOverMaxMessageBytes(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.Compression = record.Compression{Recompress: true, Codec: record.CodecNone}
	b := codecBatch(t, record.CodecGzip, -1, -1, t0.UnixMilli(), 40)
	cfg.MaxMessageBytes = int32(len(b) + 10) // the gzip batch fits; uncompressed it does not
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), cfg, false)
	if _, err := l.Append(b, OriginClient, 0); !errors.Is(err, record.ErrTooLarge) {
		t.Fatalf("append: %v, want ErrTooLarge", err)
	}
	if l.LogEndOffset() != 0 {
		t.Fatalf("log end offset %d", l.LogEndOffset())
	}
}
