package log

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// The model of a partition log: the batches on disk in offset order (with the
// bytes the log stored), the log start offset, the high watermark and the log
// end offset. Batches leave the model only when the segment holding them is
// deleted or the log is truncated; the log start offset hides the rest.
//
// Producer state is modelled apart from the batches, since retention does not
// touch it: every idempotent batch appended and not truncated (history), and
// the producers the log knows with their last batch. Only expiration forgets
// a producer: RemoveExpiredProducers, and every reload of the state (Open,
// TruncateTo), which rebuilds it from the history minus the producers expired
// by then.

type modelBatch struct {
	data   []byte  // as stored: base offset and leader epoch set
	base   int64   // base offset
	last   int64   // last offset
	maxTS  int64   // the header's max timestamp
	ts     []int64 // record i has offset base+i and timestamp ts[i]
	pid    int64
	seq    int32 // base sequence (pid >= 0)
	epoch  int32 // leader epoch
	nRecs  int
	codec  record.Codec
	keyLen int
}

type logModel struct {
	batches  []modelBatch
	logStart int64
	hw       int64
	leo      int64
	nextSeq  map[int64]int32 // for producers the log does not know

	history   []modelBatch         // idempotent batches not truncated, in offset order
	producers map[int64]modelBatch // known producers' last batches
}

func (m *logModel) firstAtOrAfter(off int64) int {
	for i, b := range m.batches {
		if b.last >= off {
			return i
		}
	}
	return len(m.batches)
}

func (m *logModel) seqFor(pid int64) int32 {
	if b, ok := m.producers[pid]; ok {
		return b.seq + int32(b.last-b.base) + 1
	}
	return m.nextSeq[pid]
}

// appended records an idempotent batch the log accepted.
func (m *logModel) appended(b modelBatch) {
	m.history = append(m.history, b)
	m.producers[b.pid] = b
	m.nextSeq[b.pid] = b.seq + int32(b.nRecs)
}

// expire forgets the producers whose last batch's max timestamp is expMs or
// more before nowMs, and returns how many.
func (m *logModel) expire(nowMs, expMs int64) int {
	n := 0
	for pid, b := range m.producers {
		if nowMs-b.maxTS >= expMs {
			delete(m.producers, pid)
			n++
		}
	}
	return n
}

// reload is the state a reload rebuilds: each producer's last batch in the
// history, minus those expired.
func (m *logModel) reload(nowMs, expMs int64) {
	m.producers = map[int64]modelBatch{}
	for _, b := range m.history {
		m.producers[b.pid] = b
	}
	m.expire(nowMs, expMs)
}

// dropBelow removes the batches of deleted segments (base below firstBase).
func (m *logModel) dropBelow(firstBase int64) {
	i := 0
	for i < len(m.batches) && m.batches[i].base < firstBase {
		i++
	}
	m.batches = m.batches[i:]
}

type modelTest struct {
	t     *rapid.T
	fs    *vfs.MemFS
	clk   *clock.Fake
	cfg   Config
	l     *Log
	m     logModel
	epoch int32
}

const modelDir = "/data/topic-0"

func (mt *modelTest) open(fs *vfs.MemFS, clean bool, recoveryPoint int64) {
	l, err := Open(Options{FS: fs, Clock: mt.clk, Dir: modelDir, Config: mt.cfg, Logger: discardLogger(),
		RecoveryPoint: recoveryPoint, LogStartOffset: mt.m.logStart, HighWatermark: mt.m.hw, CleanShutdown: clean})
	if err != nil {
		mt.t.Fatalf("open (clean=%v, recovery point %d): %v", clean, recoveryPoint, err)
	}
	mt.fs, mt.l = fs, l
}

