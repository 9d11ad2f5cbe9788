package logmgr

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Free-space reserve defaults: gregor.log.dir.min.free.bytes = -1 keeps
// min(256 MiB, 1% of the volume) free.
const (
	autoMinFreeCap     = 256 << 20
	autoMinFreePercent = 1
	// resumeMargin: a full dir takes appends again once this much more
	// than the reserve is free (at least 1 MiB), so it does not flap.
	minResumeMargin = 1 << 20
	// unknownBudget is what may be appended before the volume is asked
	// again when it could not be read.
	unknownBudget = 64 << 20
)

// DirState is what a log dir's health looks like from outside.
type DirState struct {
	Path string
	// Offline is nil while the dir is online, else the first failed write
	// or fsync under it (wrapping log.ErrStorageFailed). It stays offline
	// until a restart.
	Offline error
	// Full: appends to the dir's partitions are refused (log.ErrNoSpace)
	// because its volume has less than MinFree bytes usable, or a write
	// ran out of space.
	Full bool
	// Usage is the volume as of the last check (zero when unknown).
	Usage vfs.Usage
	// MinFree is the reserve in force (gregor.log.dir.min.free.bytes
	// resolved against the volume's size).
	MinFree int64
	// Since is when Offline or Full last changed (the start for neither).
	Since time.Time
}

// LogDir is one of the manager's log dirs: its failure domain (shared by
// its logs; see log.FailureDomain) and its free-space accounting. Admit is
// safe for concurrent use and costs two atomic operations while the dir has
// room.
type LogDir struct {
	path    string
	clean   string // filepath.Clean(path), for matching file paths
	m       *Manager
	failure *log.FailureDomain

	full atomic.Bool
	// headroom is how many bytes may still be appended before the reserve
	// is crossed: the last check's usable bytes less the reserve, less the
	// bytes admitted since.
	headroom atomic.Int64

	mu struct {
		sync.Mutex
		usage   vfs.Usage
		minFree int64
		since   time.Time
	}
}

func newLogDir(m *Manager, path string) *LogDir {
	d := &LogDir{path: path, clean: filepath.Clean(path), m: m}
	d.failure = log.NewFailureDomain(d.wentOffline)
	d.headroom.Store(math.MaxInt64 / 2) // until the first check
	d.mu.since = m.o.Clock.Now()
	return d
}

// Path is the dir as configured in log.dirs.
func (d *LogDir) Path() string { return d.path }

// Failure is the dir's failure domain.
func (d *LogDir) Failure() *log.FailureDomain { return d.failure }

// State returns the dir's health.
func (d *LogDir) State() DirState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return DirState{Path: d.path, Offline: d.failure.Err(), Full: d.full.Load(), Usage: d.mu.usage,
		MinFree: d.mu.minFree, Since: d.mu.since}
}

// Admit accounts for an append of n bytes about to be written (a client's,
// or a follower's copy of its leader's records): nil when it fits above the
// free-space reserve, an error wrapping log.ErrNoSpace when it does not (or
// the dir is full), the failure when the dir is offline.
// The volume is asked (statfs) only when the bytes admitted since the last
// check use up the headroom it left, never once per append.
func (d *LogDir) Admit(n int) error {
	if err := d.failure.Err(); err != nil {
		return err
	}
	if d.full.Load() {
		return d.fullErr()
	}
	if d.headroom.Add(-int64(n)) >= 0 {
		return nil
	}
	d.check(int64(n))
	if d.full.Load() {
		return d.fullErr()
	}
	return nil
}

func (d *LogDir) fullErr() error {
	st := d.State()
	return fmt.Errorf("%w: log dir %s has %d bytes usable, gregor.log.dir.min.free.bytes keeps %d free; "+
		"appends resume when retention or DeleteRecords frees space", log.ErrNoSpace, d.path, st.Usage.Usable, st.MinFree)
}

// check reads the volume's usage and updates the headroom and the full
// state; pending is an append being admitted, counted against the headroom.
// A full dir takes appends again only once the reserve plus a margin is
// free.
func (d *LogDir) check(pending int64) {
	if d.failure.Err() != nil {
		return
	}
	u, err := d.m.o.FS.DiskUsage(d.path)
	if err != nil {
		// Without a figure there is no reserve to keep; ask again after
		// unknownBudget bytes (or at the next periodic check).
		d.headroom.Store(unknownBudget)
		if !errors.Is(err, errors.ErrUnsupported) {
			d.m.o.Logger.Warn("cannot read the free space of a log dir", "dir", d.path, "err", err)
		}
		return
	}
	minFree := d.minFree(u)
	room := u.Usable - minFree - pending
	d.mu.Lock()
	d.mu.usage, d.mu.minFree = u, minFree
	d.headroom.Store(room)
	was := d.full.Load()
	now := was
	switch {
	case !was && room < 0:
		now = true
	case was && u.Usable >= minFree+max(minFree/4, minResumeMargin):
		now = false
	}
	if now != was {
		d.full.Store(now)
		d.mu.since = d.m.o.Clock.Now()
	}
	d.mu.Unlock()
	if now != was {
		d.noteFull(now, u, minFree, "")
	}
}

