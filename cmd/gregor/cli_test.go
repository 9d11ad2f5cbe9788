package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
)

// cli runs the real cobra root against a test broker.
type cli struct {
	t    *testing.T
	b    *brokertest.Broker
	addr string
}

func startCLI(t *testing.T) cli {
	t.Helper()
	return startCLIWith(t, nil)
}

func startCLIWith(t *testing.T, overrides map[string]string) cli {
	t.Helper()
	b := brokertest.Start(t, overrides)
	return cli{t: t, b: b, addr: b.Addr().String()}
}

// groupProps make a single test broker host __consumer_offsets and
// rebalance without the initial delay.
var groupProps = map[string]string{
	"offsets.topic.replication.factor": "1",
	"offsets.topic.num.partitions":     "3",
	"group.initial.rebalance.delay.ms": "0",
}

// exec runs gregor with args (and -b pointing at the broker unless noBroker)
// and returns stdout and the command's error.
func (c cli) exec(stdin string, noBroker bool, args ...string) (string, string, error) {
	c.t.Helper()
	root := rootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(stdin))
	if !noBroker {
		args = append(args, "-b", c.addr)
	}
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

// run returns stdout and fails the test if the command fails.
func (c cli) run(args ...string) string {
	c.t.Helper()
	out, stderr, err := c.exec("", false, args...)
	if err != nil {
		c.t.Fatalf("gregor %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr)
	}
	return out
}

// runIn is run with stdin.
func (c cli) runIn(stdin string, args ...string) string {
	c.t.Helper()
	out, stderr, err := c.exec(stdin, false, args...)
	if err != nil {
		c.t.Fatalf("gregor %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr)
	}
	return out
}

// fail runs a command that must fail and returns its stdout and error.
func (c cli) fail(args ...string) (string, error) {
	c.t.Helper()
	out, _, err := c.exec("", false, args...)
	if err == nil {
		c.t.Fatalf("gregor %s: succeeded, want an error\n%s", strings.Join(args, " "), out)
	}
	return out, err
}

// json runs a command with -o json and decodes its output into v.
func (c cli) json(v any, args ...string) {
	c.t.Helper()
	out := c.run(append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("gregor %s -o json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// produce writes values to topic/partition with a plain kgo client.
func (c cli) produce(topic string, partition int32, values ...string) {
	c.t.Helper()
	cl := c.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rs []*kgo.Record
	for _, v := range values {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: partition, Key: []byte("k-" + v), Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		c.t.Fatal(err)
	}
}

// tableRows parses a table: one map per row, keyed by upper-case header.
// Cells are whitespace separated; the last column takes the rest of the
// line.
func tableRows(t *testing.T, out string) []map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 {
		t.Fatalf("empty table")
	}
	header := strings.Fields(lines[0])
	var rows []map[string]string
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) < len(header) {
			t.Fatalf("row %q has %d cells, header %q has %d", line, len(f), lines[0], len(header))
		}
		row := map[string]string{}
		for i, h := range header {
			row[h] = f[i]
		}
		row[header[len(header)-1]] = strings.Join(f[len(header)-1:], " ")
		rows = append(rows, row)
	}
	return rows
}

// section returns the block of out that starts with a line beginning with
// prefix and ends at the next blank line.
func section(t *testing.T, out, prefix string) string {
	t.Helper()
	for _, block := range strings.Split(out, "\n\n") {
		if strings.HasPrefix(block, prefix) {
			return block
		}
	}
	t.Fatalf("no block starting with %q in:\n%s", prefix, out)
	return ""
}
