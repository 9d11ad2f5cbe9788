package api_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (a *adminAPI) describeTopicPartitions(limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
	a.t.Helper()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit = limit
	req.Cursor = cursor
	for _, n := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = n
		req.Topics = append(req.Topics, rt)
	}
	return a.send(req).(*kmsg.DescribeTopicPartitionsResponse)
}

// dtpListing renders a response as topic:partitions... lines plus the cursor.
func dtpListing(resp *kmsg.DescribeTopicPartitionsResponse) string {
	s := ""
	for _, t := range resp.Topics {
		s += fmt.Sprintf("%s(%d):", *t.Topic, t.ErrorCode)
		for _, p := range t.Partitions {
			s += fmt.Sprintf("%d,", p.Partition)
		}
		s += " "
	}
	if c := resp.NextCursor; c != nil {
		s += fmt.Sprintf("next=%s/%d", c.Topic, c.Partition)
	}
	return s
}

func TestDescribeTopicPartitionsPages(t *testing.T) {
	a := newAdminAPI(t, nil)
	a.create("a", 3, nil)
	b := a.create("b", 2, nil)
	a.create("c", 1, nil)

	resp := a.describeTopicPartitions(2000, nil)
	if got := dtpListing(resp); got != "a(0):0,1,2, b(0):0,1, c(0):0, " {
		t.Fatalf("all topics: %s", got)
	}
	tb := resp.Topics[1]
	if tb.TopicID != b.ID || tb.IsInternal || tb.AuthorizedOperations == -2147483648 {
		t.Fatalf("topic b: %+v", tb)
	}
	p := tb.Partitions[1]
	if p.ErrorCode != 0 || p.LeaderID != 1 || p.LeaderEpoch != 0 || fmt.Sprint(p.Replicas, p.ISR) != "[1] [1]" ||
		len(p.EligibleLeaderReplicas) != 0 || len(p.LastKnownELR) != 0 || len(p.OfflineReplicas) != 0 {
		t.Fatalf("partition b-1: %+v", p)
	}

	// Paging through everything, two partitions at a time.
	var pages []string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for i := 0; i < 10; i++ {
		resp := a.describeTopicPartitions(2, cursor)
		pages = append(pages, dtpListing(resp))
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	want := []string{"a(0):0,1, next=a/2", "a(0):2, b(0):0, next=b/1", "b(0):1, c(0):0, "}
	if fmt.Sprint(pages) != fmt.Sprint(want) {
		t.Fatalf("pages:\n%q\nwant\n%q", pages, want)
	}

	// A limit reached at the end of a topic points at the next topic.
	if got := dtpListing(a.describeTopicPartitions(3, nil)); got != "a(0):0,1,2, next=b/0" {
		t.Fatalf("limit 3: %s", got)
	}
	// A limit below 1 is 1.
	if got := dtpListing(a.describeTopicPartitions(0, nil, "c")); got != "c(0):0, " {
		t.Fatalf("limit 0: %s", got)
	}

	// Named topics: unknown and invalid names are reported, in name order.
	got := dtpListing(a.describeTopicPartitions(2000, nil, "c", "zzz", "a", "bad/name", "c"))
	if want := fmt.Sprintf("a(0):0,1,2, bad/name(%d): c(0):0, zzz(%d): ", kerr.InvalidTopicException.Code, kerr.UnknownTopicOrPartition.Code); got != want {
		t.Fatalf("named topics: %s, want %s", got, want)
	}
	// A cursor drops the topics before it.
	got = dtpListing(a.describeTopicPartitions(2000, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "b", Partition: 1}, "a", "b", "c"))
	if got != "b(0):1, c(0):0, " {
		t.Fatalf("cursor b/1: %s", got)
	}

	// The cursor's topic must be listed, and its partition must be valid.
	for _, c := range []kmsg.DescribeTopicPartitionsRequestCursor{{Topic: "b", Partition: 0}, {Topic: "a", Partition: -1}} {
		resp := a.describeTopicPartitions(2000, &c, "a", "c")
		if len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code || resp.Topics[1].ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("bad cursor %+v: %s", c, dtpListing(resp))
		}
	}
}

func TestDescribeTopicPartitionsRespectsBrokerLimit(t *testing.T) {
	a := newAdminAPI(t, map[string]string{"max.request.partition.size.limit": "4"})
	a.create("wide", 10, nil)
	if got := dtpListing(a.describeTopicPartitions(2000, nil)); got != "wide(0):0,1,2,3, next=wide/4" {
		t.Fatalf("broker limit 4: %s", got)
	}
}
