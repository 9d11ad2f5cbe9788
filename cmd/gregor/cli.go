package main

// Shared plumbing for the client-side tools (topic, offsets, produce,
// consume, group): connection flags, output formats and argument parsing.
// Everything that talks to a broker goes through franz-go's kgo and kadm so
// the tools work unchanged against Apache Kafka.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// outputFlags are -o and --timeout, which every command that talks to a
// server has.
type outputFlags struct {
	output  string
	timeout time.Duration
}

// register adds -o (described by table, e.g. "table") and --timeout (with
// its default and what it gives up on) as persistent flags, so a command
// group's subcommands inherit them.
func (f *outputFlags) register(cmd *cobra.Command, table string, timeout time.Duration, server string) {
	fs := cmd.PersistentFlags()
	fs.StringVarP(&f.output, "output", "o", "table", "output format: "+table+" or json")
	fs.DurationVar(&f.timeout, "timeout", timeout, "give up on "+server+" after this long")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json"}, cobra.ShellCompDirectiveNoFileComp))
}

func (f *outputFlags) check() error {
	switch f.output {
	case "table", "json":
		return nil
	}
	return fmt.Errorf("--output %q: want table or json", f.output)
}

// context bounds a command's work by --timeout.
func (f *outputFlags) context(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	return context.WithTimeout(parent, f.timeout)
}

// connFlags are the flags every client-side command shares.
type connFlags struct {
	brokers string
	outputFlags
	security securityFlags
}

// register adds -b, -o and --timeout as persistent flags, so a command
// group's subcommands inherit them.
func (f *connFlags) register(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVarP(&f.brokers, "brokers", "b", envOr("GREGOR_BROKERS", "127.0.0.1:9092"), "bootstrap brokers, comma separated (GREGOR_BROKERS)")
	f.outputFlags.register(cmd, "table", 30*time.Second, "the brokers")
	f.security.registerPersistent(cmd)
}

func (f *connFlags) seeds() []string {
	var s []string
	for _, b := range strings.Split(f.brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			s = append(s, b)
		}
	}
	return s
}

// clients returns a kgo client and a kadm client on it; close the kgo one.
func (f *connFlags) clients(opts ...kgo.Opt) (*kgo.Client, *kadm.Client, error) {
	if err := f.check(); err != nil {
		return nil, nil, err
	}
	sec, err := f.security.opts()
	if err != nil {
		return nil, nil, err
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt{kgo.SeedBrokers(f.seeds()...)}, sec...), opts...)...)
	if err != nil {
		return nil, nil, err
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(min(f.timeout, time.Hour).Milliseconds()))
	return cl, adm, nil
}

// session is a command's connection to the cluster: the clients, and a
// context bounded by --timeout.
type session struct {
	ctx context.Context
	cl  *kgo.Client
	adm *kadm.Client
}

// connect opens a session for cmd; end it with the returned func.
func (f *connFlags) connect(cmd *cobra.Command, opts ...kgo.Opt) (session, func(), error) {
	cl, adm, err := f.clients(opts...)
	if err != nil {
		return session{}, nil, err
	}
	ctx, cancel := f.context(cmd)
	return session{ctx: ctx, cl: cl, adm: adm}, func() { cancel(); cl.Close() }, nil
}

// newTable returns a borderless, column-aligned table (like kubectl's),
// easy to read and to cut with awk.
func newTable(w io.Writer, header ...any) table.Writer {
	t := table.NewWriter()
	t.SetOutputMirror(w)
	style := table.StyleDefault
	style.Name = "gregor"
	style.Options = table.Options{}
	style.Box.PaddingLeft = ""
	style.Box.PaddingRight = "  "
	style.Format.Header = text.FormatUpper
	t.SetStyle(style)
	t.AppendHeader(table.Row(header))
	return t
}

// alignRight right-aligns the given 1-based columns (numbers that are
// printed as strings, such as offsets that may be "-").
func alignRight(t table.Writer, cols ...int) {
	cfg := make([]table.ColumnConfig, 0, len(cols))
	for _, c := range cols {
		cfg = append(cfg, table.ColumnConfig{Number: c, Align: text.AlignRight})
	}
	t.SetColumnConfigs(cfg)
}

