package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCLI runs the real gregor binary's client commands as subprocesses
// against a real `gregor serve` process and checks what they print, as a
// table and as JSON. The subtests share the broker and run in order: later
// ones read topics earlier ones made.
func TestCLI(t *testing.T) {
	p := startProc(t, t.TempDir(),
		// Retention runs often enough for the test to watch it.
		"--set", "log.retention.check.interval.ms=100",
		// Group joins without the initial rebalance wait.
		"--set", "group.initial.rebalance.delay.ms=0",
		"--set", "offsets.topic.num.partitions=1",
	)
	c := gregorCLI{t: t, p: p}
	steps := []struct {
		name string
		f    func(*testing.T, gregorCLI)
	}{
		{"topic", cliTopic},
		{"produce-consume", cliProduceConsume},
		{"group", cliGroup},
		{"offsets-after-retention-and-trim", cliOffsetsAfterRetention},
		{"why", cliWhy},
		{"log-dump", cliLogDump},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.f(t, gregorCLI{t: t, p: c.p}) }) {
			return // later steps build on this one
		}
	}
}

// cliConfig is one config of `topic describe -o json`.
type cliConfig struct {
	Name   string  `json:"name"`
	Value  *string `json:"value"`
	Source string  `json:"source"`
}

// cliPartition is the part of a partition's JSON the tests read (topic
// describe, offsets).
type cliPartition struct {
	Topic            string `json:"topic"`
	Partition        int32  `json:"partition"`
	Leader           int32  `json:"leader"`
	LogStartOffset   int64  `json:"log_start_offset"`
	LastStableOffset int64  `json:"last_stable_offset"`
	HighWatermark    int64  `json:"high_watermark"`
	LogEndOffset     *int64 `json:"log_end_offset"`
	SizeBytes        *int64 `json:"size_bytes"`
}

type cliDescription struct {
	Topic           string         `json:"topic"`
	ID              string         `json:"id"`
	Partitions      int            `json:"partitions"`
	Configs         []cliConfig    `json:"configs"`
	PartitionStates []cliPartition `json:"partition_states"`
}