func drawConfig(t *rapid.T) Config {
	c := DefaultConfig()
	c.SegmentBytes = int64(rapid.IntRange(1000, 12000).Draw(t, "segment.bytes"))
	c.SegmentIndexBytes = int32(rapid.IntRange(0, 200).Draw(t, "segment.index.bytes"))
	c.IndexIntervalBytes = int32(rapid.IntRange(0, 2000).Draw(t, "index.interval.bytes"))
	c.SegmentMs = rapid.SampledFrom([]int64{math.MaxInt64 / 2, 3600_000}).Draw(t, "segment.ms")
	c.SegmentJitterMs = rapid.SampledFrom([]int64{0, 600_000}).Draw(t, "segment.jitter.ms")
	c.RetentionMs = rapid.SampledFrom([]int64{-1, 600_000, 7200_000}).Draw(t, "retention.ms")
	c.RetentionBytes = rapid.SampledFrom([]int64{-1, 5000, 20000}).Draw(t, "retention.bytes")
	c.FileDeleteDelayMs = rapid.SampledFrom([]int64{0, 1000}).Draw(t, "file.delete.delay.ms")
	c.LogAppendTime = rapid.IntRange(0, 3).Draw(t, "message.timestamp.type") == 0
	c.TimestampAfterMs = -1
	c.ProducerIDExpirationMs = rapid.SampledFrom([]int64{86400_000, 2 * 3600_000, 5 * 3600_000}).Draw(t, "producer.id.expiration.ms")
	return c
}

// rapidDefaults sets rapid's checks and steps unless given on the command
// line: more of both under GREGOR_LONG=1.
func rapidDefaults(checks, steps, longChecks, longSteps int) {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if longTests() {
		checks, steps = longChecks, longSteps
	} else if raceEnabled {
		checks, steps = max(checks/10, 10), steps/2 // the race detector slows rapid ~80x
	}
	if !set["rapid.checks"] {
		flag.Set("rapid.checks", fmt.Sprint(checks))
	}
	if !set["rapid.steps"] {
		flag.Set("rapid.steps", fmt.Sprint(steps))
	}
}

// TestLogModel runs random operation sequences against the log and a model
// of it. Replay a failure with the -rapid.seed (or -rapid.failfile) it prints.
func TestLogModel(t *testing.T) {
	rapidDefaults(200, 100, 3000, 200)
	rapid.Check(t, func(t *rapid.T) {
		mt := &modelTest{t: t, clk: clock.NewFake(t0), cfg: drawConfig(t)}
		mt.m.nextSeq, mt.m.producers = map[int64]int32{}, map[int64]modelBatch{}
		mt.open(vfs.NewMem(), false, 0)
		t.Repeat(map[string]func(*rapid.T){
			"":                      func(t *rapid.T) { mt.checkOffsets(); mt.checkProducers() },
			"append":                mt.append,
			"appendReplica":         mt.appendReplica,
			"retry":                 mt.retry,
			"roll":                  mt.roll,
			"read":                  mt.read,
			"truncate":              mt.truncate,
			"setHighWatermark":      mt.setHighWatermark,
			"deleteRecords":         mt.deleteRecords,
			"retention":             mt.retention,
			"findOffsetByTimestamp": mt.findOffsetByTimestamp,
			"maxTimestamp":          mt.maxTimestamp,
			"reopenClean":           mt.reopenClean,
			"reopenUnclean":         mt.reopenUnclean,
			"expireProducers":       mt.expireProducers,
		})
		mt.checkAll()
	})
}

func (mt *modelTest) checkOffsets() {
	t, l, m := mt.t, mt.l, &mt.m
	if l.LogEndOffset() != m.leo || l.LogStartOffset() != m.logStart || l.HighWatermark() != m.hw {
		t.Fatalf("offsets: log start %d, HW %d, LEO %d; model %d, %d, %d",
			l.LogStartOffset(), l.HighWatermark(), l.LogEndOffset(), m.logStart, m.hw, m.leo)
	}
	// The epoch cache covers only what lies at or above the log start offset.
	if n := len(m.batches); n > 0 && m.batches[n-1].last >= m.logStart {
		if got := l.LatestEpoch(); got != m.batches[n-1].epoch {
			t.Fatalf("latest epoch %d, want %d", got, m.batches[n-1].epoch)
		}
		if e, end := l.EndOffsetForEpoch(m.batches[n-1].epoch); e != m.batches[n-1].epoch || end != m.leo {
			t.Fatalf("end offset for the latest epoch: %d %d", e, end)
		}
	}
}

