package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// The replicate wire format, big-endian, all of it on loopback TCP:
//
//	connection hello   kind byte: 'P' a producer, 'F' a follower, then for
//	                   'F' partition uint32 and follower node uint32
//	produce request    partition uint32, length uint32, then one batch
//	produce response   partition uint32, end offset uint64 (in the file)
//	fetch request      the follower's durable end offset uint64
//	fetch response     length uint64, then that many bytes of the
//	                   leader's file from the offset, whole batches
//	batch (in files)   length uint32 (header included), CRC-32C uint32
//	                   of the rest, payload
const (
	helloProduce = 'P'
	helloFetch   = 'F'
	batchHeader  = 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkBatches verifies the CRC of every batch in b, which holds whole
// batches, as a Kafka leader does for each produced batch and a follower
// for each fetched one.
func checkBatches(b []byte) error {
	for len(b) > 0 {
		if len(b) < batchHeader {
			return fmt.Errorf("truncated batch header: %d bytes", len(b))
		}
		n := int(binary.BigEndian.Uint32(b))
		if n < batchHeader || n > len(b) {
			return fmt.Errorf("batch length %d with %d bytes left", n, len(b))
		}
		if got, want := crc32.Checksum(b[batchHeader:n], castagnoli), binary.BigEndian.Uint32(b[4:]); got != want {
			return fmt.Errorf("batch CRC %08x, header says %08x", got, want)
		}
		b = b[n:]
	}
	return nil
}

// leaderPart is a partition this node leads: its file with the group
// commit of append, what each follower has fetched (durably: a follower
// fdatasyncs before it fetches again) and where each batch ends, so that a
// fetch is cut at a batch boundary. Everything is guarded by log.mu; one
// connection appends to it, so appends need no reservation.
type leaderPart struct {
	log       *appendLog
	followers []int64 // by node id; -1 for the leader itself
	batchEnds []int64 // ascending
}

// ackedLocked is the offset below which every batch is acknowledged with
// acks=all and every replica in the ISR: the leader's own durable end and
// every follower's fetch offset (Gregor's high watermark).
func (lp *leaderPart) ackedLocked() int64 {
	a := lp.log.durable
	for _, f := range lp.followers {
		if f >= 0 {
			a = min(a, f)
		}
	}
	return a
}

// node is one process of replicate: the leader of the partitions p with
// p % nodes == id, a follower of every other one.
type node struct {
	id, nodes int
	fetchMax  int
	addrs     []string
	parts     []*leaderPart // nil where another node leads
	files     []*os.File
	stopping  chan struct{} // closed when stdin ends: the run is over
}

func replicateNodeCmd(args []string) error {
	fs := flag.NewFlagSet("replicate-node", flag.ExitOnError)
	id := fs.Int("id", 0, "this node")
	addrs := fs.String("addrs", "", "every node's address, comma-separated; this node's listener is fd 3")
	partitions := fs.Int("partitions", 3, "partitions")
	dir := fs.String("dir", "", "directory for this node's files")
	fetchMax := fs.Int("fetch-max", 8<<20, "most bytes a fetch response carries")
	fs.Parse(args)

	nd := &node{id: *id, addrs: strings.Split(*addrs, ","), fetchMax: *fetchMax, stopping: make(chan struct{})}
	nd.nodes = len(nd.addrs)
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		return err
	}
	nd.parts = make([]*leaderPart, *partitions)
	nd.files = make([]*os.File, *partitions)
	for p := range *partitions {
		f, err := os.OpenFile(filepath.Join(*dir, fmt.Sprintf("p%d.log", p)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		nd.files[p] = f
		if p%nd.nodes != nd.id {
			continue
		}
		lp := &leaderPart{log: &appendLog{f: f, exited: make(chan struct{}), measureFrom: time.Unix(1<<40, 0)},
			followers: make([]int64, nd.nodes)}
		lp.log.cond.L = &lp.log.mu
		lp.followers[nd.id] = -1
		nd.parts[p] = lp
		go lp.log.syncLoop()
	}
	for p := range *partitions {
		if nd.parts[p] == nil {
			go nd.follow(p)
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				nd.fail(err)
				return
			}
			go nd.serve(c.(*net.TCPConn))
		}
	}()
	// The coordinator closes stdin when the run is over (or dies).
	io.Copy(io.Discard, os.Stdin)
	close(nd.stopping)
	return nil
}

// fail ends the process with err unless the run is ending, when the other
// processes closing their connections is expected.
func (nd *node) fail(err error) {
	select {
	case <-nd.stopping:
	case <-time.After(2 * time.Second):
		fmt.Fprintf(os.Stderr, "rawlog node %d: %v\n", nd.id, err)
		os.Exit(1)
	}
}

func (nd *node) serve(c *net.TCPConn) {
	defer c.Close()
	var hello [9]byte
	if _, err := io.ReadFull(c, hello[:1]); err != nil {
		nd.fail(err)
		return
	}
	switch hello[0] {
	case helloProduce:
		nd.serveProduce(c)
	case helloFetch:
		if _, err := io.ReadFull(c, hello[1:]); err != nil {
			nd.fail(err)
			return
		}
		p, f := int(binary.BigEndian.Uint32(hello[1:])), int(binary.BigEndian.Uint32(hello[5:]))
		if p >= len(nd.parts) || nd.parts[p] == nil || f >= nd.nodes || f == nd.id {
			nd.fail(fmt.Errorf("fetch of partition %d by node %d: not led here", p, f))
			return
		}
		nd.serveFetch(c, nd.parts[p], f, nd.files[p])
	default:
		nd.fail(fmt.Errorf("unknown hello %q", hello[0]))
	}
}

// pendingProduce is a request written and waiting for its acknowledgement.
type pendingProduce struct {
	p   int
	end int64
}

// serveProduce reads requests into one reused buffer, checks their CRC
// and writes each to the end of its partition's file; a responder answers
// them in order as they are acknowledged, as a broker's connection does.
func (nd *node) serveProduce(c *net.TCPConn) {
	pending := make(chan pendingProduce, 64)
	go nd.respond(c, pending)
	defer close(pending)
	var hdr [8]byte
	var buf []byte
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return // the client is done
		}
		p, n := int(binary.BigEndian.Uint32(hdr[:])), int(binary.BigEndian.Uint32(hdr[4:]))
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		b := buf[:n]
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		if p >= len(nd.parts) || nd.parts[p] == nil {
			nd.fail(fmt.Errorf("produce to partition %d: not led here", p))
			return
		}
		if n < batchHeader || int(binary.BigEndian.Uint32(b)) != n {
			nd.fail(fmt.Errorf("produce to partition %d: request of %d bytes is not one batch", p, n))
			return
		}
		if err := checkBatches(b); err != nil {
			nd.fail(err)
			return
		}
		lp := nd.parts[p]
		lp.log.mu.Lock()
		off := lp.log.end
		lp.log.mu.Unlock()
		if _, err := nd.files[p].WriteAt(b, off); err != nil {
			nd.fail(err)
			return
		}
		lp.log.mu.Lock()
		lp.log.end = off + int64(n)
		lp.batchEnds = append(lp.batchEnds, lp.log.end)
		lp.log.cond.Broadcast()
		lp.log.mu.Unlock()
		pending <- pendingProduce{p: p, end: off + int64(n)}
	}
}