func cliTopic(t *testing.T, c gregorCLI) {
	out := c.run("topic", "create", "cli-topics", "-p", "2", "-c", "cleanup.policy=compact")
	row := parseTable(t, out, "TOPIC").row(t, "cli-topics")
	wantCells(t, row, map[string]string{"PARTITIONS": "2", "REPLICATION-FACTOR": "1", "RESULT": "created"})
	if row["ID"] == "" {
		t.Errorf("create: no topic id: %v", row)
	}

	var created []struct {
		Topic             string `json:"topic"`
		ID                string `json:"id"`
		Partitions        int32  `json:"partitions"`
		ReplicationFactor int16  `json:"replication_factor"`
		Error             string `json:"error"`
	}
	c.runJSON(&created, "topic", "create", "cli-doomed", "-p", "1")
	if len(created) != 1 || created[0].Topic != "cli-doomed" || created[0].Partitions != 1 || created[0].ReplicationFactor != 1 ||
		created[0].ID == "" || created[0].Error != "" {
		t.Fatalf("create -o json: %+v", created)
	}
	if out := c.fails("topic", "create", "cli-doomed"); !strings.Contains(out, "already exists") {
		t.Errorf("creating a topic twice:\n%s", out)
	}

	list := parseTable(t, c.run("topic", "list"), "TOPIC")
	wantCells(t, list.row(t, "cli-topics"), map[string]string{"PARTITIONS": "2", "REPLICATION-FACTOR": "1", "UNDER-REPLICATED": "0"})
	wantCells(t, list.row(t, "cli-doomed"), map[string]string{"PARTITIONS": "1", "ID": created[0].ID})

	out = c.run("topic", "alter-config", "cli-topics", "--set", "min.cleanable.dirty.ratio=0.1", "--set", "segment.ms=3600000")
	wantCells(t, parseTable(t, out, "TOPIC").row(t, "cli-topics"), map[string]string{"RESULT": "ok"})
	if out := c.fails("topic", "alter-config", "cli-topics", "--set", "min.cleanable.dirty.ratio=2"); !strings.Contains(out, "INVALID_CONFIG") {
		t.Errorf("alter-config with a bad value:\n%s", out)
	}

	out = c.run("topic", "describe", "cli-topics")
	if !strings.HasPrefix(out, "Topic: cli-topics  ID: "+row["ID"]+"  Partitions: 2  Replication factor: 1\n") {
		t.Errorf("describe heading:\n%s", out)
	}
	cfgs := parseTable(t, out, "CONFIG")
	wantCells(t, cfgs.row(t, "cleanup.policy"), map[string]string{"VALUE": "compact", "SOURCE": "DYNAMIC_TOPIC_CONFIG"})
	wantCells(t, cfgs.row(t, "min.cleanable.dirty.ratio"), map[string]string{"VALUE": "0.1", "SOURCE": "DYNAMIC_TOPIC_CONFIG"})
	wantCells(t, cfgs.row(t, "retention.ms"), map[string]string{"VALUE": "604800000", "SOURCE": "DEFAULT_CONFIG"})
	parts := parseTable(t, out, "PARTITION")
	for _, p := range []string{"0", "1"} {
		wantCells(t, parts.row(t, p), map[string]string{"LEADER": "1", "REPLICAS": "[1]", "ISR": "[1]", "LOG-START": "0", "LSO": "0", "HW": "0", "LEO": "0"})
	}

	c.run("topic", "add-partitions", "cli-topics", "--add", "1")
	var desc []cliDescription
	c.runJSON(&desc, "topic", "describe", "cli-topics", "--overrides")
	if len(desc) != 1 || desc[0].Partitions != 3 || len(desc[0].PartitionStates) != 3 {
		t.Fatalf("describe after add-partitions: %+v", desc)
	}
	var overrides []string
	for _, cfg := range desc[0].Configs {
		if cfg.Source != "DYNAMIC_TOPIC_CONFIG" || cfg.Value == nil {
			t.Errorf("--overrides listed %+v", cfg)
			continue
		}
		overrides = append(overrides, cfg.Name+"="+*cfg.Value)
	}
	if want := []string{"cleanup.policy=compact", "min.cleanable.dirty.ratio=0.1", "segment.ms=3600000"}; !slices.Equal(overrides, want) {
		t.Errorf("overrides = %q, want %q", overrides, want)
	}

	out = c.run("topic", "delete", "cli-doomed")
	wantCells(t, parseTable(t, out, "TOPIC").row(t, "cli-doomed"), map[string]string{"RESULT": "ok"})
	var listed []struct {
		Topic string `json:"topic"`
	}
	gone := pollUntil(10*time.Second, func() bool {
		c.runJSON(&listed, "topic", "list")
		return !slices.ContainsFunc(listed, func(l struct {
			Topic string `json:"topic"`
		}) bool {
			return l.Topic == "cli-doomed"
		})
	})
	if !gone {
		t.Errorf("cli-doomed still listed after delete: %+v", listed)
	}
}

// cliTimeBase is the first explicit timestamp produced to cli-records/1.
const cliTimeBase = int64(1_700_000_000_000)