// checkProducers compares what the log knows of each producer with the model.
func (mt *modelTest) checkProducers() {
	for _, pid := range []int64{1, 2} {
		e, ok := mt.l.Producer(pid)
		b, known := mt.m.producers[pid]
		if ok != known {
			mt.t.Fatalf("producer %d: log knows it %v, model %v", pid, ok, known)
		}
		if ok && (e.lastOffset() != b.last || e.lastSeq() != b.seq+int32(b.nRecs)-1 || e.LastTimestamp != b.maxTS) {
			mt.t.Fatalf("producer %d: last offset %d, sequence %d, timestamp %d; model %d, %d, %d", pid,
				e.lastOffset(), e.lastSeq(), e.LastTimestamp, b.last, b.seq+int32(b.nRecs)-1, b.maxTS)
		}
	}
}

// checkAll reads the whole log and compares it with the model.
func (mt *modelTest) checkAll() {
	mt.checkOffsets()
	got := readAllBatches(mt.t, mt.l, mt.m.logStart)
	want := mt.m.batches[mt.m.firstAtOrAfter(mt.m.logStart):]
	if len(got) != len(want) {
		mt.t.Fatalf("log holds %d batches from %d, model %d", len(got), mt.m.logStart, len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i].data) {
			mt.t.Fatalf("batch %d (offset %d) differs from the model", i, want[i].base)
		}
	}
}

// fataler is what testing.TB and *rapid.T have in common.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// readAllBatches reads every batch from offset from to the log end offset.
func readAllBatches(t fataler, l *Log, from int64) [][]byte {
	t.Helper()
	var out [][]byte
	var buf []byte
	for off := from; off < l.LogEndOffset(); {
		var err error
		buf, err = l.Read(buf[:0], off, 1<<16, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(buf) == 0 {
			break // a gap at the end of the log (only after a crash)
		}
		for data := buf; len(data) > 0; {
			b, rest, ok := record.Split(data)
			if !ok {
				t.Fatalf("partial batch returned at %d", off)
			}
			h, err := record.ValidateStored(b)
			if err != nil {
				t.Fatalf("invalid batch returned at %d: %v", off, err)
			}
			if h.LastOffset() < off {
				t.Fatalf("batch %d..%d returned for offset %d", h.BaseOffset, h.LastOffset(), off)
			}
			out = append(out, bytes.Clone(b))
			off = h.NextOffset()
			data = rest
		}
	}
	return out
}

func (mt *modelTest) buildBatch(t *rapid.T, pid int64, seq int32, n int, codec record.Codec, keyLen int, ts []int64) []byte {
	spec := &record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: codec}
	if pid >= 0 {
		spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = pid, 0, seq
	}
	for i := 0; i < n; i++ {
		key := bytes.Repeat([]byte{byte('a' + i)}, keyLen)
		if keyLen == 0 {
			key = nil
		}
		spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: ts[i],
			Key: key, Value: bytes.Repeat([]byte{byte(i), byte(seq)}, (i*37+keyLen)%150)})
	}
	b, err := record.Build(spec)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return b
}

func (mt *modelTest) append(t *rapid.T) {
	m := &mt.m
	pid := rapid.SampledFrom([]int64{-1, -1, 1, 2}).Draw(t, "pid")
	n := rapid.IntRange(1, 20).Draw(t, "records")
	codec := rapid.SampledFrom([]record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy,
		record.CodecLz4, record.CodecZstd}).Draw(t, "codec")
	keyLen := rapid.IntRange(0, 60).Draw(t, "keyLen")
	base := t0.UnixMilli() + rapid.Int64Range(0, 4*3600_000).Draw(t, "ts")
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = base + rapid.Int64Range(-5000, 5000).Draw(t, "tsDelta")
	}
	mt.epoch += int32(rapid.IntRange(0, 1).Draw(t, "epochBump"))
	var seq int32 = -1
	if pid >= 0 {
		seq = m.seqFor(pid)
	}
	b := mt.buildBatch(t, pid, seq, n, codec, keyLen, ts)
	res, err := mt.l.Append(b, OriginClient, mt.epoch)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	if res.Duplicate || res.BaseOffset != m.leo || res.LastOffset != m.leo+int64(n)-1 {
		t.Fatalf("append: %+v, model LEO %d, %d records", res, m.leo, n)
	}
	ts = mt.appendTimes(t, res, ts)
	h, _ := record.ParseHeader(b)
	mb := modelBatch{data: bytes.Clone(b), base: m.leo, last: res.LastOffset,
		maxTS: h.MaxTimestamp, ts: ts, pid: pid, seq: seq, epoch: mt.epoch, nRecs: n, codec: codec, keyLen: keyLen}
	m.batches = append(m.batches, mb)
	m.leo += int64(n)
	if pid >= 0 {
		m.appended(mb)
	}
}

