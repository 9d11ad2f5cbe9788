package log

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/gregor-broker/gregor/internal/transcript"
)

// TestRetentionTranscript runs testdata/retention/*.txt: each describes a
// log and asks PlanRetention what a retention pass deletes, as time passes
// and configs change. -rewrite regenerates the expected answers.
//
//	log leo=N [hw=N] [lso=N] [log-start=N] [policy=delete|compact|compact,delete]
//	    [retention.ms=D] [retention.bytes=N] [segment.bytes=N] [segment.ms=D] [roll-at=T]
//	<base offset> <size> <largest timestamp>     one line per segment, oldest first
//
//	set <the log's arguments>                    change some of them
//	plan [at=T]                                  what a pass at T (default now) deletes
func TestRetentionTranscript(t *testing.T) {
	datadriven.Walk(t, "testdata/retention", func(t *testing.T, path string) {
		now := t0.UnixMilli()
		var s *Snapshot
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			c := transcript.NewCmd(t, td)
			defer c.Done()
			switch td.Cmd {
			case "log":
				s = &Snapshot{Config: DefaultConfig(), ActiveRollMs: math.MaxInt64}
				for _, f := range transcript.Lines(td) {
					s.Segments = append(s.Segments, planSegment(t, td, f, now))
				}
				if len(s.Segments) == 0 {
					td.Fatalf(t, "a log has at least one segment")
				}
				s.LogStartOffset = s.Segments[0].BaseOffset
				s.LogEndOffset = c.Int("leo", 0)
				s.HighWatermark, s.LastStableOffset, s.RecoveryPoint = s.LogEndOffset, s.LogEndOffset, s.LogEndOffset
				setRetentionArgs(c, s, now)
				return ""
			case "set":
				setRetentionArgs(c, s, now)
				return ""
			case "plan":
				at := c.Time("at", now, now)
				return showPlan(PlanRetention(s, at), at)
			}
			td.Fatalf(t, "unknown command %s", td.Cmd)
			return ""
		})
	})
}

func planSegment(t *testing.T, td *datadriven.TestData, f []string, now int64) SegmentInfo {
	if len(f) != 3 {
		td.Fatalf(t, "segment %q: want <base offset> <size> <largest timestamp>", strings.Join(f, " "))
	}
	base, err1 := strconv.ParseInt(f[0], 10, 64)
	size, err2 := strconv.ParseInt(f[1], 10, 64)
	largest, err3 := transcript.ParseTime(f[2], now)
	if err1 != nil || err2 != nil || err3 != nil {
		td.Fatalf(t, "segment %q: want <base offset> <size> <largest timestamp>", strings.Join(f, " "))
	}
	return SegmentInfo{BaseOffset: base, Size: size, LargestTimestamp: largest}
}

func setRetentionArgs(c *transcript.Cmd, s *Snapshot, now int64) {
	s.LogEndOffset = c.Int("leo", s.LogEndOffset)
	s.HighWatermark = c.Int("hw", min(s.HighWatermark, s.LogEndOffset))
	s.LastStableOffset = c.Int("lso", min(s.LastStableOffset, s.HighWatermark))
	s.LogStartOffset = c.Int("log-start", s.LogStartOffset)
	if p := c.String("policy", ""); p != "" {
		s.Config.Compact, s.Config.Delete = strings.Contains(p, "compact"), strings.Contains(p, "delete")
	}
	s.Config.RetentionMs = c.Ms("retention.ms", s.Config.RetentionMs)
	s.Config.RetentionBytes = c.Int("retention.bytes", s.Config.RetentionBytes)
	s.Config.SegmentBytes = c.Int("segment.bytes", s.Config.SegmentBytes)
	s.Config.SegmentMs = c.Ms("segment.ms", s.Config.SegmentMs)
	s.ActiveRollMs = c.Time("roll-at", now, s.ActiveRollMs)
}

// showPlan prints a plan, times relative to the pass at now, Why one clause
// a line.
func showPlan(p RetentionPlan, now int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "now:  %s\n", showRange(p.Now, now))
	switch {
	case p.Next == nil:
		b.WriteString("next: nothing goes without more data\n")
	case *p.Next == p.Now:
		b.WriteString("next: the same\n")
	default:
		fmt.Fprintf(&b, "next: %s\n", showRange(*p.Next, now))
	}
	b.WriteString("why:\n")
	for _, clause := range strings.Split(p.Why, "; ") {
		fmt.Fprintf(&b, "  %s\n", clause)
	}
	return b.String()
}

func showRange(r RetentionRange, now int64) string {
	if r.Segments == 0 {
		return "nothing"
	}
	return fmt.Sprintf("%s, offsets %s, %d bytes, by %s, due %s; log start offset becomes %d",
		plural(r.Segments, "segment"), offsetSpan(r.FromOffset, r.ToOffset), r.Bytes, r.Reason,
		transcript.Rel(now, r.DueMs), r.ToOffset)
}
