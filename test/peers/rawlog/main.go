// Command rawlog is the physical floor Gregor's benchmarks are compared
// against on the same machine: the raw system calls of a log broker with
// nothing else around them.
//
//	rawlog append [flags]   pipelined pwrite + group-committed fdatasync
//	rawlog serve [flags]    a file sent to readers over loopback TCP
//	rawlog replicate [flags] produce with acks=all to -rf replicas of each partition
//
// append has the shape of a produce benchmark against Gregor: a client
// keeps up to -inflight requests outstanding (Gregor's
// gregor.max.in.flight.requests.per.connection and kgo's five), each
// carrying the records of -size bytes due since the last one (at most
// -batch bytes, kgo's producer batch; as fast as possible without -rate),
// as kgo's linger=0 producer sends whatever is buffered when a request slot
// frees; each request is written to the end of one file with pwrite, and is
// answered when an fdatasync that started after its write has returned. One
// goroutine runs the fdatasyncs back to back, each covering every request
// written before it began (Gregor's group commit), so the requests written
// while one sync runs share the next. With -rate the requests are due on a
// schedule and their latency counts from when they were due. It prints one
// JSON line: throughput, latency, fdatasyncs per second, requests per
// sync, its own CPU seconds and the bytes it wrote to storage per byte
// (/proc/self/io write_bytes), over the -duration after -warmup.
//
// serve sends a -mb MiB file -rounds times to each of -readers reader
// processes (this program, re-executed; each on its own connection, all at
// once) over loopback, with sendfile(2) or with pread and
// write (-copy), -chunk bytes per call (with -rpc each chunk when its
// reader asks for it, a consumer's fetch), and prints the throughput and the
// MiB sent per CPU-second of the sender. On loopback the kernel charges
// the receiving side's TCP processing to the sender, so this is the most
// MiB per CPU-second any broker serving local consumers can reach.
//
// replicate is the floor of Gregor's replication benchmark (test/cluster,
// TestLongReplicationThroughput): -rf node processes (this program,
// re-executed), each the leader of the partitions p with p % rf equal to
// its id and a follower of all the others, and a client process producing
// to them over loopback TCP as kgo does with the round-robin partitioner:
// the -partitions in turn, one -batch (1 MiB: 1,024 records of 1 KiB)
// per request, -inflight requests per connection, one connection per
// leader. A leader reads each request into a reused buffer, checks its
// CRC-32C, writes it with pwrite to the end of the partition's file under
// the group commit of append, and answers it, in order, once its own
// fdatasync and every follower's fetch offset have passed it (acks=all,
// every replica in the ISR). A follower keeps one long-polling fetch
// connection per partition it follows: it sends its durable end, the
// leader answers with the whole batches written past it (at most
// -fetch-max bytes, at least one batch; it waits while there are none)
// with sendfile(2), and the follower reads them into a reused buffer,
// checks their CRCs, writes them with pwrite and fdatasyncs before it
// fetches again. With -rf 1 one node leads every partition. The client
// costs about 0.3 ms of CPU per MiB here, kgo about 1-1.5: on two cores the
// client's CPU is taken from the nodes', so -client-cpu-per-mib adds what
// a real client spends building records (spent in CRCs, measured on the
// thread's CPU clock). No Kafka
// protocol and no broker code: what is left is the system calls every
// byte needs. It prints one JSON line: MiB/s acknowledged over -duration
// after -warmup, the CPU seconds of each node (user+system from
// /proc/PID/stat) and of the client, MiB per CPU-second of the nodes,
// how many of the machine's cores were busy (/proc/stat, every process and
// kernel thread) and how many of them were not the nodes or the client
// (other work on a shared machine, and kernel threads and interrupts
// working for the run: they show only there), and the CPU a thread pays
// here per MiB written into the page cache and fdatasynced (the memory
// state, which moves every figure).
// -verify checks afterwards that every replica holds its leader's bytes up
// to the furthest acknowledged offset. The nodes' files are in a fresh
// directory under -dir, removed at the end.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rawlog append|serve|replicate [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "append":
		err = appendCmd(os.Args[2:])
	case "serve":
		err = serveCmd(os.Args[2:])
	case "read":
		err = readCmd(os.Args[2:])
	case "replicate":
		err = replicateCmd(os.Args[2:])
	case "replicate-node":
		err = replicateNodeCmd(os.Args[2:])
	case "replicate-client":
		err = replicateClientCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// cpuSeconds is this process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// writeBytes is /proc/self/io write_bytes.
func writeBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

type serveResult struct {
	Mode            string  `json:"mode"`
	Chunk           int     `json:"chunk"`
	Readers         int     `json:"readers"`
	RPC             bool    `json:"rpc,omitempty"`
	MiB             int64   `json:"mib"`
	MiBPerS         float64 `json:"mib_per_sec"`
	CPUSeconds      float64 `json:"cpu_s"`
	MiBPerCPUSecond float64 `json:"mib_per_cpu_s"`
}

