package log

import (
	"bytes"
	"errors"
	"sort"
	"sync"
	"testing"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// fuzzImage is a small valid log directory (several segments, index entries,
// snapshots, an epoch checkpoint), built once and cloned per input.
var fuzzImage = sync.OnceValue(func() *vfs.MemFS {
	fs := vfs.NewMem()
	clk := clock.NewFake(t0)
	cfg := fuzzConfig()
	l, err := Open(Options{FS: fs, Clock: clk, Dir: crashDir, Config: cfg, Logger: discardLogger(),
		RecoveryPoint: -1, LogStartOffset: -1, HighWatermark: -1})
	if err != nil {
		panic(err)
	}
	codecs := []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLz4, record.CodecZstd}
	for i := 0; i < 24; i++ {
		spec := &record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: codecs[i%len(codecs)]}
		if i%3 == 0 {
			spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = 5, 0, int32(i)
		}
		for r := 0; r < 1+i%4; r++ {
			spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(r), Timestamp: t0.UnixMilli() + int64(i*10+r),
				Key: []byte{byte(i), byte(r)}, Value: bytes.Repeat([]byte{byte(i)}, 40)})
		}
		b, err := record.Build(spec)
		if err != nil {
			panic(err)
		}
		if _, err := l.Append(b, OriginCoordinator, int32(i/8)); err != nil {
			panic(err)
		}
	}
	if err := l.Close(); err != nil {
		panic(err)
	}
	return fs
})

func fuzzConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 1200
	c.SegmentIndexBytes = 96
	c.IndexIntervalBytes = 150
	c.TimestampAfterMs = -1
	return c
}

// FuzzRecovery damages one file of a valid log directory (overwrite, append
// or cut and write) and opens it: Open never fails or panics; after an unclean
// stop with no recovery point (a full rescan) what remains is a valid prefix
// (every batch passes ValidateStored, offsets increase) and reads and appends
// work. A clean start, or segments below the recovery point, are trusted, so
// damage there may only show as ErrCorruptSegment or odd offsets, never as a
// panic or a failed Open.
func FuzzRecovery(f *testing.F) {
	f.Add(uint8(0), uint16(0), uint8(0), []byte{0xff, 0xff, 0xff, 0xff})
	f.Add(uint8(1), uint16(8), uint8(0), []byte{0x7f, 0xff, 0xff, 0xff})  // a huge batch length
	f.Add(uint8(2), uint16(100), uint8(1), []byte("trailing garbage"))    // append to an index
	f.Add(uint8(0), uint16(61), uint8(2), []byte{0, 0, 0, 0, 0, 0, 0, 9}) // cut inside a batch
	f.Add(uint8(4), uint16(3), uint8(4), []byte{1, 2, 3})                 // clean start, damaged index
	f.Add(uint8(9), uint16(0), uint8(0), []byte("5\n"))                   // epoch checkpoint or snapshot
	f.Fuzz(func(t *testing.T, target uint8, pos uint16, mode uint8, data []byte) {
		fs := fuzzImage().CrashClone()
		names, err := fs.List(crashDir)
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(names)
		name := crashDir + "/" + names[int(target)%len(names)]
		file, err := fs.OpenReadWrite(name)
		if err != nil {
			t.Fatal(err)
		}
		size, _ := file.Size()
		at := int64(pos) % (size + 1)
		switch mode % 4 {
		case 0:
			file.WriteAt(data, at)
		case 1:
			file.WriteAt(data, size)
		case 2:
			file.Truncate(at)
			file.WriteAt(data, at)
		case 3:
			file.Truncate(at)
		}
		file.Sync()
		file.Close()
		clean := mode&4 != 0
		var rp int64
		if mode&8 != 0 {
			rp = int64(mode >> 4) // segments below it are trusted, not rescanned
		}
		lenient := clean || rp > 0
		l, err := Open(Options{FS: fs, Clock: clock.NewFake(t0), Dir: crashDir, Config: fuzzConfig(), Logger: discardLogger(),
			RecoveryPoint: rp, LogStartOffset: -1, HighWatermark: -1, CleanShutdown: clean})
		if err != nil {
			t.Fatalf("open after damaging %s: %v", name, err)
		}
		// Every remaining batch is valid, in increasing offset order.
		var buf []byte
		next := int64(-1)
		for off := l.LogStartOffset(); off < l.LogEndOffset(); {
			buf, err = l.Read(buf[:0], off, 1<<16, l.LogEndOffset(), true)
			if err != nil {
				if lenient && errors.Is(err, ErrCorruptSegment) {
					return // trusted files; damage shows as corruption
				}
				t.Fatalf("read at %d after damaging %s: %v", off, name, err)
			}
			if len(buf) == 0 {
				break
			}
			for b := buf; len(b) > 0; {
				batch, rest, ok := record.Split(b)
				if !ok {
					t.Fatalf("partial batch at %d", off)
				}
				h, err := record.ValidateStored(batch)
				if err == nil && (h.BaseOffset < next || h.NextOffset() <= off) {
					err = errors.New("offsets do not increase")
				}
				if err != nil {
					if lenient {
						return // damage in a trusted segment (a base offset is not under the CRC)
					}
					t.Fatalf("batch at %d after damaging %s: %v", off, name, err)
				}
				next, off, b = h.NextOffset(), h.NextOffset(), rest
			}
		}
		if !lenient && next > l.LogEndOffset() {
			t.Fatalf("batches reach %d past the log end offset %d", next, l.LogEndOffset())
		}
		res, err := l.Append(testBatch(t, 2, t0.UnixMilli(), "z"), OriginClient, 100)
		if err != nil {
			if lenient {
				return
			}
			t.Fatalf("append after recovery: %v", err)
		}
		got, err := l.Read(nil, res.BaseOffset, 1<<16, l.LogEndOffset(), true)
		if h, herr := record.ParseHeader(got); err != nil || herr != nil || h.BaseOffset != res.BaseOffset {
			t.Fatalf("reading back the append at %d: %v", res.BaseOffset, err)
		}
		if err := l.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
	})
}

