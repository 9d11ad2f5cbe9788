package admin

import (
	"net/http"
	"strings"
	"testing"
)

// heldFakeSource is the fake with an orphan holding orders/0's LSO (280,
// HW 290) and an open transaction above it, a transaction on orders/1 that
// does not hold its LSO (LSO = HW), two ongoing transactions and the
// automatic abort on with one abort done.
func heldFakeSource() *fakeSource {
	src := newFakeSource()
	pv := src.partitions[tpKey("orders", 0)]
	pv.Transactions = []TransactionView{
		{ProducerID: 987654, ProducerEpoch: 3, FirstOffset: 280, StartMs: -1, AgeMs: 3_600_000, Class: "orphan",
			Explanation: "producer 987654 (epoch 3) is hanging: the coordinator knows no transactional id with this producer id",
			Action:      "gregor txn abort orders/0 --start-offset 280"},
		{ProducerID: 11, ProducerEpoch: 0, FirstOffset: 285, AgeMs: 2000, Class: "open", TransactionalID: "etl-1", State: "Ongoing",
			TimeoutMs: 60000, Explanation: `transaction "etl-1" of producer 11 (epoch 0) is open; it times out in 58s`},
	}
	src.partitions[tpKey("orders", 0)] = pv
	pv1 := src.partitions[tpKey("orders", 1)]
	pv1.Transactions = []TransactionView{{ProducerID: 12, FirstOffset: pv1.HW, Class: "open", Explanation: "beyond the HW"}}
	src.partitions[tpKey("orders", 1)] = pv1
	src.ongoing.Errors = []string{"broker 3: i/o timeout"}
	src.ongoing.Transactions = []OngoingTransaction{
		{TransactionalID: "etl-1", ProducerID: 11, State: "Ongoing", TimeoutMs: 60000, AgeMs: 2000, StartMs: fakeT0.UnixMilli() - 2000,
			Partitions: []TopicPartitions{{Topic: "orders", Partitions: []int32{0, 1}}}},
		{TransactionalID: "stuck", ProducerID: 13, State: "Ongoing", TimeoutMs: 1000, AgeMs: 90000, StartMs: fakeT0.UnixMilli() - 90000,
			Partitions: []TopicPartitions{}},
	}
	src.autoAbort = AutoAbortView{Enabled: true, MinOrphanMs: 600000, MinAgeMs: 900000, CheckIntervalMs: 10000, Checks: 40,
		LastCheckMs: fakeT0.UnixMilli() - 5000, AbortedTotal: 1,
		Watched: []WatchedOrphan{{Topic: "orders", Partition: 0, ProducerID: 987654, ProducerEpoch: 3, FirstOffset: 280,
			OrphanSinceMs: fakeT0.UnixMilli() - 60000, AgeMs: 3_600_000, DueMs: fakeT0.UnixMilli() + 540000}},
		Recent: []AutoAbortRecord{{WatchedOrphan: WatchedOrphan{Topic: "users", Partition: 0, ProducerID: 77, FirstOffset: 5,
			OrphanSinceMs: fakeT0.UnixMilli() - 900000, Explanation: "producer 77 is hanging"}, AtMs: fakeT0.UnixMilli() - 60000}},
	}
	return src
}

