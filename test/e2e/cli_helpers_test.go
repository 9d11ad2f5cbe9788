package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// gregorCLI runs the gregor binary's client commands as subprocesses
// against one broker process: GREGOR_BROKERS and GREGOR_ADMIN point at it,
// so every command (log dump included, which has no -b) gets the same
// command line a user would type.
type gregorCLI struct {
	t *testing.T
	p *proc
}

// exec runs gregor args with stdin and returns its stdout, stderr and exit
// error. Each run is bounded by 30 s.
func (c gregorCLI) exec(stdin string, args ...string) (string, string, error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, gregorBin, args...)
	cmd.Env = append(os.Environ(), "GREGOR_BROKERS="+c.p.addr, "GREGOR_ADMIN="+c.p.admin)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		c.t.Fatalf("gregor %s: still running after 30s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out.String(), errb.String())
	}
	return out.String(), errb.String(), err
}

// run returns stdout and fails the test if the command fails.
func (c gregorCLI) run(args ...string) string {
	c.t.Helper()
	return c.runIn("", args...)
}

// runIn is run with stdin.
func (c gregorCLI) runIn(stdin string, args ...string) string {
	c.t.Helper()
	out, stderr, err := c.exec(stdin, args...)
	if err != nil {
		c.t.Fatalf("gregor %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr)
	}
	return out
}

// runJSON runs the command with -o json and decodes its stdout into v.
func (c gregorCLI) runJSON(v any, args ...string) {
	c.t.Helper()
	out := c.run(append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("gregor %s -o json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// fails runs a command that must exit non-zero and returns its stdout and
// stderr together.
func (c gregorCLI) fails(args ...string) string {
	c.t.Helper()
	out, stderr, err := c.exec("", args...)
	if err == nil {
		c.t.Fatalf("gregor %s: succeeded, want an error\nstdout:\n%s", strings.Join(args, " "), out)
	}
	return out + stderr
}

// table is one borderless table as the CLI prints it: an upper-case header
// line, then one line per row, cells separated by at least two spaces.
type table struct {
	header []string
	rows   [][]string
}

var cellGap = regexp.MustCompile(`\s{2,}`)

// parseTable reads the table whose header line starts with headerPrefix,
// up to the next blank line. It fails the test if there is none.
func parseTable(t *testing.T, out, headerPrefix string) table {
	t.Helper()
	var tb table
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		switch {
		case tb.header == nil && strings.HasPrefix(line, headerPrefix):
			tb.header = cellGap.Split(strings.TrimSpace(line), -1)
		case tb.header != nil && strings.TrimSpace(line) == "":
			return tb
		case tb.header != nil:
			tb.rows = append(tb.rows, cellGap.Split(strings.TrimSpace(line), -1))
		}
	}
	if tb.header == nil {
		t.Fatalf("no table with header %q in:\n%s", headerPrefix, out)
	}
	return tb
}

// row returns the cells, by header name, of the first row whose leading
// cells are key; it fails the test if there is none or a row is ragged.
func (tb table) row(t *testing.T, key ...string) map[string]string {
	t.Helper()
	for _, r := range tb.rows {
		if len(r) < len(key) || strings.Join(r[:len(key)], "\x00") != strings.Join(key, "\x00") {
			continue
		}
		if len(r) != len(tb.header) {
			t.Fatalf("row %q has %d cells, header %q has %d", r, len(r), tb.header, len(tb.header))
		}
		m := make(map[string]string, len(r))
		for i, h := range tb.header {
			m[h] = r[i]
		}
		return m
	}
	t.Fatalf("no row %q in table %q %q", key, tb.header, tb.rows)
	return nil
}

// wantCells checks named cells of a row.
func wantCells(t *testing.T, row map[string]string, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if row[k] != v {
			t.Errorf("cell %s = %q, want %q (row %v)", k, row[k], v, row)
		}
	}
}

// thousands prints n as `gregor why` does (4,095).
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// lines splits output into its non-empty lines.
func lines(s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		if l = strings.TrimRight(l, "\n"); l != "" {
			out = append(out, l)
		}
	}
	return out
}