// renderTable prints t with trailing spaces trimmed from every line.
func renderTable(w io.Writer, t table.Writer) {
	t.SetOutputMirror(nil)
	for line := range strings.Lines(t.Render()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
}

// tableView is how a command prints its results without -o json: a table
// with header, the right-aligned 1-based columns right, and a row per result.
type tableView[T any] struct {
	header []any
	right  []int
	row    func(T) []any
}

// print writes rows as a JSON array (-o json) or as the table.
func (v tableView[T]) print(w io.Writer, format string, rows []T) error {
	if format == "json" {
		return writeJSON(w, rows)
	}
	t := newTable(w, v.header...)
	if len(v.right) > 0 {
		alignRight(t, v.right...)
	}
	for _, r := range rows {
		t.AppendRow(v.row(r))
	}
	renderTable(w, t)
	return nil
}

// collect asks one for the result of each key (topic, group) of an admin
// call, in order, and counts those that failed.
func collect[T any](keys []string, one func(key string) (T, error)) ([]T, failures) {
	out := make([]T, 0, len(keys))
	var failed failures
	for _, k := range keys {
		r, err := one(k)
		failed.add(err)
		out = append(out, r)
	}
	return out, failed
}

// errNoAnswer is the result of an item the broker left out of its answer.
var errNoAnswer = errors.New("no answer from the broker")

// printDocuments writes docs as a JSON array (-o json), or each with print,
// a blank line between two.
func printDocuments[T any](w io.Writer, format string, docs []T, print func(T)) error {
	if format == "json" {
		return writeJSON(w, docs)
	}
	for i, d := range docs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		print(d)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// errString is err's text, or "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// withMessage joins a Kafka error and the broker's optional message, which
// replaces the error code's generic description.
func withMessage(err error, msg string) error {
	if err == nil || msg == "" || strings.Contains(err.Error(), msg) {
		return err
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return &brokerError{code: ke, msg: msg}
	}
	return fmt.Errorf("%w: %s", err, msg)
}

// brokerError is a Kafka error code with the broker's own message.
type brokerError struct {
	code *kerr.Error
	msg  string
}

func (e *brokerError) Error() string { return e.code.Message + ": " + e.msg }
func (e *brokerError) Unwrap() error { return e.code }

// failures counts failed items so a command can exit non-zero after
// printing every result.
type failures int

func (f *failures) add(err error) {
	if err != nil {
		*f++
	}
}

func (f failures) err(what string) error {
	if f == 0 {
		return nil
	}
	return fmt.Errorf("%d %s failed", int(f), what)
}

// topicPartition is a TOPIC or TOPIC/PARTITION argument. '/' cannot occur
// in a Kafka topic name, so the split is unambiguous.
type topicPartition struct {
	topic     string
	partition int32 // -1: every partition
}

func parseTopicPartition(s string) (topicPartition, error) {
	topic, part, ok := strings.Cut(s, "/")
	if topic == "" {
		return topicPartition{}, fmt.Errorf("%q: want TOPIC or TOPIC/PARTITION", s)
	}
	if !ok {
		return topicPartition{topic: topic, partition: -1}, nil
	}
	p, err := strconv.ParseInt(part, 10, 32)
	if err != nil || p < 0 {
		return topicPartition{}, fmt.Errorf("%q: partition %q is not a partition number", s, part)
	}
	return topicPartition{topic: topic, partition: int32(p)}, nil
}

func (tp topicPartition) includes(p int32) bool { return tp.partition < 0 || tp.partition == p }

// topicsSession is a session for a command's TOPIC[/PARTITION] arguments,
// with the metadata of the topics they name (of every topic when none).
type topicsSession struct {
	session
	tps    []topicPartition
	topics []string
	tds    kadm.TopicDetails
}

// connectTopics parses args, connects and describes the named topics.
func (f *connFlags) connectTopics(cmd *cobra.Command, args []string) (topicsSession, func(), error) {
	tps, topics, err := parseTopicPartitions(args)
	if err != nil {
		return topicsSession{}, nil, err
	}
	s, end, err := f.connect(cmd)
	if err != nil {
		return topicsSession{}, nil, err
	}
	tds, err := describeTopics(s.ctx, s.adm, topics...)
	if err != nil {
		end()
		return topicsSession{}, nil, err
	}
	return topicsSession{session: s, tps: tps, topics: topics, tds: tds}, end, nil
}

// named reports whether an argument names partition p of topic t.
func (s *topicsSession) named(t string, p int32) bool {
	return slices.ContainsFunc(s.tps, func(tp topicPartition) bool { return tp.topic == t && tp.includes(p) })
}

// parseKeyValues turns repeated key=value flags into a map.
func parseKeyValues(flag string, kvs []string) (map[string]*string, error) {
	m := make(map[string]*string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if k = strings.TrimSpace(k); !ok || k == "" {
			return nil, fmt.Errorf("--%s %q: want key=value", flag, kv)
		}
		m[k] = &v
	}
	return m, nil
}

// describeTopics returns the metadata of the named topics, failing if any
// is missing.
func describeTopics(ctx context.Context, adm *kadm.Client, topics ...string) (kadm.TopicDetails, error) {
	tds, err := adm.ListTopicsWithInternal(ctx, topics...)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, t := range topics {
		td, ok := tds[t]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("topic %s: not in metadata", t))
		case td.Err != nil:
			errs = append(errs, fmt.Errorf("topic %s: %w", t, td.Err))
		}
	}
	return tds, errors.Join(errs...)
}

