package record

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLz4, CodecZstd}

// records decodes every record of b as (timestamp, offset delta, key, value,
// headers), the parts a consumer sees.
func records(t *testing.T, b []byte) []string {
	t.Helper()
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := Iterate(b, 1<<24, func(r *Record) error {
		out = append(out, fmt.Sprintf("ts=%d od=%d k=%q v=%x h=%v", h.BaseTimestamp+r.TimestampDelta, r.OffsetDelta, r.Key, r.Value, r.Headers))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// Every codec to every other: the records a consumer reads are the same,
// the batch is well formed in the target codec with a fresh CRC and length,
// and the producer's fields are kept.
func TestRecompressEveryCodecPair(t *testing.T) {
	for _, from := range allCodecs {
		for _, to := range allCodecs {
			if from == to {
				continue
			}
			t.Run(from.String()+"→"+to.String(), func(t *testing.T) {
				spec := &BatchSpec{Codec: from, ProducerID: 42, ProducerEpoch: 3, BaseSequence: 17, Transactional: true}
				for i := 0; i < 20; i++ {
					// Timestamps out of order: the first is not the smallest.
					spec.Records = append(spec.Records, BuildRecord{OffsetDelta: int32(i), Timestamp: 5000 - int64(i%7)*10,
						Key: someKey(i), Value: bytes.Repeat([]byte{byte(i)}, 300), Headers: []RecordHeader{{Key: "h", Value: []byte{byte(i)}}}})
				}
				b, err := Build(spec)
				if err != nil {
					t.Fatal(err)
				}
				o := &ProduceOptions{NowMs: 5000, BeforeMaxMs: -1, AfterMaxMs: -1}
				h, err := ValidateProduce(b, o)
				if err != nil {
					t.Fatal(err)
				}
				out, nh, err := Recompress(b, &h, Compression{Recompress: true, Codec: to, Level: defaultLevel(to)}, o)
				if err != nil {
					t.Fatal(err)
				}
				sh, err := ValidateStored(out)
				if err != nil {
					t.Fatalf("rebuilt batch: %v", err)
				}
				if sh != nh || sh.Size() != len(out) || sh.Codec() != to || sh.ProducerID != 42 || sh.ProducerEpoch != 3 ||
					sh.BaseSequence != 17 || !sh.Transactional() || sh.NumRecords != 20 || sh.LastOffsetDelta != 19 ||
					sh.MaxTimestamp != 5000 || sh.BaseTimestamp != 5000 {
					t.Fatalf("rebuilt header %+v, returned %+v", sh, nh)
				}
				if got, want := records(t, out), records(t, b); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("records differ:\n got %v\nwant %v", got, want)
				}
				if _, err := ValidateProduce(out, o); err != nil {
					t.Fatalf("the rebuilt batch does not validate as a produced one: %v", err)
				}
			})
		}
	}
}

func defaultLevel(c Codec) int {
	switch c {
	case CodecGzip:
		return -1
	case CodecLz4:
		return 9
	case CodecZstd:
		return 3
	}
	return 0
}

// compression.<codec>.level reaches the compressor (KIP-390): on
// compressible data the highest level of each codec gives a smaller batch
// than the lowest.
func TestRecompressLevels(t *testing.T) {
	spec := &BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	for i := 0; i < 200; i++ {
		v := []byte(fmt.Sprintf("%08d the quick brown fox jumps over the lazy dog %d %d", i, i*i, i%13))
		spec.Records = append(spec.Records, BuildRecord{OffsetDelta: int32(i), Timestamp: 1000, Value: bytes.Repeat(v, 8)})
	}
	b, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	o := &ProduceOptions{NowMs: 1000, BeforeMaxMs: -1, AfterMaxMs: -1}
	h, err := ValidateProduce(b, o)
	if err != nil {
		t.Fatal(err)
	}
	size := func(c Codec, level int) int {
		out, _, err := Recompress(b, &h, Compression{Recompress: true, Codec: c, Level: level}, o)
		if err != nil {
			t.Fatal(err)
		}
		return len(out)
	}
	for _, tc := range []struct {
		codec    Codec
		low, top int
	}{{CodecGzip, 1, 9}, {CodecLz4, 1, 17}, {CodecZstd, -5, 22}} {
		if low, top := size(tc.codec, tc.low), size(tc.codec, tc.top); top >= low {
			t.Errorf("%s: level %d gives %d bytes, level %d gives %d", tc.codec, tc.low, low, tc.top, top)
		}
	}
}

// The rebuild checks every record as Kafka's rebuild path does, even in a
// compressed batch whose header timestamps pass: a record's timestamp out of
// bounds is that record's INVALID_TIMESTAMP.
func TestRecompressChecksEveryRecord(t *testing.T) {
	spec := &BatchSpec{Codec: CodecLz4, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	for i, ts := range []int64{1000, 50, 1000} {
		spec.Records = append(spec.Records, BuildRecord{OffsetDelta: int32(i), Timestamp: ts, Key: someKey(i), Value: []byte("v")})
	}
	b, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	// ValidateProduce runs without bounds here, so only the rebuild's own
	// per-record check can find record 1 too old.
	o := &ProduceOptions{NowMs: 1000, BeforeMaxMs: 100, AfterMaxMs: 100}
	h, err := ValidateProduce(b, &ProduceOptions{NowMs: 1000, BeforeMaxMs: -1, AfterMaxMs: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Recompress(b, &h, Compression{Recompress: true, Codec: CodecNone}, o)
	re, ok := IsRecordError(err)
	if !ok || re.Index != 1 || !errors.Is(err, ErrInvalidTimestamp) {
		t.Fatalf("rebuild of a batch with an old record: %v", err)
	}
	_, _, err = Recompress(b, &h, Compression{Recompress: true, Codec: CodecGzip, Level: -1},
		&ProduceOptions{NowMs: 1000, BeforeMaxMs: -1, AfterMaxMs: -1, MaxDecompressed: 10})
	if !errors.Is(err, ErrDecompressTooLarge) {
		t.Fatalf("decompression beyond the cap: %v", err)
	}
}

func TestRecompresses(t *testing.T) {
	if (Compression{}).Recompresses(CodecGzip) {
		t.Error("producer recompresses")
	}
	if (Compression{Recompress: true, Codec: CodecZstd}).Recompresses(CodecZstd) {
		t.Error("recompresses a batch already in the topic's codec")
	}
	if !(Compression{Recompress: true, Codec: CodecNone}).Recompresses(CodecSnappy) {
		t.Error("uncompressed does not decompress a snappy batch")
	}
}
