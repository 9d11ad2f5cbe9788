package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func topicCmd() *cobra.Command {
	var f connFlags
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe, reconfigure, grow, trim and delete topics",
		Long: `Topic administration over the Kafka protocol (works against any Kafka
cluster as well as Gregor).`,
	}
	f.register(cmd)
	cmd.AddCommand(topicCreateCmd(&f), topicListCmd(&f), topicDescribeCmd(&f), topicDeleteCmd(&f),
		topicAlterConfigCmd(&f), topicAddPartitionsCmd(&f), topicTrimCmd(&f))
	return cmd
}

// topicIDString prints a topic ID as Kafka's tools do (URL-safe base64,
// no padding).
func topicIDString(id kadm.TopicID) string {
	if id == (kadm.TopicID{}) {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// topicResult is the outcome of one topic operation.
type topicResult struct {
	Topic string `json:"topic"`
	Error string `json:"error,omitempty"`
}

func printTopicResults(w io.Writer, format string, rs []topicResult) error {
	if format == "json" {
		return writeJSON(w, rs)
	}
	t := newTable(w, "topic", "result")
	for _, r := range rs {
		res := "ok"
		if r.Error != "" {
			res = r.Error
		}
		t.AppendRow([]any{r.Topic, res})
	}
	renderTable(w, t)
	return nil
}

func topicCreateCmd(f *connFlags) *cobra.Command {
	var (
		partitions   int32
		replicas     int16
		configs      []string
		validateOnly bool
	)
	cmd := &cobra.Command{
		Use:   "create TOPIC...",
		Short: "Create topics",
		Example: `  gregor topic create orders -p 6 -c cleanup.policy=compact -c min.cleanable.dirty.ratio=0.1
  gregor topic create a b c --validate-only`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := parseKeyValues("config", configs)
			if err != nil {
				return err
			}
			cl, adm, err := f.clients()
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := f.context(cmd)
			defer cancel()
			create := adm.CreateTopics
			if validateOnly {
				create = adm.ValidateCreateTopics
			}
			resp, err := create(ctx, partitions, replicas, cfg, args...)
			if err != nil {
				return err
			}
			type created struct {
				Topic             string `json:"topic"`
				ID                string `json:"id,omitempty"`
				Partitions        int32  `json:"partitions"`
				ReplicationFactor int16  `json:"replication_factor"`
				ValidateOnly      bool   `json:"validate_only,omitempty"`
				Error             string `json:"error,omitempty"`
			}
			var out []created
			var failed failures
			for _, topic := range args {
				r, ok := resp[topic]
				c := created{Topic: topic, ValidateOnly: validateOnly}
				if !ok {
					c.Error = "no answer from the broker"
					failed++
				} else {
					err := withMessage(r.Err, r.ErrMessage)
					failed.add(err)
					c.ID, c.Partitions, c.ReplicationFactor, c.Error = topicIDString(r.ID), r.NumPartitions, r.ReplicationFactor, errString(err)
				}
				out = append(out, c)
			}
			w := cmd.OutOrStdout()
			if f.output == "json" {
				if err := writeJSON(w, out); err != nil {
					return err
				}
			} else {
				t := newTable(w, "topic", "id", "partitions", "replication-factor", "result")
				alignRight(t, 3, 4)
				for _, c := range out {
					res := "created"
					if validateOnly {
						res = "valid"
					}
					if c.Error != "" {
						res = c.Error
					}
					parts, rf := "-", "-"
					if c.Error == "" {
						parts, rf = fmt.Sprint(c.Partitions), fmt.Sprint(c.ReplicationFactor)
					}
					t.AppendRow([]any{c.Topic, c.ID, parts, rf, res})
				}
				renderTable(w, t)
			}
			return failed.err("topic creations")
		},
	}
	fs := cmd.Flags()
	fs.Int32VarP(&partitions, "partitions", "p", -1, "partitions (-1: the broker's num.partitions)")
	fs.Int16VarP(&replicas, "replication-factor", "r", -1, "replicas per partition (-1: the broker's default.replication.factor)")
	fs.StringArrayVarP(&configs, "config", "c", nil, "topic config key=value (repeatable)")
	fs.BoolVar(&validateOnly, "validate-only", false, "ask the controller to validate without creating")
	return cmd
}

func topicListCmd(f *connFlags) *cobra.Command {
	var internal bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List topics with their partition count and replication factor",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, adm, err := f.clients()
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := f.context(cmd)
			defer cancel()
			tds, err := adm.ListTopicsWithInternal(ctx)
			if err != nil {
				return err
			}
			type listed struct {
				Topic             string `json:"topic"`
				ID                string `json:"id,omitempty"`
				Partitions        int    `json:"partitions"`
				ReplicationFactor int    `json:"replication_factor"`
				UnderReplicated   int    `json:"under_replicated_partitions"`
				Internal          bool   `json:"internal,omitempty"`
				Error             string `json:"error,omitempty"`
			}
			out := []listed{}
			for _, td := range tds.Sorted() {
				if td.IsInternal && !internal {
					continue
				}
				l := listed{Topic: td.Topic, ID: topicIDString(td.ID), Partitions: len(td.Partitions),
					ReplicationFactor: td.Partitions.NumReplicas(), Internal: td.IsInternal, Error: errString(td.Err)}
				for _, pd := range td.Partitions {
					if len(pd.ISR) < len(pd.Replicas) {
						l.UnderReplicated++
					}
				}
				out = append(out, l)
			}
			w := cmd.OutOrStdout()
			if f.output == "json" {
				return writeJSON(w, out)
			}
			t := newTable(w, "topic", "partitions", "replication-factor", "under-replicated", "id")
			for _, l := range out {
				name := l.Topic
				if l.Internal {
					name += " (internal)"
				}
				if l.Error != "" {
					name += " (" + l.Error + ")"
				}
				t.AppendRow([]any{name, l.Partitions, l.ReplicationFactor, l.UnderReplicated, l.ID})
			}
			renderTable(w, t)
			return nil
		},
	}
	cmd.Flags().BoolVar(&internal, "internal", false, "include internal topics (__consumer_offsets, __transaction_state)")
	return cmd
}

