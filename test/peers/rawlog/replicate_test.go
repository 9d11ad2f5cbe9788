package main

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain lets replicate re-execute the test binary as its nodes and
// client, as it re-executes rawlog.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "replicate-") {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A short run of each replication factor acknowledges bytes, and every
// replica holds what its leader acknowledged (-verify). Timing is not
// asserted: the figures are logged.
func TestReplicateAcknowledges(t *testing.T) {
	for _, rf := range []int{1, 3} {
		res, err := runReplicate(replicateSpec{dir: t.TempDir(), rf: rf, partitions: 3, batch: 64 << 10, inflight: 5,
			fetchMax: 256 << 10, warmup: 100 * time.Millisecond, duration: 500 * time.Millisecond, verify: true})
		if err != nil {
			t.Fatalf("rf %d: %v", rf, err)
		}
		if res.Requests == 0 || !res.Verified || len(res.NodeCPUSeconds) != rf {
			t.Fatalf("rf %d: %+v", rf, res)
		}
		t.Logf("rf %d: %.0f MiB/s acknowledged, %.0f MiB per cluster CPU-s", rf, res.MiBPerS, res.MiBPerClusterCPU)
	}
}

func TestCheckBatchesRejectsCorruption(t *testing.T) {
	batch := func(payload string) []byte {
		b := make([]byte, batchHeader+len(payload))
		binary.BigEndian.PutUint32(b, uint32(len(b)))
		binary.BigEndian.PutUint32(b[4:], crc32.Checksum([]byte(payload), castagnoli))
		copy(b[batchHeader:], payload)
		return b
	}
	two := append(batch("first batch"), batch("second")...)
	if err := checkBatches(two); err != nil {
		t.Fatalf("intact batches: %v", err)
	}
	flipped := append([]byte(nil), two...)
	flipped[len(flipped)-1] ^= 1
	if checkBatches(flipped) == nil {
		t.Fatal("a flipped payload bit passed the CRC check")
	}
	if checkBatches(two[:len(two)-1]) == nil {
		t.Fatal("a truncated batch passed")
	}
}
