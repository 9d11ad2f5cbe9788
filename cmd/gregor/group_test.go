package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestGroupCommands(t *testing.T) {
	c := startCLIWith(t, groupProps)
	c.run("topic", "create", "clicks", "-p", "2")
	c.produce("clicks", 0, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
	c.produce("clicks", 1, "x", "y", "z", "w")

	// An active member that has read and committed 4 records of partition 0
	// and 1 of partition 1.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	member, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.ConsumerGroup("readers"), kgo.ConsumeTopics("clicks"),
		kgo.ClientID("reader-1"), kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	for seen := 0; seen < 14; {
		fs := member.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		seen += len(fs.Records())
	}
	var commitErr error
	member.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"clicks": {0: {Epoch: -1, Offset: 4}, 1: {Epoch: -1, Offset: 1}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if commitErr = err; err == nil {
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
							commitErr = err
						}
					}
				}
			}
		})
	if commitErr != nil {
		t.Fatal(commitErr)
	}

	rows := tableRows(t, c.run("group", "list"))
	if len(rows) != 1 || rows[0]["GROUP"] != "readers" || rows[0]["STATE"] != "Stable" || rows[0]["PROTOCOL-TYPE"] != "consumer" {
		t.Fatalf("group list: %v", rows)
	}

	var desc []groupDescription
	c.json(&desc, "group", "describe", "readers")
	d := desc[0]
	if d.State != "Stable" || len(d.Members) != 1 || d.Members[0].ClientID != "reader-1" || len(d.Members[0].Assigned) != 2 ||
		d.TotalLag != 9 || d.LagByTopic["clicks"] != 9 || len(d.Partitions) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	for i, want := range []struct{ committed, hw, lag int64 }{{4, 10, 6}, {1, 4, 3}} {
		p := d.Partitions[i]
		if p.CommittedOffset != want.committed || p.HighWatermark != want.hw || p.Lag != want.lag || p.LogStartOffset != 0 || p.ClientID != "reader-1" {
			t.Fatalf("partition %d: %+v", i, p)
		}
	}
	out := c.run("group", "describe", "readers")
	if !strings.HasPrefix(out, "Group: readers  State: Stable  Protocol: consumer/") || !strings.Contains(out, "Total lag: 9") {
		t.Fatalf("describe table:\n%s", out)
	}
	rows = tableRows(t, section(t, out, "TOPIC"))
	if rows[0]["COMMITTED"] != "4" || rows[0]["HW"] != "10" || rows[0]["LAG"] != "6" || rows[1]["LAG"] != "3" {
		t.Fatalf("describe lag rows:\n%s", out)
	}

	// Seek is a dry run by default and refused for an active group.
	rows = tableRows(t, c.run("group", "seek", "readers", "--to", "end"))
	if len(rows) != 2 || rows[0]["CURRENT"] != "4" || rows[0]["NEW"] != "10" || rows[0]["CHANGE"] != "+6" || rows[0]["RESULT"] != "dry run" {
		t.Fatalf("seek dry run: %v", rows)
	}
	c.json(&desc, "group", "describe", "readers")
	if desc[0].TotalLag != 9 {
		t.Fatalf("a dry run changed the offsets: %+v", desc[0])
	}
	if _, err := c.fail("group", "seek", "readers", "--to", "end", "--execute"); !strings.Contains(err.Error(), "Stable") {
		t.Fatalf("seek of an active group: %v", err)
	}
	if _, err := c.fail("group", "delete", "readers"); err == nil {
		t.Fatal("deleting an active group succeeded")
	}

	member.Close()
	waitGroupState(t, c, "readers", "Empty")
	var plan struct {
		Executed bool         `json:"executed"`
		Changes  []seekChange `json:"changes"`
	}
	c.json(&plan, "group", "seek", "readers", "--shift-by", "-2", "--topic", "clicks/0", "--execute")
	if !plan.Executed || len(plan.Changes) != 1 || *plan.Changes[0].Current != 4 || plan.Changes[0].New != 2 || plan.Changes[0].Error != "" {
		t.Fatalf("seek --shift-by: %+v", plan)
	}
	c.run("group", "seek", "readers", "--to", "end", "--topic", "clicks/1", "--execute")
	c.json(&desc, "group", "describe", "readers")
	if desc[0].TotalLag != 8 || desc[0].Partitions[0].CommittedOffset != 2 || desc[0].Partitions[1].CommittedOffset != 4 {
		t.Fatalf("after seek: %+v", desc[0])
	}

	rows = tableRows(t, c.run("group", "delete", "readers"))
	if rows[0]["GROUP"] != "readers" || rows[0]["RESULT"] != "deleted" {
		t.Fatalf("delete: %v", rows)
	}
	var listed []struct{ Group string }
	c.json(&listed, "group", "list")
	if len(listed) != 0 {
		t.Fatalf("after delete: %+v", listed)
	}
}

func waitGroupState(t *testing.T, c cli, group, state string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var desc []groupDescription
		c.json(&desc, "group", "describe", group)
		if desc[0].State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s stayed %s, want %s", group, desc[0].State, state)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
}
