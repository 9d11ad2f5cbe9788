package cleaner

import (
	"errors"

	"github.com/gregor-broker/gregor/internal/record"
)

// Transactions during cleaning. The cleaner learns outcomes from the markers
// themselves: pass 1 sees the markers of the dirty range, and a transaction
// whose marker it has not seen is never cleaned past (its first offset ends
// the round); the last stable offset bounds the range too (Assess). Pass 2
// then follows Kafka's CleanedTransactionMetadata: records of aborted
// transactions are removed, a marker goes only once no batch of its
// transaction is left, after its delete horizon, and every ABORT marker kept
// keeps its aborted-transaction index entry in the cleaned segment.

// controlType is a control record's type; one definition, in record.
type controlType = record.ControlType

const (
	controlAbort   = record.ControlAbort
	controlCommit  = record.ControlCommit
	controlUnknown = record.ControlUnknown
)

var errFirstRecord = errors.New("stop")

// controlTypeOf reads a control batch's type; one that cannot be read is
// unknown, and the cleaner keeps it.
func controlTypeOf(batch []byte, maxOut int) controlType {
	m, err := record.ParseControl(batch, maxOut)
	if err != nil {
		return controlUnknown
	}
	return m.Type
}

// abortedTxn is one aborted transaction: its producer, its first data offset
// (the marker's own offset if it had no data) and its marker's offset.
type abortedTxn struct {
	pid         int64
	first, last int64
}

// txnScan follows transactions through a scan of the dirty range (pass 1
// and the header scan). known holds aborted transactions learnt by an
// earlier scan; without it pass 1 maps transactional records optimistically
// and asks for a second pass (redo) when that was wrong or unknowable.
type txnScan struct {
	known   map[int64][]abortedTxn
	final   bool // outcomes are known: never ask for a redo
	open    map[int64]*openTxn
	aborted []abortedTxn
	redo    bool
}

type openTxn struct {
	first   int64
	mapped  bool // records of it went into the offset map
	aborted bool // known in advance to be aborted
}

func newTxnScan(known []abortedTxn) *txnScan {
	t := &txnScan{open: make(map[int64]*openTxn)}
	if known != nil {
		t.final = true
		t.known = make(map[int64][]abortedTxn)
		for _, a := range known {
			t.known[a.pid] = append(t.known[a.pid], a)
		}
	}
	return t
}

func (t *txnScan) knownAborted(pid, offset int64) bool {
	for _, a := range t.known[pid] {
		if a.first <= offset && offset <= a.last {
			return true
		}
	}
	return false
}

// dataBatch notes a data batch; it reports whether its records must stay
// out of the offset map (an aborted transaction known as such).
func (t *txnScan) dataBatch(h *record.Header) bool {
	if !h.Transactional() {
		return false
	}
	o := t.open[h.ProducerID]
	if o == nil {
		o = &openTxn{first: h.BaseOffset, aborted: t.knownAborted(h.ProducerID, h.BaseOffset)}
		t.open[h.ProducerID] = o
	}
	return o.aborted
}

// mapped notes that records of pid's open transaction were mapped.
func (t *txnScan) mapped(pid int64) {
	if o := t.open[pid]; o != nil {
		o.mapped = true
	}
}

// marker notes a transaction marker.
func (t *txnScan) marker(h *record.Header, typ controlType) {
	o := t.open[h.ProducerID]
	delete(t.open, h.ProducerID)
	if typ != controlAbort {
		return
	}
	first := h.BaseOffset
	if o != nil {
		first = o.first
	}
	t.aborted = append(t.aborted, abortedTxn{pid: h.ProducerID, first: first, last: h.LastOffset()})
	if o != nil && o.mapped && !o.aborted && !t.final {
		t.redo = true // aborted records went into the map
	}
}

// finish ends the scan: a transaction still open has no marker in the
// scanned range, so its outcome is unknown. It returns the first offset of
// the earliest such transaction (-1 if none).
func (t *txnScan) finish() int64 {
	first := int64(-1)
	for _, o := range t.open {
		if first < 0 || o.first < first {
			first = o.first
		}
	}
	if first >= 0 && !t.final {
		t.redo = true
	}
	return first
}

// cleanedTxns is Kafka's CleanedTransactionMetadata for pass 2: it says
// whether a batch may be discarded as part of an aborted transaction, and
// whether a marker's transaction has no batch left.
type cleanedTxns struct {
	pending   []abortedTxn // by first offset, not reached yet
	aborted   map[int64]*abortedState
	committed map[int64]bool
}

type abortedState struct {
	txn      abortedTxn
	observed bool // a batch of it was seen in this pass
}

func newCleanedTxns(aborted []abortedTxn) *cleanedTxns {
	p := append([]abortedTxn(nil), aborted...)
	sortAborted(p)
	return &cleanedTxns{pending: p, aborted: make(map[int64]*abortedState), committed: make(map[int64]bool)}
}

func sortAborted(p []abortedTxn) {
	for i := 1; i < len(p); i++ {
		for j := i; j > 0 && p[j].first < p[j-1].first; j-- {
			p[j], p[j-1] = p[j-1], p[j]
		}
	}
}

func (c *cleanedTxns) reach(offset int64) {
	for len(c.pending) > 0 && c.pending[0].first <= offset {
		a := c.pending[0]
		c.aborted[a.pid] = &abortedState{txn: a}
		c.pending = c.pending[1:]
	}
}

// onBatch is called for every data batch: true means its records belong to
// an aborted transaction and may all go.
func (c *cleanedTxns) onBatch(h *record.Header) bool {
	c.reach(h.LastOffset())
	if !h.Transactional() {
		return false
	}
	if a := c.aborted[h.ProducerID]; a != nil {
		a.observed = true
		return true
	}
	c.committed[h.ProducerID] = true
	return false
}

// onControl is called for every control batch: true means no batch of its
// transaction is left, so the marker may go once its horizon has passed.
func (c *cleanedTxns) onControl(h *record.Header, typ controlType) bool {
	c.reach(h.LastOffset())
	switch typ {
	case controlAbort:
		a := c.aborted[h.ProducerID]
		delete(c.aborted, h.ProducerID)
		return a == nil || !a.observed
	case controlCommit:
		was := c.committed[h.ProducerID]
		delete(c.committed, h.ProducerID)
		return !was
	}
	return false
}
