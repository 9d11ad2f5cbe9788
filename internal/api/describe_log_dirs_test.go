package api_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeLogDirsSizesGrow(t *testing.T) {
	a := newAdminAPI(t, nil)
	a.create("sized", 2, nil)
	a.create("other", 1, nil)
	describe := func() kadm.DescribedLogDir {
		t.Helper()
		all, err := a.adm.DescribeAllLogDirs(a.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		dirs := all[1]
		if len(dirs) != 1 {
			t.Fatalf("log dirs: %+v", dirs)
		}
		for _, d := range dirs {
			return d
		}
		return kadm.DescribedLogDir{}
	}
	d := describe()
	abs, _ := filepath.Abs(a.b.Dir)
	if d.Err != nil || d.Dir != abs {
		t.Fatalf("dir %q err %v, want %q", d.Dir, d.Err, abs)
	}
	if d.TotalBytes <= 0 || d.UsableBytes < 0 || d.UsableBytes > d.TotalBytes {
		t.Fatalf("volume bytes: total %d usable %d", d.TotalBytes, d.UsableBytes)
	}
	if n := len(d.Topics["sized"]); n != 2 || len(d.Topics["other"]) != 1 {
		t.Fatalf("partitions listed: %+v", d.Topics)
	}
	before := d.Topics["sized"][0].Size

	cl := a.b.Client(kgo.DefaultProduceTopic("sized"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i := 0; i < 5; i++ {
		if err := cl.ProduceSync(a.ctx, &kgo.Record{Value: bytes.Repeat([]byte("v"), 1000)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	d = describe()
	p := d.Topics["sized"][0]
	if p.Size <= before+5000 || p.Size != a.log("sized", 0).Size() {
		t.Fatalf("size after producing 5000 bytes: %d (before %d, log %d)", p.Size, before, a.log("sized", 0).Size())
	}
	if p.OffsetLag != 0 || p.IsFuture {
		t.Fatalf("partition: %+v", p)
	}
	if s := d.Topics["sized"][1].Size; s != before {
		t.Fatalf("partition 1 grew to %d without records", s)
	}

	// A topic filter lists only what is asked for and exists.
	req := kmsg.NewPtrDescribeLogDirsRequest()
	for _, f := range []struct {
		topic string
		parts []int32
	}{{"sized", []int32{1, 7}}, {"missing", []int32{0}}, {"other", nil}} {
		rt := kmsg.NewDescribeLogDirsRequestTopic()
		rt.Topic, rt.Partitions = f.topic, f.parts
		req.Topics = append(req.Topics, rt)
	}
	resp := a.send(req).(*kmsg.DescribeLogDirsResponse)
	if len(resp.Dirs) != 1 {
		t.Fatalf("filtered: %+v", resp.Dirs)
	}
	if ts := resp.Dirs[0].Topics; len(ts) != 1 || ts[0].Topic != "sized" || len(ts[0].Partitions) != 1 || ts[0].Partitions[0].Partition != 1 {
		t.Fatalf("filtered: %+v", ts)
	}

	// Versions before 4 do not carry the volume sizes.
	req = kmsg.NewPtrDescribeLogDirsRequest()
	resp = a.send(req, a.pinned(kmsg.DescribeLogDirs, 3)).(*kmsg.DescribeLogDirsResponse)
	if len(resp.Dirs) != 1 || resp.Dirs[0].TotalBytes != -1 || len(resp.Dirs[0].Topics) != 2 {
		t.Fatalf("v3: %+v", resp.Dirs)
	}
}
