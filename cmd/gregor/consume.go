package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// exitIdle is how long -e waits with nothing fetched before deciding the
// partitions it cannot see the end of (owned by other group members, or
// whose last records were compacted away) are done. Fetches long-poll for
// at most consumeMaxWait, so an idle poll this long means nothing is left.
const (
	exitIdle       = 2 * time.Second
	consumeMaxWait = 500 * time.Millisecond
)

// offsetSpec is a parsed --offset: start, end, N, +N, -N or @timestamp.
type offsetSpec struct {
	kind string // "start", "end", "abs", "fromStart", "fromEnd", "time"
	n    int64  // offset, distance or milliseconds
}

func parseOffsetSpec(s string) (offsetSpec, error) {
	switch s {
	case "start", "beginning", "earliest":
		return offsetSpec{kind: "start"}, nil
	case "end", "latest":
		return offsetSpec{kind: "end"}, nil
	}
	bad := fmt.Errorf("--offset %q: want start, end, N, +N, -N or @TIMESTAMP (ms since the epoch or RFC 3339)", s)
	switch {
	case strings.HasPrefix(s, "@"):
		ts := s[1:]
		if ms, err := strconv.ParseInt(ts, 10, 64); err == nil && ms >= 0 {
			return offsetSpec{kind: "time", n: ms}, nil
		}
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return offsetSpec{}, bad
		}
		return offsetSpec{kind: "time", n: t.UnixMilli()}, nil
	case strings.HasPrefix(s, "+"), strings.HasPrefix(s, "-"):
		n, err := strconv.ParseInt(s[1:], 10, 64)
		if err != nil || n < 0 {
			return offsetSpec{}, bad
		}
		if s[0] == '+' {
			return offsetSpec{kind: "fromStart", n: n}, nil
		}
		return offsetSpec{kind: "fromEnd", n: n}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return offsetSpec{}, bad
	}
	return offsetSpec{kind: "abs", n: n}, nil
}

// kgoOffset is the spec as a kgo reset offset (for group consumers, whose
// partitions the group assigns).
func (o offsetSpec) kgoOffset() kgo.Offset {
	switch o.kind {
	case "end":
		return kgo.NewOffset().AtEnd()
	case "abs":
		return kgo.NewOffset().At(o.n)
	case "fromStart":
		return kgo.NewOffset().AtStart().Relative(o.n)
	case "fromEnd":
		return kgo.NewOffset().AtEnd().Relative(-o.n)
	case "time":
		return kgo.NewOffset().AfterMilli(o.n)
	}
	return kgo.NewOffset().AtStart()
}

// consumeBounds are, per partition, where reading starts and the end
// offset (HW, or LSO for read_committed) at the time consume began.
type consumeBounds struct {
	start map[int32]int64
	end   map[int32]int64
}

// resolveBounds lists offsets and resolves spec for every partition in
// parts, clamping into [log start, end] as Kafka consumers would by reset.
func resolveBounds(ctx context.Context, adm *kadm.Client, topic string, parts []int32, spec offsetSpec,
	readCommitted bool, warn io.Writer) (consumeBounds, error) {
	b := consumeBounds{start: map[int32]int64{}, end: map[int32]int64{}}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return b, fmt.Errorf("listing log start offsets: %w", err)
	}
	listEnd := adm.ListEndOffsets
	if readCommitted {
		listEnd = adm.ListCommittedOffsets
	}
	ends, err := listEnd(ctx, topic)
	if err != nil {
		return b, fmt.Errorf("listing end offsets: %w", err)
	}
	var after kadm.ListedOffsets
	if spec.kind == "time" {
		if after, err = adm.ListOffsetsAfterMilli(ctx, spec.n, topic); err != nil {
			return b, fmt.Errorf("listing offsets after %d: %w", spec.n, err)
		}
	}
	for _, p := range parts {
		s, ok1 := starts.Lookup(topic, p)
		e, ok2 := ends.Lookup(topic, p)
		if !ok1 || !ok2 || s.Err != nil || e.Err != nil {
			return b, fmt.Errorf("%s/%d: listing offsets: %v %v", topic, p, s.Err, e.Err)
		}
		lo, hi := s.Offset, e.Offset
		var at int64
		switch spec.kind {
		case "start":
			at = lo
		case "end":
			at = hi
		case "abs":
			at = spec.n
		case "fromStart":
			at = lo + spec.n
		case "fromEnd":
			at = hi - spec.n
		case "time":
			a, ok := after.Lookup(topic, p)
			if !ok || a.Err != nil || a.Offset < 0 {
				at = hi
			} else {
				at = a.Offset
			}
		}
		if clamped := min(max(at, lo), hi); clamped != at {
			if spec.kind == "abs" {
				fmt.Fprintf(warn, "warning: %s/%d: offset %d is outside [%d, %d]; starting at %d\n", topic, p, at, lo, hi, clamped)
			}
			at = clamped
		}
		b.start[p], b.end[p] = at, hi
	}
	return b, nil
}