// retry sends a producer's last batch again: a duplicate while the log still
// knows the producer (even once retention deleted the batch), a new batch once
// it has forgotten it.
func (mt *modelTest) retry(t *rapid.T) {
	m := &mt.m
	pid := rapid.SampledFrom([]int64{1, 2}).Draw(t, "pid")
	orig, known := m.producers[pid]
	if !known {
		i := len(m.history) - 1
		for i >= 0 && m.history[i].pid != pid {
			i--
		}
		if i < 0 {
			t.Skip("no batch of this producer")
		}
		orig = m.history[i]
	}
	b := mt.buildBatch(t, pid, orig.seq, orig.nRecs, orig.codec, orig.keyLen, orig.ts)
	res, err := mt.l.Append(b, OriginClient, mt.epoch)
	if err != nil {
		t.Fatalf("retry of %d..%d (known %v): %v", orig.base, orig.last, known, err)
	}
	if known {
		if !res.Duplicate || res.BaseOffset != orig.base || res.LastOffset != orig.last {
			t.Fatalf("retry of %d..%d: %+v, want a duplicate", orig.base, orig.last, res)
		}
		return
	}
	if res.Duplicate || res.BaseOffset != m.leo {
		t.Fatalf("retry of a forgotten producer's batch: %+v, LEO %d", res, m.leo)
	}
	nb := orig
	nb.data, nb.base, nb.last, nb.epoch = bytes.Clone(b), m.leo, res.LastOffset, mt.epoch
	nb.ts = mt.appendTimes(t, res, orig.ts)
	h, _ := record.ParseHeader(b)
	nb.maxTS = h.MaxTimestamp
	m.batches = append(m.batches, nb)
	m.leo = res.LastOffset + 1
	m.appended(nb)
}

// appendTimes checks the append time a client append got and returns the
// timestamps its records now have.
func (mt *modelTest) appendTimes(t *rapid.T, res AppendResult, ts []int64) []int64 {
	if !mt.cfg.LogAppendTime {
		if res.LogAppendTime != -1 {
			t.Fatalf("append time %d on a CreateTime topic", res.LogAppendTime)
		}
		return ts
	}
	if now := mt.clk.Now().UnixMilli(); res.LogAppendTime != now {
		t.Fatalf("append time %d, clock %d", res.LogAppendTime, now)
	}
	out := make([]int64, len(ts))
	for i := range out {
		out[i] = res.LogAppendTime
	}
	return out
}

// appendReplica appends a batch as a follower does: offsets come with the
// batch and may leave a gap (the leader's log was compacted).
func (mt *modelTest) appendReplica(t *rapid.T) {
	m := &mt.m
	n := rapid.IntRange(1, 10).Draw(t, "records")
	gap := rapid.SampledFrom([]int64{0, 0, 1, 7}).Draw(t, "gap")
	base := m.leo + gap
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = t0.UnixMilli() + rapid.Int64Range(0, 4*3600_000).Draw(t, "ts")
	}
	mt.epoch += int32(rapid.IntRange(0, 1).Draw(t, "epochBump"))
	spec := &record.BatchSpec{BaseOffset: base, LeaderEpoch: mt.epoch, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Codec: rapid.SampledFrom([]record.Codec{record.CodecNone, record.CodecLz4}).Draw(t, "codec")}
	for i := 0; i < n; i++ {
		spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: ts[i], Value: []byte{byte(i)}})
	}
	b, err := record.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	res, err := mt.l.Append(b, OriginReplication, -1)
	if err != nil || res.BaseOffset != base || res.LastOffset != base+int64(n)-1 {
		t.Fatalf("replica append at %d: %+v %v", base, res, err)
	}
	h, _ := record.ParseHeader(b)
	m.batches = append(m.batches, modelBatch{data: bytes.Clone(b), base: base, last: res.LastOffset,
		maxTS: h.MaxTimestamp, ts: ts, pid: -1, seq: -1, epoch: mt.epoch, nRecs: n})
	m.leo = res.LastOffset + 1
}

