package main

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
)

func checkOrder(t *testing.T, po partitionOffsets) {
	t.Helper()
	if po.LogEndOffset == nil {
		t.Fatalf("%s/%d: no log end offset: %+v", po.Topic, po.Partition, po)
	}
	if !(po.LogStartOffset <= po.LastStableOffset && po.LastStableOffset <= po.HighWatermark && po.HighWatermark <= *po.LogEndOffset) {
		t.Fatalf("%s/%d: offsets out of order: %+v", po.Topic, po.Partition, po)
	}
}

func TestOffsetsAfterDeleteRecords(t *testing.T) {
	c := startCLI(t)
	c.run("topic", "create", "ledger", "-p", "2")
	c.produce("ledger", 0, "a", "b", "c", "d", "e", "f")
	c.produce("ledger", 1, "x", "y")
	c.run("topic", "trim", "ledger/0", "--before", "4")

	var got []partitionOffsets
	c.json(&got, "offsets", "ledger")
	if len(got) != 2 {
		t.Fatalf("offsets: %+v", got)
	}
	for i, want := range []struct{ start, end int64 }{{4, 6}, {0, 2}} {
		po := got[i]
		checkOrder(t, po)
		if po.Partition != int32(i) || po.LogStartOffset != want.start || po.LastStableOffset != want.end ||
			po.HighWatermark != want.end || *po.LogEndOffset != want.end || po.Leader != 1 {
			t.Fatalf("partition %d: %+v, want log start %d, LSO=HW=LEO %d", i, po, want.start, want.end)
		}
	}

	rows := tableRows(t, c.run("offsets", "ledger/0"))
	if len(rows) != 1 {
		t.Fatalf("offsets ledger/0: %v", rows)
	}
	r := rows[0]
	if r["TOPIC"] != "ledger" || r["PARTITION"] != "0" || r["LOG-START"] != "4" || r["LSO"] != "6" || r["HW"] != "6" || r["LEO"] != "6" {
		t.Fatalf("offsets table: %v", r)
	}

	// Everything below the high watermark.
	c.run("topic", "trim", "ledger/1", "--before", "hw")
	c.json(&got, "offsets", "ledger/1")
	if len(got) != 1 || got[0].LogStartOffset != 2 || got[0].HighWatermark != 2 {
		t.Fatalf("after trim to hw: %+v", got)
	}
	checkOrder(t, got[0])

	if _, err := c.fail("offsets", "ledger/7"); err == nil {
		t.Fatal("offsets of a missing partition succeeded")
	}
	c.json(&got, "offsets")
	if len(got) != 2 {
		t.Fatalf("offsets with no arguments: %+v", got)
	}
}

// Retention deletes segments whose newest record is older than
// retention.ms, the active one too once the high watermark reaches the log
// end offset (as Kafka does: it rolls a new empty segment first), so an
// idle topic whose records all expired ends with log start offset = HW =
// LEO; the next record gets that offset.
func TestOffsetsAfterRetention(t *testing.T) {
	b := brokertest.Start(t, map[string]string{"log.retention.check.interval.ms": "20"})
	c := cli{t: t, b: b, addr: b.Addr().String()}
	c.run("topic", "create", "aging", "-p", "1", "-c", "segment.ms=60000", "-c", "retention.ms=600000")
	cl := b.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Records hours old and two minutes apart: each is past retention.ms
	// when it arrives.
	old := time.Now().Add(-3 * time.Hour)
	for i := range 3 {
		r := &kgo.Record{Topic: "aging", Value: []byte{byte('a' + i)}, Timestamp: old.Add(time.Duration(i) * 2 * time.Minute)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var got []partitionOffsets
	for deadline := time.Now().Add(10 * time.Second); ; {
		c.json(&got, "offsets", "aging")
		if got[0].LogStartOffset == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retention did not move the log start offset to 3: %+v", got[0])
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	checkOrder(t, got[0])
	if got[0].HighWatermark != 3 || *got[0].LogEndOffset != 3 {
		t.Fatalf("after retention: %+v, want log start = HW = LEO = 3", got[0])
	}
	r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: "aging", Value: []byte("new")}).First()
	if err != nil {
		t.Fatal(err)
	}
	if r.Offset != 3 {
		t.Fatalf("a new record after retention got offset %d, want 3", r.Offset)
	}
}
