package log

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Config is the part of a topic's configuration one partition log uses.
// Zero values are not defaults: build it from config.Topic.
type Config struct {
	SegmentBytes       int64 // segment.bytes
	SegmentMs          int64 // segment.ms
	SegmentJitterMs    int64 // segment.jitter.ms
	SegmentIndexBytes  int32 // segment.index.bytes
	IndexIntervalBytes int32 // index.interval.bytes
	MaxMessageBytes    int32 // max.message.bytes
	LogAppendTime      bool  // message.timestamp.type=LogAppendTime
	TimestampBeforeMs  int64 // message.timestamp.before.max.ms
	TimestampAfterMs   int64 // message.timestamp.after.max.ms
	Compact            bool  // cleanup.policy contains compact
	Delete             bool  // cleanup.policy contains delete
	RetentionMs        int64 // retention.ms (-1: unlimited)
	RetentionBytes     int64 // retention.bytes (-1: unlimited)
	FileDeleteDelayMs  int64 // file.delete.delay.ms
	FlushMessages      int64 // flush.messages
	FlushMs            int64 // flush.ms
	Preallocate        bool  // preallocate: new segment files start at SegmentBytes (sparse)

	// Compression is compression.type with its codec's level: client
	// batches in another codec are rebuilt in this one (the zero value,
	// producer, keeps every batch as it came).
	Compression record.Compression

	// ProducerIDExpirationMs is the broker's producer.id.expiration.ms: a
	// producer idle that long (no open transaction) is forgotten by
	// RemoveExpiredProducers and skipped when producer state is loaded.
	ProducerIDExpirationMs int64
	// TransactionVerification is the broker's
	// transaction.partition.verification.enable (KIP-890 part 1): a client's
	// transactional batch may open a transaction only with the guard of a
	// verification the transaction coordinator passed.
	TransactionVerification bool

	// Compaction (read by the cleaner, not by the log itself).
	DeleteRetentionMs      int64   // delete.retention.ms
	MinCompactionLagMs     int64   // min.compaction.lag.ms
	MaxCompactionLagMs     int64   // max.compaction.lag.ms
	MinCleanableDirtyRatio float64 // min.cleanable.dirty.ratio
}

// DefaultConfig is Kafka's topic defaults, for tests and tools.
func DefaultConfig() Config {
	return Config{
		SegmentBytes: 1 << 30, SegmentMs: 7 * 24 * 3600 * 1000, SegmentIndexBytes: 10 << 20,
		IndexIntervalBytes: 4096, MaxMessageBytes: 1048588, TimestampBeforeMs: math.MaxInt64,
		TimestampAfterMs: 3600 * 1000, Delete: true, RetentionMs: 7 * 24 * 3600 * 1000,
		RetentionBytes: -1, FileDeleteDelayMs: 60000, FlushMessages: math.MaxInt64, FlushMs: math.MaxInt64,
		DeleteRetentionMs: 86400000, MaxCompactionLagMs: math.MaxInt64, MinCleanableDirtyRatio: 0.5,
		ProducerIDExpirationMs: 86400000, TransactionVerification: true,
	}
}

// Options open a log.
type Options struct {
	FS     vfs.FS
	Clock  clock.Clock
	Dir    string // the partition directory, topic-partition
	Config Config
	Logger *slog.Logger
	// Failure is the log dir's failure domain, shared by its logs; nil
	// gives the log one of its own.
	Failure *FailureDomain

	// From the log dir's checkpoint files; -1 when absent.
	RecoveryPoint  int64
	LogStartOffset int64
	HighWatermark  int64
	// CleanShutdown skips the rescan of segments above the recovery point.
	CleanShutdown bool
	// TopicID is what the partition.metadata file in Dir names, if the
	// caller has read it (zero: none, or not read). AssignTopicID compares
	// against it.
	TopicID [16]byte
	// ParentDurable: Dir exists and its entry in its parent is durable
	// (logmgr syncs each log dir once before loading its logs), so the log
	// never syncs its parent.
	ParentDurable bool
}

// Origin says who appends.
type Origin int8

const (
	// OriginClient: a producer; the batch is validated and offsets assigned.
	OriginClient Origin = iota
	// OriginCoordinator: a broker-internal writer (group or transaction
	// coordinator, markers); offsets assigned, client-only checks skipped.
	OriginCoordinator
	// OriginReplication: a follower copying the leader's batches as they are.
	OriginReplication
)

