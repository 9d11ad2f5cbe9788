package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// clientResult is what the replicate client reports to the coordinator.
type clientResult struct {
	AckedBytes int64   `json:"acked_bytes"` // acknowledged within the window
	Requests   int64   `json:"requests"`    // acknowledged within the window
	AckedEnd   []int64 `json:"acked_end"`   // per partition, the furthest acknowledged file offset
}

// clientConn is the client's one connection to a leader: a writer sends
// the requests the dispatcher queues, a reader takes the answers and frees
// their slots.
type clientConn struct {
	c     *net.TCPConn
	slots chan struct{} // one per request in flight
	queue chan int      // partitions of requests to send
}

// replicateClientCmd produces to the nodes until the window ends, as a kgo
// producer with the round-robin partitioner, linger 0 and full batches
// does: the partitions in turn, each request one batch of -batch bytes,
// at most -inflight requests in flight per connection, one connection per
// leader.
func replicateClientCmd(args []string) error {
	fs := flag.NewFlagSet("replicate-client", flag.ExitOnError)
	addrs := fs.String("addrs", "", "every node's address, comma-separated")
	partitions := fs.Int("partitions", 3, "partitions; p is led by node p % nodes")
	batch := fs.Int("batch", 1<<20, "bytes per request")
	inflight := fs.Int("inflight", 5, "requests in flight per connection")
	t0 := fs.Int64("t0", 0, "window start, Unix ns")
	t1 := fs.Int64("t1", 0, "window end, Unix ns")
	burn := fs.Duration("cpu-per-mib", 0, "extra CPU spent building each MiB sent")
	fs.Parse(args)
	from, to := time.Unix(0, *t0), time.Unix(0, *t1)

	var mu sync.Mutex
	res := clientResult{AckedEnd: make([]int64, *partitions)}
	nodes := strings.Split(*addrs, ",")
	conns := make([]*clientConn, len(nodes))
	for i, a := range nodes {
		c, err := net.Dial("tcp", a)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.Write([]byte{helloProduce}); err != nil {
			return err
		}
		cc := &clientConn{c: c.(*net.TCPConn), slots: make(chan struct{}, *inflight), queue: make(chan int, *inflight)}
		conns[i] = cc
		go cc.write(*batch, *burn)
		go func() {
			var resp [12]byte
			for {
				if _, err := io.ReadFull(cc.c, resp[:]); err != nil {
					if time.Now().Before(to) {
						fmt.Fprintf(os.Stderr, "rawlog client: %v\n", err)
						os.Exit(1)
					}
					return
				}
				now := time.Now()
				p, end := binary.BigEndian.Uint32(resp[:]), int64(binary.BigEndian.Uint64(resp[4:]))
				mu.Lock()
				if !now.Before(from) && now.Before(to) {
					res.AckedBytes += int64(*batch)
					res.Requests++
				}
				res.AckedEnd[p] = max(res.AckedEnd[p], end)
				mu.Unlock()
				<-cc.slots
			}
		}()
	}
	for p := 0; time.Now().Before(to); p = (p + 1) % *partitions {
		cc := conns[p%len(conns)]
		cc.slots <- struct{}{}
		cc.queue <- p
	}
	// The coordinator reads this process's CPU time in /proc at the
	// window's end and then closes stdin: exiting before that would race
	// its read.
	io.Copy(io.Discard, os.Stdin)
	mu.Lock()
	defer mu.Unlock()
	return json.NewEncoder(os.Stdout).Encode(res)
}

// write sends each queued request: a header (partition, length) and one
// batch (length, CRC-32C, payload), the payload a window of random bytes
// moved along each time so no two batches are alike. With burn it first
// spends that much of its thread's CPU time per MiB (in CRCs of the
// payload), standing for what a real client spends building records.
func (cc *clientConn) write(batch int, burn time.Duration) {
	runtime.LockOSThread()
	perBatch := time.Duration(float64(burn) * float64(batch) / (1 << 20))
	pool := make([]byte, max(4<<20, 2*batch))
	r := rand.NewChaCha8([32]byte{})
	r.Read(pool)
	hdr := make([]byte, 8+batchHeader)
	payload := batch - batchHeader
	off := 0
	for p := range cc.queue {
		off = (off + 4099) % (len(pool) - payload)
		data := pool[off : off+payload]
		if perBatch > 0 {
			for until := threadCPU() + perBatch; threadCPU() < until; {
				crc32.Checksum(data[:min(len(data), 64<<10)], castagnoli)
			}
		}
		binary.BigEndian.PutUint32(hdr, uint32(p))
		binary.BigEndian.PutUint32(hdr[4:], uint32(batch))
		binary.BigEndian.PutUint32(hdr[8:], uint32(batch))
		binary.BigEndian.PutUint32(hdr[12:], crc32.Checksum(data, castagnoli))
		bufs := net.Buffers{hdr, data}
		if _, err := bufs.WriteTo(cc.c); err != nil {
			return
		}
	}
}

// threadCPU is the calling thread's CPU time, CLOCK_THREAD_CPUTIME_ID:
// getrusage's lags by up to a scheduler tick while the thread runs.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}
