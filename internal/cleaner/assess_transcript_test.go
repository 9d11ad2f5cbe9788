package cleaner

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/transcript"
)

// TestAssessTranscript runs testdata/assess/*.txt: each describes compacted
// logs and asks Assess what may be cleaned, whether it should be and when,
// and Filthiest which log goes first. -rewrite regenerates the answers.
//
//	log [name=T-P] leo=N [hw=N] [lso=N] [log-start=N] [cleaner-point=N]
//	    [min.cleanable.dirty.ratio=F] [min.compaction.lag.ms=D] [max.compaction.lag.ms=D]
//	    [compact=false] [in-progress] [retry-at=T] [delete-horizon=T]
//	<base offset> <size> <largest timestamp> <first batch timestamp or ->
//	                                   one line per segment, oldest first
//
//	set [name=T-P] <the log's arguments>   change some of them (default: the last log)
//	assess [name=T-P] [at=T]               the verdict at T (default now)
//	filthiest [at=T]                       which log the cleaner takes, of them all
func TestAssessTranscript(t *testing.T) {
	const now = int64(1_700_000_000_000)
	datadriven.Walk(t, "testdata/assess", func(t *testing.T, path string) {
		logs := map[string]*LogState{}
		var names []string
		last := ""
		get := func(c *transcript.Cmd, td *datadriven.TestData) (string, *LogState) {
			name := c.String("name", last)
			s := logs[name]
			if s == nil {
				td.Fatalf(t, "no log %q", name)
			}
			return name, s
		}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			c := transcript.NewCmd(t, td)
			defer c.Done()
			switch td.Cmd {
			case "log":
				s := &LogState{CleanerPoint: -1, Compact: true, MinCleanableDirtyRatio: 0.5, MaxCompactionLagMs: math.MaxInt64}
				for _, f := range transcript.Lines(td) {
					s.Segments = append(s.Segments, assessSegment(t, td, f, now))
				}
				if len(s.Segments) > 0 {
					s.LogStartOffset = s.Segments[0].BaseOffset
				}
				s.LogEndOffset = c.Int("leo", 0)
				s.HighWatermark, s.LastStableOffset = s.LogEndOffset, s.LogEndOffset
				last = c.String("name", "log-0")
				if logs[last] == nil {
					names = append(names, last)
				}
				logs[last] = s
				setAssessArgs(c, s, now)
				return ""
			case "set":
				_, s := get(c, td)
				setAssessArgs(c, s, now)
				return ""
			case "assess":
				_, s := get(c, td)
				at := c.Time("at", now, now)
				return showAssessment(s, Assess(*s, at), at)
			case "filthiest":
				at := c.Time("at", now, now)
				return showFilthiest(logs, names, at)
			}
			td.Fatalf(t, "unknown command %s", td.Cmd)
			return ""
		})
	})
}

func assessSegment(t *testing.T, td *datadriven.TestData, f []string, now int64) SegmentState {
	bad := func() {
		td.Fatalf(t, "segment %q: want <base offset> <size> <largest timestamp> <first batch timestamp>", strings.Join(f, " "))
	}
	if len(f) != 4 {
		bad()
	}
	s := SegmentState{FirstBatchTimestamp: -1}
	var errs [4]error
	s.BaseOffset, errs[0] = strconv.ParseInt(f[0], 10, 64)
	s.Size, errs[1] = strconv.ParseInt(f[1], 10, 64)
	s.LargestTimestamp, errs[2] = transcript.ParseTime(f[2], now)
	if f[3] != "-" {
		s.FirstBatchTimestamp, errs[3] = transcript.ParseTime(f[3], now)
	}
	if slices.ContainsFunc(errs[:], func(err error) bool { return err != nil }) {
		bad()
	}
	return s
}