func (nd *node) respond(c *net.TCPConn, pending <-chan pendingProduce) {
	var resp [12]byte
	for pr := range pending {
		lp := nd.parts[pr.p]
		lp.log.mu.Lock()
		for lp.ackedLocked() < pr.end {
			lp.log.cond.Wait()
		}
		lp.log.mu.Unlock()
		binary.BigEndian.PutUint32(resp[:], uint32(pr.p))
		binary.BigEndian.PutUint64(resp[4:], uint64(pr.end))
		if _, err := c.Write(resp[:]); err != nil {
			for range pending {
			}
			return
		}
	}
}

// serveFetch answers follower f's long-polling fetches of lp: each records
// the follower's durable end, waits until something is written past it and
// sends up to fetchMax bytes of whole batches (at least one) from the file
// with sendfile(2).
func (nd *node) serveFetch(c *net.TCPConn, lp *leaderPart, f int, file *os.File) {
	sock, err := c.SyscallConn()
	if err != nil {
		nd.fail(err)
		return
	}
	fc, err := file.SyscallConn()
	if err != nil {
		nd.fail(err)
		return
	}
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			nd.fail(err)
			return
		}
		off := int64(binary.BigEndian.Uint64(hdr[:]))
		lp.log.mu.Lock()
		lp.followers[f] = off
		lp.log.cond.Broadcast()
		for lp.log.end <= off {
			lp.log.cond.Wait()
		}
		// The last batch end within fetchMax, or the first past off.
		i := sort.Search(len(lp.batchEnds), func(i int) bool { return lp.batchEnds[i] > off+int64(nd.fetchMax) })
		if i == 0 || lp.batchEnds[i-1] <= off {
			i = sort.Search(len(lp.batchEnds), func(i int) bool { return lp.batchEnds[i] > off }) + 1
		}
		n := lp.batchEnds[i-1] - off
		lp.log.mu.Unlock()
		binary.BigEndian.PutUint64(hdr[:], uint64(n))
		if _, err := c.Write(hdr[:]); err != nil {
			nd.fail(err)
			return
		}
		if err := sendfileAll(sock, fc, off, int(n)); err != nil {
			nd.fail(err)
			return
		}
	}
}

// follow replicates partition p from its leader: fetch from the durable
// end, read the response into one reused buffer, check its CRCs, write it
// to the end of the file and fdatasync it before the next fetch.
func (nd *node) follow(p int) {
	c, err := net.Dial("tcp", nd.addrs[p%nd.nodes])
	if err != nil {
		nd.fail(err)
		return
	}
	defer c.Close()
	var hdr [9]byte
	hdr[0] = helloFetch
	binary.BigEndian.PutUint32(hdr[1:], uint32(p))
	binary.BigEndian.PutUint32(hdr[5:], uint32(nd.id))
	if _, err := c.Write(hdr[:]); err != nil {
		nd.fail(err)
		return
	}
	f := nd.files[p]
	buf := make([]byte, nd.fetchMax)
	var end int64
	for {
		binary.BigEndian.PutUint64(hdr[:], uint64(end))
		if _, err := c.Write(hdr[:8]); err != nil {
			nd.fail(err)
			return
		}
		if _, err := io.ReadFull(c, hdr[:8]); err != nil {
			nd.fail(err)
			return
		}
		n := int(binary.BigEndian.Uint64(hdr[:]))
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		b := buf[:n]
		if _, err := io.ReadFull(c, b); err != nil {
			nd.fail(err)
			return
		}
		if err := checkBatches(b); err != nil {
			nd.fail(fmt.Errorf("partition %d from %d: %w", p, end, err))
			return
		}
		if _, err := f.WriteAt(b, end); err != nil {
			nd.fail(err)
			return
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			nd.fail(err)
			return
		}
		end += int64(n)
	}
}