// completeWith offers what list finds for shell completion, asking the
// brokers of the -b flag or GREGOR_BROKERS. It gives up quickly when no
// broker answers.
func completeWith(f *connFlags, list func(ctx context.Context, adm *kadm.Client, toComplete string) ([]string, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		cl, adm, err := f.clients()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		out, _ := list(ctx, adm, toComplete)
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeTopics offers the cluster's topic names, and with withPartitions
// TOPIC/PARTITION too.
func completeTopics(f *connFlags, withPartitions bool) cobra.CompletionFunc {
	return completeWith(f, func(ctx context.Context, adm *kadm.Client, toComplete string) ([]string, error) {
		tds, err := adm.ListTopics(ctx)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, td := range tds.Sorted() {
			if !strings.HasPrefix(td.Topic, toComplete) && !strings.HasPrefix(toComplete, td.Topic+"/") {
				continue
			}
			out = append(out, td.Topic)
			if withPartitions {
				for _, p := range td.Partitions.Numbers() {
					out = append(out, fmt.Sprintf("%s/%d", td.Topic, p))
				}
			}
		}
		return out, nil
	})
}

// retryRetriable calls fn until it succeeds, fails for good, or ctx ends.
// Group and coordinator requests answer COORDINATOR_LOAD_IN_PROGRESS or
// COORDINATOR_NOT_AVAILABLE for a while after a broker starts; kgo
// retries requests, not errors inside a response body.
func retryRetriable[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	backoff := 20 * time.Millisecond
	for {
		v, err := fn()
		if err == nil || !kerr.IsRetriable(err) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// checkPartitions fails for a TOPIC/PARTITION argument naming a partition
// its topic does not have.
func checkPartitions(tds kadm.TopicDetails, tps []topicPartition) error {
	for _, tp := range tps {
		if _, ok := tds[tp.topic].Partitions[tp.partition]; tp.partition >= 0 && !ok {
			return fmt.Errorf("topic %s has no partition %d", tp.topic, tp.partition)
		}
	}
	return nil
}

// parseTopicPartitions parses TOPIC[/PARTITION] arguments and also returns
// the distinct topics they name, in order.
func parseTopicPartitions(args []string) ([]topicPartition, []string, error) {
	var tps []topicPartition
	var topics []string
	for _, a := range args {
		tp, err := parseTopicPartition(a)
		if err != nil {
			return nil, nil, err
		}
		tps = append(tps, tp)
		if !slices.Contains(topics, tp.topic) {
			topics = append(topics, tp.topic)
		}
	}
	return tps, topics, nil
}
