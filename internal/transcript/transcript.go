// Package transcript is the small vocabulary shared by Gregor's transcript
// tests: testdata/*.txt files run with github.com/cockroachdb/datadriven, in
// which a pure state machine (the group shard, the cleaner's Assess,
// log.PlanRetention) is driven by commands and answers in plain text, so a
// reader sees the protocol as a conversation.
//
// Run a package's tests with -rewrite to regenerate its transcripts'
// expected output from what the code does now; review the diff like code.
// Expected output is never edited by hand.
//
// Times in transcripts are relative to the test's "now": "now", "now+90s",
// "now-10h" (or just "+90s", "-10h"); durations and Kafka's millisecond
// configs take Go durations ("5h", "1h30m", "250ms"), plain milliseconds
// ("30000"), -1, or "max" (Long.MaxValue). Only tests import this package.
package transcript

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// ParseMs reads a duration or a millisecond config value.
func ParseMs(s string) (int64, error) {
	switch s {
	case "max":
		return math.MaxInt64, nil
	case "-1":
		return -1, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: want a duration (5h, 250ms), milliseconds, -1 or max", s)
	}
	return d.Milliseconds(), nil
}

// ParseTime reads a time relative to now (unix ms): now, now±D or ±D.
func ParseTime(s string, now int64) (int64, error) {
	if s == "max" || s == "never" {
		return math.MaxInt64, nil
	}
	rest, ok := strings.CutPrefix(s, "now")
	if ok && rest == "" {
		return now, nil
	}
	if !strings.HasPrefix(rest, "+") && !strings.HasPrefix(rest, "-") {
		return 0, fmt.Errorf("%q: want now, now+D, now-D, +D or -D", s)
	}
	d, err := ParseMs(strings.TrimPrefix(rest, "+"))
	if err != nil {
		return 0, err
	}
	return now + d, nil
}

// Dur shows a span of milliseconds as a Go duration without zero tails
// ("5h", "1h30m", "2h0m0.001s").
func Dur(ms int64) string {
	if ms > 1e12 || ms < -1e12 { // beyond what time.Duration holds
		return strconv.FormatInt(ms, 10) + "ms"
	}
	s := (time.Duration(ms) * time.Millisecond).String()
	s, _ = strings.CutSuffix(s, "m0s")
	if strings.HasSuffix(s, "h0") {
		s = strings.TrimSuffix(s, "0")
	} else if !strings.HasSuffix(s, "s") {
		s += "m"
	}
	return s
}

// Rel shows ms (unix) relative to now: "now", "now+5h", "never" for
// Long.MaxValue.
func Rel(now, ms int64) string {
	switch {
	case ms == math.MaxInt64:
		return "never"
	case ms == now:
		return "now"
	case ms > now:
		return "now+" + Dur(ms-now)
	}
	return "now-" + Dur(now-ms)
}

// Cmd reads one command's arguments. Every getter marks its key as read;
// Done fails the test on an argument nothing read, so a typo in a
// transcript does not pass silently.
type Cmd struct {
	t    testing.TB
	td   *datadriven.TestData
	read map[string]bool
}

// NewCmd wraps td.
func NewCmd(t testing.TB, td *datadriven.TestData) *Cmd {
	return &Cmd{t: t, td: td, read: map[string]bool{}}
}

func (c *Cmd) val(key string) (string, bool) {
	c.read[key] = true
	arg, ok := c.td.Arg(key)
	if !ok {
		return "", false
	}
	if len(arg.Vals) == 0 {
		return "", true
	}
	return arg.Vals[0], true
}

// Has reports whether key was given.
func (c *Cmd) Has(key string) bool {
	_, ok := c.val(key)
	return ok
}

// String is key's value, or def.
func (c *Cmd) String(key, def string) string {
	if v, ok := c.val(key); ok {
		return v
	}
	return def
}

// List is the values of key=(v1, v2, …) (or key=v), nil when absent.
func (c *Cmd) List(key string) []string {
	c.read[key] = true
	arg, _ := c.td.Arg(key)
	return arg.Vals
}

// Int is key's value as an integer, or def.
func (c *Cmd) Int(key string, def int64) int64 {
	c.t.Helper()
	return get(c, key, def, func(v string) (int64, error) { return strconv.ParseInt(v, 10, 64) })
}

// Float is key's value as a float, or def.
func (c *Cmd) Float(key string, def float64) float64 {
	c.t.Helper()
	return get(c, key, def, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) })
}

// Bool is true for a bare key or key=true, false for key=false, else def.
func (c *Cmd) Bool(key string, def bool) bool {
	c.t.Helper()
	return get(c, key, def, func(v string) (bool, error) {
		if v == "" {
			return true, nil
		}
		return strconv.ParseBool(v)
	})
}

// Ms is key's value as milliseconds (ParseMs), or def.
func (c *Cmd) Ms(key string, def int64) int64 {
	c.t.Helper()
	return get(c, key, def, ParseMs)
}

// Time is key's value as a time relative to now (ParseTime), or def.
func (c *Cmd) Time(key string, now, def int64) int64 {
	c.t.Helper()
	return get(c, key, def, func(v string) (int64, error) { return ParseTime(v, now) })
}

// get is key's value parsed, def when absent; a value that does not parse
// fails the test.
func get[T any](c *Cmd, key string, def T, parse func(string) (T, error)) T {
	c.t.Helper()
	v, ok := c.val(key)
	if !ok {
		return def
	}
	x, err := parse(v)
	if err != nil {
		c.t.Fatalf("%s: %s=%s: %v", c.td.Pos, key, v, err)
	}
	return x
}

// Done fails the test on an argument no getter read.
func (c *Cmd) Done() {
	c.t.Helper()
	for _, a := range c.td.CmdArgs {
		if !c.read[a.Key] {
			c.t.Fatalf("%s: %s does not take %s", c.td.Pos, c.td.Cmd, a.Key)
		}
	}
}

// Lines is the command's input, one entry per non-blank line, split into
// fields.
func Lines(td *datadriven.TestData) [][]string {
	var out [][]string
	for _, l := range strings.Split(td.Input, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			out = append(out, f)
		}
	}
	return out
}
