package api_test

import (
	"encoding/binary"
	"io"
	"math"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A fetch asking for 2 GiB gets at most fetch.max.bytes, in whole batches,
// except that a first batch larger than that comes whole (KIP-74), as in
// Kafka, where the response limit is min(MaxBytes, fetch.max.bytes).
func TestFetchHonoursFetchMaxBytes(t *testing.T) {
	f := newLogAPIWith(t, map[string]string{"fetch.max.bytes": "524288"})
	f.createTopic("capped", 1, nil)
	f.produceSized("capped", 0, 700<<10, 300<<10, 300<<10, 300<<10)
	offsets := f.batchOffsets("capped", 0)

	for _, c := range []struct {
		from      int64
		wantBytes int // the batches expected: the first alone, or the first of the 300 KiB ones
	}{
		{from: 0},          // 700 KiB > fetch.max.bytes: the first batch, whole, and nothing more
		{from: offsets[1]}, // 300 KiB fits, two do not
	} {
		req := f.fetchRequest("capped", []int64{c.from}, math.MaxInt32, math.MaxInt32)
		resp := f.request(req).(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			t.Fatal(err)
		}
		want, err := f.expectFetched("capped", []int64{c.from}, 512<<10)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.RecordBatches) != len(want[0]) || len(want[0]) == 0 {
			t.Fatalf("fetch from %d asking 2 GiB with fetch.max.bytes=512 KiB: %d bytes, want %d (one batch)",
				c.from, len(p.RecordBatches), len(want[0]))
		}
	}
}

// batchOffsets lists the base offsets of a partition's batches.
func (f *logAPI) batchOffsets(topic string, partition int32) []int64 {
	f.t.Helper()
	l := f.log(topic, partition)
	var out []int64
	for off := l.LogStartOffset(); off < l.HighWatermark(); {
		data, err := l.Read(nil, off, 1, l.HighWatermark(), true)
		if err != nil || len(data) < 61 {
			f.t.Fatalf("reading the batch at %d: %v", off, err)
		}
		out = append(out, off)
		last := int64(binary.BigEndian.Uint64(data)) + int64(int32(binary.BigEndian.Uint32(data[23:])))
		off = last + 1
	}
	return out
}

// A fetch asking for everything of a 24 MiB segment does not make the
// broker allocate the bytes it sends: they go from the segment file to the
// socket through a bounded buffer. The client here reads the response
// through a small buffer, so the process's allocations are the broker's.
func TestFetchResponseDoesNotAllocateItsSize(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("big", 1, nil)
	for range 24 {
		f.produceSized("big", 0, 1000<<10)
	}
	req := f.fetchRequest("big", []int64{0}, math.MaxInt32, math.MaxInt32)
	req.SetVersion(12)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, 1)
	nc, err := net.DialTimeout("tcp", f.b.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))

	fetchOnce := func() (respBytes int64, allocated uint64) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := nc.Write(frame); err != nil {
			t.Fatal(err)
		}
		var size [4]byte
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			t.Fatal(err)
		}
		n, err := io.CopyN(io.Discard, nc, int64(binary.BigEndian.Uint32(size[:])))
		if err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return n, after.TotalAlloc - before.TotalAlloc
	}
	fetchOnce() // the first one fills the broker's buffer pools
	n, alloc := fetchOnce()
	if n < 23<<20 {
		t.Fatalf("the response has %d bytes, want the whole 24 MiB log", n)
	}
	if alloc > 4<<20 {
		t.Fatalf("serving a %d MiB fetch response allocated %d MiB", n>>20, alloc>>20)
	}
	t.Logf("a %d MiB response allocated %d KiB", n>>20, alloc>>10)
}
