package log

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Benchmarks on the real filesystem. Compare them with the machine's own
// limits measured the same hour (dd with oflag=dsync for fsync'd writes, dd
// of a cached file for page-cache reads): the ratios matter, not the MB/s.

func benchOpen(b *testing.B) *Log { return benchOpenWith(b, false) }

// benchOpenWith opens a bench log with preallocate on or off.
func benchOpenWith(b *testing.B, preallocate bool) *Log {
	b.Helper()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 256 << 20
	cfg.TimestampAfterMs = -1
	cfg.Preallocate = preallocate
	l, err := Open(Options{FS: vfs.OS(), Clock: clock.Real{}, Dir: filepath.Join(b.TempDir(), "bench-0"), Config: cfg,
		Logger: discardLogger(), RecoveryPoint: -1, LogStartOffset: -1, HighWatermark: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

// benchBatch is 16 records of 1 KiB values: a 16 KiB batch.
func benchBatch(b *testing.B) []byte {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	spec := &record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	for i := 0; i < 16; i++ {
		v := make([]byte, 1024)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: t0.UnixMilli(),
			Key: fmt.Appendf(nil, "key-%06d", i), Value: v})
	}
	batch, err := record.Build(spec)
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

func BenchmarkAppend(b *testing.B) {
	b.Run("nosync", func(b *testing.B) {
		l := benchOpen(b)
		batch := benchBatch(b)
		b.SetBytes(int64(len(batch)))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := l.Append(batch, OriginClient, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	// One appender syncing after every append: an fsync per batch; with
	// preallocate the file already has its length (sparse), so an fdatasync
	// need not record a new file size.
	for _, prealloc := range []bool{false, true} {
		name := "sync-each"
		if prealloc {
			name += "-preallocate"
		}
		b.Run(name, func(b *testing.B) {
			l := benchOpenWith(b, prealloc)
			batch := benchBatch(b)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := l.Append(batch, OriginClient, 0)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.SyncTo(res.LastOffset + 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, appenders := range []int{4, 16} {
		b.Run(fmt.Sprintf("groupcommit-%d", appenders), func(b *testing.B) {
			l := benchOpen(b)
			batches := make([][]byte, appenders)
			for i := range batches {
				batches[i] = benchBatch(b)
			}
			b.SetBytes(int64(len(batches[0])))
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for g := 0; g < appenders; g++ {
				n := b.N / appenders
				if g < b.N%appenders {
					n++
				}
				wg.Add(1)
				go func(batch []byte, n int) {
					defer wg.Done()
					for i := 0; i < n; i++ {
						res, err := l.Append(batch, OriginClient, 0)
						if err != nil {
							b.Error(err)
							return
						}
						if err := l.SyncTo(res.LastOffset + 1); err != nil {
							b.Error(err)
							return
						}
					}
				}(batches[g], n)
			}
			wg.Wait()
		})
	}
}

// BenchmarkRead reads the log front to back in 1 MiB fetches into a reused
// buffer, wrapping around at the end (the data stays in the page cache).
func BenchmarkRead(b *testing.B) {
	l := benchOpen(b)
	batch := benchBatch(b)
	for l.Size() < 128<<20 {
		if _, err := l.Append(batch, OriginClient, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	leo := l.LogEndOffset()
	buf := make([]byte, 0, 1<<20)
	var err error
	if buf, err = l.Read(buf[:0], 0, 1<<20, leo, true); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	b.ResetTimer()
	off := int64(0)
	for i := 0; i < b.N; i++ {
		buf, err = l.Read(buf[:0], off, 1<<20, leo, true)
		if err != nil {
			b.Fatal(err)
		}
		if len(buf) == 0 {
			b.Fatalf("empty read at %d", off)
		}
		// The next fetch starts after the last whole batch returned.
		var last []byte
		for data := buf; len(data) > 0; {
			bt, rest, _ := record.Split(data)
			last, data = bt, rest
		}
		h, _ := record.ParseHeader(last)
		if off = h.NextOffset(); off >= leo {
			off = 0
		}
	}
}