// minFree resolves gregor.log.dir.min.free.bytes for a volume: -1 (the
// default) is min(256 MiB, 1% of the volume), 0 turns the reserve off.
func (d *LogDir) minFree(u vfs.Usage) int64 {
	v := int64(-1)
	if d.m.o.MinFreeBytes != nil {
		v = d.m.o.MinFreeBytes()
	}
	if v < 0 {
		v = min(autoMinFreeCap, u.Total/100*autoMinFreePercent)
	}
	return v
}

// noSpace is told about a write the volume refused for want of space: the
// dir is full until a check finds room again.
func (d *LogDir) noSpace(cause error) {
	d.headroom.Store(-1)
	if d.full.Swap(true) {
		return
	}
	d.mu.Lock()
	d.mu.since = d.m.o.Clock.Now()
	u, minFree := d.mu.usage, d.mu.minFree
	d.mu.Unlock()
	d.noteFull(true, u, minFree, cause.Error())
}

func (d *LogDir) noteFull(full bool, u vfs.Usage, minFree int64, cause string) {
	lg := d.m.o.Logger
	if full {
		args := []any{"dir", d.path, "usable_bytes", u.Usable, "min_free_bytes", minFree}
		if cause != "" {
			args = append(args, "cause", cause)
		}
		lg.Warn("log dir is full: produce to its partitions is refused with KAFKA_STORAGE_ERROR (clients retry) "+
			"and their followers stop appending until retention or DeleteRecords frees space; fetches are served", args...)
	} else {
		lg.Info("log dir has free space again: produce and follower appends resume", "dir", d.path, "usable_bytes", u.Usable,
			"min_free_bytes", minFree)
	}
	d.m.notify(d)
}

// wentOffline is the failure domain's callback: it runs once, on the
// goroutine whose write or fsync failed (which may hold log locks).
func (d *LogDir) wentOffline(cause error) {
	d.mu.Lock()
	d.mu.since = d.m.o.Clock.Now()
	d.mu.Unlock()
	d.m.o.Logger.Error("log dir is offline after a failed write or fsync: its partitions answer KAFKA_STORAGE_ERROR "+
		"and acknowledge nothing more; restart the broker once the disk is fixed (recovery re-checks what was not "+
		"synced before the failure)", "dir", d.path, "cause", cause)
	d.m.notify(d)
}

// ioFailed is told about a failed operation under the dir by the log dirs'
// FS. A file closed under a racing call is not the disk's fault; a write
// refused for want of space makes the dir full; any other failed write or
// fsync takes the dir offline.
func (d *LogDir) ioFailed(err error, sync bool) {
	switch {
	case errors.Is(err, os.ErrClosed):
	case !sync && vfs.IsNoSpace(err):
		d.noSpace(err)
	default:
		d.failure.Fail(err)
	}
}

// dirFor returns the log dir holding path, nil if none does.
func (m *Manager) dirFor(path string) *LogDir {
	p := filepath.Clean(path)
	var best *LogDir
	for _, d := range m.dirs {
		if (p == d.clean || strings.HasPrefix(p, d.clean+string(filepath.Separator))) && (best == nil || len(d.clean) > len(best.clean)) {
			best = d
		}
	}
	return best
}

// notify tells the OnDirChange hook about a transition of d.
func (m *Manager) notify(d *LogDir) {
	if m.o.OnDirChange != nil {
		m.o.OnDirChange(d.State(), m.DirStates())
	}
}

// LogDirOf returns the log dir holding tp, nil if tp has no log.
func (m *Manager) LogDirOf(tp topicpart.TopicPartition) *LogDir {
	return m.LogDir(m.DirOf(tp))
}

// LogDir returns the log dir configured as path, nil if none is.
func (m *Manager) LogDir(path string) *LogDir {
	for _, d := range m.dirs {
		if d.path == path {
			return d
		}
	}
	return nil
}

// DirStates returns the health of every log dir, in log.dirs order. It takes
// no lock of the manager, so an OnDirChange hook may call it.
func (m *Manager) DirStates() []DirState {
	out := make([]DirState, len(m.dirs))
	for i, d := range m.dirs {
		out[i] = d.State()
	}
	return out
}

// CheckDiskSpace reads the free space of every online log dir (the job the
// manager runs every DiskCheckInterval) and, while any is full, runs a
// retention pass, so segments due for deletion free their space without
// waiting for log.retention.check.interval.ms.
func (m *Manager) CheckDiskSpace() {
	full := false
	for _, d := range m.dirs {
		d.check(0)
		full = full || d.full.Load()
	}
	if full {
		m.RunRetention()
	}
}

// offline reports whether dir is offline.
func (m *Manager) offline(dir string) bool {
	d := m.LogDir(dir)
	return d != nil && d.failure.Err() != nil
}