// jsonRecord is one line of consume -o json.
type jsonRecord struct {
	Topic       string       `json:"topic"`
	Partition   int32        `json:"partition"`
	Offset      int64        `json:"offset"`
	Timestamp   int64        `json:"timestamp"`
	LeaderEpoch int32        `json:"leader_epoch"`
	Key         *string      `json:"key"`
	KeyEncoding string       `json:"key_encoding,omitempty"`
	Value       *string      `json:"value"`
	ValEncoding string       `json:"value_encoding,omitempty"`
	Headers     []jsonHeader `json:"headers,omitempty"`
}

type jsonHeader struct {
	Key      string  `json:"key"`
	Value    *string `json:"value"`
	Encoding string  `json:"encoding,omitempty"`
}

// jsonBytes keeps bytes lossless in JSON: text when it is UTF-8, base64
// (with an encoding field saying so) otherwise.
func jsonBytes(b []byte) (*string, string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s, "base64"
}

func toJSONRecord(r *kgo.Record) jsonRecord {
	j := jsonRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(), LeaderEpoch: r.LeaderEpoch}
	j.Key, j.KeyEncoding = jsonBytes(r.Key)
	j.Value, j.ValEncoding = jsonBytes(r.Value)
	for _, h := range r.Headers {
		jh := jsonHeader{Key: h.Key}
		jh.Value, jh.Encoding = jsonBytes(h.Value)
		j.Headers = append(j.Headers, jh)
	}
	return j
}

// consume is the `consume` command.
type consume struct {
	f             connFlags
	offset        string
	partitions    []int32
	format        string
	nullText      bool
	readCommitted bool
	isolation     string
	group         string
	exitAtEnd     bool
	count         int64
}