// TestConsoleTransactions: the Transactions page lists every partition
// whose LSO is held back with each holder's class, explanation and (for the
// orphan) the abort command and what the automatic abort will do; the
// coordinator's ongoing transactions with age against timeout; the
// automatic abort's settings, watched orphans and aborts. The nav and the
// overview link to it.
func TestConsoleTransactions(t *testing.T) {
	a := newConsoleAdmin(t, heldFakeSource())
	code, body, _ := get(t, a.Handler(), "/ui/transactions")
	if code != http.StatusOK {
		t.Fatalf("GET /ui/transactions = %d:\n%s", code, body)
	}
	for _, w := range []string{
		`<a href="/ui/transactions" aria-current="page">Transactions</a>`, `href="/v1/transactions"`,
		`data-partition="orders/0" data-class="orphan" data-first-offset="280"`, `data-partition="orders/0" data-class="open" data-first-offset="285"`,
		`<span class="badge txn-orphan bad">orphan</span>`, "is hanging: the coordinator knows no transactional id",
		`<code class="action">gregor txn abort orders/0 --start-offset 280</code>`,
		"automatic abort is on: due 2025-01-02 03:13:05", `<code>etl-1</code> <span class="muted">Ongoing</span>`,
		`data-txn="etl-1" data-state="Ongoing"`, "not asked: broker 3: i/o timeout", `href="/ui/topics/orders/1">1</a>`, `data-txn="stuck"`, "past its timeout",
		`class="agefill w0"`, `class="agebar over"`,
		`data-health="auto-abort" data-enabled="true"`, "on · 1 aborted",
		`data-auto-abort="users/0" data-first-offset="5" data-result="aborted"`, "ABORT marker written",
		"orphan 1 · unknown 0", "1 partition</span>",
	} {
		if !strings.Contains(body, w) {
			t.Errorf("/ui/transactions lacks %q", w)
		}
	}
	if strings.Contains(body, `data-partition="orders/1"`) {
		t.Error("/ui/transactions lists orders/1, whose LSO equals its HW")
	}

	_, body, _ = get(t, a.Handler(), "/")
	for _, w := range []string{`<span class="hname">LSO held back</span><span class="hval"><a href="/ui/transactions">1</a></span>`,
		`<div class="hbox bad" title="1 orphan">`} {
		if !strings.Contains(body, w) {
			t.Errorf("overview lacks %q", w)
		}
	}
}

// TestConsoleLSOReason: on the partition page the LSO marker says why it is
// below the HW — the class, explanation and first offset of the
// transaction starting at the LSO, and the command that ends an orphan —
// in its tooltip, in a line under the drawing and in the offsets table; a
// partition whose LSO equals its HW shows nothing of the kind.
func TestConsoleLSOReason(t *testing.T) {
	a := newConsoleAdmin(t, heldFakeSource())
	_, body, _ := get(t, a.Handler(), "/ui/topics/orders/0")
	for _, w := range []string{
		`data-marker="lso" data-offset="280" data-held-by="orphan"`,
		"held 10 records below the HW by the transaction from offset 280 [ORPHAN]: producer 987654 (epoch 3) is hanging",
		`<p class="lso-why" data-class="orphan" data-first-offset="280">`, "LSO held 10 records below the HW",
		`<code class="action">gregor txn abort orders/0 --start-offset 280</code>`, "1 more transaction above it",
		"held back by the transaction from offset 280 [ORPHAN]",
	} {
		if !strings.Contains(body, w) {
			t.Errorf("/ui/topics/orders/0 lacks %q", w)
		}
	}
	_, body, _ = get(t, a.Handler(), "/ui/topics/orders/1")
	for _, no := range []string{"data-held-by", "lso-why", "held back by"} {
		if strings.Contains(body, no) {
			t.Errorf("/ui/topics/orders/1 (LSO = HW) shows %q", no)
		}
	}
}

// TestConsoleTransactionsEmpty: nothing held, nothing ongoing, automatic
// abort off (the default), and the coordinator still loading.
func TestConsoleTransactionsEmpty(t *testing.T) {
	src := newFakeSource()
	src.autoAbort = AutoAbortView{MinOrphanMs: 600000, MinAgeMs: 900000, LastCheckMs: -1}
	a := newConsoleAdmin(t, src)
	_, body, _ := get(t, a.Handler(), "/ui/transactions")
	for _, w := range []string{"nothing holds any last stable offset back", "no transaction under way",
		`data-enabled="false"`, "<b>Off</b>", "no orphan on the partitions this broker leads", "0 checks so far."} {
		if !strings.Contains(body, w) {
			t.Errorf("/ui/transactions lacks %q", w)
		}
	}
	_, body, _ = get(t, a.Handler(), "/")
	if !strings.Contains(body, `<div class="hbox ok" title="partitions whose last stable offset transactions hold back">`) {
		t.Error("the overview's transactions box is not ok with nothing held")
	}
}
