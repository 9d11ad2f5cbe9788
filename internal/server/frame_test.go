package server

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// pollUntil polls cond until it holds or five seconds pass.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A size header alone takes no memory: a frame's buffer grows with the
// bytes that arrive, so connections announcing 100 MiB frames and sending a
// few bytes hold a few KiB each, and the others are served.
func TestAnnouncedFrameSizeTakesNoMemory(t *testing.T) {
	ts := startServer(t, Config{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const conns = 8
	for range conns {
		c := dial(t, ts.addr)
		c.write(append(binary.BigEndian.AppendUint32(nil, 100<<20), make([]byte, 10)...))
	}
	pollUntil(t, "the server to read every size header", func() bool { return ts.pool.Used() == conns*firstFrameStep })
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 16<<20 {
		t.Fatalf("%d connections announcing 100 MiB frames and sending 10 bytes made the server allocate %d MiB", conns, d>>20)
	}
	dial(t, ts.addr).roundTrip()
}

// metadataFrame is a Metadata v12 request frame of about size bytes (topic
// names of 30,000 bytes), which the fake handler answers.
func metadataFrame(size int, corr int32) []byte { return metadataFrameFrom("big", size, corr) }

// metadataFrameFrom is metadataFrame with a client id (which tells the fake
// handler what to do).
func metadataFrameFrom(clientID string, size int, corr int32) []byte {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	for i := 0; i < size/30_000; i++ {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(fmt.Sprintf("%05d-%s", i, strings.Repeat("t", 29_990)))
		req.Topics = append(req.Topics, rt)
	}
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, corr)
}

// answered reads one response of c.
func (c *client) answered(t *testing.T) {
	t.Helper()
	if _, err := c.readFrame(20 * time.Second); err != nil {
		t.Errorf("no response: %v", err)
	}
}

// Partial frames that together fill the request memory pool do not wait on
// each other forever: one of them may grow past the pool until it is
// answered, then the next. The bytes held never pass the capacity by more
// than one frame (and the others' first 64 KiB), and connections that had
// to wait are counted.
func TestFullPoolOfPartialFramesMakesProgress(t *testing.T) {
	const capacity, frameSize, conns = 4 << 20, 3 << 20, 4
	pool := NewMemoryPool(capacity)
	ts := startServer(t, Config{MemoryPool: pool})
	frame := metadataFrame(frameSize, 1)
	clients := make([]*client, conns)
	for i := range clients {
		clients[i] = dial(t, ts.addr)
		clients[i].write(frame[:len(frame)*2/3]) // two thirds: more than the pool holds, together
	}
	pollUntil(t, "every connection to read what it could", func() bool {
		return ts.metric(t, "gregor_network_request_memory_waits_total", nil) > 0
	})
	var peak int64
	stop := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			peak = max(peak, pool.Used())
			time.Sleep(100 * time.Microsecond)
		}
	})
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			c.write(frame[len(frame)*2/3:])
			c.answered(t)
		})
	}
	wg.Wait()
	close(stop)
	watcher.Wait()
	// Beyond the capacity: one whole frame, and each other frame's first
	// bytes, which are never waited for.
	if limit := int64(capacity + len(frame) + (conns-1)*firstFrameStep); peak > limit {
		t.Fatalf("the pool held %d bytes, more than its capacity, one frame and the others' first bytes (%d)", peak, limit)
	}
	pollUntil(t, "the memory to be given back", func() bool { return pool.Used() == 0 })
}

// One request larger than the whole pool still proceeds, as in Kafka.
func TestRequestLargerThanThePoolProceeds(t *testing.T) {
	pool := NewMemoryPool(1 << 20)
	ts := startServer(t, Config{MemoryPool: pool})
	c := dial(t, ts.addr)
	c.write(metadataFrame(3<<20, 1))
	c.answered(t)
	pollUntil(t, "the memory to be given back", func() bool { return pool.Used() == 0 })
}

// A connection waiting for request memory is closed after
// connections.max.idle.ms, with a log line saying why.
func TestWaitForRequestMemoryEndsAtIdleTimeout(t *testing.T) {
	pool := NewMemoryPool(1 << 20)
	ts := startServer(t, Config{MemoryPool: pool, ConnectionsMaxIdle: 300 * time.Millisecond})
	hog := dial(t, ts.addr) // a request past the pool whose handling stalls
	hog.write(metadataFrameFrom(idSlow, 2<<20, 1))
	waitFor(t, ts.h.slowStarted)
	defer close(ts.h.release)
	c := dial(t, ts.addr)
	frame := metadataFrame(2<<20, 1)
	c.write(frame[:len(frame)/2])
	c.expectClosed()
	ts.logs.requireContains(t, "no request memory became free")
	if n := ts.metric(t, "gregor_network_request_memory_waits_total", nil); n != 1 {
		t.Fatalf("%v waits for request memory counted, want 1", n)
	}
}

// Small requests (heartbeats, fetches, metadata) are answered while large
// frames wait for a full pool: a frame's first 64 KiB never wait.
func TestSmallRequestsFlowWhileThePoolIsFull(t *testing.T) {
	pool := NewMemoryPool(1 << 20)
	ts := startServer(t, Config{MemoryPool: pool})
	hog := dial(t, ts.addr) // a request past the pool whose handling stalls
	hog.write(metadataFrameFrom(idSlow, 2<<20, 1))
	waitFor(t, ts.h.slowStarted)
	defer close(ts.h.release)
	waiting := dial(t, ts.addr)
	frame := metadataFrame(2<<20, 1)
	waiting.write(frame[:len(frame)/2])
	pollUntil(t, "the large frame to wait for memory", func() bool {
		return ts.metric(t, "gregor_network_request_memory_waits_total", nil) == 1
	})
	for range 3 {
		dial(t, ts.addr).roundTrip()
	}
}
