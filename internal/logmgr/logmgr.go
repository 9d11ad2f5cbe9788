package logmgr

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Checkpoint and marker file names.
const (
	RecoveryPointCheckpoint = "recovery-point-offset-checkpoint"
	LogStartCheckpoint      = "log-start-offset-checkpoint"
	ReplicationCheckpoint   = "replication-offset-checkpoint"
	CleanShutdownFile       = ".kafka_cleanshutdown"
	checkpointVersion       = 0
)

// MetadataTopic names the metadata log's directory (__cluster_metadata-0),
// which package quorum owns: it is never loaded or set aside as a partition
// log.
const MetadataTopic = "__cluster_metadata"

// Options configure a Manager.
type Options struct {
	FS     vfs.FS
	Clock  clock.Clock
	Dirs   []string // log.dirs
	Logger *slog.Logger
	// ConfigFor resolves a topic's log configuration (topic overrides over
	// broker defaults).
	ConfigFor func(topic string) log.Config
	// Stray says why a partition log found on disk is unknown to the
	// metadata, given the topic id its partition.metadata names (zero when
	// it has none), or "" when it is known. Such logs are set aside as stray
	// (KIP-858), never deleted. Nil: every log is known. Open calls it
	// concurrently, from one goroutine per log dir.
	Stray                  func(tp topicpart.TopicPartition, topicID [16]byte) string
	RecoveryThreadsPerDir  int           // num.recovery.threads.per.data.dir
	RetentionCheckInterval time.Duration // log.retention.check.interval.ms
	FlushCheckInterval     time.Duration // log.flush.scheduler.interval.ms (capped to 1s for flush.ms checks)
	RecoveryPointInterval  time.Duration // log.flush.offset.checkpoint.interval.ms
	LogStartInterval       time.Duration // log.flush.start.offset.checkpoint.interval.ms
	HighWatermarkInterval  time.Duration // replica.high.watermark.checkpoint.interval.ms
	// ProducerExpirationCheckInterval is producer.id.expiration.check.interval.ms.
	ProducerExpirationCheckInterval time.Duration
	// DiskCheckInterval is how often the free space of each log dir is
	// read (besides when appends use up what the last reading left).
	DiskCheckInterval time.Duration
	// MinFreeBytes returns gregor.log.dir.min.free.bytes (read at each
	// check, so it may change at run time); nil means -1, the default.
	MinFreeBytes func() int64
	// OnDirChange, if set, is told when a log dir goes offline, fills up
	// or has room again, with the state of every dir. It runs on the
	// goroutine that saw the change, which may hold a log's locks: it must
	// not block, and may call only DirStates of the manager.
	OnDirChange func(changed DirState, all []DirState)
}

// Manager holds the logs of one broker.
type Manager struct {
	o      Options
	fs     dirFS     // o.FS, reporting failed writes and fsyncs to their dir
	dirs   []*LogDir // one per o.Dirs entry, fixed at Open
	mu     sync.RWMutex
	logs   map[topicpart.TopicPartition]*log.Log
	dirOf  map[topicpart.TopicPartition]string
	count  map[string]int        // partitions per log dir
	strays map[string][]StrayLog // by log dir; guarded by mu
	// fresh are the logs GetOrCreate made since the last syncFresh pass,
	// which freshTimer will run (mu).
	fresh      []*log.Log
	freshTimer clock.Timer
	ckMu       sync.Mutex
	ckLast     map[string]string // checkpoint file → the entries it was last written with (ckMu)
	timers     []clock.Timer
	stopMu     sync.Mutex
	closed     bool
	// RetentionHook, if set, is told about each retention deletion (metrics).
	RetentionHook func(tp topicpart.TopicPartition, r log.RetentionResult)
	cleaner       cleanerPoints // cleaner-offset-checkpoint (cleanercheckpoint.go)
}

