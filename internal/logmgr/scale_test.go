package logmgr

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// openFiles is an FS that counts the files open through it.
type openFiles struct {
	vfs.FS
	n atomic.Int64
}

type countedFile struct {
	vfs.File
	fs     *openFiles
	closed atomic.Bool
}

func (f *countedFile) Close() error {
	if !f.closed.Swap(true) {
		f.fs.n.Add(-1)
	}
	return f.File.Close()
}

func (fs *openFiles) count(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	fs.n.Add(1)
	return &countedFile{File: f, fs: fs}, nil
}

func (fs *openFiles) Create(name string) (vfs.File, error) { return fs.count(fs.FS.Create(name)) }
func (fs *openFiles) Open(name string) (vfs.File, error)   { return fs.count(fs.FS.Open(name)) }
func (fs *openFiles) OpenReadWrite(name string) (vfs.File, error) {
	return fs.count(fs.FS.OpenReadWrite(name))
}

// Many partitions on one node (the GREGOR_LONG scale test in test/e2e runs
// 4,000 on the real binary): creating partitions, closing them and loading
// them after a clean stop costs no fsync per partition, only a few per log
// dir; a log keeps one open file per segment; new partitions are made
// durable in one pass in the background, and after a SIGKILL the load syncs
// only the logs with records above their checkpointed recovery point, which
// keep every record synced before the kill.
func TestManyPartitionsCostNoFsyncEach(t *testing.T) {
	const parts = 200
	mem := vfs.NewMem()
	syncs := vfs.NewCountingInjector(vfs.OpSync, vfs.OpSyncDir)
	files := &openFiles{FS: vfs.NewInjecting(mem, syncs)}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	dirs := []string{"/d1", "/d2"}
	open := func(fs vfs.FS) *Manager {
		t.Helper()
		m, err := Open(Options{FS: fs, Clock: clk, Dirs: dirs, ConfigFor: testConfig, RecoveryThreadsPerDir: 2})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// perDir bounds the fsyncs of a step that costs a few per log dir.
	const perDir = 12
	step := func(what string, max int64, f func()) {
		t.Helper()
		before := syncs.Count()
		f()
		if n := syncs.Count() - before; n > max {
			t.Fatalf("%s: %d fsyncs for %d partitions, want at most %d", what, n, parts, max)
		} else {
			t.Logf("%s: %d fsyncs for %d partitions", what, n, parts)
		}
	}
	tp := func(i int) topicpart.TopicPartition { return topicpart.TopicPartition{Topic: "t", Partition: int32(i)} }
	var m *Manager
	step("open empty", perDir*int64(len(dirs)), func() { m = open(files) })
	step("create", 0, func() {
		for i := 0; i < parts; i++ {
			l, err := m.GetOrCreate(tp(i), testConfig("t"))
			if err != nil {
				t.Fatal(err)
			}
			if err := l.AssignTopicID([16]byte{1, byte(i)}); err != nil {
				t.Fatal(err)
			}
			if err := l.AssignLeaderEpoch(0); err != nil {
				t.Fatal(err)
			}
		}
	})
	if n := files.n.Load(); n != parts {
		t.Fatalf("%d files open for %d partitions of one segment each", n, parts)
	}
	// Shortly after, in the background, one pass makes the new partitions
	// durable, many at once (partition.metadata, the epoch, the log, the
	// partition's directory and its entry in the log dir), so that a
	// partition's first record costs one fsync, as any other.
	step("new partitions made durable in the background", 5*parts, func() { clk.Advance(freshSyncDelay) })
	step("first records", parts/2, func() {
		for i := 0; i < parts/2; i++ {
			l := m.Get(tp(i))
			if _, err := l.Append(batch(t, clk.Now().UnixMilli()), log.OriginClient, 0); err != nil {
				t.Fatal(err)
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	})
	// What a power failure now keeps: every synced record, its partition
	// and its topic id.
	crashed := mem.CrashClone()
	for i := 0; i < parts/2; i++ {
		p := filepath.Join(m.DirOf(tp(i)), tp(i).String())
		if id := log.ReadTopicID(crashed, p); id != ([16]byte{1, byte(i)}) {
			t.Fatalf("%s after a crash: topic id %x", p, id)
		}
	}
	// The recovery points checkpointed; then a SIGKILL (no Close).
	step("checkpoint", 6*int64(len(dirs)), func() {
		if err := m.CheckpointAll(); err != nil {
			t.Fatal(err)
		}
	})
	killed := files.n.Load() // the killed process's files, as if never closed
	step("load after a SIGKILL, recovery points current", perDir*int64(len(dirs)), func() { m = open(files) })
	if n := files.n.Load() - killed; n != parts {
		t.Fatalf("%d files open after loading %d partitions of one segment each", n, parts)
	}
	for i := 0; i < parts; i++ {
		want := int64(0)
		if i < parts/2 {
			want = 1
		}
		if l := m.Get(tp(i)); l == nil || l.LogEndOffset() != want {
			t.Fatalf("%v after the SIGKILL: %v, want log end offset %d", tp(i), l, want)
		}
	}
	// Records of every partition, not synced (acks=1), then a clean stop
	// syncs them, with at most one fsync each (the logs are closed many at
	// once).
	for i := 0; i < parts; i++ {
		if _, err := m.Get(tp(i)).Append(batch(t, clk.Now().UnixMilli()), log.OriginClient, 0); err != nil {
			t.Fatal(err)
		}
	}
	step("clean stop after unsynced records", 6*parts/2+parts+perDir*int64(len(dirs)), func() {
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	})
	if n := files.n.Load() - killed; n != 0 {
		t.Fatalf("%d files open after Close", n)
	}
	step("clean load", perDir*int64(len(dirs)), func() { m = open(files) })
	step("clean stop, every record synced", perDir*int64(len(dirs)), func() {
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	})
	m = open(mem.CrashClone())
	defer m.Close()
	for i := 0; i < parts; i++ {
		want := int64(1)
		if i < parts/2 {
			want = 2
		}
		if got := m.Get(tp(i)).LogEndOffset(); got != want {
			t.Fatalf("%v after a clean stop and a crash: log end offset %d, want %d", tp(i), got, want)
		}
	}
}

// A partition directory renamed <topic>-<partition>.<id>-delete is a
// deletion a crash cut off: a start removes it (as Kafka does) and loads
// nothing from it. Delete renames durably before it removes anything.
func TestInterruptedDeletionIsFinishedAtStart(t *testing.T) {
	fs := vfs.NewMem()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := open(t, fs, clk)
	gone, kept := topicpart.TopicPartition{Topic: "gone", Partition: 0}, topicpart.TopicPartition{Topic: "kept", Partition: 0}
	for _, p := range []topicpart.TopicPartition{gone, kept} {
		l, err := m.GetOrCreate(p, testConfig(p.Topic))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(batch(t, clk.Now().UnixMilli()), log.OriginClient, 0); err != nil {
			t.Fatal(err)
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	dir := m.DirOf(gone)
	// The rename of a deletion, durable, then the machine stops.
	renamed := filepath.Join(dir, topicpart.DeleteDirName(gone, "0123456789abcdef0123456789abcdef"))
	if err := fs.Rename(filepath.Join(dir, gone.String()), renamed); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	m = open(t, fs.CrashClone(), clk)
	if m.Get(gone) != nil || m.Get(kept) == nil || m.Get(kept).LogEndOffset() != 1 {
		t.Fatalf("after the start: gone %v, kept %v", m.Get(gone), m.Get(kept))
	}
	if _, err := m.FS().Stat(renamed); !vfs.IsNotExist(err) {
		t.Fatalf("%s still there: %v", renamed, err)
	}
	// Delete itself: the log's directory is gone, and no crash brings it
	// back as a log.
	if err := m.Delete(kept); err != nil {
		t.Fatal(err)
	}
	names, _ := m.FS().List(m.o.Dirs[0])
	names2, _ := m.FS().List(m.o.Dirs[1])
	for _, n := range append(names, names2...) {
		if _, ok := topicpart.ParseDirName(n); ok {
			t.Fatalf("%s left after Delete", n)
		}
	}
	m2 := open(t, m.o.FS.(*vfs.MemFS).CrashClone(), clk)
	defer m2.Close()
	if len(m2.All()) != 0 {
		t.Fatalf("logs after a crash following Delete: %v", m2.All())
	}
	m.Close()
}

// A partition directory with no partition.metadata and no record is what a
// crash leaves of a creation (partition.metadata is durable before any
// record is): a start that finds it unknown to the metadata removes it,
// where it sets aside (never deletes) a log holding records.
func TestUnfinishedCreationIsRemovedNotSetAside(t *testing.T) {
	fs := vfs.NewMem()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for i, records := range []int{0, 2} {
		dir := fmt.Sprintf("/d1/t-%d", i)
		l, err := log.Open(log.Options{FS: fs, Clock: clk, Dir: dir, Config: testConfig("t"), RecoveryPoint: -1,
			LogStartOffset: -1, HighWatermark: -1})
		if err != nil {
			t.Fatal(err)
		}
		for range records {
			if _, err := l.Append(batch(t, clk.Now().UnixMilli()), log.OriginClient, 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	stray := func(tp topicpart.TopicPartition, id [16]byte) string {
		if id == ([16]byte{}) {
			return "the log has no partition.metadata naming its topic id"
		}
		return ""
	}
	m, err := Open(Options{FS: fs, Clock: clk, Dirs: []string{"/d1"}, ConfigFor: testConfig, Stray: stray})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if len(m.All()) != 0 {
		t.Fatalf("logs loaded: %v", m.All())
	}
	if _, err := fs.Stat("/d1/t-0"); !vfs.IsNotExist(err) {
		t.Fatalf("the empty partition dir is still there: %v", err)
	}
	if s := m.Strays(); len(s) != 1 || s[0].TP.Partition != 1 {
		t.Fatalf("strays %+v, want t-1 (which holds records) set aside", s)
	}
}

// A log keeps one open file per segment however many segments it has: a
// sealed segment's index files are opened only by the lookups that read
// them (and the index files a roll wrote only until the next sync).
func TestOneOpenFilePerSegment(t *testing.T) {
	files := &openFiles{FS: vfs.NewMem()}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg := testConfig("t")
	cfg.IndexIntervalBytes = 0 // every batch indexed: lookups read the files
	open := func(clean bool) *log.Log {
		t.Helper()
		l, err := log.Open(log.Options{FS: files, Clock: clk, Dir: "/d/t-0", Config: cfg, RecoveryPoint: -1,
			LogStartOffset: -1, HighWatermark: -1, CleanShutdown: clean})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := open(false)
	for l.NumSegments() < 20 {
		if _, err := l.Append(batch(t, clk.Now().UnixMilli()), log.OriginClient, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		if n := files.n.Load(); n != int64(l.NumSegments()) {
			t.Fatalf("%s: %d files open for %d segments", what, n, l.NumSegments())
		}
	}
	check("after appending and a sync")
	readAll := func() {
		var buf []byte
		for off := l.LogStartOffset(); off < l.LogEndOffset(); off++ {
			var err error
			if buf, err = l.Read(buf[:0], off, 1, l.LogEndOffset(), true); err != nil || len(buf) == 0 {
				t.Fatalf("read at %d: %d bytes, %v", off, len(buf), err)
			}
		}
	}
	readAll()
	check("after reading every offset")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := files.n.Load(); n != 0 {
		t.Fatalf("%d files open after Close", n)
	}
	l = open(true)
	defer l.Close()
	check("after a clean reopen")
	readAll()
	check("after reading every offset again")
}