func cliProduceConsume(t *testing.T, c gregorCLI) {
	// cli-records/1 holds records stamped in 2023: with the default
	// retention.ms (7 days) the next retention check would delete them,
	// active segment and all, as Kafka does. Keep them.
	c.run("topic", "create", "cli-records", "-p", "2", "-c", "retention.ms=-1")

	// Keys, headers and a tombstone (-Z: an empty value is null).
	out := c.runIn("k1;v1\nk2;v2\nk1;\n", "produce", "cli-records", "-K", ";", "-Z", "-H", "src=cli", "-H", "trace=1", "-p", "0")
	wantCells(t, parseTable(t, out, "TOPIC").row(t, "cli-records", "0"),
		map[string]string{"RECORDS": "3", "FIRST-OFFSET": "0", "LAST-OFFSET": "2"})

	// A format string with explicit timestamps, one second apart.
	var in strings.Builder
	for i := range 5 {
		fmt.Fprintf(&in, "%c|value-%d|%d\n", 'a'+i, i, cliTimeBase+int64(i)*1000)
	}
	var produced []struct {
		Partition   int32 `json:"partition"`
		Records     int64 `json:"records"`
		FirstOffset int64 `json:"first_offset"`
		LastOffset  int64 `json:"last_offset"`
	}
	if err := json.Unmarshal([]byte(c.runIn(in.String(), "produce", "cli-records", "-f", `%k|%v|%T\n`, "-p", "1", "-o", "json")), &produced); err != nil {
		t.Fatal(err)
	}
	if len(produced) != 1 || produced[0].Partition != 1 || produced[0].Records != 5 || produced[0].FirstOffset != 0 || produced[0].LastOffset != 4 {
		t.Fatalf("produce -o json: %+v", produced)
	}

	out = c.run("consume", "cli-records", "-p", "0", "-e", "-Z", "-f", `%o|%k|%s|%h\n`)
	if want := "0|k1|v1|src=cli,trace=1\n1|k2|v2|src=cli,trace=1\n2|k1|NULL|src=cli,trace=1\n"; out != want {
		t.Errorf("consume -f:\n%s\nwant:\n%s", out, want)
	}

	type jsonRecord struct {
		Partition int32   `json:"partition"`
		Offset    int64   `json:"offset"`
		Timestamp int64   `json:"timestamp"`
		Key       *string `json:"key"`
		Value     *string `json:"value"`
		Headers   []struct {
			Key   string  `json:"key"`
			Value *string `json:"value"`
		} `json:"headers"`
	}
	var recs []jsonRecord
	for _, l := range lines(c.run("consume", "cli-records", "-p", "0", "-e", "-o", "json")) {
		var r jsonRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("consume -o json line %q: %v", l, err)
		}
		recs = append(recs, r)
	}
	if len(recs) != 3 || recs[2].Key == nil || *recs[2].Key != "k1" || recs[2].Value != nil ||
		len(recs[2].Headers) != 2 || recs[2].Headers[1].Key != "trace" || *recs[2].Headers[1].Value != "1" {
		t.Errorf("consume -o json: %+v", recs)
	}

	// Where consuming starts, on cli-records/1 (offsets 0–4, timestamps
	// cliTimeBase + offset seconds).
	for _, tc := range []struct {
		offset string
		want   string
	}{
		{"start", "0 1 2 3 4"},
		{"end", ""},
		{"2", "2 3 4"},
		{"+1", "1 2 3 4"},
		{"-2", "3 4"},
		{fmt.Sprintf("@%d", cliTimeBase+2500), "3 4"},
		{"@" + time.UnixMilli(cliTimeBase+1000).UTC().Format(time.RFC3339Nano), "1 2 3 4"},
	} {
		got := strings.Join(lines(c.run("consume", "cli-records", "-p", "1", "-e", "--offset", tc.offset, "-f", `%o\n`)), " ")
		if got != tc.want {
			t.Errorf("consume --offset %s: offsets %q, want %q", tc.offset, got, tc.want)
		}
	}
	if got := c.run("consume", "cli-records", "-p", "1", "-c", "2", "-f", `%k=%s@%T\n`); got != fmt.Sprintf("a=value-0@%d\nb=value-1@%d\n", cliTimeBase, cliTimeBase+1000) {
		t.Errorf("consume -c 2:\n%s", got)
	}
}

