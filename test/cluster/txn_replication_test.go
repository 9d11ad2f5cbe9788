package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Transactions on a replicated partition survive the loss of its leader:
// on an RF 3 topic (min ISR 2) a committed, an aborted and a committed
// transaction, then a transaction left open, then the partition's leader,
// also the open transaction's coordinator, SIGKILLed. The new leader, a former follower, holds the markers, the
// aborted-transaction index and the producer state it copied: its last
// stable offset stops at the open transaction's first record (never past
// it), a read_committed consumer reads exactly the committed records, and
// once the open transaction commits through the new leader its records
// follow and the LSO reaches the log end (the commit goes to the
// coordinator's new node: __transaction_state is replicated). The restarted old leader ends
// with the same bytes. Without the follower's producer state the LSO would
// pass the open transaction; without its index the aborted records would be
// read.
func TestReplicationTransactionsLeaderKill(t *testing.T) {
	c := newCluster(t, 3)
	const topic = "txrepl"
	adm := kadm.NewClient(c.client())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v / %v", topic, err, resp.Err)
	}
	txnClient := func(id string) *kgo.Client {
		return c.client(kgo.TransactionalID(id), kgo.TransactionTimeout(60*time.Second),
			kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1000), kgo.RequestRetries(1000))
	}
	run := func(cl *kgo.Client, commit bool, vals ...string) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			if err := cl.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
		if commit {
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatalf("commit: %v", err)
			}
		} else if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
			t.Fatalf("abort: %v", err)
		}
	}
	p1 := txnClient("txrepl-1")
	run(p1, true, "c1", "c2", "c3", "c4", "c5")  // offsets 0-4, marker 5
	run(p1, false, "a1", "a2", "a3", "a4", "a5") // 6-10, marker 11
	run(p1, true, "c6", "c7", "c8", "c9", "c10") // 12-16, marker 17
	committed := []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10"}
	// An open transaction from another producer at offsets 18-20, written
	// with acks=all: under the high watermark, so on every ISR member. Its
	// transaction coordinator is the partition's leader, killed with it:
	// __transaction_state has three replicas (gregor serve's default for
	// three voters), so the coordinator moves too. With one replica (the
	// default before) it could not, and kgo's EndTransaction dialled the
	// dead node until it gave up ('unable to dial').
	waitFullISR(t, c, topic, 1)
	waitFullISR(t, c, "__transaction_state", 50)
	old, isr := leaderOf(t, c, topic, 0)
	id := ""
	for i := 0; i < 100 && id == ""; i++ {
		cand := fmt.Sprintf("txrepl-2-%d", i)
		r := adm.FindTxnCoordinators(ctx, cand)[cand]
		if r.Err == nil && r.NodeID == old {
			id = cand
		}
	}
	if id == "" {
		t.Fatalf("no transactional id of 100 has its coordinator on node %d", old)
	}
	p2 := txnClient(id)
	if err := p2.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"o1", "o2", "o3"} {
		if err := p2.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	const openStart = 18
	c.sigkill(old)
	var leader int32 = -1
	if !poll(30*time.Second, func() bool {
		leader, _ = leaderOf(t, c, topic, 0)
		return leader != old
	}) {
		t.Fatalf("no new leader after node %d (ISR %v) was killed", old, isr)
	}
	t.Logf("node %d (leader, ISR %v) SIGKILLed; node %d leads", old, isr, leader)

	// The new leader's LSO: it may lag while the new leader's high
	// watermark catches up, but it must never pass the open transaction.
	lso := listedOffset(t, adm.ListCommittedOffsets, topic)
	if !poll(30*time.Second, func() bool {
		lso = listedOffset(t, adm.ListCommittedOffsets, topic)
		if lso > openStart {
			t.Fatalf("the new leader's last stable offset %d passes the open transaction starting at %d", lso, openStart)
		}
		return lso == openStart
	}) {
		t.Fatalf("the new leader's last stable offset is %d, want %d (the open transaction's first offset)", lso, openStart)
	}
	if got := readTxn(t, c, topic, kgo.ReadCommitted(), 16); !slices.Equal(got, committed) {
		t.Fatalf("read_committed from the new leader: %v, want %v", got, committed)
	}
	all := readTxn(t, c, topic, kgo.ReadUncommitted(), 20)
	if want := 18; len(all) != want { // 15 records before the open transaction, its 3
		t.Fatalf("read_uncommitted from the new leader: %d records %v, want %d", len(all), all, want)
	}

	// The open transaction commits through the new leader.
	if err := p2.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit of the open transaction after the leader kill: %v", err)
	}
	if !poll(30*time.Second, func() bool { return listedOffset(t, adm.ListCommittedOffsets, topic) == 22 }) {
		t.Fatalf("after the commit the last stable offset is %d, want 22 (the log end)", listedOffset(t, adm.ListCommittedOffsets, topic))
	}
	want := append(slices.Clone(committed), "o1", "o2", "o3")
	if got := readTxn(t, c, topic, kgo.ReadCommitted(), 20); !slices.Equal(got, want) {
		t.Fatalf("read_committed after the commit: %v, want %v", got, want)
	}
	c.start(old)
	c.waitReady(old, 60*time.Second)
	waitFullISR(t, c, topic, 1)
	checkReplicasEqual(t, c, topic, 1)
}

// listedOffset is partition 0's offset from list (a kadm ListOffsets call),
// -1 when it fails.
func listedOffset(t *testing.T, list func(context.Context, ...string) (kadm.ListedOffsets, error), topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lo, err := list(ctx, topic)
	if err != nil {
		return -1
	}
	o, ok := lo.Lookup(topic, 0)
	if !ok || o.Err != nil {
		return -1
	}
	return o.Offset
}

// readTxn reads partition 0 from its start with isolation until it has
// returned the record at offset last, and returns the values read.
func readTxn(t *testing.T, c *cluster, topic string, isolation kgo.IsolationLevel, last int64) []string {
	t.Helper()
	cl := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(isolation))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading up to offset %d: %v (read %v)", last, ctx.Err(), out)
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, string(r.Value))
			done = done || r.Offset >= last
		})
		if done {
			return out
		}
	}
}