func (mt *modelTest) roll(t *rapid.T) {
	if err := mt.l.Roll(); err != nil {
		t.Fatalf("roll: %v", err)
	}
}

func segmentBases(l *Log) []int64 {
	var out []int64
	for _, s := range l.segments() {
		out = append(out, s.baseOffset)
	}
	return out
}

// segmentOf is the index in bases of the segment holding offset.
func segmentOf(bases []int64, off int64) int {
	k := 0
	for k+1 < len(bases) && bases[k+1] <= off {
		k++
	}
	return k
}

func (mt *modelTest) read(t *rapid.T) {
	m := &mt.m
	offset := rapid.Int64Range(m.logStart, m.leo).Draw(t, "offset")
	maxOffset := rapid.Int64Range(offset-1, m.leo+2).Draw(t, "maxOffset")
	maxBytes := rapid.IntRange(-1, 30000).Draw(t, "maxBytes")
	minOne := rapid.Bool().Draw(t, "minOneBatch")
	prefix := []byte("prefix")
	got, err := mt.l.Read(bytes.Clone(prefix), offset, maxBytes, maxOffset, minOne)
	if err != nil {
		t.Fatalf("read(%d, %d, %d, %v): %v", offset, maxBytes, maxOffset, minOne, err)
	}
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("read overwrote dst")
	}
	got = got[len(prefix):]

	var want []byte
	bases := segmentBases(mt.l)
	bound := min(maxOffset, m.leo)
	if i := m.firstAtOrAfter(offset); offset < bound && i < len(m.batches) {
		seg := segmentOf(bases, m.batches[i].base)
		for j := i; j < len(m.batches); j++ {
			b := m.batches[j]
			if segmentOf(bases, b.base) != seg || b.last >= bound {
				break
			}
			if len(want)+len(b.data) > maxBytes && !(j == i && minOne) {
				break
			}
			want = append(want, b.data...)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read(offset %d, maxBytes %d, maxOffset %d, minOneBatch %v): %d bytes, model %d (segments %v)",
			offset, maxBytes, maxOffset, minOne, len(got), len(want), bases)
	}
	// The same read, located and cut to whole batches without reading them,
	// then read piece by piece, as a fetch response is written.
	sp, err := mt.l.Locate(offset, maxBytes, maxOffset, minOne)
	if err != nil {
		t.Fatalf("locate(%d, %d, %d, %v): %v", offset, maxBytes, maxOffset, minOne, err)
	}
	if sp, err = sp.Whole(); err != nil {
		t.Fatalf("whole: %v", err)
	}
	if sp.Size() != len(want) {
		t.Fatalf("locate+whole(offset %d, maxBytes %d, maxOffset %d, minOneBatch %v): %d bytes, model %d",
			offset, maxBytes, maxOffset, minOne, sp.Size(), len(want))
	}
	piece := rapid.IntRange(1, 5000).Draw(t, "piece")
	buf := make([]byte, piece)
	var read []byte
	for len(read) < sp.Size() {
		n, err := sp.ReadAt(buf, int64(len(read)))
		read = append(read, buf[:n]...)
		if err != nil && len(read) < sp.Size() {
			t.Fatalf("ReadAt at %d: %v", len(read), err)
		}
	}
	if !bytes.Equal(read, want) {
		t.Fatalf("locate+whole read in %d-byte pieces differs from the model", piece)
	}
}

func (mt *modelTest) truncate(t *rapid.T) {
	m := &mt.m
	offset := rapid.Int64Range(0, m.leo+1).Draw(t, "offset")
	bases := segmentBases(mt.l)
	first := bases[0]
	if err := mt.l.TruncateTo(offset); err != nil {
		t.Fatalf("truncate to %d: %v", offset, err)
	}
	switch {
	case offset >= m.leo:
	case offset < first:
		m.batches, m.leo, m.logStart = nil, offset, offset
		m.history, m.producers = nil, map[int64]modelBatch{}
	default:
		// Batches reaching offset go; the log ends after the last one kept,
		// or at the base of the segment holding offset if that is later
		// (offset fell in a gap).
		i := m.firstAtOrAfter(offset)
		m.batches = m.batches[:i]
		m.leo = bases[segmentOf(bases, offset)]
		if i > 0 {
			m.leo = max(m.leo, m.batches[i-1].last+1)
		}
		k := 0
		for k < len(m.history) && m.history[k].last < offset {
			k++
		}
		m.history = m.history[:k]
		m.reload(mt.clk.Now().UnixMilli(), mt.cfg.ProducerIDExpirationMs)
	}
	m.logStart = min(m.logStart, m.leo)
	m.hw = min(m.hw, m.leo)
}