type cliGroupDescription struct {
	Group      string `json:"group"`
	State      string `json:"state"`
	TotalLag   int64  `json:"total_lag"`
	Partitions []struct {
		Topic           string `json:"topic"`
		Partition       int32  `json:"partition"`
		CommittedOffset int64  `json:"committed_offset"`
		HighWatermark   int64  `json:"high_watermark"`
		Lag             int64  `json:"lag"`
	} `json:"partitions"`
}

// committed returns the group's committed offset on cli-records/p.
func (d cliGroupDescription) committed(p int32) int64 {
	for _, gp := range d.Partitions {
		if gp.Topic == "cli-records" && gp.Partition == p {
			return gp.CommittedOffset
		}
	}
	return -2
}

func describeGroup(t *testing.T, c gregorCLI, group string) cliGroupDescription {
	t.Helper()
	var ds []cliGroupDescription
	c.runJSON(&ds, "group", "describe", group)
	if len(ds) != 1 {
		t.Fatalf("group describe %s: %+v", group, ds)
	}
	return ds[0]
}

func cliGroup(t *testing.T, c gregorCLI) {
	// A group consumer commits what it prints.
	got := lines(c.run("consume", "cli-records", "-g", "cli-g", "-e", "-f", `%p/%o\n`))
	slices.Sort(got)
	if want := []string{"0/0", "0/1", "0/2", "1/0", "1/1", "1/2", "1/3", "1/4"}; !slices.Equal(got, want) {
		t.Fatalf("group consume: %q, want %q", got, want)
	}

	wantCells(t, parseTable(t, c.run("group", "list"), "GROUP").row(t, "cli-g"),
		map[string]string{"STATE": "Empty", "PROTOCOL-TYPE": "consumer", "COORDINATOR": "1"})

	out := c.run("group", "describe", "cli-g")
	if !strings.HasPrefix(out, "Group: cli-g  State: Empty  Protocol: consumer") || !strings.Contains(out, "Total lag: 0\n") {
		t.Errorf("group describe heading:\n%s", out)
	}
	lags := parseTable(t, out, "TOPIC")
	wantCells(t, lags.row(t, "cli-records", "0"), map[string]string{"COMMITTED": "3", "HW": "3", "LAG": "0"})
	wantCells(t, lags.row(t, "cli-records", "1"), map[string]string{"COMMITTED": "5", "HW": "5", "LAG": "0"})

	// seek is a dry run until --execute.
	out, stderr, err := c.exec("", "group", "seek", "cli-g", "--to", "start", "--topic", "cli-records/1")
	if err != nil {
		t.Fatalf("group seek (dry run): %v\n%s%s", err, out, stderr)
	}
	wantCells(t, parseTable(t, out, "TOPIC").row(t, "cli-records", "1"),
		map[string]string{"CURRENT": "5", "NEW": "0", "CHANGE": "-5", "RESULT": "dry run"})
	if !strings.Contains(stderr, "dry run: nothing was committed") {
		t.Errorf("dry-run stderr: %q", stderr)
	}
	if d := describeGroup(t, c, "cli-g"); d.committed(1) != 5 {
		t.Fatalf("a dry run moved the committed offset: %+v", d)
	}

	var seek struct {
		Executed bool `json:"executed"`
		Changes  []struct {
			Partition int32  `json:"partition"`
			Current   *int64 `json:"current_offset"`
			New       int64  `json:"new_offset"`
			Error     string `json:"error"`
		} `json:"changes"`
	}
	c.runJSON(&seek, "group", "seek", "cli-g", "--to", "start", "--topic", "cli-records/1", "--execute")
	if !seek.Executed || len(seek.Changes) != 1 || seek.Changes[0].Partition != 1 || seek.Changes[0].Current == nil ||
		*seek.Changes[0].Current != 5 || seek.Changes[0].New != 0 || seek.Changes[0].Error != "" {
		t.Fatalf("seek --execute -o json: %+v", seek)
	}
	d := describeGroup(t, c, "cli-g")
	if d.committed(0) != 3 || d.committed(1) != 0 || d.TotalLag != 5 {
		t.Fatalf("after seek --execute: %+v", d)
	}
	out = c.run("group", "seek", "cli-g", "--shift-by", "2", "--topic", "cli-records/1", "--execute")
	wantCells(t, parseTable(t, out, "TOPIC").row(t, "cli-records", "1"), map[string]string{"CURRENT": "0", "NEW": "2", "CHANGE": "+2", "RESULT": "committed"})
	if d := describeGroup(t, c, "cli-g"); d.committed(1) != 2 || d.TotalLag != 3 {
		t.Fatalf("after --shift-by 2: %+v", d)
	}

	out = c.run("group", "delete", "cli-g")
	wantCells(t, parseTable(t, out, "GROUP").row(t, "cli-g"), map[string]string{"RESULT": "deleted"})
	var groups []struct {
		Group string `json:"group"`
	}
	c.runJSON(&groups, "group", "list")
	for _, g := range groups {
		if g.Group == "cli-g" {
			t.Errorf("cli-g still listed after delete: %+v", groups)
		}
	}
}

