package record

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func buildN(t testing.TB, codec Codec, n int, ts int64, key func(i int) []byte) []byte {
	t.Helper()
	spec := &BatchSpec{Codec: codec, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	for i := 0; i < n; i++ {
		spec.Records = append(spec.Records, BuildRecord{OffsetDelta: int32(i), Timestamp: ts + int64(i),
			Key: key(i), Value: bytes.Repeat([]byte{byte(i)}, 100),
			Headers: []RecordHeader{{Key: "h", Value: []byte("v")}}})
	}
	b, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func someKey(i int) []byte { return []byte(fmt.Sprintf("k%d", i)) }

func TestBuildValidateIterateEveryCodec(t *testing.T) {
	for _, c := range []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLz4, CodecZstd} {
		t.Run(c.String(), func(t *testing.T) {
			b := buildN(t, c, 10, 1000, someKey)
			h, err := ValidateProduce(b, &ProduceOptions{NowMs: 1000, BeforeMaxMs: -1, AfterMaxMs: -1, RequireKeys: true})
			if err != nil {
				t.Fatal(err)
			}
			if h.Codec() != c || h.NumRecords != 10 || h.LastOffsetDelta != 9 || h.MaxTimestamp != 1009 {
				t.Fatalf("header %+v", h)
			}
			var got []string
			if err := Iterate(b, 1<<20, func(r *Record) error {
				got = append(got, string(r.Key))
				if len(r.Value) != 100 || len(r.Headers) != 1 || r.Headers[0].Key != "h" {
					return fmt.Errorf("record %+v", r)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != 10 || got[9] != "k9" {
				t.Fatalf("keys %v", got)
			}
		})
	}
}

func TestValidateProduceRejects(t *testing.T) {
	good := func() []byte { return buildN(t, CodecNone, 3, 1000, someKey) }
	opts := func() *ProduceOptions {
		return &ProduceOptions{NowMs: 1000, BeforeMaxMs: -1, AfterMaxMs: -1, MaxBatchBytes: 1 << 20}
	}
	cases := []struct {
		name string
		mut  func(b []byte) []byte
		opt  func(o *ProduceOptions)
		want error
	}{
		{"bad crc", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, nil, ErrCorrupt},
		{"truncated", func(b []byte) []byte { return b[:len(b)-3] }, nil, ErrInvalidRecord},
		{"short header", func(b []byte) []byte { return b[:20] }, nil, ErrInvalidRecord},
		{"two batches", func(b []byte) []byte { return append(b, b...) }, nil, ErrInvalidRecord},
		{"magic 1", func(b []byte) []byte { b[16] = 1; return b }, nil, ErrUnsupportedMagic},
		{"magic 7", func(b []byte) []byte { b[16] = 7; return b }, nil, ErrCorrupt},
		{"too large", nil, func(o *ProduceOptions) { o.MaxBatchBytes = 100 }, ErrTooLarge},
		{"count mismatch", func(b []byte) []byte {
			b[60] = 4
			SetLogAppendTime(b, 1000) // recompute the CRC
			return b
		}, nil, ErrInvalidRecord},
		{"keyless on compacted", nil, func(o *ProduceOptions) { o.RequireKeys = true }, nil},
		{"timestamp too old", nil, func(o *ProduceOptions) { o.NowMs = 1_000_000; o.BeforeMaxMs = 1000 }, ErrInvalidTimestamp},
		{"timestamp too new", nil, func(o *ProduceOptions) { o.NowMs = 0; o.AfterMaxMs = 10 }, ErrInvalidTimestamp},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := good()
			if tc.mut != nil {
				b = tc.mut(b)
			}
			o := opts()
			if tc.opt != nil {
				tc.opt(o)
			}
			_, err := ValidateProduce(b, o)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	b := buildN(t, CodecLz4, 3, 1000, func(i int) []byte {
		if i == 1 {
			return nil
		}
		return someKey(i)
	})
	_, err := ValidateProduce(b, &ProduceOptions{RequireKeys: true, BeforeMaxMs: -1, AfterMaxMs: -1})
	re, ok := IsRecordError(err)
	if !ok || re.Index != 1 || !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("keyless record: %v", err)
	}
}

func TestValidateProduceTrimsShortTail(t *testing.T) {
	b := buildN(t, CodecNone, 3, 1000, someKey)
	n := len(b)
	h, err := ValidateProduce(append(b, 1, 2, 3, 4, 5), &ProduceOptions{BeforeMaxMs: -1, AfterMaxMs: -1})
	if err != nil || h.Size() != n {
		t.Fatalf("size %d (batch %d): %v", h.Size(), n, err)
	}
}

func TestDecompressCapped(t *testing.T) {
	zeros := make([]byte, 4<<20)
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLz4, CodecZstd} {
		comp, err := Compress(c, zeros)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decompress(c, comp, 1<<20); !errors.Is(err, ErrDecompressTooLarge) {
			t.Fatalf("%v: got %v, want ErrDecompressTooLarge", c, err)
		}
		out, err := Decompress(c, comp, 8<<20)
		if err != nil || len(out) != len(zeros) {
			t.Fatalf("%v: %d bytes, %v", c, len(out), err)
		}
	}
}

func TestLogAppendTimeRewritesCRC(t *testing.T) {
	b := buildN(t, CodecNone, 2, 5, someKey)
	SetLogAppendTime(b, 12345)
	h, err := ValidateStored(b)
	if err != nil || !h.LogAppendTime() || h.MaxTimestamp != 12345 {
		t.Fatalf("%+v %v", h, err)
	}
	SetBaseOffset(b, 77)
	SetLeaderEpoch(b, 3)
	if h, err = ValidateStored(b); err != nil || h.BaseOffset != 77 || h.LeaderEpoch != 3 || h.LastOffset() != 78 {
		t.Fatalf("%+v %v", h, err)
	}
}

func TestIncrementSequenceWraps(t *testing.T) {
	if got := IncrementSequence(1<<31-1, 1); got != 0 {
		t.Fatal(got)
	}
	if got := IncrementSequence(5, 3); got != 8 {
		t.Fatal(got)
	}
}

func FuzzValidateProduce(f *testing.F) {
	for _, c := range []Codec{CodecNone, CodecGzip, CodecZstd} {
		f.Add(buildN(f, c, 3, 1000, someKey))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ValidateProduce(b, &ProduceOptions{RequireKeys: true, BeforeMaxMs: -1, AfterMaxMs: -1, MaxDecompressed: 1 << 20})
		if err == nil && h.Size() != len(b) {
			t.Fatalf("accepted %d bytes as a %d-byte batch", len(b), h.Size())
		}
		_ = Iterate(b, 1<<20, func(*Record) error { return nil })
	})
}

func TestValidateProduceDoesNotAllocate(t *testing.T) {
	b := buildN(t, CodecNone, 16, 1000, someKey)
	o := &ProduceOptions{NowMs: 1000, BeforeMaxMs: -1, AfterMaxMs: -1, RequireKeys: true}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := ValidateProduce(b, o); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per uncompressed batch", n)
	}
}

// ParseProduce decodes the first batch's header even when the framing fails
// after it, as Kafka's hasTransactionalRecords looks at the first batch
// before validateRecords refuses a second one; the framing error is the one
// Validate reports.
func TestParseProduceKeepsTheFirstHeader(t *testing.T) {
	spec := &BatchSpec{ProducerID: 7, ProducerEpoch: 0, BaseSequence: 0, Transactional: true,
		Records: []BuildRecord{{Timestamp: 1000, Value: []byte("v")}}}
	b, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	one := ParseProduce(b)
	if one.Err != nil || !one.Transactional() || one.Header.ProducerID != 7 || len(one.Batch()) != len(b) {
		t.Fatalf("one batch: %+v", one)
	}
	two := ParseProduce(append(append([]byte(nil), b...), b...))
	if !two.Transactional() || !errors.Is(two.Err, ErrInvalidRecord) {
		t.Fatalf("two batches: transactional %v, err %v", two.Transactional(), two.Err)
	}
	o := &ProduceOptions{NowMs: 1000, BeforeMaxMs: -1, AfterMaxMs: -1}
	if err := two.Validate(o); err != two.Err {
		t.Fatalf("Validate = %v, want the framing error %v", err, two.Err)
	}
	if err := one.Validate(o); err != nil {
		t.Fatalf("Validate of the parsed batch: %v", err)
	}
	short := ParseProduce(b[:30])
	if short.Transactional() || !errors.Is(short.Err, ErrInvalidRecord) {
		t.Fatalf("30 bytes: transactional %v, err %v", short.Transactional(), short.Err)
	}
}
