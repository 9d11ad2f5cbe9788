package api_test

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/logmgr"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// deleteRecords sends one raw DeleteRecords request for a partition.
func (f *logAPI) deleteRecords(topic string, partition int32, offset int64) kmsg.DeleteRecordsResponseTopicPartition {
	f.t.Helper()
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return f.request(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
}

// checkpointedLogStart reads topic-partition's entry of the log dir's
// log-start-offset-checkpoint file (-1 when absent).
func (f *logAPI) checkpointedLogStart(topic string, partition int32) int64 {
	f.t.Helper()
	lines, err := vfs.ReadCheckpoint(vfs.Default, filepath.Join(f.b.Dir, logmgr.LogStartCheckpoint), 0)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, l := range lines {
		if len(l) == 3 && l[0] == topic && l[1] == strconv.Itoa(int(partition)) {
			n, err := strconv.ParseInt(l[2], 10, 64)
			if err != nil {
				f.t.Fatal(err)
			}
			return n
		}
	}
	return -1
}

// fillSegments appends segments×per records, one segment per batch, so the
// segment base offsets are 0, per, 2·per, ...
func (f *logAPI) fillSegments(topic string, partition int32, segments, per int) {
	f.t.Helper()
	l := f.log(topic, partition)
	for i := 0; i < segments; i++ {
		f.produceValues(topic, partition, nil, per)
		if err := l.Roll(); err != nil {
			f.t.Fatal(err)
		}
	}
}

func TestDeleteRecordsMovesLogStartOffset(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("dr", 1, nil)
	f.fillSegments("dr", 0, 10, 10)
	l := f.log("dr", 0)
	segsBefore := l.NumSegments()

	adm := f.b.AdminClient()
	res, err := adm.DeleteRecords(f.ctx, kadm.Offsets{"dr": {0: {Topic: "dr", Partition: 0, At: 45}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup("dr", 0); r.Err != nil || r.LowWatermark != 45 {
		t.Fatalf("DeleteRecords at 45: low watermark %d, err %v", r.LowWatermark, r.Err)
	}
	// The checkpoint is written before the answer, not on the next timer.
	if got := f.checkpointedLogStart("dr", 0); got != 45 {
		t.Fatalf("log-start-offset-checkpoint holds %d right after DeleteRecords, want 45", got)
	}
	// Segments [0,10) .. [30,40) are wholly below 45; [40,50) holds it.
	if got := l.NumSegments(); got != segsBefore-4 {
		t.Fatalf("%d segments after deleting up to 45, want %d", got, segsBefore-4)
	}

	// Below the log start offset: OFFSET_OUT_OF_RANGE, with the new start.
	fp := f.fetch("dr", 0, 10)
	f.wantCode("fetch at 10", fp.ErrorCode, kerr.OffsetOutOfRange)
	if fp.LogStartOffset != 45 {
		t.Fatalf("fetch answered log start offset %d, want 45", fp.LogStartOffset)
	}
	f.wantCode("fetch at 45", f.fetch("dr", 0, 45).ErrorCode, nil)

	// A consumer resetting to the earliest offset starts at 45, in the
	// middle of the batch [40,50).
	recs := f.consumeFrom("dr", 55)
	if recs[0].Offset != 45 || recs[len(recs)-1].Offset != 99 {
		t.Fatalf("consumer read offsets %d..%d, want 45..99", recs[0].Offset, recs[len(recs)-1].Offset)
	}
	starts, err := adm.ListStartOffsets(f.ctx, "dr")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("dr", 0); o.Err != nil || o.Offset != 45 {
		t.Fatalf("ListStartOffsets: %d (%v), want 45", o.Offset, o.Err)
	}

	// The start offset survives a restart.
	f.restart()
	if got := f.log("dr", 0).LogStartOffset(); got != 45 {
		t.Fatalf("log start offset %d after restart, want 45", got)
	}
	f.wantCode("fetch at 44 after restart", f.fetch("dr", 0, 44).ErrorCode, kerr.OffsetOutOfRange)
	if got := f.listOffset("dr", 0, -2, 0); got.Offset != 45 {
		t.Fatalf("earliest offset after restart %d, want 45", got.Offset)
	}
}

func TestDeleteRecordsOffsets(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("dro", 2, nil)
	f.createTopic("dro-compact", 1, map[string]string{"cleanup.policy": "compact"})
	f.createTopic("dro-both", 1, map[string]string{"cleanup.policy": "compact,delete"})
	f.fillSegments("dro", 0, 3, 10)
	f.fillSegments("dro", 1, 2, 5)

	for _, tc := range []struct {
		name      string
		topic     string
		partition int32
		offset    int64
		err       *kerr.Error
		low       int64
	}{
		{"up to 12", "dro", 0, 12, nil, 12},
		{"below the start changes nothing", "dro", 0, 5, nil, 12},
		{"the same offset again", "dro", 0, 12, nil, 12},
		{"beyond the high watermark", "dro", 0, 31, kerr.OffsetOutOfRange, -1},
		{"exactly the high watermark", "dro", 0, 30, nil, 30},
		{"-1 is the high watermark", "dro", 1, -1, nil, 10},
		{"below -1", "dro", 1, -2, kerr.OffsetOutOfRange, -1},
		{"compacted topic", "dro-compact", 0, 0, kerr.PolicyViolation, -1},
		{"compact,delete topic", "dro-both", 0, 0, nil, 0},
		{"unknown partition", "dro", 7, 0, kerr.UnknownTopicOrPartition, -1},
		{"unknown topic", "nope", 0, 0, kerr.UnknownTopicOrPartition, -1},
	} {
		sp := f.deleteRecords(tc.topic, tc.partition, tc.offset)
		f.wantCode(tc.name, sp.ErrorCode, tc.err)
		if sp.LowWatermark != tc.low {
			t.Fatalf("%s: low watermark %d, want %d", tc.name, sp.LowWatermark, tc.low)
		}
	}
	// Deleting everything leaves an empty log that still ends at 30 and
	// takes new records from there.
	l := f.log("dro", 0)
	if l.LogStartOffset() != 30 || l.LogEndOffset() != 30 {
		t.Fatalf("after deleting everything: log start %d, log end %d, want 30 and 30", l.LogStartOffset(), l.LogEndOffset())
	}
	if base := f.produceValues("dro", 0, nil, 1); base != 30 {
		t.Fatalf("next record got offset %d, want 30", base)
	}
	if got := f.checkpointedLogStart("dro", 1); got != 10 {
		t.Fatalf("checkpoint of dro-1 holds %d, want 10", got)
	}
}

func TestDeleteRecordsInternalTopic(t *testing.T) {
	f := newLogAPI(t)
	if err := f.b.CreateTopic(f.ctx, "__consumer_offsets", 1, nil); err != nil {
		t.Fatal(err)
	}
	f.wantCode("internal topic", f.deleteRecords("__consumer_offsets", 0, 0).ErrorCode, kerr.InvalidTopicException)
}
