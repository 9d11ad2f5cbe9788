package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnCommands: a transaction left open by a live producer shows in
// `txn list`, `txn describe` and `txn producers`; `txn abort` at its start
// offset ends it on the partition (its producer no longer has a transaction
// open there, and a read_committed consumer reads past it), and at an
// offset no transaction starts at it refuses.
func TestTxnCommands(t *testing.T) {
	c := startCLIWith(t, map[string]string{"transaction.state.log.num.partitions": "1"})
	c.run("topic", "create", "t", "-p", "1")
	c.produce("t", 0, "a", "b")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.TransactionalID("hung"), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	rows := tableRows(t, c.run("txn", "list"))
	if len(rows) != 1 || rows[0]["TRANSACTIONAL-ID"] != "hung" || rows[0]["STATE"] != "Ongoing" {
		t.Fatalf("txn list: %v", rows)
	}
	var desc []describedTxn
	c.json(&desc, "txn", "describe", "hung")
	if len(desc) != 1 || desc[0].State != "Ongoing" || len(desc[0].Partitions) != 1 || desc[0].Partitions[0] != "t/0" {
		t.Fatalf("txn describe: %+v", desc)
	}
	var prods []txnProducer
	c.json(&prods, "txn", "producers", "t/0")
	open := -1
	for i, pr := range prods {
		if pr.ProducerID == desc[0].ProducerID {
			open = i
		}
	}
	if open < 0 || prods[open].TxnStartOffset != 2 {
		t.Fatalf("txn producers t/0: %+v (producer %d)", prods, desc[0].ProducerID)
	}

	if _, err := c.fail("txn", "abort", "t/0", "--start-offset", "1"); err == nil ||
		!strings.Contains(err.Error(), "no producer has a transaction open since offset 1") {
		t.Fatalf("abort at an offset no transaction starts at: %v", err)
	}
	out := c.run("txn", "abort", "t/0", "--start-offset", "2")
	if !strings.Contains(out, "aborted the transaction of producer") {
		t.Fatalf("txn abort: %q", out)
	}
	c.json(&prods, "txn", "producers", "t/0")
	for _, pr := range prods {
		if pr.TxnStartOffset >= 0 {
			t.Fatalf("after the abort: %+v", prods)
		}
	}
	// The last stable offset passed the aborted transaction: read_committed
	// reads the two records before it and stops.
	got := c.run("consume", "t", "--isolation", "read_committed", "-e")
	if got != "a\nb\n" {
		t.Fatalf("read_committed after the abort: %q", got)
	}
}