// cliWhyOutput is `gregor why -o json`, with the parts of the broker's
// partition document the tests read.
type cliWhyOutput struct {
	Explanation   []string `json:"explanation"`
	PartitionView struct {
		Topic          string `json:"topic"`
		Partition      int32  `json:"partition"`
		LogStartOffset int64  `json:"log_start_offset"`
		HighWatermark  int64  `json:"high_watermark"`
		SegmentList    []struct {
			BaseOffset int64 `json:"base_offset"`
			EndOffset  int64 `json:"end_offset"`
			Active     bool  `json:"active"`
		} `json:"segment_list"`
		Cleaner *struct {
			Why      string `json:"why"`
			Eligible bool   `json:"eligible"`
		} `json:"cleaner"`
		Retention struct {
			RetentionBytes int64 `json:"retention_bytes"`
			Next           *struct {
				ToOffset int64 `json:"to_offset"`
			} `json:"next"`
			Why string `json:"why"`
		} `json:"retention"`
	} `json:"partition_view"`
}

// cliRetentionRecords of 1 KiB fill three 1 MiB segments.
const cliRetentionRecords = 2600

// cliOffsetsAfterRetention is the case: retention (retention.bytes
// over 1 MiB segments) and then DeleteRecords (topic trim) move the log
// start offset; offsets, describe, consume and why retention all show it.
func cliOffsetsAfterRetention(t *testing.T, c gregorCLI) {
	c.run("topic", "create", "cli-retention", "-p", "1", "-c", "segment.bytes=1048576")
	var in strings.Builder
	for i := range cliRetentionRecords {
		fmt.Fprintf(&in, "%06d-%s\n", i, strings.Repeat("x", 1017))
	}
	c.runIn(in.String(), "produce", "cli-retention", "-p", "0")
	end := fmt.Sprint(cliRetentionRecords)
	wantCells(t, parseTable(t, c.run("offsets", "cli-retention"), "TOPIC").row(t, "cli-retention", "0"),
		map[string]string{"LOG-START": "0", "LSO": end, "HW": end, "LEO": end})

	c.run("topic", "alter-config", "cli-retention", "--set", "retention.bytes=1048576")
	var offs []cliPartition
	moved := pollUntil(15*time.Second, func() bool {
		c.runJSON(&offs, "offsets", "cli-retention")
		return len(offs) == 1 && offs[0].LogStartOffset > 0
	})
	if !moved {
		t.Fatalf("retention did not move the log start offset: %+v", offs)
	}
	var why cliWhyOutput
	c.runJSON(&why, "why", "retention", "cli-retention/0")
	segs := why.PartitionView.SegmentList
	if len(segs) < 2 || segs[0].BaseOffset != offs[0].LogStartOffset || segs[0].Active {
		t.Fatalf("after retention: log start %d, segments %+v", offs[0].LogStartOffset, segs)
	}

	// Trim into the middle of the oldest segment left: the log start moves,
	// the segment stays (it still holds offsets above it).
	trim := segs[0].BaseOffset + (segs[0].EndOffset-segs[0].BaseOffset)/2
	out := c.run("topic", "trim", "cli-retention/0", "--before", fmt.Sprint(trim))
	wantCells(t, parseTable(t, out, "TOPIC").row(t, "cli-retention", "0"), map[string]string{"LOG-START": fmt.Sprint(trim), "RESULT": "ok"})

	wantCells(t, parseTable(t, c.run("offsets", "cli-retention"), "TOPIC").row(t, "cli-retention", "0"),
		map[string]string{"LEADER": "1", "LOG-START": fmt.Sprint(trim), "LSO": end, "HW": end, "LEO": end})
	c.runJSON(&offs, "offsets", "cli-retention/0")
	if len(offs) != 1 || offs[0].LogEndOffset == nil {
		t.Fatalf("offsets -o json: %+v", offs)
	}
	o := offs[0]
	if o.LogStartOffset != trim || !(0 < o.LogStartOffset && o.LogStartOffset <= o.LastStableOffset &&
		o.LastStableOffset <= o.HighWatermark && o.HighWatermark <= *o.LogEndOffset) {
		t.Errorf("offsets: log start %d, LSO %d, HW %d, LEO %d; want log start %d and log start ≤ LSO ≤ HW ≤ LEO",
			o.LogStartOffset, o.LastStableOffset, o.HighWatermark, *o.LogEndOffset, trim)
	}
	var desc []cliDescription
	c.runJSON(&desc, "topic", "describe", "cli-retention")
	if ps := desc[0].PartitionStates; len(ps) != 1 || ps[0].LogStartOffset != trim || ps[0].SizeBytes == nil || *ps[0].SizeBytes < 1<<20 {
		t.Errorf("describe after trim: %+v", ps)
	}
	if got := c.run("consume", "cli-retention", "-c", "1", "-f", `%o\n`); got != fmt.Sprintf("%d\n", trim) {
		t.Errorf("consume from start after trim: %q, want offset %d", got, trim)
	}

	// why retention explains where the log starts and what comes next.
	out = c.run("why", "retention", "cli-retention/0")
	for _, want := range []string{
		"log start offset " + thousands(trim) + ",",
		"Offsets below " + thousands(trim) + " are gone: retention and DeleteRecords move the log start offset",
		"retention.bytes=1048576",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("why retention lacks %q:\n%s", want, out)
		}
	}
	c.runJSON(&why, "why", "retention", "cli-retention/0")
	if pv := why.PartitionView; pv.LogStartOffset != trim || pv.Retention.RetentionBytes != 1<<20 || pv.Retention.Why == "" {
		t.Errorf("why retention -o json: %+v", pv)
	}
	if got := strings.Join(why.Explanation, "\n") + "\n"; got != out {
		t.Errorf("why -o json explanation differs from the table output:\n%s\nvs\n%s", got, out)
	}
}

