package log

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gregor-broker/gregor/internal/record"
)

// BenchmarkReadIndexed reads closed segments whose indexes are large: 128 MiB
// of one-record 1 KiB batches in 32 MiB segments (about 7,000 index entries
// each), 64 KiB per read, either front to back (a consumer catching up) or
// at random offsets. Compare with the same benchmark before a change to the
// indexes.
func BenchmarkReadIndexed(b *testing.B) {
	l := benchOpen(b)
	cfg := l.Config()
	cfg.SegmentBytes = 32 << 20
	l.SetConfig(cfg)
	spec := &record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Records: []record.BuildRecord{{Timestamp: t0.UnixMilli(), Key: []byte("key"), Value: make([]byte, 1024)}}}
	batch, err := record.Build(spec)
	if err != nil {
		b.Fatal(err)
	}
	for l.Size() < 128<<20 {
		if _, err := l.Append(append([]byte(nil), batch...), OriginClient, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	if n := l.NumSegments(); n < 4 {
		b.Fatalf("%d segments", n)
	}
	leo := l.LogEndOffset()
	const readBytes = 64 << 10
	for _, mode := range []string{"forward", "random"} {
		b.Run(mode, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(3, 4))
			buf := make([]byte, 0, 2*readBytes)
			b.SetBytes(readBytes)
			b.ReportAllocs()
			b.ResetTimer()
			off := int64(0)
			for i := 0; i < b.N; i++ {
				if mode == "random" {
					off = rng.Int64N(leo)
				}
				buf, err = l.Read(buf[:0], off, readBytes, leo, true)
				if err != nil || len(buf) == 0 {
					b.Fatal(fmt.Sprint("read at ", off, ": ", err))
				}
				h, _ := record.ParseHeader(buf)
				if h.BaseOffset > off || h.LastOffset() < off {
					b.Fatalf("read at %d returned batch %d", off, h.BaseOffset)
				}
				if off += int64(len(buf) / len(batch)); off >= leo {
					off = 0
				}
			}
		})
	}
}