// AppendResult tells a producer where its batch went.
type AppendResult struct {
	BaseOffset     int64
	LastOffset     int64
	LogAppendTime  int64 // -1 unless message.timestamp.type=LogAppendTime
	LogStartOffset int64
	Duplicate      bool // an idempotent retry: the offsets are the original ones
}

// Log is one partition's log. See doc.go for the concurrency rules.
type Log struct {
	fs     vfs.FS
	clock  clock.Clock
	dir    string
	logger *slog.Logger
	domain *FailureDomain

	cfg atomic.Pointer[Config]

	// Published view for readers.
	segs     atomic.Pointer[[]*segment]
	leo      atomic.Int64
	logStart atomic.Int64
	hw       atomic.Int64
	lso      atomic.Int64 // last stable offset, republished under mu whenever it may change
	durable  atomic.Int64 // recovery point: everything below is fsynced

	mu        sync.Mutex // appender and structural changes
	producers *producerState
	epochs    *epochCache
	unsynced  []*segment // rolled (sealed) segments whose .log is not yet fsynced
	// pending are files written since the last sync whose contents must be
	// durable before the recovery point passes what they describe: sealed
	// segments' index files and producer snapshots. The next sync fsyncs
	// and closes them.
	pending []vfs.File
	// txnDirty are segments whose .txnindex a load's replay rewrote: the
	// next sync fsyncs them. (Entries the appender adds go to the active
	// segment and are synced with it, or with the rolled segments.)
	txnDirty []*segment
	dirDirty bool // directory entries created or removed since the last dir sync
	// parentDirs are the directories whose entries Open changed by creating
	// the log's directory (its parent, and theirs if Open made them too):
	// synced by the first sync, so that a new log costs no fsync until it
	// holds a record.
	parentDirs []string
	// topicID is what partition.metadata says; metaPending, if set, is its
	// contents written by AssignTopicID without an fsync, rewritten
	// durably by the next sync; metaSync: the next sync fsyncs the file as
	// it is (Open could not tell whether a sync ever did).
	topicID     [16]byte
	metaPending []byte
	metaSync    bool
	created     bool // Open created the log's directory
	// syncEpochs: Open changed the epoch cache from the batches it scanned
	// (below the log end offset): the next sync must write it even if no
	// record is appended.
	syncEpochs bool
	// Published from the fields above (see noteSyncStateLocked), for
	// SyncTo's fast path and RecoveryPoint.
	pendingSync      atomic.Bool  // something above waits for a sync
	urgentSync       atomic.Bool  // unsynced, pending or syncEpochs is set (see NeedsSync)
	unsyncedFrom     atomic.Int64 // base offset of the first unsynced rolled segment, MaxInt64 if none
	unflushedRecords int64
	lastFlush        int64
	closed           bool

	syncMu sync.Mutex // one fsync (or truncation, or Close) at a time

	// group elects the leader of a group commit; cond is broadcast when
	// the sync under way (busy) ends.
	group struct {
		sync.Mutex
		cond sync.Cond
		busy bool
	}
}

func (l *Log) config() *Config { return l.cfg.Load() }

// SetConfig applies a new topic configuration (dynamic topic config change).
func (l *Log) SetConfig(c Config) { l.cfg.Store(&c) }

// Config returns the log's current configuration.
func (l *Log) Config() Config { return *l.config() }

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

func (l *Log) segments() []*segment { return *l.segs.Load() }

func (l *Log) active() *segment {
	s := l.segments()
	return s[len(s)-1]
}

func (l *Log) publish(s []*segment) { l.segs.Store(&s) }

func (l *Log) nowMs() int64 { return l.clock.Now().UnixMilli() }

// LogStartOffset is the first offset a consumer can read.
func (l *Log) LogStartOffset() int64 { return l.logStart.Load() }

// LogEndOffset (LEO) is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 { return l.leo.Load() }

// HighWatermark is the offset below which records are committed. The
// partition layer drives it with SetHighWatermark.
func (l *Log) HighWatermark() int64 { return l.hw.Load() }

// SetHighWatermark sets the high watermark, clamped to [log start, LEO],
// even below its current value: for loading a log and for a follower, which
// takes its leader's word (Kafka's updateHighWatermark). A leader advances it
// with MaybeIncrementHighWatermark. It takes l.mu so that a log start offset
// moved meanwhile by retention or DeleteRecords cannot end up above the high
// watermark.
func (l *Log) SetHighWatermark(hw int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setHWLocked(l.clampHWLocked(hw))
}

