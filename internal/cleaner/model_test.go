package cleaner

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// TestCleanerModel checks cleaning against a model, for random writes (keys,
// tombstones, codecs, batch sizes), segment sizes, offset map sizes, clock
// advances, restarts and cleaning schedules. Replay a failure with the
// -rapid.seed it prints.
//
// The model: every record ever written, and which of them the log must still
// hold. Cleaning with cleaner point E at time T keeps, below E, exactly the
// latest record of each key among the records below E, except tombstones
// whose delete horizon (T' + delete.retention.ms, T' the first cleaning
// whose range held their whole batch) is at or before T; above E nothing
// changes.
type cleanModel struct {
	written []readRec        // every record, in offset order
	live    map[int64]bool   // offsets the log holds
	horizon map[int64]int64  // tombstone offset → its delete horizon
	latest  map[string]int64 // key → offset of its latest record (all written)
}

func newCleanModel() *cleanModel {
	return &cleanModel{live: map[int64]bool{}, horizon: map[int64]int64{}, latest: map[string]int64{}}
}

func (m *cleanModel) append(r readRec) {
	m.written = append(m.written, r)
	m.live[r.Offset] = true
}

// clean applies a cleaning up to end at time now.
func (m *cleanModel) clean(end, now, deleteRetentionMs int64) {
	latest := map[string]int64{}
	for _, r := range m.written {
		if r.Offset < end {
			latest[r.Key] = r.Offset
		}
	}
	for _, r := range m.written {
		if r.Offset >= end || !m.live[r.Offset] {
			continue
		}
		keep := latest[r.Key] == r.Offset
		if keep && r.Tomb {
			if h, ok := m.horizon[r.Offset]; ok && h <= now {
				keep = false
			} else if !ok && r.BatchLast < end {
				m.horizon[r.Offset] = now + deleteRetentionMs
			}
		}
		if !keep {
			delete(m.live, r.Offset)
		}
	}
}

func (m *cleanModel) expected() []readRec {
	var out []readRec
	for _, r := range m.written {
		if m.live[r.Offset] {
			out = append(out, r)
		}
	}
	return out
}

type modelRun struct {
	fs    *vfs.MemFS
	clk   *clock.Fake
	cfg   log.Config
	l     *log.Log
	logs  *fakeLogs
	tc    *testCleaner
	m     *cleanModel
	keys  int
	dedup int64
	runs  int64
}

func (mr *modelRun) open(t *rapid.T, fs *vfs.MemFS, clean bool) {
	mr.fs = fs
	l, err := log.Open(log.Options{FS: fs, Clock: mr.clk, Dir: "/data/t-0", Config: mr.cfg, Logger: discard(),
		RecoveryPoint: 0, LogStartOffset: -1, HighWatermark: -1, CleanShutdown: clean})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	mr.l = l
	points := map[topicpart.TopicPartition]int64{}
	if mr.logs != nil {
		points = mr.logs.points
	}
	mr.logs = newFakeLogs()
	mr.logs.points = points
	mr.logs.add("t", 0, l)
	mr.tc = newTestCleaner(t, mr.logs, mr.clk, mr.dedup)
	mr.runs = 0
}