// Open loads every partition log in every dir, recovering as needed.
func Open(o Options) (*Manager, error) {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.RecoveryThreadsPerDir <= 0 {
		o.RecoveryThreadsPerDir = 1
	}
	m := &Manager{o: o, logs: make(map[topicpart.TopicPartition]*log.Log), dirOf: make(map[topicpart.TopicPartition]string),
		count: make(map[string]int), strays: make(map[string][]StrayLog), ckLast: make(map[string]string)}
	m.fs = dirFS{FS: o.FS, m: m}
	for _, d := range o.Dirs {
		if m.LogDir(d) == nil {
			m.dirs = append(m.dirs, newLogDir(m, d))
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(o.Dirs))
	for i, dir := range o.Dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.loadDir(dir)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		m.closeLogs()
		return nil, err
	}
	if err := m.CheckpointAll(); err != nil {
		m.closeLogs()
		return nil, err
	}
	m.CheckDiskSpace()
	return m, nil
}

type offsets map[topicpart.TopicPartition]int64

func (m *Manager) readCheckpoint(dir, name string) offsets {
	out := offsets{}
	lines, err := vfs.ReadCheckpoint(m.fs, filepath.Join(dir, name), checkpointVersion)
	if err != nil {
		if !vfs.IsNotExist(err) {
			m.o.Logger.Warn("ignoring unreadable checkpoint file", "dir", dir, "file", name, "err", err)
		}
		return out
	}
	for _, f := range lines {
		if len(f) != 3 {
			continue
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 == nil && err2 == nil {
			out[topicpart.TopicPartition{Topic: f[0], Partition: int32(p)}] = off
		}
	}
	return out
}

func (m *Manager) loadDir(dir string) error {
	fs := m.fs
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("log dir %s: %w", dir, err)
	}
	if err := fs.SyncDir(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("log dir %s: %w", dir, err)
	}
	marker := filepath.Join(dir, CleanShutdownFile)
	_, err := fs.Stat(marker)
	clean := err == nil
	if clean {
		if err := fs.Remove(marker); err != nil {
			return err
		}
	}
	// One sync makes the marker's removal durable, and with it every
	// partition directory's entry here: the logs need not sync the dir.
	if err := fs.SyncDir(dir); err != nil {
		return err
	}
	rp := m.readCheckpoint(dir, RecoveryPointCheckpoint)
	ls := m.readCheckpoint(dir, LogStartCheckpoint)
	hw := m.readCheckpoint(dir, ReplicationCheckpoint)
	jobs, err := m.scanDir(dir)
	if err != nil {
		return err
	}
	start := m.o.Clock.Now()
	get := func(o offsets, tp topicpart.TopicPartition) int64 {
		if v, ok := o[tp]; ok {
			return v
		}
		return -1
	}
	loaded := make([]*log.Log, len(jobs))
	err = forEach(len(jobs), m.o.RecoveryThreadsPerDir, func(i int) error {
		j := jobs[i]
		l, err := log.Open(log.Options{FS: fs, Clock: m.o.Clock, Dir: j.path, Config: m.o.ConfigFor(j.tp.Topic),
			Logger: m.o.Logger, RecoveryPoint: get(rp, j.tp), LogStartOffset: get(ls, j.tp), HighWatermark: get(hw, j.tp),
			CleanShutdown: clean, Failure: m.LogDir(dir).failure, TopicID: j.topicID, ParentDurable: true})
		if err != nil {
			return fmt.Errorf("load %s: %w", j.path, err)
		}
		loaded[i] = l
		return nil
	})
	var synced atomic.Int64
	if err == nil {
		// What recovery found above the recovery points, and what it
		// rebuilt, is made durable in one pass over the dir, many fsyncs in
		// flight, before the recovery points are checkpointed.
		err = forEach(len(loaded), syncFanOut, func(i int) error {
			if !loaded[i].NeedsSync() {
				return nil
			}
			synced.Add(1)
			if err := loaded[i].Flush(); err != nil {
				return fmt.Errorf("sync %s: %w", jobs[i].path, err)
			}
			return nil
		})
	}
	m.mu.Lock()
	for i, l := range loaded {
		if l != nil {
			m.logs[jobs[i].tp], m.dirOf[jobs[i].tp] = l, dir
			m.count[dir]++
		}
	}
	nStray := len(m.strays[dir])
	m.mu.Unlock()
	m.o.Logger.Info("loaded log dir", "dir", dir, "partitions", len(jobs), "synced", synced.Load(), "stray_logs", nStray,
		"clean_shutdown", clean, "elapsed", m.o.Clock.Now().Sub(start))
	return err
}