// setHWLocked stores the high watermark and what follows from it: decided
// transactions whose marker it passed stop holding the last stable offset.
func (l *Log) setHWLocked(hw int64) {
	l.hw.Store(hw)
	l.producers.onHighWatermark(hw)
	l.updateLSOLocked()
}

// MaybeIncrementHighWatermark raises the high watermark to hw, clamped to
// [log start, LEO], if that is above its current value, and reports whether
// it moved (Kafka's maybeIncrementHighWatermark). Callers that computed hw
// concurrently may call it in any order: the high watermark only rises, so
// a late caller with an older hw cannot take back offsets already
// acknowledged or served.
func (l *Log) MaybeIncrementHighWatermark(hw int64) bool {
	if hw <= l.hw.Load() {
		return false // the common case of many acknowledgements of one sync
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	hw = l.clampHWLocked(hw)
	if hw <= l.hw.Load() {
		return false
	}
	l.setHWLocked(hw)
	return true
}

// clampHWLocked bounds a high watermark to [log start, LEO]. l.mu is held.
func (l *Log) clampHWLocked(hw int64) int64 {
	return max(min(hw, l.leo.Load()), l.logStart.Load())
}

// LastStableOffset is min(first unstable offset, high watermark), raised to
// the log start offset when DeleteRecords moved that past an open
// transaction's first offset (as Kafka does): no record of an open
// transaction, nor of a decided one whose marker is not yet under the high
// watermark, lies below it, and logStartOffset ≤ LSO ≤ HW. It is published
// atomically whenever it may change; a caller that wants it with the high
// watermark reads it first (the high watermark only grows past it).
func (l *Log) LastStableOffset() int64 { return l.lso.Load() }

// lsoLocked computes the last stable offset. Log.mu is held.
func (l *Log) lsoLocked() int64 {
	hw := l.hw.Load()
	if fu, ok := l.producers.firstUnstableOffset(); ok && fu < hw {
		return max(fu, min(l.logStart.Load(), hw))
	}
	return hw
}

// updateLSOLocked republishes the last stable offset. Log.mu is held.
func (l *Log) updateLSOLocked() { l.lso.Store(l.lsoLocked()) }

// Size is the total bytes of the log's segments.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segments() {
		n += s.size.Load()
	}
	return n
}

// NumSegments is how many segments the log has.
func (l *Log) NumSegments() int { return len(l.segments()) }

// Append adds one batch (client or coordinator origin) or the leader's
// batches as they are (replication origin). For leader appends, offsets and
// leaderEpoch are written into the batch in place; the caller must not reuse
// batch afterwards. Durability is separate: call SyncTo. A client's
// transactional batch that would open a transaction needs AppendVerified
// while transaction verification is on.
func (l *Log) Append(batch []byte, origin Origin, leaderEpoch int32) (AppendResult, error) {
	switch origin {
	case OriginReplication:
		return l.appendAsFollower(batch)
	case OriginClient:
		p := record.ParseProduce(batch)
		return l.appendProduced(&p, leaderEpoch, 0)
	}
	h, err := record.ValidateStored(batch)
	if err == nil && h.Size() != len(batch) {
		err = fmt.Errorf("%w: coordinator append of %d bytes holds a %d-byte batch", record.ErrCorrupt, len(batch), h.Size())
	}
	if err != nil {
		return AppendResult{}, err
	}
	return l.appendAsLeader(batch, &h, origin, leaderEpoch, 0, l.config(), l.nowMs())
}

// AppendVerified is Append for a client batch whose transaction the
// coordinator verified with guard (from StartTransactionVerification).
func (l *Log) AppendVerified(batch []byte, leaderEpoch int32, guard VerificationGuard) (AppendResult, error) {
	p := record.ParseProduce(batch)
	return l.appendProduced(&p, leaderEpoch, guard)
}

// AppendProducedVerified is AppendProduced for a batch whose transaction the
// coordinator verified with guard.
func (l *Log) AppendProducedVerified(p *record.Produced, leaderEpoch int32, guard VerificationGuard) (AppendResult, error) {
	return l.appendProduced(p, leaderEpoch, guard)
}