func TestCleanerModel(t *testing.T) {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["rapid.checks"] {
		checks := 100
		if os.Getenv("GREGOR_LONG") != "" {
			checks = 3000
		} else if raceEnabled {
			checks = 10
		}
		flag.Set("rapid.checks", fmt.Sprint(checks))
	}
	rapid.Check(t, func(t *rapid.T) {
		cfg := compactConfig()
		cfg.SegmentBytes = int64(rapid.IntRange(300, 6000).Draw(t, "segmentBytes"))
		cfg.SegmentIndexBytes = int32(rapid.SampledFrom([]int{24, 96, 1024}).Draw(t, "segmentIndexBytes"))
		cfg.IndexIntervalBytes = int32(rapid.IntRange(1, 1000).Draw(t, "indexIntervalBytes"))
		cfg.DeleteRetentionMs = int64(rapid.IntRange(0, 5000).Draw(t, "deleteRetentionMs"))
		cfg.MinCleanableDirtyRatio = rapid.SampledFrom([]float64{0, 0.2, 0.5}).Draw(t, "minCleanableDirtyRatio")
		mr := &modelRun{clk: clock.NewFake(t0), cfg: cfg, m: newCleanModel(),
			keys:  rapid.IntRange(1, 40).Draw(t, "keys"),
			dedup: int64(rapid.SampledFrom([]int{8, 16, 50, 1000}).Draw(t, "dedupeSlots")) * bytesPerEntry}
		mr.open(t, vfs.NewMem(), false)
		defer func() { mr.l.Close() }()
		codecs := []record.Codec{record.CodecNone, record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLz4, record.CodecZstd}
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for step := 0; step < steps; step++ {
			switch rapid.IntRange(0, 9).Draw(t, "action") {
			case 0, 1, 2, 3:
				n := rapid.IntRange(1, 5).Draw(t, "records")
				var recs []kv
				for i := 0; i < n; i++ {
					k := keyName(rapid.IntRange(0, mr.keys-1).Draw(t, "key"))
					if rapid.IntRange(0, 4).Draw(t, "tombstone") == 0 {
						recs = append(recs, tomb(k))
					} else {
						recs = append(recs, put(k, fmt.Sprintf("v%d-%d", step, i)+string(make([]byte, rapid.IntRange(0, 80).Draw(t, "pad")))))
					}
				}
				ts := mr.clk.Now().UnixMilli()
				res := appendBatch(t, mr.l, codecs[rapid.IntRange(0, len(codecs)-1).Draw(t, "codec")], ts, recs...)
				for i, r := range recs {
					mr.m.append(readRec{Offset: res.BaseOffset + int64(i), BatchLast: res.LastOffset, Key: r.key, Value: string(r.val()), Tomb: r.tomb, TS: ts})
				}
			case 4:
				if err := mr.l.Roll(); err != nil {
					t.Fatal(err)
				}
			case 5:
				mr.clk.Advance(time.Duration(rapid.IntRange(0, 4000).Draw(t, "advanceMs")) * time.Millisecond)
			case 6, 7, 8:
				mr.round(t)
			case 9:
				mr.reopen(t, rapid.Bool().Draw(t, "cleanClose"))
			}
			mr.check(t)
		}
		// Clean until idle: the log is then exactly the model's.
		for i := 0; i < 500 && mr.round(t); i++ {
			mr.check(t)
		}
	})
}

// round runs one cleaner round and applies it to the model; it reports
// whether a log was cleaned.
func (mr *modelRun) round(t *rapid.T) bool {
	before := mr.tc.status(t, "t", 0)
	cleaned := mr.tc.roundNow()
	st := mr.tc.status(t, "t", 0)
	if st.Uncleanable != nil {
		t.Fatalf("uncleanable: %+v", st.Uncleanable)
	}
	if st.Runs == before.Runs {
		return cleaned
	}
	end := st.LastRun.EndOffset
	if end < before.FirstDirtyOffset || end > before.FirstUncleanableOffset {
		t.Fatalf("cleaner point %d outside [%d, %d]", end, before.FirstDirtyOffset, before.FirstUncleanableOffset)
	}
	if st.CleanerPoint != end {
		t.Fatalf("checkpoint %d, last run ended at %d", st.CleanerPoint, end)
	}
	mr.m.clean(end, mr.clk.Now().UnixMilli(), mr.cfg.DeleteRetentionMs)
	return true
}

func (mr *modelRun) reopen(t *rapid.T, clean bool) {
	if clean {
		if err := mr.l.Close(); err != nil {
			t.Fatal(err)
		}
		mr.open(t, mr.fs, true)
		return
	}
	if err := mr.l.Flush(); err != nil {
		t.Fatal(err)
	}
	img := mr.fs.CrashClone()
	mr.l.Close()
	mr.open(t, img, false)
}

func (mr *modelRun) check(t *rapid.T) {
	got := readAll(t, mr.l)
	if diff := cmp.Diff(mr.m.expected(), got); diff != "" {
		t.Fatalf("log differs from the model (-want +got):\n%s", diff)
	}
	if mr.l.LogStartOffset() != 0 {
		t.Fatalf("log start offset moved to %d", mr.l.LogStartOffset())
	}
	if n := int64(len(mr.m.written)); mr.l.LogEndOffset() != n {
		t.Fatalf("log end offset %d, wrote %d records", mr.l.LogEndOffset(), n)
	}
}
