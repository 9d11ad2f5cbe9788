package logmgr

import (
	"encoding/base64"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

func batch(t *testing.T, ts int64) []byte {
	b, err := record.Build(&record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Records: []record.BuildRecord{{Timestamp: ts, Key: []byte("k"), Value: make([]byte, 200)}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testConfig(string) log.Config {
	c := log.DefaultConfig()
	c.SegmentBytes = 2048
	c.RetentionMs = int64(time.Hour / time.Millisecond)
	c.FileDeleteDelayMs = 0
	c.TimestampAfterMs = -1
	return c
}

func open(t *testing.T, fs vfs.FS, clk clock.Clock) *Manager {
	t.Helper()
	m, err := Open(Options{FS: fs, Clock: clk, Dirs: []string{"/d1", "/d2"}, ConfigFor: testConfig,
		RecoveryThreadsPerDir: 2, RetentionCheckInterval: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLoadCheckpointRetention(t *testing.T) {
	fs := vfs.NewMem()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := open(t, fs, clk)
	tps := []topicpart.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}, {Topic: "b-x", Partition: 0}, {Topic: "c", Partition: 3}}
	for _, tp := range tps {
		l, err := m.GetOrCreate(tp, testConfig(tp.Topic))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 30; i++ {
			if _, err := l.Append(batch(t, clk.Now().UnixMilli()), log.OriginClient, 0); err != nil {
				t.Fatal(err)
			}
		}
		l.SetHighWatermark(l.LogEndOffset())
	}
	if m.DirOf(tps[0]) == m.DirOf(tps[1]) {
		t.Fatal("partitions not spread over log dirs")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat("/d1/" + CleanShutdownFile); err != nil {
		t.Fatal("no clean shutdown marker")
	}
	// Clean reopen, then an unclean one from a crash image.
	m = open(t, fs, clk)
	if _, err := fs.Stat("/d1/" + CleanShutdownFile); err == nil {
		t.Fatal("marker survived open")
	}
	for _, tp := range tps {
		l := m.Get(tp)
		if l == nil || l.LogEndOffset() != 30 || l.HighWatermark() != 30 {
			t.Fatalf("%v after reopen: %v", tp, l)
		}
	}
	crashed := fs.CrashClone()
	m2 := open(t, crashed, clk)
	if l := m2.Get(tps[2]); l == nil || l.LogEndOffset() != 30 {
		t.Fatalf("unclean reopen lost data: %v %v\n%s", l, m2.All(), crashed.String())
	}
	// Retention on the scheduled job: two hours later every segment goes,
	// the active one too (rolled first): each log is one empty segment at
	// its log end offset, which becomes the log start offset.
	m.Start()
	clk.Advance(2 * time.Hour)
	for _, tp := range tps {
		l := m.Get(tp)
		if l.NumSegments() != 1 || l.LogStartOffset() != 30 || l.LogEndOffset() != 30 || l.Size() != 0 {
			t.Fatalf("%v: %d segments, %d bytes, log start %d, LEO %d", tp, l.NumSegments(), l.Size(), l.LogStartOffset(), l.LogEndOffset())
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m3 := open(t, fs, clk)
	if l := m3.Get(tps[0]); l.LogStartOffset() != 30 || l.LogEndOffset() != 30 {
		t.Fatalf("after reopen: log start %d, LEO %d; want 30", l.LogStartOffset(), l.LogEndOffset())
	}
}

// The producer expiration job runs every producer.id.expiration.check.interval.ms
// on the clock: a producer idle for producer.id.expiration.ms is forgotten at
// the first check after that, not before, even though retention deleted its
// batch long before.
func TestProducerExpirationJob(t *testing.T) {
	fs := vfs.NewMem()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	cfg := func(topic string) log.Config {
		c := testConfig(topic)
		c.RetentionMs = int64(10 * time.Minute / time.Millisecond)
		c.ProducerIDExpirationMs = int64(time.Hour / time.Millisecond)
		return c
	}
	m, err := Open(Options{FS: fs, Clock: clk, Dirs: []string{"/d1"}, ConfigFor: cfg,
		RetentionCheckInterval: 5 * time.Minute, ProducerExpirationCheckInterval: 25 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tp := topicpart.TopicPartition{Topic: "p", Partition: 0}
	l, err := m.GetOrCreate(tp, cfg(tp.Topic))
	if err != nil {
		t.Fatal(err)
	}
	b, err := record.Build(&record.BatchSpec{ProducerID: 9, ProducerEpoch: 0, BaseSequence: 0,
		Records: []record.BuildRecord{{Timestamp: t0.UnixMilli(), Value: []byte("v")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(b, log.OriginClient, 0); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	m.Start()
	// Checks run at 25, 50 and 75 minutes. Retention deletes the batch at
	// 15 minutes; the producer stays.
	clk.Advance(70 * time.Minute)
	if l.LogStartOffset() != 1 {
		t.Fatalf("retention did not delete the batch: log start %d", l.LogStartOffset())
	}
	if _, ok := l.Producer(9); !ok {
		t.Fatal("producer forgotten before the check after its expiration")
	}
	clk.Advance(5*time.Minute - time.Millisecond)
	if _, ok := l.Producer(9); !ok {
		t.Fatal("producer forgotten before the check at 75 minutes")
	}
	clk.Advance(time.Millisecond)
	if _, ok := l.Producer(9); ok {
		t.Fatal("producer idle past producer.id.expiration.ms kept after the check at 75 minutes")
	}
	if n := m.RunProducerExpiration(); n != 0 {
		t.Fatalf("a second pass removed %d producers", n)
	}
}

// A partition log the metadata does not know is renamed to Kafka's stray
// name and kept with its records (KIP-858), never deleted; the rename is
// durable, and a later start lists the stray without touching it again.
func TestStrayLogsAreSetAsideNotDeleted(t *testing.T) {
	fs := vfs.NewMem()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := open(t, fs, clk)
	known, gone := topicpart.TopicPartition{Topic: "orders", Partition: 0}, topicpart.TopicPartition{Topic: "gone", Partition: 0}
	for _, tp := range []topicpart.TopicPartition{known, gone} {
		l, err := m.GetOrCreate(tp, testConfig(tp.Topic))
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := l.Append(batch(t, clk.Now().UnixMilli()), log.OriginClient, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	goneDir := m.DirOf(gone)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex // Stray is called from one goroutine per log dir
		asked []topicpart.TopicPartition
	)
	stray := func(tp topicpart.TopicPartition, _ [16]byte) string {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, tp)
		if tp == gone {
			return "the metadata has no topic gone"
		}
		return ""
	}
	reopen := func(fs vfs.FS) *Manager {
		m, err := Open(Options{FS: fs, Clock: clk, Dirs: []string{"/d1", "/d2"}, ConfigFor: testConfig, Stray: stray})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// The metadata log's directory looks like a partition's; it is
	// package quorum's, never a log to load or set aside.
	if err := fs.MkdirAll("/d1/__cluster_metadata-0/wal", 0o755); err != nil {
		t.Fatal(err)
	}
	m = reopen(fs)
	if _, err := fs.Stat("/d1/__cluster_metadata-0/wal"); err != nil || m.Get(topicpart.TopicPartition{Topic: MetadataTopic}) != nil {
		t.Fatalf("the metadata log dir was touched (%v) or loaded", err)
	}
	if slices.ContainsFunc(asked, func(tp topicpart.TopicPartition) bool { return tp.Topic == MetadataTopic }) {
		t.Fatal("the metadata log dir was offered to Stray")
	}
	if m.Get(gone) != nil || m.Get(known) == nil || m.Get(known).LogEndOffset() != 3 {
		t.Fatalf("after reopen: gone=%v known=%v", m.Get(gone), m.Get(known))
	}
	strays := m.Strays()
	if len(strays) != 1 || strays[0].TP != gone || strays[0].Dir != goneDir || strays[0].Bytes == 0 {
		t.Fatalf("Strays() = %+v", strays)
	}
	name := strays[0].Name
	if !strings.HasPrefix(name, "gone-0.") || !strings.HasSuffix(name, "-stray") || len(name) != len("gone-0.")+32+len("-stray") {
		t.Fatalf("stray dir name %q, want gone-0.<32 hex digits>-stray", name)
	}
	// The records are still there, byte for byte a log Kafka's tools read.
	l, err := log.Open(log.Options{FS: fs, Clock: clk, Dir: filepath.Join(goneDir, name), Config: testConfig("gone"),
		RecoveryPoint: -1, LogStartOffset: -1, HighWatermark: -1})
	if err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 3 {
		t.Fatalf("stray log end offset %d, want 3", l.LogEndOffset())
	}
	l.Close()
	if _, err := fs.Stat(filepath.Join(goneDir, "gone-0")); !vfs.IsNotExist(err) {
		t.Fatalf("gone-0 still there: %v", err)
	}
	// Durable: a crash now keeps the rename.
	crashed := fs.CrashClone()
	if _, err := crashed.Stat(filepath.Join(goneDir, name)); err != nil {
		t.Fatalf("the stray rename is not durable: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	asked = nil
	m = reopen(fs)
	defer m.Close()
	if got := m.Strays(); len(got) != 1 || got[0].Name != name {
		t.Fatalf("second start: Strays() = %+v", got)
	}
	for _, tp := range asked {
		if tp == gone {
			t.Fatal("a stray log was offered to Stray again")
		}
	}
}

func TestReadTopicID(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/d/t-0", 0o755); err != nil {
		t.Fatal(err)
	}
	if id := ReadTopicID(fs, "/d/t-0"); id != [16]byte{} {
		t.Fatalf("no file: %x", id)
	}
	want := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	body := "version: 0\ntopic_id: " + base64.RawURLEncoding.EncodeToString(want[:]) + "\n"
	if err := vfs.WriteFileAtomic(fs, "/d/t-0/"+PartitionMetadataFile, []byte(body)); err != nil {
		t.Fatal(err)
	}
	if id := ReadTopicID(fs, "/d/t-0"); id != want {
		t.Fatalf("ReadTopicID = %x, want %x", id, want)
	}
}