func setAssessArgs(c *transcript.Cmd, s *LogState, now int64) {
	s.LogEndOffset = c.Int("leo", s.LogEndOffset)
	s.HighWatermark = c.Int("hw", min(s.HighWatermark, s.LogEndOffset))
	s.LastStableOffset = c.Int("lso", min(s.LastStableOffset, s.HighWatermark))
	s.LogStartOffset = c.Int("log-start", s.LogStartOffset)
	s.CleanerPoint = c.Int("cleaner-point", s.CleanerPoint)
	s.MinCleanableDirtyRatio = c.Float("min.cleanable.dirty.ratio", s.MinCleanableDirtyRatio)
	s.MinCompactionLagMs = c.Ms("min.compaction.lag.ms", s.MinCompactionLagMs)
	s.MaxCompactionLagMs = c.Ms("max.compaction.lag.ms", s.MaxCompactionLagMs)
	s.Compact = c.Bool("compact", s.Compact)
	s.InProgress = c.Bool("in-progress", s.InProgress)
	s.RetryAtMs = c.Time("retry-at", now, s.RetryAtMs)
	s.DeleteHorizonMs = c.Time("delete-horizon", now, s.DeleteHorizonMs)
}

func showAssessment(s *LogState, a Assessment, now int64) string {
	var b strings.Builder
	dirty := "the cleaner point"
	switch {
	case a.ResetCleanerPoint:
		dirty = fmt.Sprintf("the log start offset: the cleaner point %d is outside the log, to be reset", s.CleanerPoint)
	case s.CleanerPoint < 0:
		dirty = "the log start offset: no cleaner point yet"
	}
	fmt.Fprintf(&b, "first dirty offset %d (%s)\n", a.FirstDirtyOffset, dirty)
	fmt.Fprintf(&b, "first uncleanable offset %d (%s)\n", a.FirstUncleanableOffset, a.UncleanableReason)
	fmt.Fprintf(&b, "bytes: clean %d, dirty %d, uncleanable %d; dirty ratio %.3f\n",
		a.CleanBytes, a.DirtyBytes, a.UncleanableBytes, a.DirtyRatio)
	if a.MaxCompactionDelayMs > 0 {
		fmt.Fprintf(&b, "a dirty record is %s past max.compaction.lag.ms\n", transcript.Dur(a.MaxCompactionDelayMs))
	}
	if a.HorizonPassed {
		b.WriteString("the delete horizon has passed\n")
	}
	verdict := "not eligible"
	if a.Eligible {
		verdict = "eligible"
	}
	fmt.Fprintf(&b, "%s: %s\n", verdict, a.Why)
	switch {
	case a.NextEligibleMs < 0:
		b.WriteString("next eligible: only after more writes\n")
	case !a.Eligible:
		fmt.Fprintf(&b, "next eligible: %s\n", transcript.Rel(now, a.NextEligibleMs))
	}
	return b.String()
}

func showFilthiest(logs map[string]*LogState, names []string, now int64) string {
	var b strings.Builder
	// As the cleaner's round: logs that are not compacted are not
	// candidates; one being cleaned or uncleanable counts for nothing.
	var cands []Candidate
	for _, name := range names {
		s := logs[name]
		if !s.Compact {
			fmt.Fprintf(&b, "%s: not compacted\n", name)
			continue
		}
		tp, ok := topicpart.ParseDirName(name)
		if !ok {
			panic(fmt.Sprintf("log name %q: want TOPIC-PARTITION", name))
		}
		c := Candidate{TopicPartition: tp, Assessment: Assess(*s, now), Excluded: s.InProgress || s.RetryAtMs > now}
		state := "candidate"
		switch {
		case c.Excluded:
			state = "excluded (" + c.Assessment.Why + ")"
		case !c.Assessment.Eligible:
			state = "not eligible"
		}
		fmt.Fprintf(&b, "%s: dirty ratio %.3f, %s\n", name, c.Assessment.DirtyRatio, state)
		cands = append(cands, c)
	}
	pick, dirtiest := Filthiest(cands)
	if pick < 0 {
		fmt.Fprintf(&b, "no log to clean; max dirty ratio %.3f\n", dirtiest)
		return b.String()
	}
	fmt.Fprintf(&b, "clean %s; max dirty ratio %.3f\n", cands[pick].TopicPartition, dirtiest)
	return b.String()
}
