package log

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// spanTestLog is a log on disk with several segments of batches of 1 to 7
// records, and a high watermark below its log end offset.
func spanTestLog(t *testing.T) *Log {
	t.Helper()
	cfg := smallConfig()
	cfg.SegmentBytes = 16 << 10
	l, err := Open(Options{FS: vfs.OS(), Clock: clock.NewFake(t0), Dir: t.TempDir(), Config: cfg, Logger: discardLogger(),
		RecoveryPoint: -1, LogStartOffset: -1, HighWatermark: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for i := range 120 {
		if _, err := l.Append(testBatch(t, 1+i%7, t0.UnixMilli(), "k"), OriginClient, 0); err != nil {
			t.Fatal(err)
		}
	}
	if len(l.segments()) < 3 {
		t.Fatalf("want several segments, have %d", len(l.segments()))
	}
	l.SetHighWatermark(l.LogEndOffset() - 5)
	return l
}

// A Span read into a reused buffer holding stale bytes returns exactly what
// Read returns, never more than Size bytes.
func TestLocateAppendToMatchesRead(t *testing.T) {
	l := spanTestLog(t)
	leo, hw := l.LogEndOffset(), l.HighWatermark()
	stale := bytes.Repeat([]byte{0xAB}, 64<<10)
	for offset := int64(0); offset <= leo; offset += 3 {
		for _, maxBytes := range []int{-1, 0, 1, 200, 1000, 5000, 1 << 20} {
			for _, maxOffset := range []int64{offset - 1, offset, offset + 4, hw, leo, leo + 10} {
				for _, minOne := range []bool{false, true} {
					want, werr := l.Read([]byte("prefix"), offset, maxBytes, maxOffset, minOne)
					sp, err := l.Locate(offset, maxBytes, maxOffset, minOne)
					if (err != nil) != (werr != nil) {
						t.Fatalf("Locate(%d, %d, %d, %v) error %v, Read error %v", offset, maxBytes, maxOffset, minOne, err, werr)
					}
					if err != nil {
						continue
					}
					buf := append(stale[:0:len(stale)], "prefix"...)
					got, err := sp.AppendTo(buf)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("Locate(%d, %d, %d, %v)+AppendTo: %d bytes, Read %d", offset, maxBytes, maxOffset, minOne, len(got), len(want))
					}
					if len(got)-len("prefix") > sp.Size() {
						t.Fatalf("AppendTo returned %d bytes, more than Size %d", len(got)-len("prefix"), sp.Size())
					}
					if &got[0] != &stale[0] {
						t.Fatalf("AppendTo reallocated a buffer with room for Size bytes")
					}
					checkWhole(t, sp, want[len("prefix"):])
				}
			}
		}
	}
}

// checkWhole checks that sp.Whole() is exactly want, read by ReadAt in
// pieces of several sizes.
func checkWhole(t *testing.T, sp Span, want []byte) {
	t.Helper()
	w, err := sp.Whole()
	if err != nil {
		t.Fatal(err)
	}
	if w.Size() != len(want) {
		t.Fatalf("Whole of a %d-byte span: %d bytes, want %d", sp.Size(), w.Size(), len(want))
	}
	for _, piece := range []int{61, 4093} {
		got := make([]byte, 0, len(want))
		buf := make([]byte, min(piece, w.Size()+1))
		for len(got) < w.Size() {
			n, err := w.ReadAt(buf, int64(len(got)))
			got = append(got, buf[:n]...)
			if err != nil && !(errors.Is(err, io.EOF) && len(got) == w.Size()) {
				t.Fatalf("ReadAt(%d bytes at %d): %v", piece, len(got), err)
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Whole span read in %d-byte pieces differs from Read", piece)
		}
	}
}

func TestLocateErrorsAndEmptySpans(t *testing.T) {
	l := spanTestLog(t)
	leo := l.LogEndOffset()
	if _, err := l.Locate(leo+1, 1<<20, leo, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Locate past the log end offset: %v, want ErrOffsetOutOfRange", err)
	}
	for _, c := range []struct {
		name              string
		offset, maxOffset int64
		maxBytes          int
		minOne            bool
	}{
		{"at the log end offset", leo, leo, 1 << 20, true},
		{"at the bound", 10, 10, 1 << 20, true},
		{"first batch over maxBytes without minOneBatch", 0, leo, 1, false},
	} {
		sp, err := l.Locate(c.offset, c.maxBytes, c.maxOffset, c.minOne)
		if err != nil || sp.Size() != 0 {
			t.Fatalf("%s: size %d, err %v; want an empty span", c.name, sp.Size(), err)
		}
		dst := []byte("x")
		if got, err := sp.AppendTo(dst); err != nil || string(got) != "x" {
			t.Fatalf("%s: empty span appended %q, %v", c.name, got, err)
		}
	}
}

// Reading a span into a buffer with room allocates nothing, so the fetch
// path's pooled buffers are never cleared or grown.
func TestSpanAppendToDoesNotAllocate(t *testing.T) {
	l := spanTestLog(t)
	sp, err := l.Locate(0, 8<<10, l.HighWatermark(), true)
	if err != nil || sp.Size() == 0 {
		t.Fatalf("Locate: size %d, err %v", sp.Size(), err)
	}
	buf := make([]byte, 0, sp.Size())
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := sp.AppendTo(buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("AppendTo allocated %.1f times per read", allocs)
	}
}
