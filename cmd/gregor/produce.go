package main

import (
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

func produceCmd() *cobra.Command {
	var (
		f           connFlags
		keyDelim    string
		format      string
		headers     []string
		partition   int32
		nullEmpty   bool
		acks        string
		compression string
	)
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
		ValidArgsFunction: completeTopics(&f, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			if format != "" && keyDelim != "" {
				return errors.New("give -K or -f, not both")
			}
			switch {
			case keyDelim != "":
				format = "%k" + strings.ReplaceAll(keyDelim, "%", "%%") + "%v\\n"
			case format == "":
				format = "%v\\n"
			}
			hdrs, err := parseKeyValues("header", headers)
			if err != nil {
				return err
			}
			var recHeaders []kgo.RecordHeader
			for _, kv := range headers {
				k, _, _ := strings.Cut(kv, "=")
				k = strings.TrimSpace(k)
				recHeaders = append(recHeaders, kgo.RecordHeader{Key: k, Value: []byte(*hdrs[k])})
			}
			rr, err := newRecordReader(format, cmd.InOrStdin(), nullEmpty)
			if err != nil {
				return err
			}
			opts := []kgo.Opt{kgo.DefaultProduceTopic(topic)}
			ackOpts, err := acksOpts(acks)
			if err != nil {
				return err
			}
			opts = append(opts, ackOpts...)
			codec, err := parseCodec(compression)
			if err != nil {
				return err
			}
			opts = append(opts, kgo.ProducerBatchCompression(codec))
			if partition >= 0 || rr.has('p') {
				opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			}
			cl, _, err := f.clients(opts...)
			if err != nil {
				return err
			}
			defer cl.Close()
			// Input may stream for a long time (tail -f | gregor produce),
			// so no --timeout here; kgo's delivery timeout counts from the
			// record's timestamp, which %T may set in the past.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()

			var (
				mu       sync.Mutex
				summary  = map[int32]*producedPartition{}
				failed   int64
				firstErr error
				wg       sync.WaitGroup
			)
			done := func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if failed++; firstErr == nil {
						firstErr = err
					}
					return
				}
				s := summary[r.Partition]
				if s == nil {
					s = &producedPartition{Topic: r.Topic, Partition: r.Partition, FirstOffset: r.Offset}
					summary[r.Partition] = s
				}
				s.Records++
				s.FirstOffset = min(s.FirstOffset, r.Offset)
				s.LastOffset = max(s.LastOffset, r.Offset)
			}
			var readErr error
			for {
				rec, err := rr.next()
				if err == io.EOF {
					break
				}
				if err != nil {
					readErr = err
					break
				}
				rec.Topic = topic
				rec.Headers = append(slices.Clone(recHeaders), rec.Headers...)
				if partition >= 0 {
					rec.Partition = partition
				} else if rr.has('p') && rec.Partition < 0 {
					readErr = fmt.Errorf("record %d: no partition", rr.record)
					break
				}
				wg.Add(1)
				cl.Produce(ctx, rec, done)
			}
			wg.Wait()

			out := []producedPartition{}
			for _, s := range summary {
				out = append(out, *s)
			}
			slices.SortFunc(out, func(a, b producedPartition) int { return int(a.Partition - b.Partition) })
			w := cmd.OutOrStdout()
			if f.output == "json" {
				if err := writeJSON(w, out); err != nil {
					return err
				}
			} else if len(out) > 0 {
				t := newTable(w, "topic", "partition", "records", "first-offset", "last-offset")
				for _, s := range out {
					first, last := formatOffset(s.FirstOffset), formatOffset(s.LastOffset)
					t.AppendRow([]any{s.Topic, s.Partition, s.Records, first, last})
				}
				alignRight(t, 4, 5)
				renderTable(w, t)
			}
			switch {
			case failed > 0 && readErr != nil:
				return fmt.Errorf("%d records failed (first: %w); input: %w", failed, firstErr, readErr)
			case failed > 0:
				return fmt.Errorf("%d records failed, first: %w", failed, firstErr)
			case readErr != nil:
				return fmt.Errorf("reading input: %w (records before it were produced)", readErr)
			}
			return nil
		},
	}
	f.register(cmd)
	fs := cmd.Flags()
	fs.StringVarP(&keyDelim, "key-delimiter", "K", "", "split each line into key and value at the first DELIM")
	fs.StringVarP(&format, "format", "f", "", "input format (see above); default %v\\n")
	fs.StringArrayVarP(&headers, "header", "H", nil, "header key=value on every record (repeatable)")
	fs.Int32VarP(&partition, "partition", "p", -1, "produce to this partition (-1: by key, or sticky for null keys)")
	fs.BoolVarP(&nullEmpty, "null-empty", "Z", false, "send an empty key or value as null (tombstones)")
	fs.StringVar(&acks, "acks", "all", "all, 1 or 0")
	fs.StringVar(&compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	return cmd
}
