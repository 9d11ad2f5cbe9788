package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestHostileClientsMemory (GREGOR_LONG=1) measures the peak RSS (VmHWM)
// of a real `gregor serve` process while clients ask it for memory it
// should not give:
//
//   - 200 connections (GREGOR_MEM_TRICKLERS) each send a request size
//     header of 100 MiB and then trickle bytes of it (1 KiB every 100 ms);
//   - 20 consumers (GREGOR_MEM_CONSUMERS) fetch from a GREGOR_MEM_GIB GiB
//     log (default 4) with MaxBytes and PartitionMaxBytes of 2 GiB, each
//     from its own place in the log, for GREGOR_MEM_SECONDS seconds
//     (default 30).
//
// It prints the peak RSS while the log is written and while the hostile
// clients run (VmHWM is reset in between), and fails when the second
// passes 256 MiB. It needs the disk space for the log (t.TempDir).
func TestHostileClientsMemory(t *testing.T) {
	if os.Getenv("GREGOR_LONG") == "" {
		t.Skip("GREGOR_LONG=1")
	}
	gib := envInt(t, "GREGOR_MEM_GIB", 4)
	seconds := envInt(t, "GREGOR_MEM_SECONDS", 30)
	tricklers, consumers := envInt(t, "GREGOR_MEM_TRICKLERS", 200), envInt(t, "GREGOR_MEM_CONSUMERS", 20)
	p := startProc(t, t.TempDir())
	pid := p.cmd.Process.Pid
	topic := "memory"
	createTopic(t, p.addr, topic, 1, nil)

	start := time.Now()
	fillLog(t, p.addr, topic, int64(gib)<<30)
	fillHWM := procStatusKiB(t, pid, "VmHWM")
	t.Logf("wrote %d GiB in %v; peak RSS while writing %d MiB", gib, time.Since(start).Round(time.Second), fillHWM>>10)
	resetPeakRSS(t, pid)

	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds)*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var trickling atomic.Int64
	for range tricklers {
		wg.Go(func() { trickle(ctx, t, p.addr, &trickling) })
	}
	var fetched, responses atomic.Int64
	for i := range consumers {
		from := int64(i) * (int64(gib) << 30) / int64(consumers) / 1024 // about where consumer i starts, in 1 KiB records
		wg.Go(func() { fetchLoop(ctx, t, p.addr, topic, from, &fetched, &responses) })
	}
	var peakSeen int64
	for ctx.Err() == nil {
		peakSeen = max(peakSeen, procStatusKiB(t, pid, "VmRSS"))
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	wg.Wait()
	hwm := procStatusKiB(t, pid, "VmHWM")
	msg := fmt.Sprintf("hostile clients for %ds: peak RSS (VmHWM) %d MiB (sampled VmRSS peak %d MiB); "+
		"%d connections trickling 100 MiB frames; %d consumers fetched %d MiB in %d responses; peak RSS while writing the %d GiB log %d MiB",
		seconds, hwm>>10, peakSeen>>10, trickling.Load(), consumers, fetched.Load()>>20, responses.Load(), gib, fillHWM>>10)
	t.Log(msg)
	fmt.Println(msg)
	if int(trickling.Load()) != tricklers {
		t.Errorf("%d of %d trickling connections were set up", trickling.Load(), tricklers)
	}
	if responses.Load() == 0 {
		t.Error("the consumers got no fetch response")
	}
	if hwm > 256<<10 {
		t.Errorf("peak RSS %d MiB, over the 256 MiB goal", hwm>>10)
	}
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q", name, s)
	}
	return n
}

// procStatusKiB reads a field (VmRSS, VmHWM) of /proc/<pid>/status, in KiB.
func procStatusKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

// resetPeakRSS sets VmHWM back to the current RSS (Linux clear_refs 5).
func resetPeakRSS(t *testing.T, pid int) {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Fatalf("resetting the peak RSS: %v", err)
	}
}

// fillLog produces size bytes of 1 KiB incompressible records.
func fillLog(t *testing.T, addr, topic string, size int64) {
	t.Helper()
	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(1_000_000),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(5*time.Millisecond))
	value := make([]byte, 1024)
	rand.Read(value)
	var failed atomic.Pointer[error]
	for n := int64(0); n < size && failed.Load() == nil; n += int64(len(value)) {
		cl.Produce(context.Background(), &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := failed.Load(); err != nil {
		t.Fatalf("producing: %v", *err)
	}
}

// trickle announces a 100 MiB request and sends 1 KiB of it every 100 ms
// until ctx ends.
func trickle(ctx context.Context, t *testing.T, addr string, set *atomic.Int64) {
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Errorf("trickler: %v", err)
		return
	}
	defer nc.Close()
	if _, err := nc.Write(binary.BigEndian.AppendUint32(nil, 100<<20)); err != nil {
		t.Errorf("trickler: %v", err)
		return
	}
	set.Add(1)
	chunk := make([]byte, 1024)
	for ctx.Err() == nil {
		nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Write(chunk); err != nil {
			t.Errorf("trickler: %v", err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// fetchLoop reads the log from offset on with raw Fetch requests asking for
// 2 GiB, until ctx ends, wrapping to the start at the end of the log.
func fetchLoop(ctx context.Context, t *testing.T, addr, topic string, offset int64, fetched, responses *atomic.Int64) {
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Errorf("consumer: %v", err)
		return
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	defer stop()
	br := bufio.NewReaderSize(nc, 1<<20)
	var frame []byte
	for corr := int32(1); ctx.Err() == nil; corr++ {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 500, 1, math.MaxInt32
		req.SessionID, req.SessionEpoch = 0, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = offset, math.MaxInt32, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		if _, err := nc.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, corr)); err != nil {
			if ctx.Err() == nil {
				t.Errorf("consumer: %v", err)
			}
			return
		}
		var size [4]byte
		if _, err := io.ReadFull(br, size[:]); err != nil {
			if ctx.Err() == nil {
				t.Errorf("consumer: %v", err)
			}
			return
		}
		n := int(binary.BigEndian.Uint32(size[:]))
		if cap(frame) < n {
			frame = make([]byte, n)
		}
		frame = frame[:n]
		if _, err := io.ReadFull(br, frame); err != nil {
			if ctx.Err() == nil {
				t.Errorf("consumer: %v", err)
			}
			return
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(12)
		if err := resp.ReadFrom(frame[5:]); err != nil { // after the correlation id and the header's tags
			t.Errorf("consumer: decoding a fetch response: %v", err)
			return
		}
		p := resp.Topics[0].Partitions[0]
		switch {
		case p.ErrorCode != 0:
			t.Errorf("consumer: fetch from %d: error %d", offset, p.ErrorCode)
			return
		case len(p.RecordBatches) == 0 && offset >= p.HighWatermark:
			offset = 0 // the end of the log: read it again
		default:
			offset = nextOffset(p.RecordBatches, offset)
		}
		fetched.Add(int64(len(p.RecordBatches)))
		responses.Add(1)
	}
}

// nextOffset is the offset after the last whole batch of records.
func nextOffset(records []byte, offset int64) int64 {
	for len(records) >= 61 {
		size := 12 + int(binary.BigEndian.Uint32(records[8:]))
		if size > len(records) {
			break
		}
		offset = int64(binary.BigEndian.Uint64(records)) + int64(binary.BigEndian.Uint32(records[23:])) + 1
		records = records[size:]
	}
	return offset
}
