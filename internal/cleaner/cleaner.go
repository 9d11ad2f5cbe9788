package cleaner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// Partition is one hosted partition log.
type Partition struct {
	topicpart.TopicPartition
	Dir string // the log dir holding it
	Log *log.Log
}

// Logs is what the cleaner needs from the log manager.
type Logs interface {
	// Partitions lists every hosted partition log.
	Partitions() []Partition
	// Partition is one hosted partition log; ok is false when tp is not
	// hosted. (Status looks partitions up one at a time: a compaction board
	// over n partitions must not cost n listings.)
	Partition(tp topicpart.TopicPartition) (Partition, bool)
	// CleanerOffset is tp's cleaner point from cleaner-offset-checkpoint.
	CleanerOffset(tp topicpart.TopicPartition) (int64, bool)
	// SetCleanerOffset records tp's cleaner point durably.
	SetCleanerOffset(tp topicpart.TopicPartition, offset int64) error
}

// Config is the broker's log.cleaner.* configuration. It is read again at
// every round, so dynamic changes apply then (log.cleaner.threads only at
// Start).
type Config struct {
	Enable              bool    // log.cleaner.enable
	Threads             int     // log.cleaner.threads
	DedupeBufferSize    int64   // log.cleaner.dedupe.buffer.size, across all threads
	IOBufferSize        int     // log.cleaner.io.buffer.size, across all threads
	IOBufferLoadFactor  float64 // log.cleaner.io.buffer.load.factor
	IOMaxBytesPerSecond float64 // log.cleaner.io.max.bytes.per.second
	BackoffMs           int64   // log.cleaner.backoff.ms
}

// ConfigFrom reads the cleaner's configuration from the broker's.
func ConfigFrom(b *config.Broker) Config {
	return Config{
		Enable:              b.Bool("log.cleaner.enable"),
		Threads:             int(b.Int("log.cleaner.threads")),
		DedupeBufferSize:    b.Long("log.cleaner.dedupe.buffer.size"),
		IOBufferSize:        int(b.Int("log.cleaner.io.buffer.size")),
		IOBufferLoadFactor:  b.Double("log.cleaner.io.buffer.load.factor"),
		IOMaxBytesPerSecond: b.Double("log.cleaner.io.max.bytes.per.second"),
		BackoffMs:           b.Long("log.cleaner.backoff.ms"),
	}
}

// perThread returns one worker's share of the dedupe and I/O buffers: Kafka
// caps each thread's dedupe buffer at 2 GiB and splits the I/O buffer
// between reading and writing.
func (c Config) perThread() (dedupe int64, io int) {
	n := max(c.Threads, 1)
	dedupe = min(c.DedupeBufferSize/int64(n), math.MaxInt32)
	io = max(c.IOBufferSize/n/2, 64<<10)
	return dedupe, io
}

// Options build a Cleaner.
type Options struct {
	Logs   Logs
	Config func() Config
	Clock  clock.Clock
	Logger *slog.Logger
}

// Cleaner is the log cleaner: log.cleaner.threads workers that each round
// clean the filthiest compacted log. See doc.go.
type Cleaner struct {
	o        Options
	throttle *throttler

	mu struct {
		sync.Mutex
		parts map[topicpart.TopicPartition]*partState
		// gauges, as of the last round
		dirtiestRatio        float64
		lastRoundMs          int64
		maxCompactionDelayMs int64
		workers              []*worker
	}
	running   atomic.Bool
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	dead      atomic.Int32 // workers that ended while the cleaner ran
	recovered atomic.Int64 // panics caught
	testHook  func(topicpart.TopicPartition)
}

// partState is what the cleaner remembers of one partition.
type partState struct {
	inProgress bool
	runs       int64
	last       *RunStats
	// uncleanable after an error, until retryAtMs.
	err       string
	errSince  int64
	failures  int
	retryAtMs int64
	horizonMs int64 // earliest delete horizon left by the last cleaning
}

// New builds a cleaner; Start runs it.
func New(o Options) *Cleaner {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c := &Cleaner{o: o}
	c.mu.parts = make(map[topicpart.TopicPartition]*partState)
	c.mu.lastRoundMs = o.Clock.Now().UnixMilli()
	c.throttle = newThrottler(o.Clock, func() float64 { return c.o.Config().IOMaxBytesPerSecond })
	return c
}