// syncFanOut is how many logs of one dir sync at once in the pass after
// loading and in Close: fsyncs wait on the disk, not the CPU, and a
// filesystem commits concurrent fsyncs together, so many in flight cost
// little more than one. (num.recovery.threads.per.data.dir bounds the
// CPU-bound part, the recovery itself.)
const syncFanOut = 32

// forEach calls fn(i) for i in [0, n) on up to par goroutines and returns
// the errors joined.
func forEach(n, par int, fn func(i int) error) error {
	var (
		next atomic.Int64
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for w := 0; w < min(max(par, 1), n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := fn(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// loadJob is a partition log to load.
type loadJob struct {
	tp      topicpart.TopicPartition
	path    string
	topicID [16]byte // what its partition.metadata names
}

// scanDir lists the partition logs of dir to load, sets aside (durably)
// the ones the metadata does not know, records dir's stray logs, and
// removes what a crash left of deletions (<topic>-<partition>.<id>-delete,
// as Kafka does at start) and of creations (a partition directory the
// metadata does not know with no partition.metadata and no record: the file
// is durable before any record is acknowledged, see log.Log.AssignTopicID).
func (m *Manager) scanDir(dir string) ([]loadJob, error) {
	fs := m.fs
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	var jobs []loadJob
	var strays []StrayLog
	changed := false
	for _, n := range names {
		path := filepath.Join(dir, n)
		st, err := fs.Stat(path)
		if err != nil || !st.IsDir() {
			continue
		}
		if tp, ok := topicpart.ParseStrayDirName(n); ok {
			strays = append(strays, m.strayLog(dir, n, tp))
			continue
		}
		if tp, ok := topicpart.ParseDeleteDirName(n); ok {
			m.o.Logger.Info("removing the rest of a deleted partition's log", "partition", tp, "dir", path)
			if err := fs.RemoveAll(path); err != nil {
				return nil, fmt.Errorf("removing deleted log %s: %w", path, err)
			}
			changed = true
			continue
		}
		tp, ok := topicpart.ParseDirName(n)
		if !ok || tp.Topic == MetadataTopic {
			continue
		}
		id := log.ReadTopicID(fs, path)
		if m.o.Stray != nil {
			if reason := m.o.Stray(tp, id); reason != "" {
				if id == ([16]byte{}) && holdsNoRecord(fs, path) {
					m.o.Logger.Info("removing a partition directory whose creation was cut off: it holds no record and no partition.metadata",
						"partition", tp, "dir", path)
					if err := fs.RemoveAll(path); err != nil {
						return nil, fmt.Errorf("removing %s: %w", path, err)
					}
					changed = true
					continue
				}
				s, err := m.setAside(dir, n, tp, reason)
				if err != nil {
					return nil, err
				}
				strays, changed = append(strays, s), true
				continue
			}
		}
		jobs = append(jobs, loadJob{tp, path, id})
	}
	if changed {
		if err := fs.SyncDir(dir); err != nil {
			return nil, err
		}
	}
	sortStrays(strays)
	m.mu.Lock()
	m.strays[dir] = strays
	m.mu.Unlock()
	return jobs, nil
}

// holdsNoRecord reports whether every segment file in a partition directory
// is empty.
func holdsNoRecord(fs vfs.FS, path string) bool {
	names, err := fs.List(path)
	if err != nil {
		return false
	}
	for _, n := range names {
		if strings.HasSuffix(n, log.LogSuffix) {
			if st, err := fs.Stat(filepath.Join(path, n)); err != nil || st.Size() > 0 {
				return false
			}
		}
	}
	return true
}

// Get returns the log of tp, or nil.
func (m *Manager) Get(tp topicpart.TopicPartition) *log.Log {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.logs[tp]
}

// All returns a snapshot of the partition → log map.
func (m *Manager) All() map[topicpart.TopicPartition]*log.Log {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[topicpart.TopicPartition]*log.Log, len(m.logs))
	for k, v := range m.logs {
		out[k] = v
	}
	return out
}

// DirOf returns the log dir holding tp.
func (m *Manager) DirOf(tp topicpart.TopicPartition) string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.dirOf[tp]
}

// Clock is the clock the logs and the background jobs run on.
func (m *Manager) Clock() clock.Clock { return m.o.Clock }

// FS is the filesystem the logs live on. A failed write or fsync through it
// of a file under a log dir takes that dir offline.
func (m *Manager) FS() vfs.FS { return m.fs }

// Dirs returns the configured log dirs.
func (m *Manager) Dirs() []string { return m.o.Dirs }

// GetOrCreate returns tp's log, creating it in the online log dir holding
// the fewest partitions (Kafka's placement rule).
func (m *Manager) GetOrCreate(tp topicpart.TopicPartition, cfg log.Config) (*log.Log, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.logs[tp]; l != nil {
		return l, nil
	}
	if m.closed {
		return nil, log.ErrClosed
	}
	var dirs []*LogDir
	for _, d := range m.dirs {
		if d.failure.Err() == nil {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%w: no log dir is online to hold %s", log.ErrStorageFailed, tp)
	}
	sort.SliceStable(dirs, func(i, j int) bool { return m.count[dirs[i].path] < m.count[dirs[j].path] })
	dir := dirs[0].path
	// No fsync: the new directory and its files are made durable by the
	// sync of the log's first record (see log.Open).
	l, err := log.Open(log.Options{FS: m.fs, Clock: m.o.Clock, Dir: filepath.Join(dir, tp.String()), Config: cfg,
		Logger: m.o.Logger, RecoveryPoint: 0, LogStartOffset: 0, HighWatermark: 0, CleanShutdown: true,
		Failure: dirs[0].failure})
	if err != nil {
		return nil, err
	}
	m.logs[tp], m.dirOf[tp] = l, dir
	m.count[dir]++
	m.fresh = append(m.fresh, l)
	if m.freshTimer != nil {
		m.freshTimer.Stop()
	}
	m.freshTimer = m.o.Clock.AfterFunc(freshSyncDelay, m.syncFresh)
	return l, nil
}

// freshSyncDelay is how long after the last of a burst of new logs (a
// CreateTopics creates its partitions one after the other) the background
// pass that makes them durable starts: after their partition.metadata and
// leader epoch are written, and without its fsyncs slowing the creation of
// the rest of the burst.
const freshSyncDelay = 100 * time.Millisecond

// syncFresh makes the logs created since the last pass durable (their
// directories, partition.metadata, epochs), syncFanOut at once, so that
// their first records' syncs have only the records to write. A log that
// gets a record first pays for itself (log.Open); a failed fsync takes its
// dir offline as any other.
func (m *Manager) syncFresh() {
	m.mu.Lock()
	logs := m.fresh
	m.fresh, m.freshTimer = nil, nil
	m.mu.Unlock()
	err := forEach(len(logs), syncFanOut, func(i int) error {
		if err := logs[i].Flush(); err != nil && !errors.Is(err, log.ErrClosed) && logs[i].Failed() == nil {
			return fmt.Errorf("sync new log %s: %w", logs[i].Dir(), err)
		}
		return nil
	})
	if err != nil {
		m.o.Logger.Warn("making new logs durable failed", "err", err)
	}
}

// Delete removes tp's log and its files.
func (m *Manager) Delete(tp topicpart.TopicPartition) error {
	m.mu.Lock()
	l := m.logs[tp]
	dir := m.dirOf[tp]
	if l != nil {
		m.count[dir]--
	}
	delete(m.logs, tp)
	delete(m.dirOf, tp)
	m.mu.Unlock()
	if l == nil {
		return nil
	}
	if err := m.forgetCleanerOffset(tp, dir); err != nil {
		m.o.Logger.Warn("could not remove a deleted partition's cleaner point", "partition", tp, "err", err)
	}
	var id [16]byte
	rand.Read(id[:]) // crypto/rand: never fails
	return l.Delete(topicpart.DeleteDirName(tp, hex.EncodeToString(id[:])))
}

// CheckpointAll writes the three offset checkpoint files of every dir.
func (m *Manager) CheckpointAll() error {
	return errors.Join(
		m.checkpoint(RecoveryPointCheckpoint, (*log.Log).RecoveryPoint),
		m.checkpoint(LogStartCheckpoint, (*log.Log).LogStartOffset),
		m.checkpoint(ReplicationCheckpoint, (*log.Log).HighWatermark))
}

// CheckpointLogStart writes log-start-offset-checkpoint now (after DeleteRecords).
func (m *Manager) CheckpointLogStart() error {
	return m.checkpoint(LogStartCheckpoint, (*log.Log).LogStartOffset)
}

func (m *Manager) checkpoint(name string, get func(*log.Log) int64) error {
	m.ckMu.Lock()
	defer m.ckMu.Unlock()
	byDir := make(map[string][]string, len(m.o.Dirs))
	m.mu.RLock()
	tps := make([]topicpart.TopicPartition, 0, len(m.logs))
	for tp := range m.logs {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, topicpart.Compare)
	for _, tp := range tps {
		d := m.dirOf[tp]
		byDir[d] = append(byDir[d], fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, get(m.logs[tp])))
	}
	m.mu.RUnlock()
	var errs []error
	for _, d := range m.dirs {
		if d.failure.Err() != nil {
			continue // nothing is written to an offline dir
		}
		path := filepath.Join(d.path, name)
		body := strings.Join(byDir[d.path], "\n")
		if last, ok := m.ckLast[path]; ok && last == body {
			continue // the file says so already, durably: no fsync for nothing
		}
		if err := vfs.WriteCheckpoint(m.fs, path, checkpointVersion, byDir[d.path]); err != nil {
			delete(m.ckLast, path)
			errs = append(errs, fmt.Errorf("write %s in %s: %w", name, d.path, err))
			continue
		}
		m.ckLast[path] = body
	}
	return errors.Join(errs...)
}

// RunRetention is one retention pass over every log.
func (m *Manager) RunRetention() {
	now := m.o.Clock.Now()
	moved := false
	for tp, l := range m.All() {
		if l.Failed() != nil {
			continue
		}
		res, err := l.DeleteOldSegments(now)
		if err != nil {
			if !errors.Is(err, log.ErrClosed) {
				m.o.Logger.Error("retention failed", "partition", tp, "err", err)
			}
			continue
		}
		if res.Segments > 0 {
			moved = true
			if m.RetentionHook != nil {
				m.RetentionHook(tp, res)
			}
		}
	}
	if moved {
		if err := m.CheckpointLogStart(); err != nil {
			m.o.Logger.Error("log start checkpoint failed", "err", err)
		}
	}
}

// RunProducerExpiration forgets, in every log, the producers idle for the
// log's producer.id.expiration.ms (Kafka's periodic producer expiration
// check) and returns how many it forgot.
func (m *Manager) RunProducerExpiration() int {
	now := m.o.Clock.Now()
	n := 0
	for _, l := range m.All() {
		n += l.RemoveExpiredProducers(now)
	}
	if n > 0 {
		m.o.Logger.Debug("expired producer ids", "producers", n)
	}
	return n
}

// RunFlush flushes every log whose flush.ms or flush.messages is due.
func (m *Manager) RunFlush() {
	now := m.o.Clock.Now()
	for tp, l := range m.All() {
		if l.FlushDue(now) {
			if err := l.Flush(); err != nil && !errors.Is(err, log.ErrClosed) {
				m.o.Logger.Error("flush failed", "partition", tp, "err", err)
			}
		}
	}
}

// Start schedules the background jobs on the clock.
func (m *Manager) Start() {
	m.every(m.o.RetentionCheckInterval, m.RunRetention)
	m.every(m.o.FlushCheckInterval, m.RunFlush)
	m.every(m.o.RecoveryPointInterval, func() { m.logErr(m.checkpoint(RecoveryPointCheckpoint, (*log.Log).RecoveryPoint)) })
	m.every(m.o.LogStartInterval, func() { m.logErr(m.CheckpointLogStart()) })
	m.every(m.o.HighWatermarkInterval, func() { m.logErr(m.checkpoint(ReplicationCheckpoint, (*log.Log).HighWatermark)) })
	m.every(m.o.ProducerExpirationCheckInterval, func() { m.RunProducerExpiration() })
	m.every(m.o.DiskCheckInterval, m.CheckDiskSpace)
}

func (m *Manager) logErr(err error) {
	if err != nil {
		m.o.Logger.Error("checkpoint failed", "err", err)
	}
}

// every runs f each d on the clock until Close. A zero d disables the job.
// Each job keeps one slot in m.timers, holding its pending timer, so the
// list does not grow with every run.
func (m *Manager) every(d time.Duration, f func()) {
	if d <= 0 {
		return
	}
	m.stopMu.Lock()
	defer m.stopMu.Unlock()
	if m.closed {
		return
	}
	slot := len(m.timers)
	var run func()
	run = func() {
		m.stopMu.Lock()
		if m.closed {
			m.stopMu.Unlock()
			return
		}
		m.stopMu.Unlock()
		f()
		m.stopMu.Lock()
		defer m.stopMu.Unlock()
		if !m.closed {
			m.timers[slot] = m.o.Clock.AfterFunc(d, run)
		}
	}
	m.timers = append(m.timers, m.o.Clock.AfterFunc(d, run))
}

// Close stops the jobs, closes every log (flushing it), writes the
// checkpoints and marks each dir cleanly shut down. An offline dir gets
// none of that: its logs' files are closed as they are, so the next start
// recovers them from the last recovery point written before the failure.
func (m *Manager) Close() error {
	m.stopMu.Lock()
	m.closed = true
	for _, t := range m.timers {
		t.Stop()
	}
	m.timers = nil
	m.stopMu.Unlock()
	m.mu.Lock()
	m.closed = true
	if m.freshTimer != nil {
		m.freshTimer.Stop()
		m.fresh, m.freshTimer = nil, nil
	}
	m.mu.Unlock()
	errs := []error{m.CheckpointAll()}
	if err := m.closeLogs(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Only after every log closed cleanly may the marker say so.
	errs = append(errs, m.CheckpointAll())
	for _, d := range m.dirs {
		if d.failure.Err() == nil {
			errs = append(errs, vfs.WriteFileAtomic(m.fs, filepath.Join(d.path, CleanShutdownFile), nil))
		}
	}
	return errors.Join(errs...)
}

// closeLogs closes every log, many at once per dir (see syncFanOut): a log
// whose records are all synced closes without an fsync, the others sync
// theirs. The logs of an offline dir fail to close (they write nothing);
// that was reported when the dir went offline.
func (m *Manager) closeLogs() error {
	type entry struct {
		tp topicpart.TopicPartition
		l  *log.Log
	}
	m.mu.RLock()
	byDir := make(map[string][]entry, len(m.dirs))
	for tp, l := range m.logs {
		byDir[m.dirOf[tp]] = append(byDir[m.dirOf[tp]], entry{tp, l})
	}
	m.mu.RUnlock()
	errs := make([]error, 0, len(byDir))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for dir, logs := range byDir {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := forEach(len(logs), syncFanOut, func(i int) error {
				if err := logs[i].l.Close(); err != nil && !m.offline(dir) {
					return fmt.Errorf("close %s: %w", logs[i].tp, err)
				}
				return nil
			})
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