// AppendProduced appends a client's batch whose header the caller decoded
// (record.ParseProduce), as Append does with OriginClient: validated with
// that header (and rebuilt in the topic's codec if compression.type asks),
// then checked against the producer state and written. The header is not
// decoded again.
func (l *Log) AppendProduced(p *record.Produced, leaderEpoch int32) (AppendResult, error) {
	return l.appendProduced(p, leaderEpoch, 0)
}

func (l *Log) appendProduced(p *record.Produced, leaderEpoch int32, guard VerificationGuard) (AppendResult, error) {
	cfg := l.config()
	now := l.nowMs()
	opts := record.ProduceOptions{
		MaxBatchBytes: int(cfg.MaxMessageBytes), RequireKeys: cfg.Compact, LogAppendTime: cfg.LogAppendTime,
		NowMs: now, BeforeMaxMs: cfg.TimestampBeforeMs, AfterMaxMs: cfg.TimestampAfterMs,
		MaxDecompressed: int(cfg.MaxMessageBytes) * 64,
	}
	if err := p.Validate(&opts); err != nil {
		return AppendResult{}, err
	}
	batch, h := p.Batch(), p.Header
	if cfg.Compression.Recompresses(h.Codec()) {
		var err error
		if batch, h, err = recompress(batch, &h, cfg, &opts); err != nil {
			return AppendResult{}, err
		}
	}
	return l.appendAsLeader(batch, &h, OriginClient, leaderEpoch, guard, cfg, now)
}

// appendAsLeader checks a validated batch against the producer state (client
// batches) and writes it with the next offsets and leaderEpoch, patched in
// place. guard is the verification a client's transactional batch passed
// (0: none).
func (l *Log) appendAsLeader(batch []byte, h *record.Header, origin Origin, leaderEpoch int32, guard VerificationGuard, cfg *Config, now int64) (AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return AppendResult{}, err
	}
	if h.ProducerID >= 0 && origin == OriginClient {
		if dup, ok := l.producers.duplicate(h); ok {
			return AppendResult{BaseOffset: dup.firstOffset, LastOffset: dup.lastOffset, LogAppendTime: -1,
				LogStartOffset: l.logStart.Load(), Duplicate: true}, nil
		}
		if err := l.producers.checkClient(h, guard, cfg.TransactionVerification); err != nil {
			return AppendResult{}, err
		}
	} else if h.ProducerID >= 0 && !h.Control() {
		// A coordinator writing for a producer (transactional offset
		// commits): Kafka checks the epoch and the transactional flag, not
		// the sequence.
		if err := l.producers.checkEpoch(h); err != nil {
			return AppendResult{}, err
		}
		if err := l.producers.checkTxnFlag(h); err != nil {
			return AppendResult{}, err
		}
	} else if h.Control() {
		return AppendResult{}, fmt.Errorf("%w: control batches are written with AppendMarker", record.ErrInvalidRecord)
	}
	leo := l.leo.Load()
	record.SetBaseOffset(batch, leo)
	record.SetLeaderEpoch(batch, leaderEpoch)
	appendTime := int64(-1)
	if cfg.LogAppendTime && !h.Control() {
		appendTime = now
		record.SetLogAppendTime(batch, now)
		h.MaxTimestamp = now
	}
	h.BaseOffset, h.LeaderEpoch = leo, leaderEpoch
	if err := l.appendLocked(batch, h, now); err != nil {
		return AppendResult{}, err
	}
	return AppendResult{BaseOffset: leo, LastOffset: h.LastOffset(), LogAppendTime: appendTime,
		LogStartOffset: l.logStart.Load()}, nil
}

// recompress rebuilds a client batch in the topic's codec and checks the
// rebuilt size against max.message.bytes again, as Kafka's UnifiedLog does
// when the validator may have changed it.
func recompress(batch []byte, h *record.Header, cfg *Config, opts *record.ProduceOptions) ([]byte, record.Header, error) {
	out, nh, err := record.Recompress(batch, h, cfg.Compression, opts)
	if err != nil {
		return nil, *h, err
	}
	if cfg.MaxMessageBytes > 0 && len(out) > int(cfg.MaxMessageBytes) {
		return nil, *h, fmt.Errorf("%w: message batch size is %d bytes after recompression to %s, which exceeds the maximum configured size of %d",
			record.ErrTooLarge, len(out), cfg.Compression.Codec, cfg.MaxMessageBytes)
	}
	return out, nh, nil
}

