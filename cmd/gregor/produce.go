package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// producedPartition summarises what one produce run wrote to a partition.
type producedPartition struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Records     int64  `json:"records"`
	FirstOffset int64  `json:"first_offset"`
	LastOffset  int64  `json:"last_offset"`
}

// produce is the `produce` command.
type produce struct {
	f           connFlags
	keyDelim    string
	format      string
	headers     []string
	partition   int32
	nullEmpty   bool
	acks        string
	compression string
}

func produceCmd() *cobra.Command {
	o := &produce{}
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Produce records read from stdin: one per line, or by a kcat-style format",
		Long: `Produce records read from standard input, one per line by default.

  -K DELIM     each line is KEY DELIM VALUE (like kcat -K)
  -Z           an empty key or value is sent as null (like kcat -Z): with -K,
               "user-7;" writes a tombstone for key user-7
  -H k=v       add a header to every record (repeatable)
  -f FORMAT    parse input by a format instead: %k key, %v value, %T timestamp
               in ms, %p partition, %h headers as k=v,k=v; each directive runs
               up to the literal text after it, and the format ends with the
               record terminator. Escapes: \n \r \t \0 \\, and %% for %.

Records are produced with acks=all and idempotence (unless --acks says
otherwise); keyed records are partitioned as the Java client does.`,
		Example: `  printf 'a\nb\n' | gregor produce orders
  printf 'user-1;{"n":1}\nuser-1;\n' | gregor produce users -K ';' -Z
  printf '1|k|v|1700000000000\n' | gregor produce orders -f '%p|%k|%v|%T\n'`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTopics(&o.f, false),
		RunE:              o.run,
	}
	o.f.register(cmd)
	fs := cmd.Flags()
	fs.StringVarP(&o.keyDelim, "key-delimiter", "K", "", "split each line into key and value at the first DELIM")
	fs.StringVarP(&o.format, "format", "f", "", "input format (see above); default %v\\n")
	fs.StringArrayVarP(&o.headers, "header", "H", nil, "header key=value on every record (repeatable)")
	fs.Int32VarP(&o.partition, "partition", "p", -1, "produce to this partition (-1: by key, or sticky for null keys)")
	fs.BoolVarP(&o.nullEmpty, "null-empty", "Z", false, "send an empty key or value as null (tombstones)")
	fs.StringVar(&o.acks, "acks", "all", "all, 1 or 0")
	fs.StringVar(&o.compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	return cmd
}

// reader is the record reader the flags ask for, and the headers every
// record gets.
func (o *produce) reader(in io.Reader) (*recordReader, []kgo.RecordHeader, error) {
	format := o.format
	if format != "" && o.keyDelim != "" {
		return nil, nil, errors.New("give -K or -f, not both")
	}
	switch {
	case o.keyDelim != "":
		format = "%k" + strings.ReplaceAll(o.keyDelim, "%", "%%") + "%v\\n"
	case format == "":
		format = "%v\\n"
	}
	hdrs, err := parseKeyValues("header", o.headers)
	if err != nil {
		return nil, nil, err
	}
	var recHeaders []kgo.RecordHeader
	for _, kv := range o.headers {
		k, _, _ := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		recHeaders = append(recHeaders, kgo.RecordHeader{Key: k, Value: []byte(*hdrs[k])})
	}
	rr, err := newRecordReader(format, in, o.nullEmpty)
	return rr, recHeaders, err
}

func (o *produce) run(cmd *cobra.Command, args []string) error {
	topic := args[0]
	rr, headers, err := o.reader(cmd.InOrStdin())
	if err != nil {
		return err
	}
	opts, err := producerOpts(o.acks, o.compression)
	if err != nil {
		return err
	}
	opts = append(opts, kgo.DefaultProduceTopic(topic))
	if o.partition >= 0 || rr.has('p') {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, _, err := o.f.clients(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	// Input may stream for a long time (tail -f | gregor produce), so no
	// --timeout here; kgo's delivery timeout counts from the record's
	// timestamp, which %T may set in the past.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var sum produceSummary
	readErr := o.produceAll(ctx, cl, rr, topic, headers, &sum)
	if err := sum.print(cmd.OutOrStdout(), o.f.output); err != nil {
		return err
	}
	switch {
	case sum.failed > 0 && readErr != nil:
		return fmt.Errorf("%d records failed (first: %w); input: %w", sum.failed, sum.firstErr, readErr)
	case sum.failed > 0:
		return fmt.Errorf("%d records failed, first: %w", sum.failed, sum.firstErr)
	case readErr != nil:
		return fmt.Errorf("reading input: %w (records before it were produced)", readErr)
	}
	return nil
}

// produceAll produces every record rr reads until the end of input or a bad
// record, and waits for them all; it returns the input's error.
func (o *produce) produceAll(ctx context.Context, cl *kgo.Client, rr *recordReader, topic string, headers []kgo.RecordHeader,
	sum *produceSummary) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	done := func(r *kgo.Record, err error) {
		defer wg.Done()
		sum.add(r, err)
	}
	for {
		rec, err := rr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		rec.Topic = topic
		rec.Headers = append(slices.Clone(headers), rec.Headers...)
		if o.partition >= 0 {
			rec.Partition = o.partition
		} else if rr.has('p') && rec.Partition < 0 {
			return fmt.Errorf("record %d: no partition", rr.record)
		}
		wg.Add(1)
		cl.Produce(ctx, rec, done)
	}
}

// produceSummary counts what a produce run wrote, per partition, and what
// failed; kgo's callbacks add to it concurrently.
type produceSummary struct {
	mu       sync.Mutex
	parts    map[int32]*producedPartition
	failed   int64
	firstErr error
}

func (s *produceSummary) add(r *kgo.Record, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.failed++; s.firstErr == nil {
			s.firstErr = err
		}
		return
	}
	if s.parts == nil {
		s.parts = map[int32]*producedPartition{}
	}
	p := s.parts[r.Partition]
	if p == nil {
		p = &producedPartition{Topic: r.Topic, Partition: r.Partition, FirstOffset: r.Offset}
		s.parts[r.Partition] = p
	}
	p.Records++
	p.FirstOffset = min(p.FirstOffset, r.Offset)
	p.LastOffset = max(p.LastOffset, r.Offset)
}

var producedPartitions = tableView[producedPartition]{
	header: []any{"topic", "partition", "records", "first-offset", "last-offset"},
	right:  []int{4, 5},
	row: func(s producedPartition) []any {
		return []any{s.Topic, s.Partition, s.Records, formatOffset(s.FirstOffset), formatOffset(s.LastOffset)}
	},
}

// print shows the partitions written to, by partition (no table when none).
func (s *produceSummary) print(w io.Writer, format string) error {
	out := []producedPartition{}
	for _, p := range s.parts {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b producedPartition) int { return int(a.Partition - b.Partition) })
	if format != "json" && len(out) == 0 {
		return nil
	}
	return producedPartitions.print(w, format, out)
}