// configEntry is one topic config as DescribeConfigs reports it.
type configEntry struct {
	Name      string  `json:"name"`
	Value     *string `json:"value"`
	Source    string  `json:"source"`
	Sensitive bool    `json:"sensitive,omitempty"`
}

// topicDescription is `topic describe`'s JSON document for one topic.
type topicDescription struct {
	Topic             string            `json:"topic"`
	ID                string            `json:"id,omitempty"`
	Internal          bool              `json:"internal,omitempty"`
	Partitions        int               `json:"partitions"`
	ReplicationFactor int               `json:"replication_factor"`
	Configs           []configEntry     `json:"configs"`
	PartitionStates   []*partitionState `json:"partition_states"`
	Errors            []string          `json:"errors,omitempty"`
}

func topicDescribeCmd(f *connFlags) *cobra.Command {
	var overrides bool
	cmd := &cobra.Command{
		Use:   "describe TOPIC[/PARTITION]...",
		Short: "Show a topic's configs (with their source) and each partition's replicas, offsets and size",
		Long: `Describe topics: every config with the source of its value (DYNAMIC_TOPIC_CONFIG
for a per-topic override, STATIC_BROKER_CONFIG or DYNAMIC_*_BROKER_CONFIG when
it comes from the broker, DEFAULT_CONFIG for Kafka's default), and per
partition:

  LEADER, EPOCH       the leader broker and its leader epoch
  REPLICAS, ISR       the assigned replicas and the in-sync replicas
  LOG-START           log start offset: the first offset still in the log
                      (ListOffsets earliest); retention and trim move it
  LSO                 last stable offset: read_committed consumers read up to
                      here (ListOffsets latest, isolation read_committed)
  HW                  high watermark: read_uncommitted consumers read up to
                      here (ListOffsets latest, isolation read_uncommitted)
  LEO                 the leader's log end offset: the offset its next record
                      gets. Kafka shows it to clients only through ListOffsets
                      with the debugging replica id (-2), which each replica
                      answers with its own log end offset; REPLICA-LEOS lists
                      them when there are several. "-" when a broker would not
                      say. Records in [HW, LEO) are not yet on every ISR member.
  SIZE                the leader's log size on disk (DescribeLogDirs)

Always log start ≤ LSO ≤ HW ≤ LEO. -o json adds per-replica sizes.`,
		Example: `  gregor topic describe orders
  gregor topic describe orders/3 --overrides
  gregor topic describe orders -o json | jq '.[0].partition_states'`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTopics(f, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			tps, topics, err := parseTopicPartitions(args)
			if err != nil {
				return err
			}
			cl, adm, err := f.clients()
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := f.context(cmd)
			defer cancel()
			tds, err := describeTopics(ctx, adm, topics...)
			if err != nil {
				return err
			}
			keep := func(t string, p int32) bool {
				return slices.ContainsFunc(tps, func(tp topicPartition) bool { return tp.topic == t && tp.includes(p) })
			}
			parts, err := gatherPartitions(ctx, cl, adm, tds, keep, true)
			if err != nil {
				return err
			}
			rcs, cerr := adm.DescribeTopicConfigs(ctx, topics...)
			var out []topicDescription
			for _, topic := range topics {
				td := tds[topic]
				d := topicDescription{Topic: topic, ID: topicIDString(td.ID), Internal: td.IsInternal,
					Partitions: len(td.Partitions), ReplicationFactor: td.Partitions.NumReplicas(), Configs: []configEntry{},
					PartitionStates: []*partitionState{}}
				for _, ps := range parts {
					if ps.Topic == topic {
						d.PartitionStates = append(d.PartitionStates, ps)
					}
				}
				if cerr != nil {
					d.Errors = append(d.Errors, fmt.Sprintf("configs: %v", cerr))
				} else if rc, err := rcs.On(topic, nil); err != nil {
					d.Errors = append(d.Errors, fmt.Sprintf("configs: %v", err))
				} else if rc.Err != nil {
					d.Errors = append(d.Errors, fmt.Sprintf("configs: %v", withMessage(rc.Err, rc.ErrMessage)))
				} else {
					for _, c := range rc.Configs {
						if overrides && c.Source != kmsg.ConfigSourceDynamicTopicConfig {
							continue
						}
						d.Configs = append(d.Configs, configEntry{Name: c.Key, Value: c.Value, Source: c.Source.String(), Sensitive: c.Sensitive})
					}
					slices.SortFunc(d.Configs, func(a, b configEntry) int { return strings.Compare(a.Name, b.Name) })
				}
				out = append(out, d)
			}
			w := cmd.OutOrStdout()
			if f.output == "json" {
				return writeJSON(w, out)
			}
			for i, d := range out {
				if i > 0 {
					fmt.Fprintln(w)
				}
				printTopicDescription(w, cmd.ErrOrStderr(), d)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&overrides, "overrides", false, "show only configs set on the topic (DYNAMIC_TOPIC_CONFIG)")
	return cmd
}

func printTopicDescription(w, errw io.Writer, d topicDescription) {
	internal := ""
	if d.Internal {
		internal = "  (internal)"
	}
	fmt.Fprintf(w, "Topic: %s  ID: %s  Partitions: %d  Replication factor: %d%s\n\n", d.Topic, d.ID, d.Partitions, d.ReplicationFactor, internal)
	t := newTable(w, "config", "value", "source")
	for _, c := range d.Configs {
		v := "null"
		switch {
		case c.Sensitive:
			v = "(sensitive)"
		case c.Value != nil && *c.Value == "":
			v = `""`
		case c.Value != nil:
			v = *c.Value
		}
		t.AppendRow([]any{c.Name, v, c.Source})
	}
	if len(d.Configs) > 0 {
		renderTable(w, t)
		fmt.Fprintln(w)
	}
	multi := slices.ContainsFunc(d.PartitionStates, func(ps *partitionState) bool { return len(ps.Replicas) > 1 })
	header := []any{"partition", "leader", "epoch", "replicas", "isr", "log-start", "lso", "hw", "leo", "size"}
	if multi {
		header = append(header, "replica-leos")
	}
	t = newTable(w, header...)
	alignRight(t, 6, 7, 8, 9, 10)
	var errs []string
	for _, ps := range d.PartitionStates {
		row := []any{ps.Partition, ps.Leader, ps.LeaderEpoch, formatBrokers(ps.Replicas), formatBrokers(ps.ISR),
			formatOffset(ps.LogStartOffset), formatOffset(ps.LastStableOffset), formatOffset(ps.HighWatermark),
			formatOptOffset(ps.LogEndOffset), humanBytes(ps.SizeBytes)}
		if multi {
			var leos []string
			for _, rs := range ps.ReplicaStates {
				leos = append(leos, fmt.Sprintf("%d:%s", rs.Broker, formatOptOffset(rs.LogEndOffset)))
			}
			row = append(row, strings.Join(leos, ","))
		}
		t.AppendRow(row)
		for _, e := range ps.Errors {
			errs = append(errs, fmt.Sprintf("partition %d: %s", ps.Partition, e))
		}
		for _, rs := range ps.ReplicaStates {
			if rs.Error != "" {
				errs = append(errs, fmt.Sprintf("partition %d replica %d: log end offset: %s", ps.Partition, rs.Broker, rs.Error))
			}
		}
	}
	renderTable(w, t)
	for _, e := range append(d.Errors, errs...) {
		fmt.Fprintln(errw, "warning:", e)
	}
}

func topicDeleteCmd(f *connFlags) *cobra.Command {
	return &cobra.Command{
		Use:               "delete TOPIC...",
		Short:             "Delete topics",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTopics(f, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, adm, err := f.clients()
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := f.context(cmd)
			defer cancel()
			resp, err := adm.DeleteTopics(ctx, args...)
			if err != nil {
				return err
			}
			var out []topicResult
			var failed failures
			for _, topic := range args {
				r, ok := resp[topic]
				res := topicResult{Topic: topic}
				if !ok {
					res.Error = "no answer from the broker"
					failed++
				} else {
					err := withMessage(r.Err, r.ErrMessage)
					failed.add(err)
					res.Error = errString(err)
				}
				out = append(out, res)
			}
			if err := printTopicResults(cmd.OutOrStdout(), f.output, out); err != nil {
				return err
			}
			return failed.err("topic deletions")
		},
	}
}

func topicAlterConfigCmd(f *connFlags) *cobra.Command {
	var (
		sets, deletes, appends, subtracts []string
		validateOnly                      bool
	)
	cmd := &cobra.Command{
		Use:   "alter-config TOPIC...",
		Short: "Change topic configs incrementally (IncrementalAlterConfigs)",
		Long: `Change topic configs with IncrementalAlterConfigs: --set replaces a value,
--delete removes the topic's override (the broker's value applies again),
--append and --subtract edit list configs such as cleanup.policy.`,
		Example: `  gregor topic alter-config orders --set retention.ms=3600000 --delete segment.bytes
  gregor topic alter-config orders --append cleanup.policy=compact`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTopics(f, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			var alters []kadm.AlterConfig
			for _, op := range []struct {
				flag string
				kvs  []string
				op   kadm.IncrementalOp
			}{{"set", sets, kadm.SetConfig}, {"append", appends, kadm.AppendConfig}, {"subtract", subtracts, kadm.SubtractConfig}} {
				m, err := parseKeyValues(op.flag, op.kvs)
				if err != nil {
					return err
				}
				for _, kv := range op.kvs {
					k, _, _ := strings.Cut(kv, "=")
					k = strings.TrimSpace(k)
					alters = append(alters, kadm.AlterConfig{Op: op.op, Name: k, Value: m[k]})
				}
			}
			for _, k := range deletes {
				alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
			}
			if len(alters) == 0 {
				return fmt.Errorf("nothing to change: give --set, --delete, --append or --subtract")
			}
			cl, adm, err := f.clients()
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := f.context(cmd)
			defer cancel()
			alter := adm.AlterTopicConfigs
			if validateOnly {
				alter = adm.ValidateAlterTopicConfigs
			}
			resp, err := alter(ctx, alters, args...)
			if err != nil {
				return err
			}
			var out []topicResult
			var failed failures
			for _, topic := range args {
				res := topicResult{Topic: topic}
				r, err := resp.On(topic, nil)
				if err == nil {
					err = withMessage(r.Err, r.ErrMessage)
				}
				failed.add(err)
				res.Error = errString(err)
				out = append(out, res)
			}
			if err := printTopicResults(cmd.OutOrStdout(), f.output, out); err != nil {
				return err
			}
			return failed.err("config changes")
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&sets, "set", nil, "set key=value (repeatable)")
	fs.StringArrayVar(&deletes, "delete", nil, "remove the topic's value for key (repeatable)")
	fs.StringArrayVar(&appends, "append", nil, "append value to list config key=value (repeatable)")
	fs.StringArrayVar(&subtracts, "subtract", nil, "remove value from list config key=value (repeatable)")
	fs.BoolVar(&validateOnly, "validate-only", false, "validate without applying")
	return cmd
}

func topicAddPartitionsCmd(f *connFlags) *cobra.Command {
	var (
		add, total   int
		validateOnly bool
	)
	cmd := &cobra.Command{
		Use:   "add-partitions TOPIC...",
		Short: "Add partitions to topics (CreatePartitions); partitions can never be removed",
		Example: `  gregor topic add-partitions orders --add 2
  gregor topic add-partitions orders --total 12`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTopics(f, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (add > 0) == (total > 0) {
				return fmt.Errorf("give exactly one of --add N or --total N")
			}
			cl, adm, err := f.clients()
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := f.context(cmd)
			defer cancel()
			var resp kadm.CreatePartitionsResponses
			switch {
			case add > 0 && validateOnly:
				resp, err = adm.ValidateCreatePartitions(ctx, add, args...)
			case add > 0:
				resp, err = adm.CreatePartitions(ctx, add, args...)
			case validateOnly:
				resp, err = adm.ValidateUpdatePartitions(ctx, total, args...)
			default:
				resp, err = adm.UpdatePartitions(ctx, total, args...)
			}
			if err != nil {
				return err
			}
			var out []topicResult
			var failed failures
			for _, topic := range args {
				res := topicResult{Topic: topic}
				r, err := resp.On(topic, nil)
				if err == nil {
					err = withMessage(r.Err, r.ErrMessage)
				}
				failed.add(err)
				res.Error = errString(err)
				out = append(out, res)
			}
			if err := printTopicResults(cmd.OutOrStdout(), f.output, out); err != nil {
				return err
			}
			return failed.err("partition additions")
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&add, "add", 0, "partitions to add")
	fs.IntVar(&total, "total", 0, "the partition count to grow to")
	fs.BoolVar(&validateOnly, "validate-only", false, "validate without applying")
	return cmd
}

func topicTrimCmd(f *connFlags) *cobra.Command {
	var before string
	cmd := &cobra.Command{
		Use:   "trim TOPIC[/PARTITION]... --before OFFSET",
		Short: "Delete records before an offset (DeleteRecords): moves the log start offset",
		Long: `Delete every record below --before by moving the partition's log start offset
there (DeleteRecords). Whole segments below it are removed from disk later;
consumers can no longer read below the new log start offset. --before hw
deletes everything up to the high watermark.`,
		Example: `  gregor topic trim orders/0 --before 1200
  gregor topic trim orders --before hw`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTopics(f, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			var offset int64
			switch before {
			case "":
				return fmt.Errorf("--before OFFSET is required (a number, or hw)")
			case "hw", "end":
				offset = -1
			default:
				o, err := strconv.ParseInt(before, 10, 64)
				if err != nil || o < 0 {
					return fmt.Errorf("--before %q: want an offset or hw", before)
				}
				offset = o
			}
			tps, topics, err := parseTopicPartitions(args)
			if err != nil {
				return err
			}
			cl, adm, err := f.clients()
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := f.context(cmd)
			defer cancel()
			tds, err := describeTopics(ctx, adm, topics...)
			if err != nil {
				return err
			}
			var req kadm.Offsets
			for _, tp := range tps {
				for _, p := range tds[tp.topic].Partitions.Numbers() {
					if tp.includes(p) {
						req.AddOffset(tp.topic, p, offset, -1)
					}
				}
				if _, ok := tds[tp.topic].Partitions[tp.partition]; tp.partition >= 0 && !ok {
					return fmt.Errorf("topic %s has no partition %d", tp.topic, tp.partition)
				}
			}
			resp, err := adm.DeleteRecords(ctx, req)
			if err != nil {
				return err
			}
			type trimmed struct {
				Topic          string `json:"topic"`
				Partition      int32  `json:"partition"`
				LogStartOffset int64  `json:"log_start_offset"`
				Error          string `json:"error,omitempty"`
			}
			out := []trimmed{}
			var failed failures
			req.Each(func(o kadm.Offset) {
				r, ok := resp.Lookup(o.Topic, o.Partition)
				t := trimmed{Topic: o.Topic, Partition: o.Partition, LogStartOffset: -1}
				switch {
				case !ok:
					t.Error = "no answer from the broker"
					failed++
				case r.Err != nil:
					t.Error = r.Err.Error()
					failed++
				default:
					t.LogStartOffset = r.LowWatermark
				}
				out = append(out, t)
			})
			slices.SortFunc(out, func(a, b trimmed) int {
				if c := strings.Compare(a.Topic, b.Topic); c != 0 {
					return c
				}
				return int(a.Partition - b.Partition)
			})
			w := cmd.OutOrStdout()
			if f.output == "json" {
				if err := writeJSON(w, out); err != nil {
					return err
				}
			} else {
				t := newTable(w, "topic", "partition", "log-start", "result")
				alignRight(t, 3)
				for _, o := range out {
					res := "ok"
					if o.Error != "" {
						res = o.Error
					}
					t.AppendRow([]any{o.Topic, o.Partition, formatOffset(o.LogStartOffset), res})
				}
				renderTable(w, t)
			}
			return failed.err("trims")
		},
	}
	cmd.Flags().StringVar(&before, "before", "", "the new log start offset: records below it are deleted (a number, or hw)")
	return cmd
}
