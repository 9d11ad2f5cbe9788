package api_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// endOffsetForEpoch sends one raw OffsetForLeaderEpoch request.
func (f *logAPI) endOffsetForEpoch(replicaID int32, topic string, partition, current, epoch int32,
	opts ...kgo.Opt) kmsg.OffsetForLeaderEpochResponseTopicPartition {
	f.t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = replicaID
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = partition, current, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return f.request(req, opts...).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
}

func TestOffsetForLeaderEpoch(t *testing.T) {
	f := newLogAPI(t)
	f.createTopic("ofle", 2, nil)
	f.produceValues("ofle", 0, nil, 3)
	f.produceValues("ofle", 0, nil, 4)

	type answer struct {
		err         *kerr.Error
		epoch       int32
		endOffset   int64
		description string
	}
	cases := []struct {
		partition, current, epoch int32
		want                      answer
	}{
		{0, -1, 0, answer{nil, 0, 7, "the latest epoch ends at the log end offset"}},
		{0, 0, 0, answer{nil, 0, 7, "with the current leader epoch given"}},
		{0, -1, 1, answer{nil, -1, -1, "an epoch above every epoch in the log"}},
		{0, -1, -1, answer{nil, -1, -1, "no epoch"}},
		{0, 1, 0, answer{kerr.UnknownLeaderEpoch, -1, -1, "a current leader epoch newer than the broker's"}},
		// Becoming leader assigns the epoch at the log end offset, as Kafka's
		// makeLeader does, so an empty partition answers for it.
		{1, -1, 0, answer{nil, 0, 0, "an empty log's leader epoch starts and ends at its log end offset"}},
		{2, -1, 0, answer{kerr.UnknownTopicOrPartition, -1, -1, "unknown partition"}},
	}
	// A consumer (-1), a follower (a broker id) and a v2 request (no replica
	// id) get the same answers, as from Kafka.
	for v := int16(2); v <= 4; v++ {
		for _, replica := range []int32{-1, 1, -2} {
			for _, tc := range cases {
				sp := f.endOffsetForEpoch(replica, "ofle", tc.partition, tc.current, tc.epoch, f.pinned(kmsg.OffsetForLeaderEpoch, v))
				what := fmt.Sprintf("v%d replica %d: %s", v, replica, tc.want.description)
				f.wantCode(what, sp.ErrorCode, tc.want.err)
				if sp.Partition != tc.partition || sp.LeaderEpoch != tc.want.epoch || sp.EndOffset != tc.want.endOffset {
					t.Errorf("%s: partition %d epoch %d end offset %d, want %d, %d and %d", what,
						sp.Partition, sp.LeaderEpoch, sp.EndOffset, tc.partition, tc.want.epoch, tc.want.endOffset)
				}
			}
		}
	}
	sp := f.endOffsetForEpoch(-1, "nope", 0, -1, 0)
	f.wantCode("unknown topic", sp.ErrorCode, kerr.UnknownTopicOrPartition)

	// DeleteRecords of everything keeps the epoch's end at the log end.
	f.wantCode("delete records", f.deleteRecords("ofle", 0, -1).ErrorCode, nil)
	if sp := f.endOffsetForEpoch(-1, "ofle", 0, -1, 0); sp.ErrorCode != 0 || sp.LeaderEpoch != 0 || sp.EndOffset != 7 {
		t.Errorf("after deleting every record: epoch %d end offset %d err %v, want 0 and 7",
			sp.LeaderEpoch, sp.EndOffset, kerr.ErrorForCode(sp.ErrorCode))
	}
}
