package admin

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ---- transactions ----

// overviewTxnTimeout bounds the overview's question about transactions.
const overviewTxnTimeout = time.Second

// transactionsBody is the Transactions page: what holds each partition's
// LSO back and why, the coordinator's transactions under way, and the
// automatic abort of orphans.
type transactionsBody struct {
	Held    []heldRow
	Counts  classCounts
	Ongoing []ongoingRow
	// OngoingErrors name the coordinators whose transactions are missing.
	OngoingErrors []string
	AutoAbort     AutoAbortView
}

type heldRow struct {
	HeldPartition
	Records int64 // HW − LSO
	Txns    []heldTxn
}

// heldTxn is one holder with what the automatic abort says of it (orphans
// only).
type heldTxn struct {
	TransactionView
	Severity  string // ok, warn, bad
	AutoAbort string
}

// classCounts counts holders by class, for the summary and the overview.
type classCounts struct {
	Partitions, Open, TimingOut, Completing, Unreplicated, Orphan, Unknown int
}

func (n *classCounts) add(class string) {
	switch class {
	case "open":
		n.Open++
	case "timing_out":
		n.TimingOut++
	case "completing":
		n.Completing++
	case "unreplicated":
		n.Unreplicated++
	case "orphan":
		n.Orphan++
	default:
		n.Unknown++
	}
}

// classSeverity: an orphan needs someone (or the automatic abort); a
// transaction past its timeout, or one the detector cannot classify, needs
// a look; the rest end by themselves.
func classSeverity(class string) string {
	switch class {
	case "orphan":
		return "bad"
	case "timing_out", "unknown":
		return "warn"
	}
	return "ok"
}

type ongoingRow struct {
	OngoingTransaction
	// AgeW is the age as a share of the timeout (0–100) for the small
	// bar; Over: past its timeout.
	AgeW float64
	Over bool
}

func (c *console) transactionsPage(r *http.Request) (*page, error) {
	ctx := r.Context()
	held, err := c.src.Transactions(ctx)
	if err != nil {
		return nil, err
	}
	aa, err := c.src.AutoAbort(ctx)
	if err != nil {
		return nil, err
	}
	p := &page{Template: "transactions.html", Title: "Transactions", Nav: "transactions", JSON: "/v1/transactions"}
	body := transactionsBody{AutoAbort: aa}
	body.AutoAbort.Watched = capRows(aa.Watched, "watched orphans", &p.Notes)
	watched := map[string]WatchedOrphan{}
	for _, w := range aa.Watched {
		watched[orphanKey(w.Topic, w.Partition, w.ProducerID, w.FirstOffset)] = w
	}
	for _, h := range capRows(heldBack(held), "partitions whose LSO is held back", &p.Notes) {
		row := heldRow{HeldPartition: h, Records: h.HighWatermark - h.LastStableOffset}
		body.Counts.Partitions++
		for _, t := range h.Transactions {
			body.Counts.add(t.Class)
			ht := heldTxn{TransactionView: t, Severity: classSeverity(t.Class)}
			if t.Class == "orphan" {
				ht.AutoAbort = autoAbortNote(aa, watched[orphanKey(h.Topic, h.Partition, t.ProducerID, t.FirstOffset)], c.a.now().UnixMilli())
			}
			row.Txns = append(row.Txns, ht)
		}
		body.Held = append(body.Held, row)
	}
	ongoing, err := c.src.OngoingTransactions(ctx)
	if err != nil {
		return nil, err
	}
	body.OngoingErrors = ongoing.Errors
	for _, o := range capRows(ongoing.Transactions, "ongoing transactions", &p.Notes) {
		row := ongoingRow{OngoingTransaction: o}
		if o.TimeoutMs > 0 && o.AgeMs >= 0 {
			row.AgeW = min(100*float64(o.AgeMs)/float64(o.TimeoutMs), 100)
			row.Over = o.AgeMs > int64(o.TimeoutMs)
		}
		body.Ongoing = append(body.Ongoing, row)
	}
	p.Body = body
	return p, nil
}

// heldBack keeps the partitions whose LSO is below their HW: a transaction
// that began at or above the HW (its first batch not replicated yet) holds
// nothing back yet.
func heldBack(held []HeldPartition) []HeldPartition {
	var out []HeldPartition
	for _, h := range held {
		if h.LastStableOffset < h.HighWatermark {
			out = append(out, h)
		}
	}
	return out
}

func orphanKey(topic string, partition int32, pid, first int64) string {
	return fmt.Sprintf("%s/%d/%d/%d", topic, partition, pid, first)
}

// autoAbortNote says what the automatic abort will do with an orphan.
func autoAbortNote(aa AutoAbortView, w WatchedOrphan, nowMs int64) string {
	switch {
	case !aa.Enabled:
		return "automatic abort is off (gregor.transaction.orphan.abort.enable=false)"
	case w.DueMs == 0:
		return "automatic abort is on: not watched yet (first seen at the next check)"
	case w.DueMs <= nowMs:
		return "automatic abort is on: due now, aborted at the next check"
	}
	return fmt.Sprintf("automatic abort is on: due %s (orphan for %s of %s, older than %s needed)",
		formatUnixMs(w.DueMs), formatDurationMs(max(nowMs-w.OrphanSinceMs, 0)), formatDurationMs(aa.MinOrphanMs), formatDurationMs(aa.MinAgeMs))
}

// transactionsHealth is the overview's box for transactions holding LSOs
// back; ok is false when the source could not say.
func (c *console) transactionsHealth(ctx context.Context) (healthItem, bool) {
	// The overview must not wait long on a coordinator elsewhere: what
	// cannot be asked in time is counted unknown.
	ctx, cancel := context.WithTimeout(ctx, overviewTxnTimeout)
	defer cancel()
	held, err := c.src.Transactions(ctx)
	if err != nil {
		return healthItem{}, false
	}
	var n classCounts
	for _, h := range heldBack(held) {
		n.Partitions++
		for _, t := range h.Transactions {
			n.add(t.Class)
		}
	}
	h := healthItem{Name: "LSO held back", State: "ok", Value: formatInt(n.Partitions), Href: "/ui/transactions",
		Detail: "partitions whose last stable offset transactions hold back"}
	var bad []string
	for _, x := range []struct {
		n     int
		class string
	}{{n.Orphan, "orphan"}, {n.TimingOut, "timing out"}, {n.Unknown, "unknown"}} {
		if x.n > 0 {
			bad = append(bad, fmt.Sprintf("%d %s", x.n, x.class))
		}
	}
	if len(bad) > 0 {
		h.State, h.Detail = "warn", strings.Join(bad, ", ")
		if n.Orphan > 0 {
			h.State = "bad"
		}
	}
	return h, true
}