// appendAsFollower appends the leader's batches unchanged, checking that they
// are intact and continue the log.
func (l *Log) appendAsFollower(data []byte) (AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return AppendResult{}, err
	}
	res := AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1}
	now := l.nowMs()
	for len(data) > 0 {
		h, err := record.ValidateStored(data)
		if err != nil {
			return res, err
		}
		if h.BaseOffset < l.leo.Load() {
			return res, fmt.Errorf("%w: batch at %d, log end offset %d", ErrOffsetMismatch, h.BaseOffset, l.leo.Load())
		}
		if err := l.appendLocked(data[:h.Size()], &h, now); err != nil {
			return res, err
		}
		if res.BaseOffset < 0 {
			res.BaseOffset = h.BaseOffset
		}
		res.LastOffset = h.LastOffset()
		data = data[h.Size():]
	}
	res.LogStartOffset = l.logStart.Load()
	return res, nil
}

// appendLocked writes a batch whose offsets are final. A write refused for
// want of space is cut back to the last whole batch and answered with
// ErrNoSpace; any other failed write fails the log (see ioErr).
func (l *Log) appendLocked(batch []byte, h *record.Header, now int64) error {
	var marker *record.Marker
	if h.Control() {
		m, err := record.ParseControl(batch, len(batch)*64+(1<<20))
		if err != nil {
			return err
		}
		marker = &m
	}
	seg := l.active()
	if l.shouldRoll(seg, h, len(batch), now) {
		var err error
		if seg, err = l.rollLocked(h.BaseOffset, now); err != nil {
			return l.ioErr(err)
		}
	}
	l.epochs.assign(h.LeaderEpoch, h.BaseOffset)
	pos := seg.size.Load()
	if _, err := seg.file.WriteAt(batch, pos); err != nil {
		// Drop whatever part was written, so that no stray bytes stay past
		// the segment's size if it is sealed before the next write. If even
		// that fails, the file holds bytes the log does not account for.
		err = fmt.Errorf("append to %s: %w", seg.path(LogSuffix), err)
		if terr := seg.file.Truncate(pos); terr != nil {
			return l.fail(errors.Join(err, fmt.Errorf("cutting back: %w", terr)))
		}
		seg.preallocated = false
		return l.ioErr(err)
	}
	if err := l.indexBatch(seg, h, pos); err != nil {
		// The batch is in the file but not in the segment's accounting.
		return l.fail(fmt.Errorf("index batch at %d in %s: %w", h.BaseOffset, seg.path(LogSuffix), err))
	}
	seg.size.Store(pos + int64(len(batch)))
	seg.nextOffset = h.NextOffset()
	if err := l.updateProducersLocked(seg, h, marker, now); err != nil {
		// The batch is in the file; its abort is not in the index. Recovery
		// rebuilds the index from the log.
		return l.fail(err)
	}
	l.unflushedRecords += int64(h.LastOffsetDelta) + 1
	l.leo.Store(h.NextOffset())
	return nil
}

// updateProducersLocked applies an appended batch to the producer state. A
// marker that aborts a transaction is written to the index of the segment
// holding it, after the batch itself (Kafka's order: the index entry never
// names a marker that is not in the log). The last stable offset is
// republished.
func (l *Log) updateProducersLocked(seg *segment, h *record.Header, marker *record.Marker, now int64) error {
	c := l.producers.update(h, marker, now)
	if c == nil {
		if h.Transactional() {
			l.updateLSOLocked()
		}
		return nil
	}
	if c.Aborted {
		a := AbortedTxn{ProducerID: c.ProducerID, FirstOffset: c.FirstOffset, LastOffset: c.LastOffset,
			LastStableOffset: l.producers.lastStableOffsetAfter(*c)}
		created, err := seg.txn.append(a)
		if created {
			l.dirDirty = true
			l.noteSyncStateLocked()
		}
		if err != nil {
			return err
		}
	}
	l.producers.onHighWatermark(l.hw.Load())
	l.updateLSOLocked()
	return nil
}