// Start runs log.cleaner.threads workers until Stop (nothing when
// log.cleaner.enable is false).
func (c *Cleaner) Start() {
	cfg := c.o.Config()
	if !cfg.Enable || cfg.Threads <= 0 || c.running.Load() {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.running.Store(true)
	for i := 0; i < cfg.Threads; i++ {
		w := c.newWorker(i)
		c.wg.Add(1)
		go c.runWorker(ctx, w)
	}
	c.o.Logger.Info("log cleaner started", "threads", cfg.Threads, "dedupe_buffer_size", cfg.DedupeBufferSize)
}

// Stop ends the workers, abandoning any cleaning under way (its .cleaned
// files are removed), and waits for them.
func (c *Cleaner) Stop() {
	if !c.running.Load() {
		return
	}
	c.cancel()
	c.wg.Wait()
	c.running.Store(false)
	c.o.Logger.Info("log cleaner stopped")
}

// Running reports whether the workers run.
func (c *Cleaner) Running() bool { return c.running.Load() }

func (c *Cleaner) newWorker(id int) *worker {
	cfg := c.o.Config()
	dedupe, io := cfg.perThread()
	w := &worker{id: id, offsets: newOffsetMap(dedupe, cfg.IOBufferLoadFactor), readBuf: make([]byte, io),
		ioBuf: io, clock: c.o.Clock, throttle: c.throttle}
	c.mu.Lock()
	c.mu.workers = append(c.mu.workers, w)
	c.mu.Unlock()
	return w
}

// refresh resizes the worker's offset map after a dynamic change of the
// dedupe buffer or load factor.
func (c *Cleaner) refresh(w *worker) {
	cfg := c.o.Config()
	dedupe, io := cfg.perThread()
	want := newOffsetMap(dedupe, cfg.IOBufferLoadFactor)
	if want.maxSlots != w.offsets.maxSlots || want.maxEntries != w.offsets.maxEntries {
		w.offsets = want
	}
	w.ioBuf = io
}

func (c *Cleaner) runWorker(ctx context.Context, w *worker) {
	defer c.wg.Done()
	defer func() {
		if ctx.Err() == nil {
			c.dead.Add(1)
			c.o.Logger.Error("log cleaner worker ended unexpectedly", "worker", w.id)
		}
	}()
	for ctx.Err() == nil {
		if !c.safeRound(ctx, w) {
			backoff := time.Duration(max(c.o.Config().BackoffMs, 1)) * time.Millisecond
			if sleep(ctx, c.o.Clock, backoff) != nil {
				return
			}
		}
	}
}

// safeRound runs one round; a panic outside a partition's cleaning (which
// has its own recovery) is logged and the worker backs off.
func (c *Cleaner) safeRound(ctx context.Context, w *worker) (cleaned bool) {
	defer func() {
		if r := recover(); r != nil {
			c.recovered.Add(1)
			c.o.Logger.Error("log cleaner round panicked", "worker", w.id, "panic", r, "stack", string(debug.Stack()))
			cleaned = false
		}
	}()
	return c.round(ctx, w)
}

// view is one partition with its snapshot and assessment.
type view struct {
	p    Partition
	snap log.CleanSnapshot
	a    Assessment
	st   LogState
}

// assess takes a snapshot of p and decides on it. ok is false when the log
// is closed.
func (c *Cleaner) assess(p Partition, nowMs int64) (view, bool) {
	snap, err := p.Log.CleanSnapshot()
	if err != nil {
		return view{}, false
	}
	cp, ok := c.o.Logs.CleanerOffset(p.TopicPartition)
	if !ok {
		cp = -1
	}
	st := LogState{
		Segments: make([]SegmentState, len(snap.Segments)), LogStartOffset: snap.LogStartOffset,
		LastStableOffset: snap.LastStableOffset, HighWatermark: snap.HighWatermark, LogEndOffset: snap.LogEndOffset,
		CleanerPoint: cp, Compact: snap.Config.Compact, MinCleanableDirtyRatio: snap.Config.MinCleanableDirtyRatio,
		MinCompactionLagMs: snap.Config.MinCompactionLagMs, MaxCompactionLagMs: snap.Config.MaxCompactionLagMs,
	}
	for i, s := range snap.Segments {
		st.Segments[i] = SegmentState{BaseOffset: s.BaseOffset, Size: s.Size, LargestTimestamp: s.LargestTimestamp,
			FirstBatchTimestamp: -1, OffsetIndexBytes: s.OffsetIndexBytes, TimeIndexBytes: s.TimeIndexBytes}
	}
	c.mu.Lock()
	if ps := c.mu.parts[p.TopicPartition]; ps != nil {
		st.InProgress, st.RetryAtMs, st.DeleteHorizonMs = ps.inProgress, ps.retryAtMs, ps.horizonMs
	}
	c.mu.Unlock()
	a := Assess(st, nowMs)
	if st.Compact && st.MaxCompactionLagMs > 0 && st.MaxCompactionLagMs < math.MaxInt64/2 {
		// max.compaction.lag.ms is measured from the first batch of each
		// dirty closed segment: read those headers, decide again.
		for i := max(floorSegment(snap.Segments, a.FirstDirtyOffset), 0); i < len(snap.Segments)-1; i++ {
			if ts, ok, err := snap.Segments[i].FirstBatchTimestamp(); err == nil && ok {
				st.Segments[i].FirstBatchTimestamp = ts
			}
		}
		a = Assess(st, nowMs)
	}
	return view{p: p, snap: snap, a: a, st: st}, true
}

// round is Kafka's CleanerThread.tryCleanFilthiestLog: pick the filthiest
// eligible log, clean it, then apply retention to compact,delete logs. It
// reports whether a log was picked.
func (c *Cleaner) round(ctx context.Context, w *worker) bool {
	c.refresh(w)
	now := c.o.Clock.Now()
	nowMs := now.UnixMilli()
	parts := c.o.Logs.Partitions()
	slices.SortFunc(parts, func(a, b Partition) int { return topicpart.Compare(a.TopicPartition, b.TopicPartition) })
	var views []view
	var cands []Candidate
	for _, p := range parts {
		v, ok := c.assess(p, nowMs)
		if !ok || !v.st.Compact {
			continue
		}
		views = append(views, v)
		cands = append(cands, Candidate{TopicPartition: p.TopicPartition, Assessment: v.a})
	}
	c.mu.Lock()
	c.pruneLocked(parts)
	var maxDelay int64
	for i := range cands {
		if ps := c.mu.parts[views[i].p.TopicPartition]; ps != nil && (ps.inProgress || ps.retryAtMs > nowMs) {
			cands[i].Excluded = true // being cleaned (perhaps taken since), or uncleanable
			cands[i].Assessment.Eligible = false
			continue
		}
		maxDelay = max(maxDelay, cands[i].Assessment.MaxCompactionDelayMs)
	}
	pick, dirtiest := Filthiest(cands)
	c.mu.dirtiestRatio, c.mu.lastRoundMs, c.mu.maxCompactionDelayMs = dirtiest, nowMs, maxDelay
	if pick >= 0 {
		c.stateLocked(views[pick].p.TopicPartition).inProgress = true
	}
	c.mu.Unlock()
	if pick >= 0 {
		c.cleanPartition(ctx, w, views[pick], nowMs)
	}
	c.deleteOldSegments(views, now)
	return pick >= 0
}

// pruneLocked forgets partitions no longer hosted.
func (c *Cleaner) pruneLocked(parts []Partition) {
	hosted := make(map[topicpart.TopicPartition]bool, len(parts))
	for _, p := range parts {
		hosted[p.TopicPartition] = true
	}
	for tp, ps := range c.mu.parts {
		if !hosted[tp] && !ps.inProgress {
			delete(c.mu.parts, tp)
		}
	}
}

func (c *Cleaner) stateLocked(tp topicpart.TopicPartition) *partState {
	ps := c.mu.parts[tp]
	if ps == nil {
		ps = &partState{}
		c.mu.parts[tp] = ps
	}
	return ps
}

// cleanPartition cleans one log and records the outcome. Errors (and
// panics) make the partition uncleanable for a while; others go on.
func (c *Cleaner) cleanPartition(ctx context.Context, w *worker, v view, nowMs int64) {
	tp := v.p.TopicPartition
	logger := c.o.Logger.With("partition", tp.String())
	if v.a.ResetCleanerPoint {
		logger.Warn("cleaner point out of range, resetting to the log start offset",
			"cleaner_point", v.st.CleanerPoint, "log_start_offset", v.snap.LogStartOffset, "log_end_offset", v.snap.LogEndOffset)
		if err := c.o.Logs.SetCleanerOffset(tp, v.a.FirstDirtyOffset); err != nil {
			logger.Warn("could not rewrite the cleaner point", "err", err)
		}
	}
	logger.Debug("cleaning log", "first_dirty_offset", v.a.FirstDirtyOffset,
		"first_uncleanable_offset", v.a.FirstUncleanableOffset, "dirty_ratio", v.a.DirtyRatio, "why", v.a.Why)
	stats, err := c.runClean(ctx, w, v, nowMs)
	if err == nil {
		err = c.o.Logs.SetCleanerOffset(tp, stats.EndOffset)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ps := c.stateLocked(tp)
	ps.inProgress = false
	switch {
	case err == nil:
		ps.runs++
		ps.last = &stats
		ps.err, ps.failures, ps.retryAtMs, ps.errSince = "", 0, 0, 0
		ps.horizonMs = stats.DeleteHorizonMs
		w.last, w.lastSet = stats, true
		logger.Info("cleaned log", "first_dirty_offset", stats.FirstDirtyOffset, "cleaner_point", stats.EndOffset,
			"bytes_read", stats.BytesRead, "bytes_written", stats.BytesWritten, "records_removed", stats.RecordsRemoved,
			"tombstones_removed", stats.TombstonesRemoved, "map_full", stats.MapFull, "duration_ms", stats.DurationMs)
	case errors.Is(err, errStopped):
	case errors.Is(err, log.ErrClosed), errors.Is(err, log.ErrSegmentsChanged), closed(v.p.Log):
		// Retention, DeleteRecords, a truncation or a deletion got there
		// first: try again on a fresh view.
		logger.Info("cleaning abandoned: the log changed meanwhile", "err", err)
	default:
		ps.failures++
		if ps.errSince == 0 {
			ps.errSince = c.o.Clock.Now().UnixMilli()
		}
		ps.err = err.Error()
		ps.retryAtMs = c.o.Clock.Now().UnixMilli() + uncleanableBackoffMs(c.o.Config().BackoffMs, ps.failures)
		logger.Error("partition uncleanable", "err", err, "failures", ps.failures, "retry_at_ms", ps.retryAtMs)
	}
}

// closed reports whether l was closed (its topic deleted, the broker
// stopping): whatever failed then is no fault of the partition.
func closed(l *log.Log) bool {
	_, err := l.CleanSnapshot()
	return errors.Is(err, log.ErrClosed)
}

// runClean cleans with panics turned into errors.
func (c *Cleaner) runClean(ctx context.Context, w *worker, v view, nowMs int64) (stats RunStats, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.recovered.Add(1)
			c.o.Logger.Error("log cleaning panicked", "partition", v.p.TopicPartition.String(), "panic", r,
				"stack", string(debug.Stack()))
			err = fmt.Errorf("panic while cleaning: %v", r)
		}
	}()
	if c.testHook != nil {
		c.testHook(v.p.TopicPartition)
	}
	return w.cleanLog(ctx, v.p.Log, v.snap, v.a, nowMs)
}

// deleteOldSegments applies retention to compact,delete logs after
// cleaning, as Kafka's cleaner threads do.
func (c *Cleaner) deleteOldSegments(views []view, now time.Time) {
	for _, v := range views {
		if !v.snap.Config.Delete {
			continue
		}
		c.mu.Lock()
		busy := c.mu.parts[v.p.TopicPartition] != nil && c.mu.parts[v.p.TopicPartition].inProgress
		c.mu.Unlock()
		if busy {
			continue
		}
		if _, err := v.p.Log.DeleteOldSegments(now); err != nil && !errors.Is(err, log.ErrClosed) {
			c.o.Logger.Warn("retention of a compact,delete log failed", "partition", v.p.TopicPartition.String(), "err", err)
		}
	}
}
