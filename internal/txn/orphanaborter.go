package txn

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// LedHolders are the holders of one led partition's last stable offset.
type LedHolders struct {
	TopicPartition topicpart.TopicPartition
	Holders        []Holder
}

// ProducerViews is the coordinator's view of a producer id
// (*Coordinator.ForProducer).
type ProducerViews interface {
	ForProducer(ctx context.Context, pid int64) CoordinatorView
}

// OrphanAborterOptions configure an OrphanAborter.
type OrphanAborterOptions struct {
	// Led lists the holders of every partition this broker leads.
	Led         func() []LedHolders
	Coordinator ProducerViews
	// Markers writes the ABORT markers (the same writer WriteTxnMarkers
	// uses, so an automatic abort is exactly kafka-transactions.sh abort).
	Markers MarkerWriter
	Config  func() *config.Broker
	Clock   clock.Clock
	Logger  *slog.Logger
}

// AbortRecord is one automatic abort.
type AbortRecord struct {
	Watched
	AtMs int64
	// Err is the marker write's failure ("" when the marker was written);
	// a failed abort is tried again at the next check.
	Err string
}

// AutoAbortStatus is what the automatic abort is doing.
type AutoAbortStatus struct {
	Config          AutoAbortConfig
	CheckIntervalMs int64
	Checks          int64
	LastCheckMs     int64 // -1 before the first
	Watched         []Watched
	// Recent are the latest automatic aborts (at most maxAbortRecords),
	// newest last; Aborted counts every marker written since start.
	Recent  []AbortRecord
	Aborted int64
}

const maxAbortRecords = 100

// OrphanAborter checks the partitions this broker leads every
// transaction.abort.timed.out.transaction.cleanup.interval.ms, classifies
// what holds their last stable offsets (Diagnose) and, when
// gregor.transaction.orphan.abort.enable is set, aborts the orphans Orphans
// says are due. It checks even when disabled, so /v1 and the console show
// for how long each orphan has been watched.
type OrphanAborter struct {
	o       OrphanAborterOptions
	aborted atomic.Int64
	cancel  context.CancelFunc
	done    chan struct{}

	mu struct {
		sync.Mutex
		orphans Orphans
		status  AutoAbortStatus
	}
}

// NewOrphanAborter builds an aborter; Start runs it.
func NewOrphanAborter(o OrphanAborterOptions) *OrphanAborter {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	a := &OrphanAborter{o: o}
	a.mu.status.LastCheckMs = -1
	return a
}

// Start runs the checks in a goroutine until Close.
func (a *OrphanAborter) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel, a.done = cancel, make(chan struct{})
	go func() {
		defer close(a.done)
		for {
			tick, t := clock.NewTimer(a.o.Clock, a.interval())
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-tick:
			}
			a.Check(ctx)
		}
	}()
}

// Close stops the checks and waits for the one under way.
func (a *OrphanAborter) Close() {
	if a.cancel != nil {
		a.cancel()
		<-a.done
	}
}

func (a *OrphanAborter) interval() time.Duration {
	return time.Duration(a.o.Config().Int("transaction.abort.timed.out.transaction.cleanup.interval.ms")) * time.Millisecond
}

// Check runs one check: classify, decide, abort what is due.
func (a *OrphanAborter) Check(ctx context.Context) {
	cfg := AutoAbortConfigFrom(a.o.Config())
	abortCheck := a.interval().Milliseconds()
	views := map[int64]CoordinatorView{}
	var seen []Sighting
	for _, led := range a.o.Led() {
		for _, h := range led.Holders {
			cv, ok := views[h.ProducerID]
			if !ok {
				cv = a.o.Coordinator.ForProducer(ctx, h.ProducerID)
				views[h.ProducerID] = cv
			}
			d := Diagnose(led.TopicPartition, h, cv, a.o.Clock.Now().UnixMilli(), abortCheck)
			seen = append(seen, Sighting{TopicPartition: led.TopicPartition, Holder: h, Diagnosis: d})
		}
	}
	nowMs := a.o.Clock.Now().UnixMilli()
	a.mu.Lock()
	due, watched := a.mu.orphans.Observe(nowMs, cfg, seen)
	a.mu.Unlock()
	var records []AbortRecord
	for _, w := range due {
		records = append(records, a.abort(ctx, w, nowMs))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	st := &a.mu.status
	st.Config, st.CheckIntervalMs, st.LastCheckMs, st.Watched = cfg, abortCheck, nowMs, watched
	st.Checks++
	st.Recent = append(st.Recent, records...)
	if n := len(st.Recent); n > maxAbortRecords {
		st.Recent = append([]AbortRecord(nil), st.Recent[n-maxAbortRecords:]...)
	}
}

// abort writes the ABORT marker of an orphan with its own producer id,
// epoch and coordinator epoch, as kafka-transactions.sh abort does.
func (a *OrphanAborter) abort(ctx context.Context, w Watched, nowMs int64) AbortRecord {
	m := Marker{ProducerID: w.ProducerID, ProducerEpoch: w.ProducerEpoch, CoordinatorEpoch: max(w.Holder.CoordinatorEpoch, 0),
		TransactionVersion: TV0, Partitions: []topicpart.TopicPartition{w.TopicPartition}}
	rec := AbortRecord{Watched: w, AtMs: nowMs}
	attrs := []any{"topic", w.TopicPartition.Topic, "partition", w.TopicPartition.Partition, "producer_id", w.ProducerID,
		"producer_epoch", w.ProducerEpoch, "coordinator_epoch", m.CoordinatorEpoch, "first_offset", w.FirstOffset,
		"orphan_for", time.Duration(nowMs-w.OrphanSinceMs) * time.Millisecond, "age", time.Duration(w.AgeMs) * time.Millisecond,
		"why", w.Explanation}
	if err := a.o.Markers.WriteTxnMarkers(ctx, m)[w.TopicPartition]; err != nil {
		rec.Err = err.Error()
		a.o.Logger.Error("AUTOMATIC ABORT of an orphaned transaction FAILED; retried at the next check ("+AutoAbortEnableConfig+")",
			append(attrs, "err", err)...)
		return rec
	}
	a.aborted.Add(1)
	a.o.Logger.Warn("AUTOMATIC ABORT: wrote an ABORT marker for an orphaned transaction no coordinator will end ("+
		AutoAbortEnableConfig+"=true)", attrs...)
	return rec
}

// Aborted counts the orphans aborted since start.
func (a *OrphanAborter) Aborted() int64 { return a.aborted.Load() }

// Status is a snapshot of the automatic abort's state.
func (a *OrphanAborter) Status() AutoAbortStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.mu.status
	st.Config = AutoAbortConfigFrom(a.o.Config())
	st.CheckIntervalMs = a.interval().Milliseconds()
	st.Watched = append([]Watched(nil), st.Watched...)
	st.Recent = append([]AbortRecord(nil), st.Recent...)
	st.Aborted = a.aborted.Load()
	return st
}