func consumeCmd() *cobra.Command {
	o := &consume{}
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Consume records and print them by a kcat-style format, or as JSON lines",
		Long: `Consume a topic and print each record.

--offset (per partition):
  start | end          the log start offset, or the end (only new records)
  N                    absolute offset N (clamped into [log start, end])
  +N | -N              N after the log start offset, N before the end
  @TIMESTAMP           the first record at or after a time: ms since the epoch
                       or RFC 3339
With --group the offset applies only to partitions without a committed
offset; the group assigns partitions and the records printed are committed.

-f FORMAT (default %s\n), as kcat: %t topic, %p partition, %o offset, %k key,
%K key length, %s value, %S value length, %T timestamp (ms), %h headers as
k=v,k=v, %e leader epoch; escapes \n \r \t \0 \\ and %% for %. A null key or
value prints as nothing, or NULL with -Z; lengths print -1 for null.

-o json prints one JSON object per record instead (key and value as text,
or base64 with "key_encoding"/"value_encoding" when not UTF-8).

-e stops at the end offsets (HW, or LSO with --read-committed) listed when
consuming starts; partitions whose end it cannot observe (owned by another
group member, or whose last records were compacted away) count as done after
` + exitIdle.String() + ` with nothing to fetch.`,
		Example: `  gregor consume orders -e
  gregor consume orders --offset -10 -f '%p/%o %k=%s\n' -e
  gregor consume orders --offset @2026-01-02T15:04:05Z -c 5 -o json
  gregor consume orders --group audit --read-committed`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTopics(&o.f, false),
		RunE:              o.run,
	}
	o.f.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&o.offset, "offset", "start", "where to start: start, end, N, +N, -N or @TIMESTAMP")
	fs.Int32SliceVarP(&o.partitions, "partitions", "p", nil, "partitions to read (default all)")
	fs.StringVarP(&o.format, "format", "f", `%s\n`, "output format (see above)")
	fs.BoolVarP(&o.nullText, "null", "Z", false, "print null keys and values as NULL")
	fs.BoolVar(&o.readCommitted, "read-committed", false, "read only committed transactional records, up to the LSO")
	fs.StringVar(&o.isolation, "isolation", "", "read_committed (as --read-committed) or read_uncommitted (the default), as Kafka's isolation.level")
	fs.StringVarP(&o.group, "group", "g", "", "consume as this consumer group, committing what is printed")
	fs.BoolVarP(&o.exitAtEnd, "exit", "e", false, "exit at the end offsets listed at start")
	fs.Int64VarP(&o.count, "count", "c", 0, "exit after this many records (0: no limit)")
	_ = cmd.RegisterFlagCompletionFunc("offset", cobra.FixedCompletions([]string{"start", "end"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (o *consume) run(cmd *cobra.Command, args []string) error {
	topic := args[0]
	switch o.isolation {
	case "":
	case "read_committed":
		o.readCommitted = true
	case "read_uncommitted":
		if o.readCommitted {
			return errors.New("--isolation read_uncommitted and --read-committed contradict each other")
		}
	default:
		return fmt.Errorf("--isolation %q: want read_committed or read_uncommitted", o.isolation)
	}
	spec, err := parseOffsetSpec(o.offset)
	if err != nil {
		return err
	}
	if o.group != "" && len(o.partitions) > 0 {
		return errors.New("--partitions and --group do not mix: the group assigns partitions")
	}
	null := ""
	if o.nullText {
		null = "NULL"
	}
	rf, err := newRecordFormatter(o.format, null)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var joined atomic.Bool
	bounds, opts, err := o.plan(ctx, topic, spec, &joined, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	cl, _, err := o.f.clients(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	run := consumeRun{
		w: cmd.OutOrStdout(), errw: cmd.ErrOrStderr(), json: o.f.output == "json", rf: rf,
		exitAtEnd: o.exitAtEnd, count: o.count, bounds: bounds, group: o.group != "",
	}
	if o.group != "" {
		run.joined = &joined
	}
	n, err := consumeLoop(ctx, cl, run)
	if o.group != "" {
		cctx, cancel := context.WithTimeout(context.Background(), o.f.timeout)
		defer cancel()
		if cerr := cl.CommitMarkedOffsets(cctx); cerr != nil && err == nil {
			err = fmt.Errorf("committing offsets of %d printed records: %w", n, cerr)
		}
		cl.LeaveGroupContext(cctx)
	}
	return err
}

// plan resolves, within --timeout, where each partition's reading starts and
// ends (a group's committed offsets win over --offset), and the consuming
// client's options; joined is set once a group member has its assignment.
func (o *consume) plan(ctx context.Context, topic string, spec offsetSpec, joined *atomic.Bool, warn io.Writer) (consumeBounds, []kgo.Opt, error) {
	admCl, adm, err := o.f.clients()
	if err != nil {
		return consumeBounds{}, nil, err
	}
	defer admCl.Close()
	ctx, cancel := context.WithTimeout(ctx, o.f.timeout)
	defer cancel()
	parts, err := o.partitionsOf(ctx, adm, topic)
	if err != nil {
		return consumeBounds{}, nil, err
	}
	bounds, err := resolveBounds(ctx, adm, topic, parts, spec, o.readCommitted, warn)
	if err != nil {
		return bounds, nil, err
	}
	opts := []kgo.Opt{kgo.FetchMaxWait(consumeMaxWait)}
	if o.readCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if o.exitAtEnd {
		// Control records move the position past transaction markers, so
		// -e can see it reached the end.
		opts = append(opts, kgo.KeepControlRecords())
	}
	if o.group == "" {
		m := map[int32]kgo.Offset{}
		for _, p := range parts {
			m[p] = kgo.NewOffset().At(bounds.start[p])
		}
		return bounds, append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: m})), nil
	}
	committed, err := fetchCommitted(ctx, adm, o.group)
	if err != nil {
		return bounds, nil, fmt.Errorf("fetching the group's committed offsets: %w", err)
	}
	for _, p := range parts {
		if c, ok := committed.Lookup(topic, p); ok && c.Err == nil && c.At >= 0 {
			bounds.start[p] = c.At
		}
	}
	return bounds, append(opts, kgo.ConsumerGroup(o.group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(spec.kgoOffset()), kgo.AutoCommitMarks(),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { joined.Store(true) })), nil
}

// partitionsOf is --partitions, checked against topic, or all of topic's.
func (o *consume) partitionsOf(ctx context.Context, adm *kadm.Client, topic string) ([]int32, error) {
	tds, err := describeTopics(ctx, adm, topic)
	if err != nil {
		return nil, err
	}
	all := tds[topic].Partitions.Numbers()
	if len(o.partitions) == 0 {
		return all, nil
	}
	for _, p := range o.partitions {
		if !slices.Contains(all, p) {
			return nil, fmt.Errorf("topic %s has no partition %d", topic, p)
		}
	}
	return o.partitions, nil
}

type consumeRun struct {
	w, errw   io.Writer
	json      bool
	rf        *recordFormatter
	exitAtEnd bool
	count     int64
	bounds    consumeBounds
	group     bool
	joined    *atomic.Bool // group mode: set once the first assignment is done
}

// consumeLoop polls and prints until the count, the end (-e) or ctx ends.
// It returns how many records it printed.
func consumeLoop(ctx context.Context, cl *kgo.Client, run consumeRun) (int64, error) {
	bw := bufio.NewWriterSize(run.w, 1<<16)
	defer bw.Flush()
	enc := json.NewEncoder(bw)
	pos := map[int32]int64{}
	for p, o := range run.bounds.start {
		pos[p] = o
	}
	atEnd := func() bool {
		for p, end := range run.bounds.end {
			if pos[p] < end {
				return false
			}
		}
		return true
	}
	var n int64
	var buf []byte
	for {
		if run.count > 0 && n >= run.count || run.exitAtEnd && atEnd() {
			return n, nil
		}
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if run.exitAtEnd {
			pctx, cancel = context.WithTimeout(ctx, exitIdle)
		}
		limit := 0
		if run.count > 0 {
			limit = int(run.count - n)
		}
		fs := cl.PollRecords(pctx, limit)
		// Idle only counts once a group member has its assignment: the
		// first join waits out group.initial.rebalance.delay.ms.
		idle := pctx.Err() != nil && ctx.Err() == nil && len(fs.Records()) == 0 && (run.joined == nil || run.joined.Load())
		cancel()
		if ctx.Err() != nil || fs.IsClientClosed() {
			return n, nil
		}
		var fatal error
		fs.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			fmt.Fprintf(run.errw, "warning: fetching %s/%d: %v\n", t, p, err)
			if fatal == nil {
				fatal = fmt.Errorf("fetching %s/%d: %w", t, p, err)
			}
		})
		var werr error
		fs.EachRecord(func(r *kgo.Record) {
			pos[r.Partition] = max(pos[r.Partition], r.Offset+1)
			if r.Attrs.IsControl() || werr != nil || run.count > 0 && n >= run.count {
				return
			}
			if run.json {
				werr = enc.Encode(toJSONRecord(r))
			} else {
				buf = run.rf.append(buf[:0], r)
				_, werr = bw.Write(buf)
			}
			n++
			if run.group {
				cl.MarkCommitRecords(r)
			}
		})
		if werr != nil {
			return n, werr
		}
		if err := bw.Flush(); err != nil {
			return n, err
		}
		if fatal != nil && len(fs.Records()) == 0 {
			return n, fatal
		}
		if idle && run.exitAtEnd {
			return n, nil
		}
	}
}
