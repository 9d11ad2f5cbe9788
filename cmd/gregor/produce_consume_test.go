package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProduceConsume(t *testing.T) {
	c := startCLI(t)
	c.run("topic", "create", "users", "-p", "2")

	rows := tableRows(t, c.runIn("alice\nbob\ncarol", "produce", "users", "-p", "0"))
	if len(rows) != 1 || rows[0]["PARTITION"] != "0" || rows[0]["RECORDS"] != "3" || rows[0]["FIRST-OFFSET"] != "0" || rows[0]["LAST-OFFSET"] != "2" {
		t.Fatalf("produce lines: %v", rows)
	}
	// Keys, a header, and a tombstone (-Z: empty value is null).
	var produced []producedPartition
	out := c.runIn("u1;one\nu2;two\nu1;\n", "produce", "users", "-p", "1", "-K", ";", "-Z", "-H", "src=cli", "-o", "json")
	if err := json.Unmarshal([]byte(out), &produced); err != nil {
		t.Fatal(err, out)
	}
	if len(produced) != 1 || produced[0].Records != 3 || produced[0].LastOffset != 2 {
		t.Fatalf("produce -K: %+v", produced)
	}

	got := c.run("consume", "users", "-e", "-f", `%p/%o %k=%s [%h] %K %S\n`, "-Z")
	want := "0/0 NULL=alice [] -1 5\n0/1 NULL=bob [] -1 3\n0/2 NULL=carol [] -1 5\n" +
		"1/0 u1=one [src=cli] 2 3\n1/1 u2=two [src=cli] 2 3\n1/2 u1=NULL [src=cli] 2 -1\n"
	if diff := cmp.Diff(want, sortLines(got)); diff != "" {
		t.Fatalf("consume -f (-want +got):\n%s", diff)
	}

	// JSON lines; the tombstone's value is null.
	out = c.run("consume", "users", "-p", "1", "--offset", "-1", "-e", "-o", "json")
	var rec jsonRecord
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		t.Fatal(err, out)
	}
	if rec.Offset != 2 || rec.Key == nil || *rec.Key != "u1" || rec.Value != nil || len(rec.Headers) != 1 || *rec.Headers[0].Value != "cli" {
		t.Fatalf("consume -o json: %s", out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--offset", "start", "-p", "0"}, "alice\nbob\ncarol\n"},
		{[]string{"--offset", "1", "-p", "0"}, "bob\ncarol\n"},
		{[]string{"--offset", "+2", "-p", "0"}, "carol\n"},
		{[]string{"--offset", "-2", "-p", "0"}, "bob\ncarol\n"},
		{[]string{"--offset", "end", "-p", "0"}, ""},
		{[]string{"--offset", "@0", "-p", "0", "-c", "1"}, "alice\n"},
		{[]string{"--offset", "@4102444800000", "-p", "0"}, ""}, // 2100: nothing after it
		{[]string{"-p", "0", "-c", "2"}, "alice\nbob\n"},
		{[]string{"-p", "0", "--read-committed"}, "alice\nbob\ncarol\n"},
	} {
		args := append([]string{"consume", "users", "-e"}, tc.args...)
		if got := c.run(args...); got != tc.want {
			t.Errorf("%v: got %q, want %q", tc.args, got, tc.want)
		}
	}

	// An input format with partition and timestamp.
	c.runIn("0|k|v|1700000000000\n", "produce", "users", "-f", `%p|%k|%v|%T\n`)
	if got := c.run("consume", "users", "-p", "0", "--offset", "3", "-e", "-f", `%k %s %T\n`); got != "k v 1700000000000\n" {
		t.Fatalf("produce -f: consumed %q", got)
	}
	if _, err := c.fail("consume", "users", "--offset", "soon"); !strings.Contains(err.Error(), "--offset") {
		t.Fatalf("bad --offset: %v", err)
	}
}

func TestConsumeGroupCommits(t *testing.T) {
	c := startCLIWith(t, groupProps)
	c.run("topic", "create", "jobs", "-p", "1")
	c.runIn("j1\nj2\nj3\n", "produce", "jobs")
	if got := c.run("consume", "jobs", "-g", "workers", "-c", "2"); got != "j1\nj2\n" {
		t.Fatalf("first group read: %q", got)
	}
	// The group resumes after the records it printed.
	if got := c.run("consume", "jobs", "-g", "workers", "-e"); got != "j3\n" {
		t.Fatalf("second group read: %q", got)
	}
	if got := c.run("consume", "jobs", "-g", "workers", "-e"); got != "" {
		t.Fatalf("third group read: %q", got)
	}
}

func sortLines(s string) string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	// Partitions arrive in any order; within one, in offset order.
	var p0, p1 []string
	for _, l := range lines {
		if strings.HasPrefix(l, "0/") {
			p0 = append(p0, l)
		} else {
			p1 = append(p1, l)
		}
	}
	return strings.Join(append(p0, p1...), "")
}

func TestInputFormat(t *testing.T) {
	for _, tc := range []struct {
		format, in string
		nullEmpty  bool
		want       []string // key|value|partition per record; "<nil>" for null
		err        string
	}{
		{format: `%v\n`, in: "a\nb\n", want: []string{"<nil>|a|0", "<nil>|b|0"}},
		{format: `%v\n`, in: "a\nb", want: []string{"<nil>|a|0", "<nil>|b|0"}},
		{format: `%v\n`, in: "a\n\n", want: []string{"<nil>|a|0", "<nil>||0"}},
		{format: `%v\n`, in: "a\n\n", nullEmpty: true, want: []string{"<nil>|a|0", "<nil>|<nil>|0"}},
		{format: `%k::%v\n`, in: "k::v::w\n", want: []string{"k|v::w|0"}},
		{format: `[%p] %k=%v\n`, in: "[3] a=b\n[1] c=\n", nullEmpty: true, want: []string{"a|b|3", "c|<nil>|1"}},
		{format: `%k\t%v\n`, in: "nokey\n", err: "input ends inside a record"},
		{format: `%k%v\n`, err: "must be followed by a delimiter"},
		{format: `%v`, err: "must end with a delimiter"},
		{format: `%x\n`, err: "unknown directive"},
		{format: `[%v]\n`, in: "(a]\n", err: "expected"},
	} {
		rr, err := newRecordReader(tc.format, strings.NewReader(tc.in), tc.nullEmpty)
		var got []string
		for err == nil {
			r, rerr := rr.next()
			if rerr == io.EOF {
				break
			}
			if err = rerr; err != nil {
				break
			}
			show := func(b []byte) string {
				if b == nil {
					return "<nil>"
				}
				return string(b)
			}
			p := r.Partition
			if p < 0 {
				p = 0
			}
			got = append(got, show(r.Key)+"|"+show(r.Value)+"|"+string(rune('0'+p)))
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q on %q: error %v, want %q", tc.format, tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q on %q: %v", tc.format, tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q on %q (-want +got):\n%s", tc.format, tc.in, diff)
		}
	}
}
