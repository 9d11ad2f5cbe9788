package cleaner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// tb is what the helpers need of a *testing.T or *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fakeLogs is the log manager as the cleaner sees it.
type fakeLogs struct {
	mu     sync.Mutex
	parts  []Partition
	points map[topicpart.TopicPartition]int64
	setErr error
}

func newFakeLogs() *fakeLogs { return &fakeLogs{points: map[topicpart.TopicPartition]int64{}} }

func (f *fakeLogs) add(topic string, p int32, l *log.Log) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.parts = append(f.parts, Partition{TopicPartition: topicpart.TopicPartition{Topic: topic, Partition: p}, Dir: "/data", Log: l})
}

func (f *fakeLogs) Partitions() []Partition {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Partition(nil), f.parts...)
}

func (f *fakeLogs) Partition(tp topicpart.TopicPartition) (Partition, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.parts {
		if p.TopicPartition == tp {
			return p, true
		}
	}
	return Partition{}, false
}

func (f *fakeLogs) CleanerOffset(tp topicpart.TopicPartition) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.points[tp]
	return o, ok
}

func (f *fakeLogs) SetCleanerOffset(tp topicpart.TopicPartition, off int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.setErr != nil {
		return f.setErr
	}
	f.points[tp] = off
	return nil
}

// compactConfig is a compacted topic with small segments.
func compactConfig() log.Config {
	c := log.DefaultConfig()
	c.SegmentBytes = 4096
	c.SegmentIndexBytes = 1024
	c.IndexIntervalBytes = 256
	c.Compact, c.Delete = true, false
	c.TimestampAfterMs = -1
	c.TimestampBeforeMs = math.MaxInt64
	c.FileDeleteDelayMs = 0
	c.MinCleanableDirtyRatio = 0.01
	c.DeleteRetentionMs = 60_000
	return c
}

func openLog(t tb, fs vfs.FS, clk clock.Clock, dir string, cfg log.Config, clean bool) *log.Log {
	t.Helper()
	l, err := log.Open(log.Options{FS: fs, Clock: clk, Dir: dir, Config: cfg, Logger: discard(),
		RecoveryPoint: 0, LogStartOffset: -1, HighWatermark: -1, CleanShutdown: clean})
	if err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset()) // as a replication-offset-checkpoint would say
	return l
}

// kv is one record to write; a nil value is a tombstone.
type kv struct {
	key, value string
	tomb       bool
}

func put(k, v string) kv { return kv{key: k, value: v} }
func tomb(k string) kv   { return kv{key: k, tomb: true} }
func (r kv) val() []byte {
	if r.tomb {
		return nil
	}
	return []byte(r.value)
}

// appendBatch writes one client batch and advances the high watermark.
func appendBatch(t tb, l *log.Log, codec record.Codec, ts int64, recs ...kv) log.AppendResult {
	t.Helper()
	spec := &record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: codec}
	for i, r := range recs {
		spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: ts, Key: []byte(r.key), Value: r.val()})
	}
	b, err := record.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Append(b, log.OriginClient, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	return res
}

// readRec is a record read back.
type readRec struct {
	Offset    int64
	BatchLast int64 // last offset of the batch holding it (cleaning keeps it)
	Key       string
	Value     string
	Tomb      bool
	TS        int64
}

// readAll reads every record of l from the log start offset.
func readAll(t tb, l *log.Log) []readRec {
	t.Helper()
	var out []readRec
	off := l.LogStartOffset()
	for off < l.LogEndOffset() {
		buf, err := l.Read(nil, off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(buf) == 0 {
			break // the log ends in a gap left by cleaning (as in Kafka)
		}
		for rest := buf; len(rest) > 0; {
			b, tail, ok := record.Split(rest)
			if !ok {
				t.Fatalf("partial batch at %d", off)
			}
			rest = tail
			h, err := record.ValidateStored(b)
			if err != nil {
				t.Fatal(err)
			}
			if h.LastOffset() < off {
				continue
			}
			err = record.Iterate(b, 64<<20, func(r *record.Record) error {
				o := h.BaseOffset + int64(r.OffsetDelta)
				if o >= off && !h.Control() {
					out = append(out, readRec{Offset: o, BatchLast: h.LastOffset(), Key: string(r.Key), Value: string(r.Value),
						Tomb: r.Value == nil, TS: h.BaseTimestamp + r.TimestampDelta})
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			off = h.NextOffset()
		}
	}
	return out
}

// latestPerKey is the model: the last record of every key, in offset order.
func latestPerKey(recs []readRec) []readRec {
	last := map[string]readRec{}
	for _, r := range recs {
		last[r.Key] = r
	}
	out := make([]readRec, 0, len(last))
	for _, r := range last {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Offset < out[j].Offset })
	return out
}

// testCleaner is a cleaner driven round by round on a fake clock.
type testCleaner struct {
	*Cleaner
	logs *fakeLogs
	clk  *clock.Fake
	w    *worker
	cfg  Config
}

func newTestCleaner(t tb, logs *fakeLogs, clk *clock.Fake, dedupe int64) *testCleaner {
	tc := &testCleaner{logs: logs, clk: clk, cfg: Config{Enable: true, Threads: 1, DedupeBufferSize: dedupe,
		IOBufferSize: 1 << 20, IOBufferLoadFactor: 0.9, IOMaxBytesPerSecond: math.MaxFloat64, BackoffMs: 15000}}
	tc.Cleaner = New(Options{Logs: logs, Config: func() Config { return tc.cfg }, Clock: clk, Logger: discard()})
	tc.w = tc.newWorker(0)
	return tc
}

// roundNow runs one round synchronously; it reports whether a log was picked.
func (tc *testCleaner) roundNow() bool { return tc.safeRound(context.Background(), tc.w) }

// cleanUntilIdle runs rounds until none picks a log (bounded).
func (tc *testCleaner) cleanUntilIdle(t tb) int {
	t.Helper()
	for n := 0; n < 1000; n++ {
		if !tc.roundNow() {
			return n
		}
	}
	t.Fatal("the cleaner never went idle")
	return 0
}

func (tc *testCleaner) status(t tb, topic string, p int32) PartitionStatus {
	t.Helper()
	s, ok := tc.Status(topicpart.TopicPartition{Topic: topic, Partition: p})
	if !ok {
		t.Fatalf("no status for %s-%d", topic, p)
	}
	return s
}

func keyName(i int) string { return fmt.Sprintf("key-%04d", i) }