// indexBatch updates the segment's indexes and timestamps for a batch written at pos.
func (l *Log) indexBatch(seg *segment, h *record.Header, pos int64) error {
	cfg := l.config()
	if seg.firstBatchMaxTimestamp < 0 {
		seg.firstBatchMaxTimestamp = h.MaxTimestamp
	}
	if pos == 0 {
		// Until a timestamp is seen, the first batch (not the segment's base
		// offset, which a follower's first batch may lie beyond) holds the max.
		seg.offsetOfMaxTimestamp = h.BaseOffset
	}
	if h.MaxTimestamp > seg.maxTimestamp {
		seg.maxTimestamp, seg.offsetOfMaxTimestamp = h.MaxTimestamp, h.BaseOffset
	}
	// A full index only happens while recovering a segment written under a
	// larger segment.index.bytes (appends roll first): the index stays sparser.
	if seg.bytesSinceIndexEntry > int64(cfg.IndexIntervalBytes) && !seg.index.isFull() && !seg.timeIndex.isFull() {
		if err := seg.index.add(h.LastOffset(), pos); err != nil {
			return err
		}
		if ts, _, ok := seg.timeIndex.last(); !ok || seg.maxTimestamp > ts {
			if err := seg.timeIndex.add(seg.maxTimestamp, seg.offsetOfMaxTimestamp); err != nil {
				return err
			}
		}
		seg.bytesSinceIndexEntry = 0
	}
	seg.bytesSinceIndexEntry += int64(h.Size())
	return nil
}

// shouldRoll is Kafka's LogSegment.shouldRoll.
func (l *Log) shouldRoll(seg *segment, h *record.Header, size int, now int64) bool {
	cfg := l.config()
	cur := seg.size.Load()
	if cur == 0 {
		return false
	}
	if cur+int64(size) > cfg.SegmentBytes {
		return true
	}
	waited := now - seg.createdMs
	if seg.firstBatchMaxTimestamp >= 0 {
		waited = h.MaxTimestamp - seg.firstBatchMaxTimestamp
	}
	if waited > cfg.SegmentMs-seg.rollJitterMs {
		return true
	}
	if seg.index.isFull() || seg.timeIndex.isFull() {
		return true
	}
	return h.LastOffset()-seg.baseOffset > math.MaxInt32
}

// rollLocked closes the active segment and starts a new one at base. The
// sealed segment's index files and the producer snapshot at base are written
// without an fsync: the next sync makes them durable, and until it has the
// recovery point stays at or below the sealed segment's base offset.
func (l *Log) rollLocked(base int64, now int64) (*segment, error) {
	old := l.active()
	idx, err := l.sealSegment(old)
	if err != nil {
		return nil, err
	}
	// Until the roll is done old is still the active segment (its index,
	// sealed, comes back into memory at its next entry); the index files
	// written are synced all the same.
	l.pending = append(l.pending, idx...)
	l.dirDirty = true
	l.noteSyncStateLocked()
	seg, err := l.createSegment(base, now)
	if err != nil {
		return nil, err
	}
	if err := l.writePendingLocked(snapshotPath(l.dir, base), l.producers.encodeSnapshot()); err != nil {
		seg.close()
		return nil, err
	}
	l.unsynced = append(l.unsynced, old)
	l.noteSyncStateLocked()
	segs := append(append([]*segment(nil), l.segments()...), seg)
	l.publish(segs)
	l.logger.Debug("rolled segment", "dir", l.dir, "base_offset", base, "previous", old.baseOffset)
	return seg, nil
}

// sealSegment is Kafka's onBecomeInactiveSegment: a last time index entry for
// the segment's max timestamp, the index files written with exactly their
// entries, and a preallocated .log file trimmed to its size. It returns the
// two index files, open and unsynced, for the caller to sync (or not) and
// close; a caller holding l.mu marks the directory dirty (the files may be
// new).
func (l *Log) sealSegment(s *segment) ([]vfs.File, error) { return l.sealSegmentOrKeep(s, false) }

// sealSegmentOrKeep is sealSegment; with keep, index files that already
// hold exactly the entries are kept (and not returned).
func (l *Log) sealSegmentOrKeep(s *segment, keep bool) ([]vfs.File, error) {
	if err := s.trimLog(); err != nil {
		return nil, err
	}
	if ts, _, ok := s.timeIndex.last(); s.maxTimestamp >= 0 && (!ok || s.maxTimestamp > ts) {
		if err := s.timeIndex.appendEntryForce(s.maxTimestamp, s.offsetOfMaxTimestamp); err != nil {
			return nil, err
		}
	}
	var files []vfs.File
	for _, x := range []*index{&s.index.index, &s.timeIndex.index} {
		f, err := x.sealOrKeep(keep)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, err
		}
		if f != nil {
			files = append(files, f)
		}
	}
	return files, nil
}

