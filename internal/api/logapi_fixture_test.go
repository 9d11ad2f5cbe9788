package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// logAPI is a real broker plus helpers for the log-facing APIs' tests
// (Produce with producer ids, Fetch, ListOffsets, DeleteRecords,
// OffsetForLeaderEpoch, InitProducerId).
type logAPI struct {
	t   *testing.T
	ctx context.Context
	b   *brokertest.Broker
	cl  *kgo.Client
}

func newLogAPI(t *testing.T) *logAPI {
	t.Helper()
	return newLogAPIWith(t, nil)
}

// newLogAPIWith is newLogAPI with broker config overrides.
func newLogAPIWith(t *testing.T, overrides map[string]string) *logAPI {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	t.Cleanup(cancel)
	f := &logAPI{t: t, ctx: ctx, b: brokertest.Start(t, overrides)}
	f.cl = f.b.Client()
	return f
}

// restart stops the broker cleanly and starts a new one on the same data.
func (f *logAPI) restart() {
	f.t.Helper()
	f.b.Stop()
	f.b = brokertest.StartIn(f.t, f.b.Dir, nil)
	f.cl = f.b.Client()
}

func (f *logAPI) createTopic(name string, partitions int32, configs map[string]string) {
	f.t.Helper()
	if err := f.b.CreateTopic(f.ctx, name, partitions, configs); err != nil {
		f.t.Fatalf("create topic %s: %v", name, err)
	}
}

func (f *logAPI) topicID(name string) [16]byte {
	f.t.Helper()
	t := f.b.Metadata().Topic(name)
	if t == nil {
		return [16]byte{}
	}
	return t.ID
}

func (f *logAPI) log(topic string, partition int32) *log.Log {
	f.t.Helper()
	p, ok := f.b.Replicas().Get(topicpart.TopicPartition{Topic: topic, Partition: partition})
	if !ok {
		f.t.Fatalf("%s-%d is not hosted", topic, partition)
	}
	return p.Log
}

// pinned makes a client send key at version v at most.
func (f *logAPI) pinned(key kmsg.Key, v int16) kgo.Opt {
	vs := kversion.V4_2_0()
	vs.SetMaxKeyVersion(int16(key), v)
	return kgo.MaxVersions(vs)
}

// request sends req unchanged to the broker: no client-side sharding,
// retries or error handling. With opts it uses a new client built with them.
func (f *logAPI) request(req kmsg.Request, opts ...kgo.Opt) kmsg.Response {
	f.t.Helper()
	cl := f.cl
	if len(opts) > 0 {
		cl = f.b.Client(opts...)
	}
	resp, err := cl.SeedBrokers()[0].Request(f.ctx, req)
	if err != nil {
		f.t.Fatalf("%s request: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

// produceBatch builds one batch from spec and produces it with acks=all.
func (f *logAPI) produceBatch(topic string, partition int32, spec record.BatchSpec) kmsg.ProduceResponseTopicPartition {
	f.t.Helper()
	batch, err := record.Build(&spec)
	if err != nil {
		f.t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, f.topicID(topic)
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return f.request(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// produceValues appends n plain records with the given timestamps (ms; nil:
// now) as one batch and returns its base offset.
func (f *logAPI) produceValues(topic string, partition int32, timestamps []int64, n int) int64 {
	f.t.Helper()
	spec := record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	now := time.Now().UnixMilli()
	for i := 0; i < n; i++ {
		ts := now
		if timestamps != nil {
			ts = timestamps[i]
		}
		spec.Records = append(spec.Records, record.BuildRecord{OffsetDelta: int32(i), Timestamp: ts, Value: []byte{byte(i)}})
	}
	sp := f.produceBatch(topic, partition, spec)
	if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
		f.t.Fatalf("produce to %s-%d: %v", topic, partition, err)
	}
	return sp.BaseOffset
}

// fetch reads one partition from offset with a sessionless fetch.
func (f *logAPI) fetch(topic string, partition int32, offset int64) kmsg.FetchResponseTopicPartition {
	f.t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
	req.SessionID, req.SessionEpoch = 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, f.topicID(topic)
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := f.request(req).(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		f.t.Fatalf("fetch: %v", err)
	}
	return resp.Topics[0].Partitions[0]
}

// listOffset asks ListOffsets for one partition at timestamp ts.
func (f *logAPI) listOffset(topic string, partition int32, ts int64, isolation int8, opts ...kgo.Opt) kmsg.ListOffsetsResponseTopicPartition {
	f.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID, req.IsolationLevel = -1, isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return f.request(req, opts...).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
}

// consumeFrom reads n records of one partition with a new kgo consumer that
// resets to the earliest offset.
func (f *logAPI) consumeFrom(topic string, n int) []*kgo.Record {
	f.t.Helper()
	// A short max wait: a long poll still in flight when the consumer closes
	// holds up broker shutdown until it ends.
	cons := f.b.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))
	defer cons.Close()
	var got []*kgo.Record
	for len(got) < n {
		fs := cons.PollFetches(f.ctx)
		if err := f.ctx.Err(); err != nil {
			f.t.Fatalf("consumed %d of %d records of %s: %v", len(got), n, topic, err)
		}
		fs.EachError(func(t string, p int32, err error) {
			f.t.Fatalf("consume %s-%d: %v", t, p, err)
		})
		got = append(got, fs.Records()...)
	}
	return got
}

// wantCode fails the test unless code is want (nil: no error).
func (f *logAPI) wantCode(what string, code int16, want *kerr.Error) {
	f.t.Helper()
	got := kerr.ErrorForCode(code)
	if want == nil && got != nil || want != nil && got != want {
		f.t.Fatalf("%s: error %v, want %v", what, got, want)
	}
}