func cliWhy(t *testing.T, c gregorCLI) {
	// A compacted partition with only an active segment.
	c.runIn("a;1\nb;1\na;2\n", "produce", "cli-topics", "-K", ";", "-p", "0")
	var why cliWhyOutput
	c.runJSON(&why, "why", "compaction", "cli-topics/0")
	cl := why.PartitionView.Cleaner
	if cl == nil || cl.Why == "" || cl.Eligible {
		t.Fatalf("why compaction -o json: cleaner %+v", cl)
	}
	out := c.run("why", "compaction", "cli-topics/0")
	if want := "partition cli-topics/0 will not be compacted yet: " + cl.Why + ".\n"; !strings.HasPrefix(out, want) {
		t.Errorf("why compaction:\n%s\nwant it to start with %q", out, want)
	}
	if !strings.Contains(out, "min.cleanable.dirty.ratio 0.1") || !strings.Contains(out, "segment.ms=3600000") {
		t.Errorf("why compaction lacks the partition's configs:\n%s", out)
	}

	out = c.run("why", "compaction", "cli-records/0")
	if !strings.HasPrefix(out, "partition cli-records/0 is not compacted: cleanup.policy=delete") ||
		!strings.Contains(out, "gregor topic alter-config cli-records --set cleanup.policy=compact") {
		t.Errorf("why compaction on a delete topic:\n%s", out)
	}
	out = c.run("why", "retention", "cli-topics/0")
	if !strings.HasPrefix(out, "nothing will be deleted from partition cli-topics/0: ") ||
		!strings.Contains(out, "--set cleanup.policy=compact,delete") {
		t.Errorf("why retention on a compacted topic:\n%s", out)
	}

	if out := c.fails("why", "compaction", "cli-topics/9"); !strings.Contains(out, "partition cli-topics/9 is not on the broker") {
		t.Errorf("why on a missing partition:\n%s", out)
	}
	// The Kafka listener is not an admin listener (as Apache Kafka has none).
	out = c.fails("why", "retention", "cli-topics/0", "--admin", c.p.addr, "--timeout", "5s")
	if !strings.Contains(out, "Gregor's admin HTTP listener") || !strings.Contains(out, "--admin http://HOST:PORT or GREGOR_ADMIN") {
		t.Errorf("why against the Kafka listener:\n%s", out)
	}
}