// newSegment is a segment at base with nothing read or written yet; its
// indexes are empty, in memory.
func (l *Log) newSegment(base int64, now int64) *segment {
	cfg := l.config()
	s := &segment{dir: l.dir, baseOffset: base, nextOffset: base, maxTimestamp: -1,
		offsetOfMaxTimestamp: base, firstBatchMaxTimestamp: -1, createdMs: now}
	s.txn = newTxnIndex(l.fs, s.path(TxnIndexSuffix))
	if cfg.SegmentJitterMs > 0 {
		s.rollJitterMs = rollJitter(l.dir, base, cfg.SegmentJitterMs)
	}
	initIndex(&s.index.index, l.fs, s.path(IndexSuffix), base, offsetEntrySize, int(cfg.SegmentIndexBytes))
	initIndex(&s.timeIndex.index, l.fs, s.path(TimeIndexSuffix), base, timeEntrySize, int(cfg.SegmentIndexBytes))
	return s
}

// createSegment starts an empty active segment at base: one new .log file
// (its index files are written when it is sealed).
func (l *Log) createSegment(base int64, now int64) (*segment, error) {
	s := l.newSegment(base, now)
	var err error
	if s.file, err = l.fs.Create(s.path(LogSuffix)); err != nil {
		return nil, err
	}
	if cfg := l.config(); cfg.Preallocate && cfg.SegmentBytes > 0 {
		// Kafka's RandomAccessFile.setLength: the file is sparse, no block
		// is written, only its length is set.
		if err = s.file.Truncate(cfg.SegmentBytes); err != nil {
			s.close()
			return nil, fmt.Errorf("preallocate %s: %w", s.path(LogSuffix), err)
		}
		s.preallocated = true
	}
	l.dirDirty = true
	l.noteSyncStateLocked()
	return s, nil
}

// rollJitter picks a stable jitter in [0, max) per segment, as Kafka picks a
// random one per segment.
func rollJitter(dir string, base, max int64) int64 {
	h := uint64(base)*0x9E3779B97F4A7C15 ^ uint64(len(dir))
	for _, c := range dir {
		h = h*1099511628211 ^ uint64(c)
	}
	return int64(h % uint64(max))
}

// Roll forces a new active segment (used by the retention job for segment.ms
// when nothing is appended, and by tests).
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if l.active().size.Load() == 0 {
		return nil
	}
	_, err := l.rollLocked(l.leo.Load(), l.nowMs())
	return l.ioErr(err)
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return l.epochs.endOffsetFor(epoch, l.leo.Load())
}

// LatestEpoch is the newest leader epoch in the log, -1 if none.
func (l *Log) LatestEpoch() int32 {
	e, _ := l.epochs.latest()
	return e.Epoch
}

// AssignLeaderEpoch records that epoch starts at the log end offset when it
// is newer than every epoch the cache holds (Kafka's
// maybeAssignEpochStartOffset on becoming leader), so OffsetForLeaderEpoch
// answers for the current epoch even before its first append — e.g. when
// retention has emptied the log. The cache is checkpointed by the next sync
// (or Close) if it changed: no record depends on the entry until one is
// appended, and that record's sync writes it.
func (l *Log) AssignLeaderEpoch(epoch int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if latest, ok := l.epochs.latest(); ok && epoch <= latest.Epoch {
		return nil
	}
	l.epochs.assign(epoch, l.leo.Load())
	return nil
}

// Epochs returns a copy of the leader-epoch cache.
func (l *Log) Epochs() []EpochEntry { return l.epochs.snapshot() }

// Producer returns a copy of what the log knows about a producer.
func (l *Log) Producer(pid int64) (ProducerEntry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.producers.m[pid]
	if !ok {
		return ProducerEntry{}, false
	}
	c := *e
	c.batches = append([]batchMeta(nil), e.batches...)
	return c, true
}

// RemoveExpiredProducers forgets the producers idle for
// producer.id.expiration.ms at now (Kafka's removeExpiredProducers, run every
// producer.id.expiration.check.interval.ms) and returns how many it forgot. A
// forgotten producer's next batch is accepted with any sequence, as a new
// producer's is.
func (l *Log) RemoveExpiredProducers(now time.Time) int {
	exp := l.config().ProducerIDExpirationMs
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0
	}
	n := l.producers.removeExpired(now.UnixMilli(), exp)
	if n > 0 {
		l.logger.Debug("removed expired producers", "dir", l.dir, "producers", n, "remaining", len(l.producers.m))
	}
	return n
}
