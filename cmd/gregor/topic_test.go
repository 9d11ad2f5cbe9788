package main

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestTopicCommands(t *testing.T) {
	c := startCLI(t)

	rows := tableRows(t, c.run("topic", "create", "orders", "-p", "2", "-c", "retention.ms=86400000"))
	if len(rows) != 1 || rows[0]["TOPIC"] != "orders" || rows[0]["PARTITIONS"] != "2" ||
		rows[0]["REPLICATION-FACTOR"] != "1" || rows[0]["RESULT"] != "created" || rows[0]["ID"] == "" {
		t.Fatalf("create: %v", rows)
	}
	var created []struct {
		Topic      string `json:"topic"`
		Partitions int32  `json:"partitions"`
		Error      string `json:"error"`
	}
	c.json(&created, "topic", "create", "payments", "-p", "1")
	if len(created) != 1 || created[0].Topic != "payments" || created[0].Partitions != 1 || created[0].Error != "" {
		t.Fatalf("create json: %+v", created)
	}
	out, err := c.fail("topic", "create", "orders")
	if !strings.Contains(out, "TOPIC_ALREADY_EXISTS") || !strings.Contains(err.Error(), "1 topic creations failed") {
		t.Fatalf("create twice: %v\n%s", err, out)
	}

	var listed []struct {
		Topic             string `json:"topic"`
		Partitions        int    `json:"partitions"`
		ReplicationFactor int    `json:"replication_factor"`
	}
	c.json(&listed, "topic", "list")
	if len(listed) != 2 || listed[0].Topic != "orders" || listed[0].Partitions != 2 || listed[0].ReplicationFactor != 1 || listed[1].Topic != "payments" {
		t.Fatalf("list: %+v", listed)
	}
	rows = tableRows(t, c.run("topic", "list"))
	if len(rows) != 2 || rows[0]["TOPIC"] != "orders" || rows[0]["PARTITIONS"] != "2" {
		t.Fatalf("list table: %v", rows)
	}

	c.produce("orders", 0, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
	c.produce("orders", 1, "x", "y", "z")

	var desc []topicDescription
	c.json(&desc, "topic", "describe", "orders")
	if len(desc) != 1 || desc[0].Partitions != 2 || len(desc[0].PartitionStates) != 2 {
		t.Fatalf("describe: %+v", desc)
	}
	for i, want := range []int64{10, 3} {
		ps := desc[0].PartitionStates[i]
		if ps.Partition != int32(i) || ps.Leader != 1 || ps.LogStartOffset != 0 || ps.LastStableOffset != want ||
			ps.HighWatermark != want || ps.LogEndOffset == nil || *ps.LogEndOffset != want ||
			ps.SizeBytes == nil || *ps.SizeBytes <= 0 || len(ps.Errors) != 0 {
			t.Fatalf("partition %d: %+v", i, ps)
		}
	}
	src := map[string]string{}
	for _, cfg := range desc[0].Configs {
		src[cfg.Name] = cfg.Source
	}
	if src["retention.ms"] != "DYNAMIC_TOPIC_CONFIG" || src["segment.bytes"] != "DEFAULT_CONFIG" {
		t.Fatalf("config sources: %v", src)
	}

	out = c.run("topic", "describe", "orders")
	if !strings.HasPrefix(out, "Topic: orders  ID: ") {
		t.Fatalf("describe header:\n%s", out)
	}
	cfgRows := tableRows(t, section(t, out, "CONFIG"))
	found := false
	for _, r := range cfgRows {
		if r["CONFIG"] == "retention.ms" {
			found = r["VALUE"] == "86400000" && r["SOURCE"] == "DYNAMIC_TOPIC_CONFIG"
		}
	}
	if !found {
		t.Fatalf("retention.ms not shown with its source:\n%s", out)
	}
	partRows := tableRows(t, section(t, out, "PARTITION"))
	if len(partRows) != 2 || partRows[0]["LOG-START"] != "0" || partRows[0]["LSO"] != "10" || partRows[0]["HW"] != "10" ||
		partRows[0]["LEO"] != "10" || partRows[0]["REPLICAS"] != "[1]" || partRows[0]["ISR"] != "[1]" || !strings.HasSuffix(partRows[0]["SIZE"], "B") {
		t.Fatalf("describe partitions:\n%s", out)
	}

	// One partition only, overrides only.
	c.json(&desc, "topic", "describe", "orders/1", "--overrides")
	if len(desc[0].PartitionStates) != 1 || desc[0].PartitionStates[0].Partition != 1 || len(desc[0].Configs) != 1 {
		t.Fatalf("describe orders/1 --overrides: %+v", desc[0])
	}

	rows = tableRows(t, c.run("topic", "alter-config", "orders", "--set", "segment.bytes=1048576", "--delete", "retention.ms"))
	if rows[0]["RESULT"] != "ok" {
		t.Fatalf("alter-config: %v", rows)
	}
	c.json(&desc, "topic", "describe", "orders", "--overrides")
	if len(desc[0].Configs) != 1 || desc[0].Configs[0].Name != "segment.bytes" || *desc[0].Configs[0].Value != "1048576" {
		t.Fatalf("after alter-config: %+v", desc[0].Configs)
	}
	out, err = c.fail("topic", "alter-config", "orders", "--set", "no.such.config=1")
	if !strings.Contains(out, "INVALID_CONFIG") {
		t.Fatalf("alter unknown config: %v\n%s", err, out)
	}

	c.run("topic", "add-partitions", "orders", "--total", "3")
	c.json(&desc, "topic", "describe", "orders")
	if desc[0].Partitions != 3 {
		t.Fatalf("after add-partitions: %d partitions", desc[0].Partitions)
	}

	rows = tableRows(t, c.run("topic", "trim", "orders/0", "--before", "4"))
	if len(rows) != 1 || rows[0]["PARTITION"] != "0" || rows[0]["LOG-START"] != "4" || rows[0]["RESULT"] != "ok" {
		t.Fatalf("trim: %v", rows)
	}
	c.json(&desc, "topic", "describe", "orders/0")
	if ps := desc[0].PartitionStates[0]; ps.LogStartOffset != 4 || ps.HighWatermark != 10 {
		t.Fatalf("after trim: %+v", ps)
	}
	out, err = c.fail("topic", "trim", "orders/1", "--before", "99")
	if !strings.Contains(out, kerr.OffsetOutOfRange.Message) {
		t.Fatalf("trim past HW: %v\n%s", err, out)
	}

	rows = tableRows(t, c.run("topic", "delete", "payments"))
	if rows[0]["RESULT"] != "ok" {
		t.Fatalf("delete: %v", rows)
	}
	c.json(&listed, "topic", "list")
	if len(listed) != 1 || listed[0].Topic != "orders" {
		t.Fatalf("after delete: %+v", listed)
	}
	if _, err := c.fail("topic", "describe", "payments"); err == nil || !strings.Contains(err.Error(), "payments") {
		t.Fatalf("describe deleted topic: %v", err)
	}
	// Shell completion offers topics and partitions.
	out, _, err = c.exec("", true, "__complete", "topic", "describe", "-b", c.addr, "or")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "orders\norders/0\norders/1\norders/2\n") {
		t.Fatalf("completion:\n%s", out)
	}
	if _, err := c.fail("topic", "list", "-o", "yaml"); !strings.Contains(err.Error(), "--output") {
		t.Fatalf("bad -o: %v", err)
	}
}
