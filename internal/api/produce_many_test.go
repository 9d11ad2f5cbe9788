package api_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/record"
)

// sizedBatch builds one batch of 1 KiB records, about size bytes, whose
// values carry tag.
func sizedBatch(t *testing.T, size int, tag byte) []byte {
	t.Helper()
	spec := record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	now := time.Now().UnixMilli()
	for i := 0; i*1024 < size; i++ {
		spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: now,
			Value: bytes.Repeat([]byte{tag}, 1024)})
	}
	b, err := record.Build(&spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProduceManyLargePartitions sends large requests for many partitions
// (whose fsyncs run concurrently): every partition gets its own offsets and
// bytes, an error in one partition stays in that partition, and a request
// naming a partition twice appends both batches in request order.
func TestProduceManyLargePartitions(t *testing.T) {
	f := newLogAPI(t)
	const parts = 8
	f.createTopic("wide", parts, nil)
	f.createTopic("small", 1, map[string]string{"max.message.bytes": "100000"})
	for round := range 3 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "wide", f.topicID("wide")
		for p := range int32(parts) {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, sizedBatch(t, 200<<10, byte(p))
			rt.Partitions = append(rt.Partitions, rp)
		}
		small := kmsg.NewProduceRequestTopic()
		small.Topic, small.TopicID = "small", f.topicID("small")
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = 0, sizedBatch(t, 200<<10, 0xff) // over max.message.bytes
		small.Partitions = append(small.Partitions, rp)
		req.Topics = append(req.Topics, rt, small)

		resp := f.request(req).(*kmsg.ProduceResponse)
		for pi, sp := range resp.Topics[0].Partitions {
			if sp.Partition != int32(pi) || sp.ErrorCode != 0 || sp.BaseOffset != int64(round*200) {
				t.Fatalf("round %d: partition %d answered %+v, want partition %d at offset %d", round, sp.Partition,
					sp, pi, round*200)
			}
		}
		if sp := resp.Topics[1].Partitions[0]; sp.ErrorCode != kerr.MessageTooLarge.Code {
			t.Fatalf("round %d: oversized batch answered %v, want MESSAGE_TOO_LARGE", round, kerr.ErrorForCode(sp.ErrorCode))
		}
	}
	for p := range int32(parts) {
		if leo := f.log("wide", p).LogEndOffset(); leo != 600 {
			t.Fatalf("partition %d: LEO %d, want 600", p, leo)
		}
		got := f.fetch("wide", p, 400)
		if len(got.RecordBatches) == 0 || !bytes.Contains(got.RecordBatches, bytes.Repeat([]byte{byte(p)}, 1024)) {
			t.Fatalf("partition %d holds another partition's records", p)
		}
	}

	// The same partition twice: appended in order, both acknowledged.
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = "wide", f.topicID("wide")
	for range 2 {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = 3, sizedBatch(t, 400<<10, 3)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp := f.request(req).(*kmsg.ProduceResponse)
	a, b := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
	if a.ErrorCode != 0 || b.ErrorCode != 0 || a.BaseOffset != 600 || b.BaseOffset != 1000 {
		t.Fatalf("duplicate partition: answered %+v and %+v, want offsets 600 and 1000", a, b)
	}
}
