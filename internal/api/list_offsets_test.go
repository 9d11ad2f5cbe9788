package api_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// timestampedLog fills topic-0 with ten records in two batches: record i has
// timestamp base+i s, except record 5, which is the latest at base+100 s.
func (f *logAPI) timestampedLog(topic string) (base int64) {
	f.t.Helper()
	f.createTopic(topic, 1, nil)
	base = time.Now().Add(-time.Hour).UnixMilli()
	ts := make([]int64, 10)
	for i := range ts {
		ts[i] = base + int64(i)*1000
	}
	ts[5] = base + 100000
	f.produceValues(topic, 0, ts[:5], 5)
	f.produceValues(topic, 0, ts[5:], 5)
	return base
}

func TestListOffsets(t *testing.T) {
	f := newLogAPI(t)
	base := f.timestampedLog("lo")
	const readUncommitted, readCommitted = 0, 1
	for _, tc := range []struct {
		name       string
		ts         int64
		isolation  int8
		offset, at int64
	}{
		{"earliest", -2, readUncommitted, 0, -1},
		{"earliest local", -4, readUncommitted, 0, -1},
		{"latest", -1, readUncommitted, 10, -1},
		{"latest, read_committed", -1, readCommitted, 10, -1},
		{"max timestamp", -3, readUncommitted, 5, base + 100000},
		{"latest tiered: no tiered storage", -5, readUncommitted, -1, -1},
		{"before every record", 0, readUncommitted, 0, base},
		{"between records", base + 2500, readUncommitted, 3, base + 3000},
		{"exactly a record's", base + 3000, readUncommitted, 3, base + 3000},
		// The first record at or after the time, by offset: record 5 is
		// later than record 6.
		{"after record 5's neighbours", base + 6000, readUncommitted, 5, base + 100000},
		{"the latest record's", base + 100000, readUncommitted, 5, base + 100000},
		{"after the last record", base + 100001, readUncommitted, -1, -1},
		{"after the last record, read_committed", base + 100001, readCommitted, -1, -1},
	} {
		sp := f.listOffset("lo", 0, tc.ts, tc.isolation)
		f.wantCode(tc.name, sp.ErrorCode, nil)
		if sp.Offset != tc.offset || sp.Timestamp != tc.at {
			t.Errorf("%s: offset %d timestamp %d, want %d and %d", tc.name, sp.Offset, sp.Timestamp, tc.offset, tc.at)
		}
		if wantEpoch := int32(0); tc.offset < 0 {
			if sp.LeaderEpoch != -1 {
				t.Errorf("%s: leader epoch %d with no offset", tc.name, sp.LeaderEpoch)
			}
		} else if sp.LeaderEpoch != wantEpoch {
			t.Errorf("%s: leader epoch %d, want %d", tc.name, sp.LeaderEpoch, wantEpoch)
		}
	}

	// v1 (the oldest served) answers the same offsets.
	if sp := f.listOffset("lo", 0, base+2500, 0, f.pinned(kmsg.ListOffsets, 1)); sp.Offset != 3 {
		t.Errorf("v1 by timestamp: offset %d, want 3", sp.Offset)
	}
	f.wantCode("unknown partition", f.listOffset("lo", 3, -1, 0).ErrorCode, kerr.UnknownTopicOrPartition)

	// After DeleteRecords the answers start at the new log start offset.
	f.wantCode("delete records", f.deleteRecords("lo", 0, 7).ErrorCode, nil)
	for _, tc := range []struct {
		name   string
		ts     int64
		offset int64
	}{
		{"earliest after delete", -2, 7},
		{"before every record, after delete", 0, 7},
		{"a deleted record's time", base + 2500, 7},
	} {
		if sp := f.listOffset("lo", 0, tc.ts, 0); sp.ErrorCode != 0 || sp.Offset != tc.offset {
			t.Errorf("%s: offset %d err %v, want %d", tc.name, sp.Offset, kerr.ErrorForCode(sp.ErrorCode), tc.offset)
		}
	}
}

func TestListOffsetsKadm(t *testing.T) {
	f := newLogAPI(t)
	base := f.timestampedLog("lok")
	adm := f.b.AdminClient()
	check := func(what string, offset, ts int64, err error, wantOffset, wantTS int64) {
		t.Helper()
		if err != nil || offset != wantOffset || ts != wantTS {
			t.Errorf("%s: offset %d timestamp %d err %v, want %d and %d", what, offset, ts, err, wantOffset, wantTS)
		}
	}

	starts, err := adm.ListStartOffsets(f.ctx, "lok")
	if err != nil {
		t.Fatal(err)
	}
	o, _ := starts.Lookup("lok", 0)
	check("ListStartOffsets", o.Offset, o.Timestamp, o.Err, 0, -1)

	ends, err := adm.ListEndOffsets(f.ctx, "lok")
	if err != nil {
		t.Fatal(err)
	}
	o, _ = ends.Lookup("lok", 0)
	check("ListEndOffsets", o.Offset, o.Timestamp, o.Err, 10, -1)

	committed, err := adm.ListCommittedOffsets(f.ctx, "lok")
	if err != nil {
		t.Fatal(err)
	}
	o, _ = committed.Lookup("lok", 0)
	check("ListCommittedOffsets", o.Offset, o.Timestamp, o.Err, 10, -1)

	after, err := adm.ListOffsetsAfterMilli(f.ctx, base+2500, "lok")
	if err != nil {
		t.Fatal(err)
	}
	o, _ = after.Lookup("lok", 0)
	check("ListOffsetsAfterMilli between records", o.Offset, o.Timestamp, o.Err, 3, base+3000)

	// No record is that late: kadm asks again for the end offset.
	after, err = adm.ListOffsetsAfterMilli(f.ctx, base+200000, "lok")
	if err != nil {
		t.Fatal(err)
	}
	o, _ = after.Lookup("lok", 0)
	check("ListOffsetsAfterMilli after the last record", o.Offset, o.Timestamp, o.Err, 10, -1)
}