// FuzzAppend feeds arbitrary bytes to Append from every origin: no panic, and
// the log stays readable and recovers to the same content.
func FuzzAppend(f *testing.F) {
	for _, c := range []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLz4, record.CodecZstd} {
		b, err := record.Build(&record.BatchSpec{ProducerID: 3, ProducerEpoch: 0, BaseSequence: 0, Codec: c,
			Records: []record.BuildRecord{{Timestamp: t0.UnixMilli(), Key: []byte("k"), Value: []byte("v")},
				{OffsetDelta: 1, Timestamp: t0.UnixMilli() + 1, Value: []byte("w")}}})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(0), b)
		f.Add(uint8(2), append(b[:len(b):len(b)], b...))
		f.Add(uint8(1), b[:len(b)-3])
	}
	f.Fuzz(func(t *testing.T, origin uint8, data []byte) {
		fs := vfs.NewMem()
		clk := clock.NewFake(t0)
		cfg := fuzzConfig()
		l, err := Open(Options{FS: fs, Clock: clk, Dir: crashDir, Config: cfg, Logger: discardLogger(),
			RecoveryPoint: -1, LogStartOffset: -1, HighWatermark: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(testBatch(t, 2, t0.UnixMilli(), "a"), OriginClient, 0); err != nil {
			t.Fatal(err)
		}
		l.Append(bytes.Clone(data), Origin(origin%3), 1)
		before := readAllBatches(t, l, l.LogStartOffset())
		for _, b := range before {
			if _, err := record.ValidateStored(b); err != nil {
				t.Fatalf("invalid batch stored: %v", err)
			}
		}
		if _, err := l.Append(testBatch(t, 1, t0.UnixMilli(), "b"), OriginClient, 2); err != nil {
			t.Fatalf("append after: %v", err)
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		l2, err := Open(Options{FS: fs.CrashClone(), Clock: clk, Dir: crashDir, Config: cfg, Logger: discardLogger(),
			RecoveryPoint: 0, LogStartOffset: -1, HighWatermark: -1})
		if err != nil {
			t.Fatal(err)
		}
		after := readAllBatches(t, l2, l2.LogStartOffset())
		if len(after) != len(before)+1 || l2.LogEndOffset() != l.LogEndOffset() {
			t.Fatalf("recovered %d batches (LEO %d), had %d+1 (LEO %d)", len(after), l2.LogEndOffset(), len(before), l.LogEndOffset())
		}
		for i := range before {
			if !bytes.Equal(before[i], after[i]) {
				t.Fatalf("batch %d changed by recovery", i)
			}
		}
	})
}

// FuzzProducerSnapshot decodes arbitrary snapshot bytes: no panic, and what
// decodes encodes back to bytes that decode to the same state.
func FuzzProducerSnapshot(f *testing.F) {
	p := newProducerState()
	for i := int64(0); i < 3; i++ {
		h := record.Header{ProducerID: i, ProducerEpoch: int16(i), BaseSequence: int32(i * 100), LastOffsetDelta: 4, BaseOffset: i * 10, MaxTimestamp: 77}
		p.update(&h, nil, -1)
	}
	f.Add(p.encodeSnapshot())
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := decodeSnapshot(data)
		if err != nil {
			return
		}
		again, err := decodeSnapshot(ps.encodeSnapshot())
		if err != nil {
			t.Fatalf("re-encoded snapshot does not decode: %v", err)
		}
		if len(again.m) != len(ps.m) {
			t.Fatalf("%d producers, then %d", len(ps.m), len(again.m))
		}
		for id, e := range ps.m {
			e2 := again.m[id]
			if e2 == nil || e2.Epoch != e.Epoch || e2.CoordinatorEpoch != e.CoordinatorEpoch ||
				e2.CurrentTxnFirstOffset != e.CurrentTxnFirstOffset || e2.LastTimestamp != e.LastTimestamp ||
				len(e2.batches) != len(e.batches) || (len(e.batches) > 0 && e2.batches[0] != e.batches[0]) {
				t.Fatalf("producer %d: %+v, then %+v", id, e, e2)
			}
		}
	})
}