func serveCmd(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	dir := fs.String("dir", os.TempDir(), "directory for the file")
	mb := fs.Int("mb", 1024, "file size, MiB")
	rounds := fs.Int("rounds", 4, "times the file is sent")
	chunk := fs.Int("chunk", 1<<20, "bytes per sendfile or write")
	copyMode := fs.Bool("copy", false, "pread into a buffer and write it instead of sendfile")
	nReaders := fs.Int("readers", 1, "reader processes, each sent the file on its own connection at once")
	rpc := fs.Bool("rpc", false, "each chunk is sent when its reader asks for it (a small request, as a consumer's fetch), not streamed")
	fs.Parse(args)

	f, err := os.CreateTemp(*dir, "rawlog-*.data")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, *chunk)
	for i := range buf {
		buf[i] = byte(i)
	}
	size := int64(*mb) << 20
	for off := int64(0); off < size; off += int64(len(buf)) {
		if _, err := f.WriteAt(buf[:min(int64(len(buf)), size-off)], off); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// One reader process per connection, as each consumer of a broker
	// is its own client.
	readers := make([]*exec.Cmd, *nReaders)
	conns := make([]*net.TCPConn, *nReaders)
	for i := range readers {
		rargs := []string{"read", ln.Addr().String()}
		if *rpc {
			rargs = append(rargs, strconv.Itoa(*chunk))
		}
		readers[i] = exec.Command(self, rargs...)
		readers[i].Stderr = os.Stderr
		if err := readers[i].Start(); err != nil {
			return err
		}
		nc, err := ln.Accept()
		if err != nil {
			return err
		}
		conns[i] = nc.(*net.TCPConn)
	}
	fc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	cpu0, start := cpuSeconds(), time.Now()
	for i, tc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer tc.Close()
			errs[i] = sendRounds(tc, f, fc, size, *chunk, *rounds, *copyMode, *rpc)
		}()
	}
	wg.Wait()
	elapsed, cpu := time.Since(start).Seconds(), cpuSeconds()-cpu0
	for i, r := range readers {
		if err := r.Wait(); err != nil {
			return fmt.Errorf("reader: %w", err)
		}
		if errs[i] != nil {
			return errs[i]
		}
	}
	sent := int64(*rounds) * int64(*mb) * int64(len(conns))
	mode := "sendfile"
	if *copyMode {
		mode = "copy"
	}
	return json.NewEncoder(os.Stdout).Encode(serveResult{Mode: mode, Chunk: *chunk, Readers: len(conns), RPC: *rpc, MiB: sent,
		MiBPerS: float64(sent) / elapsed, CPUSeconds: cpu, MiBPerCPUSecond: float64(sent) / cpu})
}

// sendRounds sends the file of size bytes rounds times on tc, chunk bytes
// per sendfile (or pread and write with copyMode); with rpc each chunk
// waits for its reader's request.
func sendRounds(tc *net.TCPConn, f *os.File, fc syscall.RawConn, size int64, chunk, rounds int, copyMode, rpc bool) error {
	sock, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	buf := make([]byte, chunk)
	req := make([]byte, 8)
	for range rounds {
		for off := int64(0); off < size; off += int64(chunk) {
			if rpc {
				if _, err := io.ReadFull(tc, req); err != nil {
					return err
				}
			}
			n := int(min(int64(chunk), size-off))
			if copyMode {
				if _, err := f.ReadAt(buf[:n], off); err != nil {
					return err
				}
				if _, err := tc.Write(buf[:n]); err != nil {
					return err
				}
				continue
			}
			if err := sendfileAll(sock, fc, off, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// sendfileAll sends n bytes of the file from off with sendfile(2), waiting
// in the poller while the socket is full.
func sendfileAll(sock, file syscall.RawConn, off int64, n int) error {
	var serr error
	err := file.Control(func(ffd uintptr) {
		sent := 0
		werr := sock.Write(func(sfd uintptr) bool {
			for sent < n {
				pos := off + int64(sent)
				m, err := syscall.Sendfile(int(sfd), int(ffd), &pos, n-sent)
				if m > 0 {
					sent += m
				}
				switch {
				case err == syscall.EAGAIN:
					return false
				case err == syscall.EINTR:
				case err != nil:
					serr = err
					return true
				case m == 0:
					serr = fmt.Errorf("sendfile: file ended at %d", pos)
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// readCmd reads from addr until the sender closes, in its own process so
// that its CPU time is not the sender's.
func readCmd(args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return fmt.Errorf("usage: rawlog read ADDR [CHUNK]")
	}
	nc, err := net.Dial("tcp", args[0])
	if err != nil {
		return err
	}
	defer nc.Close()
	buf := make([]byte, 1<<20)
	if len(args) == 1 {
		for {
			if _, err := nc.Read(buf); err != nil {
				return nil
			}
		}
	}
	// Request and response: ask for each chunk with a small request and
	// read all of it before asking again, as a consumer's fetches do.
	chunk, err := strconv.Atoi(args[1])
	if err != nil {
		return err
	}
	req := make([]byte, 8)
	for {
		if _, err := nc.Write(req); err != nil {
			return nil
		}
		for got := 0; got < chunk; {
			n, err := nc.Read(buf[:min(len(buf), chunk-got)])
			if err != nil {
				return nil
			}
			got += n
		}
	}
}
