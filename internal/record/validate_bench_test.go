package record

import (
	"fmt"
	"testing"
)

// BenchmarkValidateProduce measures the broker's per-batch produce check on
// the batches franz-go sends by default: about 1 MiB of 1 KiB or 100 B
// records, uncompressed, no headers, null keys.
func BenchmarkValidateProduce(b *testing.B) {
	for _, size := range []int{100, 1024} {
		n := (1 << 20) / (size + 8)
		spec := &BatchSpec{Codec: CodecNone, ProducerID: 1, ProducerEpoch: 0, BaseSequence: 0}
		for i := 0; i < n; i++ {
			spec.Records = append(spec.Records, BuildRecord{OffsetDelta: int32(i), Timestamp: 1000 + int64(i/100),
				Value: make([]byte, size)})
		}
		batch, err := Build(spec)
		if err != nil {
			b.Fatal(err)
		}
		o := &ProduceOptions{NowMs: 1000, BeforeMaxMs: -1, AfterMaxMs: -1}
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			b.SetBytes(int64(len(batch)))
			for b.Loop() {
				if _, err := ValidateProduce(batch, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// walkRecordsReference is the straightforward record walk walkRecords
// replaced: checkRecord (a full decode) on every record.
func walkRecordsReference(o *ProduceOptions, body []byte, h *Header, checkTS bool) error {
	var err error
	for i := 0; i < int(h.NumRecords); i++ {
		if body, err = o.checkRecord(body, h, i, checkTS); err != nil {
			return err
		}
	}
	if len(body) != 0 {
		return fmt.Errorf("%w: %d bytes after the last of %d records", ErrCorrupt, len(body), h.NumRecords)
	}
	return nil
}

// FuzzWalkRecords checks that the fast record walk accepts exactly what the
// reference walk accepts and fails with the same error.
func FuzzWalkRecords(f *testing.F) {
	var body []byte
	for i := 0; i < 4; i++ {
		r := Record{OffsetDelta: int32(i), TimestampDelta: int64(i * 300), Value: make([]byte, 70*i)}
		if i%2 == 0 {
			r.Key = []byte("key")
			r.Headers = []RecordHeader{{Key: "h", Value: []byte("v")}, {Key: "n"}}
		}
		body = AppendRecord(body, &r)
	}
	f.Add(body, int32(4), false, true, int64(1000), int64(5000), int64(-1), int64(0))
	f.Add(body, int32(4), true, true, int64(1000), int64(-1), int64(100), int64(900))
	f.Add(body, int32(3), false, false, int64(0), int64(-1), int64(-1), int64(-1))
	f.Add(body[:len(body)-1], int32(4), false, true, int64(0), int64(-1), int64(-1), int64(-1))
	f.Fuzz(func(t *testing.T, body []byte, n int32, requireKeys, checkTS bool, now, before, after, base int64) {
		if n < 0 || n > 1<<16 {
			return
		}
		o := &ProduceOptions{RequireKeys: requireKeys, NowMs: now, BeforeMaxMs: before, AfterMaxMs: after}
		h := &Header{NumRecords: n, BaseTimestamp: base}
		got, want := o.walkRecords(body, h, checkTS), walkRecordsReference(o, body, h, checkTS)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("walkRecords: %v\nreference:   %v", got, want)
		}
	})
}