func (mt *modelTest) setHighWatermark(t *rapid.T) {
	m := &mt.m
	hw := rapid.Int64Range(m.logStart, m.leo).Draw(t, "hw")
	mt.l.SetHighWatermark(hw)
	m.hw = hw
}

func (mt *modelTest) deleteRecords(t *rapid.T) {
	m := &mt.m
	mt.l.SetHighWatermark(m.leo)
	m.hw = m.leo
	offset := rapid.Int64Range(max(m.logStart-2, 0), m.hw).Draw(t, "offset")
	bases := segmentBases(mt.l)
	got, err := mt.l.IncrementLogStartOffset(offset)
	if err != nil || got != max(offset, m.logStart) {
		t.Fatalf("IncrementLogStartOffset(%d): %d, %v (log start %d)", offset, got, err, m.logStart)
	}
	n := 0
	for got > m.logStart && n+1 < len(bases) && bases[n+1] <= got {
		n++ // segments wholly below go at once when the log start offset moves
	}
	m.logStart = got
	if after := segmentBases(mt.l); after[0] != bases[n] {
		t.Fatalf("after IncrementLogStartOffset(%d) segments %v, before %v", got, after, bases)
	}
	m.dropBelow(bases[n])
}

// retention advances the clock and runs a retention pass, predicting from the
// model which segments go.
func (mt *modelTest) retention(t *rapid.T) {
	m := &mt.m
	mt.clk.Advance(time.Duration(rapid.Int64Range(0, 3*3600_000).Draw(t, "advanceMs")) * time.Millisecond)
	now := mt.clk.Now()
	bases := segmentBases(mt.l)
	size := make([]int64, len(bases))
	largest := make([]int64, len(bases))
	for i := range largest {
		largest[i] = -1
	}
	for _, b := range m.batches {
		k := segmentOf(bases, b.base)
		size[k] += int64(len(b.data))
		largest[k] = max(largest[k], b.maxTS)
	}
	// Kafka's deletableSegments: the active segment too, once the HW is
	// at the LEO, unless it has no bytes.
	last := len(bases) - 1
	deletable := func(k int) bool {
		if k == last {
			return size[k] > 0 && m.leo <= m.hw
		}
		return k < last && bases[k+1] <= m.hw
	}
	n := 0
	for n < last && bases[n+1] <= m.logStart {
		n++
	}
	if mt.cfg.RetentionMs >= 0 {
		for deletable(n) && largest[n] >= 0 && now.UnixMilli()-largest[n] > mt.cfg.RetentionMs {
			n++
		}
	}
	if mt.cfg.RetentionBytes >= 0 {
		var total int64
		for _, s := range size[n:] {
			total += s
		}
		diff := total - mt.cfg.RetentionBytes
		for deletable(n) && diff-size[n] >= 0 {
			diff -= size[n]
			n++
		}
	}
	res, err := mt.l.DeleteOldSegments(now)
	if err != nil {
		t.Fatalf("retention: %v", err)
	}
	if res.Segments != n {
		t.Fatalf("retention removed %d segments (%s), model %d; segments %v, sizes %v, largest %v, now %d, HW %d",
			res.Segments, res.Reason, n, bases, size, largest, now.UnixMilli(), m.hw)
	}
	kept := m.leo // every segment went: a new empty one starts at the LEO
	if n <= last {
		kept = bases[n]
	}
	m.logStart = max(m.logStart, kept)
	m.hw = max(m.hw, m.logStart)
	m.dropBelow(kept)
	if res.LogStartOffset != m.logStart {
		t.Fatalf("retention result log start %d, model %d", res.LogStartOffset, m.logStart)
	}
	if after := segmentBases(mt.l); n > last && (len(after) != 1 || after[0] != m.leo || mt.l.active().size.Load() != 0) {
		t.Fatalf("after deleting every segment: segments %v, active size %d, want one empty segment at LEO %d",
			after, mt.l.active().size.Load(), m.leo)
	}
	mt.clk.Advance(2 * time.Second) // delayed file deletion runs
}

