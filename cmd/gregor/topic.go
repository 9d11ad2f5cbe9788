package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/admin"
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

// topicResults is tableView of topicResult.
var topicResults = tableView[topicResult]{
	header: []any{"topic", "result"},
	row: func(r topicResult) []any {
		if r.Error != "" {
			return []any{r.Topic, r.Error}
		}
		return []any{r.Topic, "ok"}
	},
}

// printPerTopic prints the outcome of one admin call for each named topic,
// as answer gives it, and fails with what when any topic failed.
func printPerTopic(cmd *cobra.Command, format string, topics []string, what string, answer func(topic string) error) error {
	out, failed := collect(topics, func(topic string) (topicResult, error) {
		err := answer(topic)
		return topicResult{Topic: topic, Error: errString(err)}, err
	})
	if err := topicResults.print(cmd.OutOrStdout(), format, out); err != nil {
		return err
	}
	return failed.err(what)
}

// topicCreate is `topic create`.
type topicCreate struct {
	f            *connFlags
	partitions   int32
	replicas     int16
	configs      []string
	validateOnly bool
}

// createdTopic is one row of `topic create`.
type createdTopic struct {
	Topic             string `json:"topic"`
	ID                string `json:"id,omitempty"`
	Partitions        int32  `json:"partitions"`
	ReplicationFactor int16  `json:"replication_factor"`
	ValidateOnly      bool   `json:"validate_only,omitempty"`
	Error             string `json:"error,omitempty"`
}

func topicCreateCmd(f *connFlags) *cobra.Command {
	o := &topicCreate{f: f}
	cmd := &cobra.Command{
		Use:   "create TOPIC...",
		Short: "Create topics",
		Example: `  gregor topic create orders -p 6 -c cleanup.policy=compact -c min.cleanable.dirty.ratio=0.1
  gregor topic create a b c --validate-only`,
		Args: cobra.MinimumNArgs(1),
		RunE: o.run,
	}
	fs := cmd.Flags()
	fs.Int32VarP(&o.partitions, "partitions", "p", -1, "partitions (-1: the broker's num.partitions)")
	fs.Int16VarP(&o.replicas, "replication-factor", "r", -1, "replicas per partition (-1: the broker's default.replication.factor)")
	fs.StringArrayVarP(&o.configs, "config", "c", nil, "topic config key=value (repeatable)")
	fs.BoolVar(&o.validateOnly, "validate-only", false, "ask the controller to validate without creating")
	return cmd
}

func (o *topicCreate) run(cmd *cobra.Command, topics []string) error {
	cfg, err := parseKeyValues("config", o.configs)
	if err != nil {
		return err
	}
	s, end, err := o.f.connect(cmd)
	if err != nil {
		return err
	}
	defer end()
	create := s.adm.CreateTopics
	if o.validateOnly {
		create = s.adm.ValidateCreateTopics
	}
	resp, err := create(s.ctx, o.partitions, o.replicas, cfg, topics...)
	if err != nil {
		return err
	}
	out, failed := collect(topics, func(topic string) (createdTopic, error) {
		c := createdTopic{Topic: topic, ValidateOnly: o.validateOnly}
		r, ok := resp[topic]
		if !ok {
			c.Error = errNoAnswer.Error()
			return c, errNoAnswer
		}
		err := withMessage(r.Err, r.ErrMessage)
		c.ID, c.Partitions, c.ReplicationFactor, c.Error = topicIDString(r.ID), r.NumPartitions, r.ReplicationFactor, errString(err)
		return c, err
	})
	view := tableView[createdTopic]{
		header: []any{"topic", "id", "partitions", "replication-factor", "result"},
		right:  []int{3, 4},
		row: func(c createdTopic) []any {
			res, parts, rf := "created", "-", "-"
			if o.validateOnly {
				res = "valid"
			}
			if c.Error != "" {
				res = c.Error
			} else {
				parts, rf = fmt.Sprint(c.Partitions), fmt.Sprint(c.ReplicationFactor)
			}
			return []any{c.Topic, c.ID, parts, rf, res}
		},
	}
	if err := view.print(cmd.OutOrStdout(), o.f.output, out); err != nil {
		return err
	}
	return failed.err("topic creations")
}

