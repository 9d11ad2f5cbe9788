package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type ackedRecord struct {
	partition int32
	offset    int64
	seq       int
}

// The real binary is SIGKILLed while an acks=all producer is writing; after a
// restart on the same data dir every acknowledged record is at the offset it
// was acknowledged with, exactly once, and each partition holds the
// producer's records in the order they were produced.
//
// SIGKILL does not drop the page cache, so this checks Gregor's recovery and
// its acknowledgement rule (answer only what is in the log), not fsync; the
// crash tests on the in-memory vfs cover lost unsynced writes.
func TestDurabilityAcrossSIGKILL(t *testing.T) {
	t.Parallel()
	const parts = 3
	dir := t.TempDir()
	p1 := startProc(t, dir, "--set", fmt.Sprintf("num.partitions=%d", parts))
	topic := uniqueTopic(t)
	createTopic(t, p1.addr, topic, parts, nil)
	idempotent := serves(testCtx(t, 10*time.Second), t, newClient(t, p1.addr), kmsg.InitProducerID)

	var (
		mu        sync.Mutex
		acked     []ackedRecord
		nAcked    atomic.Int64
		nProduced atomic.Int64
		producers atomic.Int64 // records whose producer id shows idempotence
	)
	prodCtx, stopProducing := context.WithCancel(context.Background())
	defer stopProducing()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(p1.addr),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(2000),
		kgo.RecordDeliveryTimeout(15*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	producerDone := make(chan struct{})
	go func() {
		defer close(producerDone)
		for i := 0; i < 1_000_000 && prodCtx.Err() == nil; i++ {
			r := &kgo.Record{Key: []byte(strconv.Itoa(i % 97)), Value: []byte("seq-" + strconv.Itoa(i))}
			seq := i
			nProduced.Add(1)
			cl.Produce(prodCtx, r, func(r *kgo.Record, err error) {
				if err != nil {
					return
				}
				if r.ProducerID >= 0 {
					producers.Add(1)
				}
				mu.Lock()
				acked = append(acked, ackedRecord{r.Partition, r.Offset, seq})
				mu.Unlock()
				nAcked.Add(1)
			})
		}
	}()

	const killAfter = 3000
	// Kill while the client has records in flight, so some produce
	// requests are cut off mid-way.
	if !pollUntil(60*time.Second, func() bool { return nAcked.Load() >= killAfter && cl.BufferedProduceRecords() > 0 }) {
		t.Fatalf("only %d records acknowledged in 60s", nAcked.Load())
	}
	p1.sigkill()
	killedAt, inFlight := nAcked.Load(), cl.BufferedProduceRecords()
	stopProducing()
	select {
	case <-producerDone:
	case <-time.After(30 * time.Second):
		t.Fatal("producer goroutine did not stop within 30s")
	}
	closed := make(chan struct{})
	go func() { cl.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("producer client did not close within 30s")
	}
	mu.Lock()
	final := append([]ackedRecord(nil), acked...)
	mu.Unlock()
	t.Logf("produced %d records, %d acknowledged (%d when SIGKILL was sent, %d buffered then); %d acks carried a producer id",
		nProduced.Load(), len(final), killedAt, inFlight, producers.Load())

	if idempotent && producers.Load() != int64(len(final)) {
		t.Errorf("the broker serves InitProducerId, but only %d of %d acknowledged records carried a producer id", producers.Load(), len(final))
	}
	p2 := startProc(t, dir)
	ctx := testCtx(t, 60*time.Second)
	cons := newClient(t, p2.addr)
	ends, err := kadm.NewClient(cons).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	total := 0
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s[%d]: %v", o.Topic, o.Partition, o.Err)
		}
		want[o.Partition] = o.Offset
		total += int(o.Offset)
	})
	if len(want) != parts {
		t.Fatalf("after restart the topic has %d partitions, want %d", len(want), parts)
	}
	got := consumeN(ctx, t, p2.addr, topic, total)

	byPos := map[[2]int64]int{} // (partition, offset) → seq
	seen := map[int]int64{}     // seq → how many times it is in the log
	last := map[int32]int{}     // partition → last seq read
	for _, r := range got {
		s, ok := strings.CutPrefix(string(r.Value), "seq-")
		seq, err := strconv.Atoi(s)
		if !ok || err != nil {
			t.Fatalf("%s[%d]@%d: unexpected value %q", topic, r.Partition, r.Offset, r.Value)
		}
		seen[seq]++
		if seen[seq] > 1 {
			t.Errorf("seq %d is in the log twice (again at %d@%d)", seq, r.Partition, r.Offset)
		}
		if prev, ok := last[r.Partition]; ok && seq <= prev {
			t.Errorf("partition %d: seq %d at offset %d follows seq %d: out of order", r.Partition, seq, r.Offset, prev)
		}
		last[r.Partition] = seq
		byPos[[2]int64{int64(r.Partition), r.Offset}] = seq
	}
	lost := 0
	for _, a := range final {
		s, ok := byPos[[2]int64{int64(a.partition), a.offset}]
		switch {
		case !ok:
			lost++
			if lost <= 10 {
				t.Errorf("acknowledged seq %d (%d@%d) is missing after restart", a.seq, a.partition, a.offset)
			}
		case s != a.seq:
			t.Errorf("%d@%d was acknowledged as seq %d but holds seq %d", a.partition, a.offset, a.seq, s)
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged records lost", lost, len(final))
	}
	t.Logf("after restart: %d records in the log, %d acknowledged, %d more that were written but not acknowledged",
		len(got), len(final), len(got)-len(final))
	if err := p2.stop(); err != nil {
		t.Errorf("clean shutdown after restart: %v", err)
	}
}