func (mt *modelTest) findOffsetByTimestamp(t *rapid.T) {
	m := &mt.m
	target := t0.UnixMilli() + rapid.Int64Range(-10_000, 5*3600_000).Draw(t, "target")
	if len(m.batches) > 0 && rapid.Bool().Draw(t, "nearRecord") {
		b := m.batches[rapid.IntRange(0, len(m.batches)-1).Draw(t, "batch")]
		target = b.ts[rapid.IntRange(0, len(b.ts)-1).Draw(t, "record")] + rapid.Int64Range(-1, 1).Draw(t, "jitter")
	}
	var want TimestampOffset
	found := false
	for _, b := range m.batches {
		for i, ts := range b.ts {
			if off := b.base + int64(i); !found && off >= m.logStart && ts >= target {
				want, found = TimestampOffset{Timestamp: ts, Offset: off, LeaderEpoch: b.epoch}, true
			}
		}
	}
	got, ok, err := mt.l.FindOffsetByTimestamp(target)
	if err != nil || ok != found || got != want {
		t.Fatalf("FindOffsetByTimestamp(%d): %+v %v %v, model %+v %v", target, got, ok, err, want, found)
	}
}

func (mt *modelTest) maxTimestamp(t *rapid.T) {
	m := &mt.m
	bases := segmentBases(mt.l)
	best, bestTS := -1, int64(-1)
	for _, b := range m.batches {
		if b.maxTS > bestTS {
			best, bestTS = segmentOf(bases, b.base), b.maxTS
		}
	}
	var want TimestampOffset
	found := false
	if best >= 0 {
		for _, b := range m.batches {
			if segmentOf(bases, b.base) != best || b.maxTS != bestTS {
				continue
			}
			for i, ts := range b.ts {
				if off := b.base + int64(i); ts == bestTS && off >= m.logStart {
					want, found = TimestampOffset{Timestamp: ts, Offset: off, LeaderEpoch: b.epoch}, true
					break
				}
			}
			break
		}
	}
	got, ok, err := mt.l.MaxTimestampOffset()
	if err != nil || ok != found || got != want {
		t.Fatalf("MaxTimestampOffset: %+v %v %v, model %+v %v", got, ok, err, want, found)
	}
}

func (mt *modelTest) reopenClean(t *rapid.T) {
	if err := mt.l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := mt.l.Append(mt.buildBatch(t, -1, -1, 1, record.CodecNone, 1, []int64{t0.UnixMilli()}), OriginClient, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	mt.open(mt.fs, true, mt.m.leo)
	mt.m.reload(mt.clk.Now().UnixMilli(), mt.cfg.ProducerIDExpirationMs)
	mt.checkAll()
}

// reopenUnclean syncs, then opens a crash image of the filesystem without
// closing: everything synced must be there.
func (mt *modelTest) reopenUnclean(t *rapid.T) {
	if err := mt.l.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
	rp := rapid.Int64Range(0, mt.m.leo).Draw(t, "recoveryPoint")
	mt.open(mt.fs.CrashClone(), false, rp)
	mt.m.reload(mt.clk.Now().UnixMilli(), mt.cfg.ProducerIDExpirationMs)
	mt.checkAll()
}

// expireProducers advances the clock and runs the producer expiration check.
func (mt *modelTest) expireProducers(t *rapid.T) {
	mt.clk.Advance(time.Duration(rapid.Int64Range(0, 3*3600_000).Draw(t, "advanceMs")) * time.Millisecond)
	now := mt.clk.Now()
	got := mt.l.RemoveExpiredProducers(now)
	if want := mt.m.expire(now.UnixMilli(), mt.cfg.ProducerIDExpirationMs); got != want {
		t.Fatalf("RemoveExpiredProducers removed %d producers, model %d", got, want)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