// listedTopic is one row of `topic list`.
type listedTopic struct {
	Topic             string `json:"topic"`
	ID                string `json:"id,omitempty"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	UnderReplicated   int    `json:"under_replicated_partitions"`
	Internal          bool   `json:"internal,omitempty"`
	Error             string `json:"error,omitempty"`
}

var listedTopics = tableView[listedTopic]{
	header: []any{"topic", "partitions", "replication-factor", "under-replicated", "id"},
	row: func(l listedTopic) []any {
		name := l.Topic
		if l.Internal {
			name += " (internal)"
		}
		if l.Error != "" {
			name += " (" + l.Error + ")"
		}
		return []any{name, l.Partitions, l.ReplicationFactor, l.UnderReplicated, l.ID}
	},
}

func topicListCmd(f *connFlags) *cobra.Command {
	var internal bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List topics with their partition count and replication factor",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return topicList(cmd, f, internal)
		},
	}
	cmd.Flags().BoolVar(&internal, "internal", false, "include internal topics (__consumer_offsets, __transaction_state)")
	return cmd
}

func topicList(cmd *cobra.Command, f *connFlags, internal bool) error {
	s, end, err := f.connect(cmd)
	if err != nil {
		return err
	}
	defer end()
	tds, err := s.adm.ListTopicsWithInternal(s.ctx)
	if err != nil {
		return err
	}
	out := []listedTopic{}
	for _, td := range tds.Sorted() {
		if td.IsInternal && !internal {
			continue
		}
		l := listedTopic{Topic: td.Topic, ID: topicIDString(td.ID), Partitions: len(td.Partitions),
			ReplicationFactor: td.Partitions.NumReplicas(), Internal: td.IsInternal, Error: errString(td.Err)}
		for _, pd := range td.Partitions {
			if len(pd.ISR) < len(pd.Replicas) {
				l.UnderReplicated++
			}
		}
		out = append(out, l)
	}
	return listedTopics.print(cmd.OutOrStdout(), f.output, out)
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
	var adminAddr string
	cmd := &cobra.Command{
		Use:   "describe TOPIC[/PARTITION]...",
		Short: "Show a topic's configs (with their source) and each partition's replicas, offsets and size",
		Long: `Describe topics: every config with the source of its value (DYNAMIC_TOPIC_CONFIG
for a per-topic override, STATIC_BROKER_CONFIG or DYNAMIC_*_BROKER_CONFIG when
it comes from the broker, DEFAULT_CONFIG for Kafka's default), and per
partition:

  LEADER, EPOCH       the leader broker and its leader epoch
  REPLICAS, ISR       the assigned replicas and the in-sync replicas
  ELR                 eligible leader replicas (KIP-966): replicas that left
                      the ISR while it was below min.insync.replicas and may
                      still be elected without losing acknowledged records
                      (eligible.leader.replicas.version, on in every new
                      Gregor cluster). Left out when the broker does not answer
                      DescribeTopicPartitions.
  LOG-START           log start offset: the first offset still in the log
                      (ListOffsets earliest); retention and trim move it
  LSO                 last stable offset: read_committed consumers read up to
                      here (ListOffsets latest, isolation read_committed)
  HW                  high watermark: read_uncommitted consumers read up to
                      here (ListOffsets latest, isolation read_uncommitted)
  LEO                 the leader's log end offset: the offset its next record
                      gets. Kafka shows it to clients only through ListOffsets
                      with the debugging replica id (-2), which each replica
                      answers with its own log end offset. "-" when a broker
                      would not say. Records in [HW, LEO) are not yet on every
                      ISR member.
  SIZE                the leader's log size on disk (DescribeLogDirs)
  REPLICA-LEO(LAG)    with several replicas, each one's log end offset and its
                      lag in offsets behind the leader's (BROKER:LEO(LAG)).
                      Each broker is asked in turn, so on a busy partition the
                      lag is approximate; gregor why isr TOPIC/PARTITION has
                      the leader's own view (lag in time too, and why a
                      replica is out of the ISR).

Always log start ≤ LSO ≤ HW ≤ LEO. -o json adds per-replica sizes.

With --admin (or GREGOR_ADMIN) naming a Gregor admin listener, describe also
asks it for each partition's unacknowledged unclean or last-known-leader
election (Kafka's protocol does not carry it) and prints a WARNING with what
may have been lost and how to acknowledge it.`,
		Example: `  gregor topic describe orders
  gregor topic describe orders/3 --overrides
  gregor topic describe orders -o json | jq '.[0].partition_states'`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTopics(f, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			return topicDescribe(cmd, f, args, overrides, adminAddr)
		},
	}
	cmd.Flags().BoolVar(&overrides, "overrides", false, "show only configs set on the topic (DYNAMIC_TOPIC_CONFIG)")
	cmd.Flags().StringVar(&adminAddr, "admin", os.Getenv("GREGOR_ADMIN"), "Gregor's admin HTTP listener, for unclean election warnings (GREGOR_ADMIN; empty: none)")
	return cmd
}

func topicDescribe(cmd *cobra.Command, f *connFlags, args []string, overrides bool, adminAddr string) error {
	s, end, err := f.connectTopics(cmd, args)
	if err != nil {
		return err
	}
	defer end()
	parts, err := gatherPartitions(s.ctx, s.cl, s.adm, s.tds, s.named, true)
	if err != nil {
		return err
	}
	if err := describeELR(s.ctx, s.cl, parts); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: no ELR column: DescribeTopicPartitions: %v\n", err)
	}
	if adminAddr != "" {
		if err := describeUnclean(s.ctx, adminAddr, s.topics, parts); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: no unclean election warnings: %v\n", err)
		}
	}
	rcs, cerr := s.adm.DescribeTopicConfigs(s.ctx, s.topics...)
	var out []topicDescription
	for _, topic := range s.topics {
		td := s.tds[topic]
		d := topicDescription{Topic: topic, ID: topicIDString(td.ID), Internal: td.IsInternal,
			Partitions: len(td.Partitions), ReplicationFactor: td.Partitions.NumReplicas(), Configs: []configEntry{},
			PartitionStates: []*partitionState{}}
		for _, ps := range parts {
			if ps.Topic == topic {
				d.PartitionStates = append(d.PartitionStates, ps)
			}
		}
		err := cerr
		if err == nil {
			d.Configs, err = topicConfigEntries(rcs, topic, overrides)
		}
		if err != nil {
			d.Errors = append(d.Errors, fmt.Sprintf("configs: %v", err))
		}
		out = append(out, d)
	}
	w := cmd.OutOrStdout()
	return printDocuments(w, f.output, out, func(d topicDescription) { printTopicDescription(w, cmd.ErrOrStderr(), d) })
}

// topicConfigEntries are topic's configs from a DescribeConfigs answer,
// sorted by name; only the topic's own overrides with overrides.
func topicConfigEntries(rcs kadm.ResourceConfigs, topic string, overrides bool) ([]configEntry, error) {
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return []configEntry{}, err
	}
	if rc.Err != nil {
		return []configEntry{}, withMessage(rc.Err, rc.ErrMessage)
	}
	out := []configEntry{}
	for _, c := range rc.Configs {
		if overrides && c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			continue
		}
		out = append(out, configEntry{Name: c.Key, Value: c.Value, Source: c.Source.String(), Sensitive: c.Sensitive})
	}
	slices.SortFunc(out, func(a, b configEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
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
	elr := slices.ContainsFunc(d.PartitionStates, func(ps *partitionState) bool { return ps.ELR != nil })
	header := []any{"partition", "leader", "epoch", "replicas", "isr"}
	if elr {
		header = append(header, "elr")
	}
	header = append(header, "log-start", "lso", "hw", "leo", "size")
	if multi {
		header = append(header, "replica-leo(lag)")
	}
	t = newTable(w, header...)
	first := 6 // column number of log-start
	if elr {
		first++
	}
	alignRight(t, first, first+1, first+2, first+3, first+4)
	var errs []string
	for _, ps := range d.PartitionStates {
		row := []any{ps.Partition, ps.Leader, ps.LeaderEpoch, formatBrokers(ps.Replicas), formatBrokers(ps.ISR)}
		if elr {
			row = append(row, formatBrokers(ps.ELR))
		}
		row = append(row, formatOffset(ps.LogStartOffset), formatOffset(ps.LastStableOffset), formatOffset(ps.HighWatermark),
			formatOptOffset(ps.LogEndOffset), humanBytes(ps.SizeBytes))
		if multi {
			row = append(row, replicaLEOLags(ps.ReplicaStates))
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
	for _, ps := range d.PartitionStates {
		if u := ps.UncleanElection; u != nil {
			fmt.Fprintf(w, "WARNING partition %d: %s\n", ps.Partition, u.Explanation)
		}
	}
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
		RunE: func(cmd *cobra.Command, topics []string) error {
			return topicDelete(cmd, f, topics)
		},
	}
}

func topicDelete(cmd *cobra.Command, f *connFlags, topics []string) error {
	s, end, err := f.connect(cmd)
	if err != nil {
		return err
	}
	defer end()
	resp, err := s.adm.DeleteTopics(s.ctx, topics...)
	if err != nil {
		return err
	}
	return printPerTopic(cmd, f.output, topics, "topic deletions", func(topic string) error {
		r, ok := resp[topic]
		if !ok {
			return errNoAnswer
		}
		return withMessage(r.Err, r.ErrMessage)
	})
}

// topicAlterConfig is `topic alter-config`.
type topicAlterConfig struct {
	f                                 *connFlags
	sets, deletes, appends, subtracts []string
	validateOnly                      bool
}

func topicAlterConfigCmd(f *connFlags) *cobra.Command {
	o := &topicAlterConfig{f: f}
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
		RunE:              o.run,
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&o.sets, "set", nil, "set key=value (repeatable)")
	fs.StringArrayVar(&o.deletes, "delete", nil, "remove the topic's value for key (repeatable)")
	fs.StringArrayVar(&o.appends, "append", nil, "append value to list config key=value (repeatable)")
	fs.StringArrayVar(&o.subtracts, "subtract", nil, "remove value from list config key=value (repeatable)")
	fs.BoolVar(&o.validateOnly, "validate-only", false, "validate without applying")
	return cmd
}

// alters are the flags' changes, in the order --set, --append, --subtract,
// --delete.
func (o *topicAlterConfig) alters() ([]kadm.AlterConfig, error) {
	var alters []kadm.AlterConfig
	for _, op := range []struct {
		flag string
		kvs  []string
		op   kadm.IncrementalOp
	}{{"set", o.sets, kadm.SetConfig}, {"append", o.appends, kadm.AppendConfig}, {"subtract", o.subtracts, kadm.SubtractConfig}} {
		m, err := parseKeyValues(op.flag, op.kvs)
		if err != nil {
			return nil, err
		}
		for _, kv := range op.kvs {
			k, _, _ := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			alters = append(alters, kadm.AlterConfig{Op: op.op, Name: k, Value: m[k]})
		}
	}
	for _, k := range o.deletes {
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	if len(alters) == 0 {
		return nil, fmt.Errorf("nothing to change: give --set, --delete, --append or --subtract")
	}
	return alters, nil
}

func (o *topicAlterConfig) run(cmd *cobra.Command, topics []string) error {
	alters, err := o.alters()
	if err != nil {
		return err
	}
	s, end, err := o.f.connect(cmd)
	if err != nil {
		return err
	}
	defer end()
	alter := s.adm.AlterTopicConfigs
	if o.validateOnly {
		alter = s.adm.ValidateAlterTopicConfigs
	}
	resp, err := alter(s.ctx, alters, topics...)
	if err != nil {
		return err
	}
	return printPerTopic(cmd, o.f.output, topics, "config changes", func(topic string) error {
		r, err := resp.On(topic, nil)
		if err != nil {
			return err
		}
		return withMessage(r.Err, r.ErrMessage)
	})
}

// topicAddPartitions is `topic add-partitions`.
type topicAddPartitions struct {
	f            *connFlags
	add, total   int
	validateOnly bool
}

func topicAddPartitionsCmd(f *connFlags) *cobra.Command {
	o := &topicAddPartitions{f: f}
	cmd := &cobra.Command{
		Use:   "add-partitions TOPIC...",
		Short: "Add partitions to topics (CreatePartitions); partitions can never be removed",
		Example: `  gregor topic add-partitions orders --add 2
  gregor topic add-partitions orders --total 12`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTopics(f, false),
		RunE:              o.run,
	}
	fs := cmd.Flags()
	fs.IntVar(&o.add, "add", 0, "partitions to add")
	fs.IntVar(&o.total, "total", 0, "the partition count to grow to")
	fs.BoolVar(&o.validateOnly, "validate-only", false, "validate without applying")
	return cmd
}

func (o *topicAddPartitions) run(cmd *cobra.Command, topics []string) error {
	if (o.add > 0) == (o.total > 0) {
		return fmt.Errorf("give exactly one of --add N or --total N")
	}
	s, end, err := o.f.connect(cmd)
	if err != nil {
		return err
	}
	defer end()
	var resp kadm.CreatePartitionsResponses
	switch {
	case o.add > 0 && o.validateOnly:
		resp, err = s.adm.ValidateCreatePartitions(s.ctx, o.add, topics...)
	case o.add > 0:
		resp, err = s.adm.CreatePartitions(s.ctx, o.add, topics...)
	case o.validateOnly:
		resp, err = s.adm.ValidateUpdatePartitions(s.ctx, o.total, topics...)
	default:
		resp, err = s.adm.UpdatePartitions(s.ctx, o.total, topics...)
	}
	if err != nil {
		return err
	}
	return printPerTopic(cmd, o.f.output, topics, "partition additions", func(topic string) error {
		r, err := resp.On(topic, nil)
		if err != nil {
			return err
		}
		return withMessage(r.Err, r.ErrMessage)
	})
}

// trimmedPartition is one row of `topic trim`.
type trimmedPartition struct {
	Topic          string `json:"topic"`
	Partition      int32  `json:"partition"`
	LogStartOffset int64  `json:"log_start_offset"`
	Error          string `json:"error,omitempty"`
}

var trimmedPartitions = tableView[trimmedPartition]{
	header: []any{"topic", "partition", "log-start", "result"},
	right:  []int{3},
	row: func(o trimmedPartition) []any {
		res := "ok"
		if o.Error != "" {
			res = o.Error
		}
		return []any{o.Topic, o.Partition, formatOffset(o.LogStartOffset), res}
	},
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
			return topicTrim(cmd, f, args, before)
		},
	}
	cmd.Flags().StringVar(&before, "before", "", "the new log start offset: records below it are deleted (a number, or hw)")
	return cmd
}

// parseBefore is --before as a DeleteRecords offset (-1: the high watermark).
func parseBefore(before string) (int64, error) {
	switch before {
	case "":
		return 0, fmt.Errorf("--before OFFSET is required (a number, or hw)")
	case "hw", "end":
		return -1, nil
	}
	o, err := strconv.ParseInt(before, 10, 64)
	if err != nil || o < 0 {
		return 0, fmt.Errorf("--before %q: want an offset or hw", before)
	}
	return o, nil
}

func topicTrim(cmd *cobra.Command, f *connFlags, args []string, before string) error {
	offset, err := parseBefore(before)
	if err != nil {
		return err
	}
	s, end, err := f.connectTopics(cmd, args)
	if err != nil {
		return err
	}
	defer end()
	if err := checkPartitions(s.tds, s.tps); err != nil {
		return err
	}
	var req kadm.Offsets
	for _, tp := range s.tps {
		for _, p := range s.tds[tp.topic].Partitions.Numbers() {
			if tp.includes(p) {
				req.AddOffset(tp.topic, p, offset, -1)
			}
		}
	}
	resp, err := s.adm.DeleteRecords(s.ctx, req)
	if err != nil {
		return err
	}
	out := []trimmedPartition{}
	var failed failures
	req.Each(func(o kadm.Offset) {
		r, ok := resp.Lookup(o.Topic, o.Partition)
		t := trimmedPartition{Topic: o.Topic, Partition: o.Partition, LogStartOffset: -1}
		switch {
		case !ok:
			t.Error = errNoAnswer.Error()
			failed++
		case r.Err != nil:
			t.Error = r.Err.Error()
			failed++
		default:
			t.LogStartOffset = r.LowWatermark
		}
		out = append(out, t)
	})
	slices.SortFunc(out, func(a, b trimmedPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	if err := trimmedPartitions.print(cmd.OutOrStdout(), f.output, out); err != nil {
		return err
	}
	return failed.err("trims")
}

// describeUnclean fills each partition's unclean election from the admin
// listener's topic documents (the first of a comma-separated list).
func describeUnclean(ctx context.Context, addr string, topics []string, parts []*partitionState) error {
	base, err := (&adminFlags{admin: addr}).baseURL()
	if err != nil {
		return err
	}
	for _, topic := range topics {
		status, body, err := adminGet(ctx, base, "/v1/topics/"+url.PathEscape(topic))
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("%s answered %d for topic %s: %s", base, status, topic, strings.TrimSpace(string(body)))
		}
		var tv admin.TopicView
		if err := json.Unmarshal(body, &tv); err != nil {
			return fmt.Errorf("%s: topic %s: %w", base, topic, err)
		}
		for _, pd := range tv.PartitionDetail {
			for _, ps := range parts {
				if ps.Topic == topic && ps.Partition == pd.Partition {
					ps.UncleanElection = pd.UncleanElection
				}
			}
		}
	}
	return nil
}
