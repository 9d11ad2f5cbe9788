package cleaner

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// BenchmarkClean measures cleaner throughput on the real filesystem: MB/s
// of dirty log processed by one round (both passes, the recopy and the
// swap with its fsyncs), for a never-cleaned log of 64 MiB of 100-byte
// values (batches of 100 records) over 100,000 keys. Compare it with the
// disk's own limits (dd) measured the same hour. It also reports the
// offset map's size and the bytes allocated per round.
func BenchmarkClean(b *testing.B) {
	for _, c := range []struct {
		name  string
		codec record.Codec
	}{{"none", record.CodecNone}, {"lz4", record.CodecLz4}, {"zstd", record.CodecZstd}} {
		b.Run(c.name, func(b *testing.B) { benchClean(b, c.codec, 64<<20, 100_000) })
	}
}

func benchClean(b *testing.B, codec record.Codec, dirtyBytes int64, keys int) {
	cfg := log.DefaultConfig()
	cfg.Compact, cfg.Delete = true, false
	cfg.SegmentBytes = 16 << 20
	cfg.TimestampAfterMs = -1
	cfg.FileDeleteDelayMs = 0
	rng := rand.New(rand.NewPCG(7, 7))
	value := make([]byte, 100)
	var size int64
	var mapBytes, allocs float64
	var enc codecs // record.Build makes a compressor per batch: too slow to fill 64 MiB
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), fmt.Sprint("bench-", i))
		l, err := log.Open(log.Options{FS: vfs.OS(), Clock: clock.Real{}, Dir: dir, Config: cfg, Logger: discard(),
			RecoveryPoint: -1, LogStartOffset: -1, HighWatermark: -1})
		if err != nil {
			b.Fatal(err)
		}
		for l.Size() < dirtyBytes {
			spec := &record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: codec}
			for j := 0; j < 100; j++ {
				for k := range value {
					value[k] = 'a' + byte(rng.IntN(26))
				}
				spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(j), Timestamp: t0.UnixMilli(),
					Key: []byte(keyName(rng.IntN(keys))), Value: value})
			}
			batch, err := enc.build(spec)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := l.Append(batch, log.OriginClient, 0); err != nil {
				b.Fatal(err)
			}
		}
		l.Roll()
		l.SetHighWatermark(l.LogEndOffset())
		if err := l.Flush(); err != nil {
			b.Fatal(err)
		}
		size = l.Size()
		logs := newFakeLogs()
		logs.add("bench", 0, l)
		tc := newTestCleaner(b, logs, clock.NewFake(t0), 128<<20)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		if !tc.roundNow() {
			b.Fatal("nothing cleaned")
		}
		b.StopTimer()
		runtime.ReadMemStats(&after)
		allocs += float64(after.TotalAlloc - before.TotalAlloc)
		st := tc.status(b, "bench", 0)
		if st.Uncleanable != nil || st.DirtyBytes != 0 {
			b.Fatalf("not cleaned: %+v", st)
		}
		mapBytes = float64(tc.w.offsets.memoryBytes())
		l.Close()
		b.StartTimer()
	}
	b.SetBytes(size)
	b.ReportMetric(mapBytes/(1<<20), "map-MiB")
	b.ReportMetric(allocs/float64(b.N)/(1<<20), "alloc-MiB/op")
}
