package logmgr

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

var tOrigin = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// bigSegments is testConfig with segments of 256 KiB, so filling a volume
// of a few MiB takes few files.
func bigSegments(topic string) log.Config {
	c := testConfig(topic)
	c.SegmentBytes = 256 << 10
	return c
}

// changes records OnDirChange calls.
type changes struct {
	mu  sync.Mutex
	got []DirState
}

func (c *changes) add(st DirState, _ []DirState) {
	c.mu.Lock()
	c.got = append(c.got, st)
	c.mu.Unlock()
}

func (c *changes) list() []DirState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]DirState(nil), c.got...)
}

// A failed fsync of any file under a log dir takes the dir offline: every
// log in it fails (appends and syncs answer log.ErrStorageFailed) while the
// other dir's logs go on, new partitions go to the online dir, nothing more
// is written to the offline one (no checkpoint, no clean-shutdown marker),
// and a restart recovers its logs from the last recovery point checkpointed
// before the failure.
func TestFailedFsyncTakesLogDirOffline(t *testing.T) {
	mem := vfs.NewMem()
	clk := clock.NewFake(tOrigin)
	var armed atomic.Bool
	fs := vfs.NewInjecting(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if armed.Load() && op == vfs.OpSync && strings.HasPrefix(path, "/d1/") {
			return vfs.ErrWritebackLost
		}
		return nil
	}))
	var ch changes
	m, err := Open(Options{FS: fs, Clock: clk, Dirs: []string{"/d1", "/d2"}, ConfigFor: testConfig,
		RecoveryPointInterval: time.Minute, OnDirChange: ch.add})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	a0, a1 := topicpart.TopicPartition{Topic: "a", Partition: 0}, topicpart.TopicPartition{Topic: "a", Partition: 1}
	la0, _ := m.GetOrCreate(a0, testConfig("a"))
	la1, _ := m.GetOrCreate(a1, testConfig("a"))
	if m.DirOf(a0) != "/d1" || m.DirOf(a1) != "/d2" {
		t.Fatalf("placement: %s %s", m.DirOf(a0), m.DirOf(a1))
	}
	for _, l := range []*log.Log{la0, la1} {
		if _, err := l.Append(batch(t, tOrigin.UnixMilli()), log.OriginClient, 0); err != nil {
			t.Fatal(err)
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(time.Minute) // checkpoints the recovery points: 1 each
	rpBefore, _ := vfs.ReadFile(mem, "/d1/"+RecoveryPointCheckpoint)

	if _, err := la0.Append(batch(t, tOrigin.UnixMilli()), log.OriginClient, 0); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	if err := la0.Flush(); !errors.Is(err, log.ErrStorageFailed) {
		t.Fatalf("flush with a failing fsync = %v", err)
	}
	armed.Store(false)
	if got := ch.list(); len(got) != 1 || got[0].Path != "/d1" || !errors.Is(got[0].Offline, vfs.ErrWritebackLost) {
		t.Fatalf("dir changes = %+v, want /d1 offline once", got)
	}
	if err := m.LogDir("/d1").Admit(100); !errors.Is(err, log.ErrStorageFailed) {
		t.Fatalf("Admit on an offline dir = %v", err)
	}
	if _, err := la0.Append(batch(t, tOrigin.UnixMilli()), log.OriginClient, 0); !errors.Is(err, log.ErrStorageFailed) {
		t.Fatalf("append in the offline dir = %v", err)
	}
	if _, err := la1.Append(batch(t, tOrigin.UnixMilli()), log.OriginClient, 0); err != nil {
		t.Fatalf("append in the online dir: %v", err)
	}
	if err := la1.Flush(); err != nil {
		t.Fatalf("flush in the online dir: %v", err)
	}
	b0 := topicpart.TopicPartition{Topic: "b", Partition: 0}
	if _, err := m.GetOrCreate(b0, testConfig("b")); err != nil || m.DirOf(b0) != "/d2" {
		t.Fatalf("new partition went to %q (%v), want the online /d2", m.DirOf(b0), err)
	}
	clk.Advance(time.Minute) // checkpoint pass: /d1 is left alone
	if rp, _ := vfs.ReadFile(mem, "/d1/"+RecoveryPointCheckpoint); string(rp) != string(rpBefore) {
		t.Fatalf("recovery-point checkpoint of the offline dir rewritten:\n%s\nwas\n%s", rp, rpBefore)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("close with an offline dir: %v", err)
	}
	if _, err := mem.Stat("/d1/" + CleanShutdownFile); err == nil {
		t.Fatal("clean-shutdown marker written to the offline dir")
	}
	if _, err := mem.Stat("/d2/" + CleanShutdownFile); err != nil {
		t.Fatal("no clean-shutdown marker in the online dir")
	}
	// Restart on what the disk holds: /d1 recovers from its last
	// recovery point; the lost writeback does not come back as a batch.
	m2, err := Open(Options{FS: mem.CrashClone(), Clock: clk, Dirs: []string{"/d1", "/d2"}, ConfigFor: testConfig})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if l := m2.Get(a0); l == nil || l.LogEndOffset() != 1 {
		t.Fatalf("a-0 after restart: %v", l)
	}
	if l := m2.Get(a1); l == nil || l.LogEndOffset() != 2 {
		t.Fatalf("a-1 after restart: %v", l)
	}
	for _, st := range m2.DirStates() {
		if st.Offline != nil {
			t.Fatalf("%s still offline after a restart", st.Path)
		}
	}
}

// statCounter counts DiskUsage calls.
type statCounter struct {
	vfs.FS
	n atomic.Int64
}

func (s *statCounter) DiskUsage(p string) (vfs.Usage, error) {
	s.n.Add(1)
	return s.FS.DiskUsage(p)
}

// A full dir is not a failed one: appends that would cross the free-space
// reserve are refused with log.ErrNoSpace, the dir says it is full (once),
// reads go on, and when space returns (here DeleteRecords) the next check
// lets appends in again. The volume is asked far less often than appends
// are admitted.
func TestFullLogDirRefusesAppendsAndResumes(t *testing.T) {
	mem := vfs.NewMem()
	clk := clock.NewFake(tOrigin)
	if err := mem.MkdirAll("/d1", 0o755); err != nil {
		t.Fatal(err)
	}
	mem.SetCapacity(4 << 20)
	counted := &statCounter{FS: mem}
	var ch changes
	var reserve atomic.Int64
	reserve.Store(1 << 20)
	m, err := Open(Options{FS: counted, Clock: clk, Dirs: []string{"/d1"}, ConfigFor: bigSegments,
		DiskCheckInterval: time.Second, MinFreeBytes: reserve.Load, OnDirChange: ch.add})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.Start()
	tp := topicpart.TopicPartition{Topic: "a", Partition: 0}
	l, err := m.GetOrCreate(tp, bigSegments("a"))
	if err != nil {
		t.Fatal(err)
	}
	d := m.LogDirOf(tp)
	statsBefore := counted.n.Load()
	appended := 0
	var refused error
	for i := 0; i < 100_000 && refused == nil; i++ {
		b := batch(t, tOrigin.UnixMilli())
		if refused = d.Admit(len(b)); refused != nil {
			break
		}
		if _, err := l.Append(b, log.OriginClient, 0); err != nil {
			t.Fatalf("append %d after Admit: %v", i, err)
		}
		appended++
	}
	if !errors.Is(refused, log.ErrNoSpace) || !strings.Contains(refused.Error(), "gregor.log.dir.min.free.bytes") {
		t.Fatalf("admit on a full dir = %v", refused)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	u, _ := mem.DiskUsage("/d1")
	// Admit counts the appended batches; index entries and the snapshots
	// of rolls come out of the reserve until the next reading.
	if u.Usable < 1<<20-64<<10 || u.Usable > 1<<20+4096 {
		t.Fatalf("refused with %d bytes usable, want about the 1 MiB reserve", u.Usable)
	}
	if stats := counted.n.Load() - statsBefore; stats > int64(appended)/50 {
		t.Fatalf("%d statfs calls for %d appends", stats, appended)
	}
	st := d.State()
	if !st.Full || st.Offline != nil || st.MinFree != 1<<20 {
		t.Fatalf("state of the full dir: %+v", st)
	}
	if err := d.Admit(1); !errors.Is(err, log.ErrNoSpace) {
		t.Fatalf("a full dir admitted an append: %v", err)
	}
	if got := l.LogEndOffset(); got != int64(appended) {
		t.Fatalf("LEO %d, want %d", got, appended)
	}
	if data, err := l.Read(nil, 0, 1<<20, l.LogEndOffset(), true); err != nil || len(data) == 0 {
		t.Fatalf("read on a full dir: %d bytes, %v", len(data), err)
	}
	// Space returns: DeleteRecords deletes the segments below the new log
	// start offset (file.delete.delay.ms is 0 here); the next check sees it.
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.IncrementLogStartOffset(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if st := d.State(); st.Full {
		t.Fatalf("still full after DeleteRecords freed space: %+v", st)
	}
	if err := d.Admit(1000); err != nil {
		t.Fatalf("admit once space returned: %v", err)
	}
	got := ch.list()
	if len(got) != 2 || !got[0].Full || got[1].Full {
		t.Fatalf("dir changes = %+v, want full then not full", got)
	}
	// gregor.log.dir.min.free.bytes is dynamic: a reserve above what is
	// free makes the dir full at the next check.
	u, _ = mem.DiskUsage("/d1")
	reserve.Store(u.Usable + 1)
	clk.Advance(time.Second)
	if st := d.State(); !st.Full || st.MinFree != u.Usable+1 {
		t.Fatalf("after raising the reserve: %+v", st)
	}
}

// A write that runs out of space anyway (no reserve) marks the dir full,
// not offline: the append is cut back and refused, and the log stays
// writable.
func TestNoSpaceWriteMarksDirFullNotOffline(t *testing.T) {
	mem := vfs.NewMem()
	clk := clock.NewFake(tOrigin)
	if err := mem.MkdirAll("/d1", 0o755); err != nil {
		t.Fatal(err)
	}
	mem.SetCapacity(1 << 20)
	m, err := Open(Options{FS: mem, Clock: clk, Dirs: []string{"/d1"}, ConfigFor: bigSegments,
		MinFreeBytes: func() int64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tp := topicpart.TopicPartition{Topic: "a", Partition: 0}
	l, err := m.GetOrCreate(tp, bigSegments("a"))
	if err != nil {
		t.Fatal(err)
	}
	var appendErr error
	for i := 0; i < 10_000 && appendErr == nil; i++ {
		_, appendErr = l.Append(batch(t, tOrigin.UnixMilli()), log.OriginClient, 0)
	}
	if !errors.Is(appendErr, log.ErrNoSpace) {
		t.Fatalf("append on a full volume = %v", appendErr)
	}
	st := m.LogDirOf(tp).State()
	if !st.Full || st.Offline != nil || l.Failed() != nil {
		t.Fatalf("after ENOSPC: dir %+v, log failed %v", st, l.Failed())
	}
	if err := l.Flush(); err != nil {
		t.Fatalf("flush after ENOSPC: %v", err)
	}
}