func cliLogDump(t *testing.T, c gregorCLI) {
	seg := filepath.Join(c.p.dataDir, "cli-records-0", "00000000000000000000.log")
	if _, err := os.Stat(seg); err != nil {
		t.Fatal(err)
	}
	out := c.run("log", "dump", seg, "-d")
	if !strings.HasPrefix(out, "Dumping "+seg+"\nLog starting offset: 0\nbaseOffset: 0 lastOffset: 2 count: 3 ") {
		t.Errorf("log dump:\n%s", out)
	}
	for _, want := range []string{
		"| offset: 0 CreateTime: ",
		" headerKeys: [src,trace] key: k1 payload: v1\n",
		" headerKeys: [src,trace] key: k1 payload: null\n",
		" isValid: true\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log dump lacks %q:\n%s", want, out)
		}
	}
	var docs []struct {
		Type    string `json:"type"`
		Records int64  `json:"records"`
		Batches []struct {
			BaseOffset int64 `json:"base_offset"`
			CRCValid   bool  `json:"crc_valid"`
			Records    []struct {
				Offset int64   `json:"offset"`
				Key    *string `json:"key"`
				Value  *string `json:"value"`
			} `json:"records"`
		} `json:"batches"`
		Problems []string `json:"problems"`
	}
	c.runJSON(&docs, "log", "dump", seg, "-d")
	if len(docs) != 1 || docs[0].Type != "log" || docs[0].Records != 3 || len(docs[0].Problems) != 0 || len(docs[0].Batches) == 0 {
		t.Fatalf("log dump -o json: %+v", docs)
	}
	var keys []string
	for _, b := range docs[0].Batches {
		if !b.CRCValid {
			t.Errorf("batch at %d: CRC not valid", b.BaseOffset)
		}
		for _, r := range b.Records {
			v := "null"
			if r.Value != nil {
				v = *r.Value
			}
			keys = append(keys, fmt.Sprintf("%d:%s=%s", r.Offset, *r.Key, v))
		}
	}
	if want := []string{"0:k1=v1", "1:k2=v2", "2:k1=null"}; !slices.Equal(keys, want) {
		t.Errorf("log dump -o json records %q, want %q", keys, want)
	}
}
