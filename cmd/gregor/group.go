package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func groupCmd() *cobra.Command {
	var f connFlags
	cmd := &cobra.Command{
		Use:   "group",
		Short: "List, describe (with lag), seek and delete consumer groups",
	}
	f.register(cmd)
	cmd.AddCommand(groupListCmd(&f), groupDescribeCmd(&f), groupSeekCmd(&f), groupDeleteCmd(&f))
	return cmd
}

// completeGroups offers the cluster's group names.
func completeGroups(f *connFlags) cobra.CompletionFunc {
	return completeWith(f, func(ctx context.Context, adm *kadm.Client, toComplete string) ([]string, error) {
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, g := range listed.Groups() {
			if strings.HasPrefix(g, toComplete) {
				out = append(out, g)
			}
		}
		return out, nil
	})
}

func groupListCmd(f *connFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List consumer groups with their state",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return groupList(cmd, f)
		},
	}
}

// listedGroup is one row of `group list`.
type listedGroup struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	GroupType    string `json:"group_type,omitempty"`
	Coordinator  int32  `json:"coordinator"`
}

var listedGroups = tableView[listedGroup]{
	header: []any{"group", "state", "protocol-type", "coordinator"},
	row: func(g listedGroup) []any {
		return []any{g.Group, dash(g.State), dash(g.ProtocolType), g.Coordinator}
	},
}

func groupList(cmd *cobra.Command, f *connFlags) error {
	s, end, err := f.connect(cmd)
	if err != nil {
		return err
	}
	defer end()
	listed, err := retryRetriable(s.ctx, func() (kadm.ListedGroups, error) { return s.adm.ListGroups(s.ctx) })
	if err != nil {
		return err
	}
	out := []listedGroup{}
	for _, g := range listed.Sorted() {
		out = append(out, listedGroup{Group: g.Group, State: g.State, ProtocolType: g.ProtocolType, GroupType: g.GroupType, Coordinator: g.Coordinator})
	}
	return listedGroups.print(cmd.OutOrStdout(), f.output, out)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// groupPartitionLag is one partition of `group describe`.
type groupPartitionLag struct {
	Topic           string `json:"topic"`
	Partition       int32  `json:"partition"`
	CommittedOffset int64  `json:"committed_offset"` // -1: none
	LogStartOffset  int64  `json:"log_start_offset"`
	HighWatermark   int64  `json:"high_watermark"`
	Lag             int64  `json:"lag"` // -1: unknown (see error)
	MemberID        string `json:"member_id,omitempty"`
	ClientID        string `json:"client_id,omitempty"`
	Host            string `json:"host,omitempty"`
	Error           string `json:"error,omitempty"`
}

type groupMember struct {
	MemberID   string   `json:"member_id"`
	InstanceID string   `json:"instance_id,omitempty"`
	ClientID   string   `json:"client_id"`
	Host       string   `json:"host"`
	Assigned   []string `json:"assigned"` // TOPIC/PARTITION
}

// groupDescription is `group describe`'s JSON document for one group.
type groupDescription struct {
	Group        string              `json:"group"`
	State        string              `json:"state"`
	ProtocolType string              `json:"protocol_type"`
	Protocol     string              `json:"protocol"`
	Coordinator  int32               `json:"coordinator"`
	Members      []groupMember       `json:"members"`
	Partitions   []groupPartitionLag `json:"partitions"`
	TotalLag     int64               `json:"total_lag"`
	LagByTopic   map[string]int64    `json:"lag_by_topic"`
	Error        string              `json:"error,omitempty"`
}

// describeGroupLags runs kadm's Lag, retrying while the coordinator loads.
func describeGroupLags(ctx context.Context, adm *kadm.Client, groups []string) (kadm.DescribedGroupLags, error) {
	return retryRetriable(ctx, func() (kadm.DescribedGroupLags, error) {
		lags, err := adm.Lag(ctx, groups...)
		if err != nil {
			return lags, err
		}
		for _, l := range lags {
			if err := l.Error(); err != nil && kerr.IsRetriable(err) {
				return lags, err
			}
		}
		return lags, nil
	})
}

func toGroupDescription(l kadm.DescribedGroupLag) groupDescription {
	d := groupDescription{Group: l.Group, State: l.State, ProtocolType: l.ProtocolType, Protocol: l.Protocol,
		Coordinator: l.Coordinator.NodeID, Members: []groupMember{}, Partitions: []groupPartitionLag{},
		LagByTopic: map[string]int64{}, Error: errString(l.Error())}
	for _, m := range l.Members {
		gm := groupMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assigned: []string{}}
		if m.InstanceID != nil {
			gm.InstanceID = *m.InstanceID
		}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				for _, p := range t.Partitions {
					gm.Assigned = append(gm.Assigned, fmt.Sprintf("%s/%d", t.Topic, p))
				}
			}
		}
		d.Members = append(d.Members, gm)
	}
	for _, ml := range l.Lag.Sorted() {
		pl := groupPartitionLag{Topic: ml.Topic, Partition: ml.Partition, CommittedOffset: ml.Commit.At,
			LogStartOffset: -1, HighWatermark: -1, Lag: ml.Lag, Error: errString(ml.Err)}
		if ml.Start.Err == nil {
			pl.LogStartOffset = ml.Start.Offset
		}
		if ml.End.Err == nil {
			pl.HighWatermark = ml.End.Offset
		}
		if ml.Member != nil {
			pl.MemberID, pl.ClientID, pl.Host = ml.Member.MemberID, ml.Member.ClientID, ml.Member.ClientHost
		}
		d.Partitions = append(d.Partitions, pl)
	}
	d.TotalLag = l.Lag.Total()
	for _, tl := range l.Lag.TotalByTopic() {
		d.LagByTopic[tl.Topic] = tl.Lag
	}
	return d
}

func groupDescribeCmd(f *connFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "describe GROUP...",
		Short: "Show a group's state, members, and committed offset and lag per partition",
		Long: `Describe consumer groups: state, protocol, members and their assignments,
and per partition the committed offset, the log start offset, the high
watermark and the lag (high watermark - committed offset), with totals per
topic and for the group. A partition without a commit has lag measured from
the log start offset, as Kafka's tools do.`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeGroups(f),
		RunE: func(cmd *cobra.Command, groups []string) error {
			return groupDescribe(cmd, f, groups)
		},
	}
}

func groupDescribe(cmd *cobra.Command, f *connFlags, groups []string) error {
	s, end, err := f.connect(cmd)
	if err != nil {
		return err
	}
	defer end()
	lags, err := describeGroupLags(s.ctx, s.adm, groups)
	if err != nil {
		return err
	}
	out, failed := collect(groups, func(g string) (groupDescription, error) {
		l, ok := lags[g]
		if !ok {
			return groupDescription{Group: g, Error: "not described by the broker"}, errors.New("not described")
		}
		d := toGroupDescription(l)
		return d, l.Error()
	})
	w := cmd.OutOrStdout()
	if err := printDocuments(w, f.output, out, func(d groupDescription) { printGroupDescription(w, d) }); err != nil {
		return err
	}
	return failed.err("group descriptions")
}

func printGroupDescription(w io.Writer, d groupDescription) {
	if d.Error != "" {
		fmt.Fprintf(w, "Group: %s  error: %s\n", d.Group, d.Error)
		return
	}
	fmt.Fprintf(w, "Group: %s  State: %s  Protocol: %s/%s  Coordinator: %d  Members: %d  Total lag: %d\n",
		d.Group, dash(d.State), dash(d.ProtocolType), dash(d.Protocol), d.Coordinator, len(d.Members), d.TotalLag)
	if len(d.Partitions) > 0 {
		fmt.Fprintln(w)
		t := newTable(w, "topic", "partition", "committed", "log-start", "hw", "lag", "member", "client-id", "host")
		alignRight(t, 2, 3, 4, 5, 6)
		for _, p := range d.Partitions {
			lag := fmt.Sprint(p.Lag)
			if p.Lag < 0 {
				lag = "-"
			}
			t.AppendRow([]any{p.Topic, p.Partition, formatOffset(p.CommittedOffset), formatOffset(p.LogStartOffset),
				formatOffset(p.HighWatermark), lag, dash(p.MemberID), dash(p.ClientID), dash(p.Host)})
		}
		renderTable(w, t)
		for _, p := range d.Partitions {
			if p.Error != "" {
				fmt.Fprintf(w, "warning: %s/%d: %s\n", p.Topic, p.Partition, p.Error)
			}
		}
	}
	if len(d.LagByTopic) > 1 {
		fmt.Fprintln(w)
		t := newTable(w, "topic", "lag")
		alignRight(t, 2)
		topics := make([]string, 0, len(d.LagByTopic))
		for topic := range d.LagByTopic {
			topics = append(topics, topic)
		}
		slices.Sort(topics)
		for _, topic := range topics {
			t.AppendRow([]any{topic, d.LagByTopic[topic]})
		}
		renderTable(w, t)
	}
	if len(d.Members) > 0 {
		fmt.Fprintln(w)
		t := newTable(w, "member", "instance-id", "client-id", "host", "assigned")
		for _, m := range d.Members {
			t.AppendRow([]any{m.MemberID, dash(m.InstanceID), m.ClientID, m.Host, dash(strings.Join(m.Assigned, ","))})
		}
		renderTable(w, t)
	}
}

// seekChange is one partition of `group seek`.
type seekChange struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Current   *int64 `json:"current_offset"` // null: no committed offset
	New       int64  `json:"new_offset"`
	Error     string `json:"error,omitempty"`
}

// groupSeek is `group seek`.
type groupSeek struct {
	f       *connFlags
	to      string
	shiftBy int64
	topics  []string
	execute bool
}

func groupSeekCmd(f *connFlags) *cobra.Command {
	o := &groupSeek{f: f}
	cmd := &cobra.Command{
		Use:   "seek GROUP (--to OFFSET | --shift-by N) [--topic TOPIC[/PARTITION]]... [--execute]",
		Short: "Move a group's committed offsets; prints the change and commits it only with --execute",
		Long: `Compute new committed offsets for a group and show them next to the current
ones. Nothing changes until --execute is given, and then only if the group
has no active members (state Empty), as Kafka requires.

--to takes the consume offsets: start, end, N, +N (after the log start
offset), -N (before the end) or @TIMESTAMP (ms since the epoch or RFC 3339).
--shift-by N moves each committed offset by N (negative: back), within
[log start, high watermark].

Without --topic every partition the group has committed offsets for is moved;
--topic TOPIC covers all of TOPIC's partitions, TOPIC/PARTITION one.`,
		Example: `  gregor group seek billing --to @2026-03-01T00:00:00Z
  gregor group seek billing --to end --topic invoices --execute
  gregor group seek billing --shift-by -100 --topic invoices/3 --execute`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeGroups(f),
		RunE:              o.run,
	}
	fs := cmd.Flags()
	fs.StringVar(&o.to, "to", "", "new offset: start, end, N, +N, -N or @TIMESTAMP")
	fs.Int64Var(&o.shiftBy, "shift-by", 0, "move each committed offset by N")
	fs.StringArrayVar(&o.topics, "topic", nil, "TOPIC or TOPIC/PARTITION to move (repeatable; default: every committed partition)")
	fs.BoolVar(&o.execute, "execute", false, "commit the new offsets (default: show them only)")
	return cmd
}

func (o *groupSeek) run(cmd *cobra.Command, args []string) error {
	group := args[0]
	shift := cmd.Flags().Changed("shift-by")
	if (o.to != "") == shift {
		return errors.New("give exactly one of --to OFFSET or --shift-by N")
	}
	spec := offsetSpec{kind: "start"}
	if o.to != "" {
		var err error
		if spec, err = parseOffsetSpec(o.to); err != nil {
			return fmt.Errorf("--to: %w", err)
		}
	}
	s, end, err := o.f.connect(cmd)
	if err != nil {
		return err
	}
	defer end()
	committed, err := fetchCommitted(s.ctx, s.adm, group)
	if err != nil {
		return fmt.Errorf("fetching %s's committed offsets: %w", group, err)
	}
	targets, err := seekTargets(s.ctx, s.adm, committed, o.topics)
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		return fmt.Errorf("group %s has no committed offsets; name partitions with --topic", group)
	}
	changes, err := planSeek(s.ctx, s.adm, committed, targets, spec, shift, o.shiftBy, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	var failed failures
	if o.execute {
		if failed, err = executeSeek(s.ctx, s.adm, group, changes); err != nil {
			return err
		}
	}
	if err := printSeek(cmd.OutOrStdout(), o.f.output, group, o.execute, changes); err != nil {
		return err
	}
	if !o.execute {
		fmt.Fprintln(cmd.ErrOrStderr(), "dry run: nothing was committed; add --execute to commit these offsets")
	}
	return failed.err("offset commits")
}

// fetchCommitted is a group's committed offsets, retrying while the
// coordinator loads.
func fetchCommitted(ctx context.Context, adm *kadm.Client, group string) (kadm.OffsetResponses, error) {
	return retryRetriable(ctx, func() (kadm.OffsetResponses, error) {
		r, err := adm.FetchOffsets(ctx, group)
		if err == nil {
			err = r.Error()
		}
		return r, err
	})
}

// seekTargets lists the partitions a seek covers, per topic.
func seekTargets(ctx context.Context, adm *kadm.Client, committed kadm.OffsetResponses, topicArgs []string) (map[string][]int32, error) {
	targets := map[string][]int32{}
	if len(topicArgs) == 0 {
		committed.Each(func(o kadm.OffsetResponse) {
			if o.Err == nil && o.At >= 0 {
				targets[o.Topic] = append(targets[o.Topic], o.Partition)
			}
		})
		return targets, nil
	}
	var tps []topicPartition
	var names []string
	for _, a := range topicArgs {
		tp, err := parseTopicPartition(a)
		if err != nil {
			return nil, err
		}
		tps = append(tps, tp)
		if !slices.Contains(names, tp.topic) {
			names = append(names, tp.topic)
		}
	}
	tds, err := describeTopics(ctx, adm, names...)
	if err != nil {
		return nil, err
	}
	for _, tp := range tps {
		parts := tds[tp.topic].Partitions.Numbers()
		if tp.partition >= 0 && !slices.Contains(parts, tp.partition) {
			return nil, fmt.Errorf("topic %s has no partition %d", tp.topic, tp.partition)
		}
		for _, p := range parts {
			if tp.includes(p) && !slices.Contains(targets[tp.topic], p) {
				targets[tp.topic] = append(targets[tp.topic], p)
			}
		}
	}
	return targets, nil
}

// planSeek computes the new offset of every target partition.
func planSeek(ctx context.Context, adm *kadm.Client, committed kadm.OffsetResponses, targets map[string][]int32,
	spec offsetSpec, shift bool, shiftBy int64, warn io.Writer) ([]seekChange, error) {
	var changes []seekChange
	for topic, parts := range targets {
		slices.Sort(parts)
		bounds, err := resolveBounds(ctx, adm, topic, parts, spec, false, warn)
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			c := seekChange{Topic: topic, Partition: p, New: bounds.start[p]}
			if o, ok := committed.Lookup(topic, p); ok && o.Err == nil && o.At >= 0 {
				at := o.At
				c.Current = &at
			}
			if shift {
				if c.Current == nil {
					c.New, c.Error = -1, "no committed offset to shift"
				} else {
					// bounds.start is the log start offset under spec "start".
					c.New = min(max(*c.Current+shiftBy, bounds.start[p]), bounds.end[p])
				}
			}
			changes = append(changes, c)
		}
	}
	slices.SortFunc(changes, func(a, b seekChange) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return changes, nil
}

// executeSeek commits the planned offsets if the group has no members.
func executeSeek(ctx context.Context, adm *kadm.Client, group string, changes []seekChange) (failures, error) {
	described, err := retryRetriable(ctx, func() (kadm.DescribedGroups, error) {
		d, err := adm.DescribeGroups(ctx, group)
		if err == nil {
			// A group that does not exist yet may be given offsets.
			if g, ok := d[group]; ok && g.Err != nil && !errors.Is(g.Err, kerr.GroupIDNotFound) {
				err = g.Err
			}
		}
		return d, err
	})
	if err != nil {
		return 0, fmt.Errorf("describing %s: %w", group, err)
	}
	if g := described[group]; g.State != "Empty" && g.State != "Dead" && g.State != "" {
		return 0, fmt.Errorf("group %s is %s with %d members: stop its consumers first (offsets of an active group cannot be reset)",
			group, g.State, len(g.Members))
	}
	var offsets kadm.Offsets
	for _, c := range changes {
		if c.Error == "" {
			offsets.Add(kadm.Offset{Topic: c.Topic, Partition: c.Partition, At: c.New, LeaderEpoch: -1})
		}
	}
	resp, err := adm.CommitOffsets(ctx, group, offsets)
	if err != nil {
		return 0, fmt.Errorf("committing: %w", err)
	}
	var failed failures
	for i := range changes {
		c := &changes[i]
		if c.Error != "" {
			failed++
			continue
		}
		r, ok := resp.Lookup(c.Topic, c.Partition)
		switch {
		case !ok:
			c.Error = "no answer from the coordinator"
		case r.Err != nil:
			c.Error = r.Err.Error()
		}
		if c.Error != "" {
			failed++
		}
	}
	return failed, nil
}

func printSeek(w io.Writer, format, group string, executed bool, changes []seekChange) error {
	if format == "json" {
		return writeJSON(w, struct {
			Group    string       `json:"group"`
			Executed bool         `json:"executed"`
			Changes  []seekChange `json:"changes"`
		}{group, executed, changes})
	}
	t := newTable(w, "topic", "partition", "current", "new", "change", "result")
	alignRight(t, 2, 3, 4, 5)
	for _, c := range changes {
		cur, change := "-", "new"
		if c.Current != nil {
			cur = fmt.Sprint(*c.Current)
			change = fmt.Sprintf("%+d", c.New-*c.Current)
		}
		result := "dry run"
		if executed {
			result = "committed"
		}
		if c.Error != "" {
			result, change = c.Error, "-"
		}
		t.AppendRow([]any{c.Topic, c.Partition, cur, formatOffset(c.New), change, result})
	}
	renderTable(w, t)
	return nil
}

// deletedGroup is one row of `group delete`: a group, or with --topic one
// partition of its committed offsets.
type deletedGroup struct {
	Group     string `json:"group"`
	Topic     string `json:"topic,omitempty"`
	Partition *int32 `json:"partition,omitempty"`
	Error     string `json:"error,omitempty"`
}

var deletedGroups = tableView[deletedGroup]{
	header: []any{"group", "topic", "partition", "result"},
	row: func(r deletedGroup) []any {
		part, res := "-", "deleted"
		if r.Partition != nil {
			part = fmt.Sprint(*r.Partition)
		}
		if r.Error != "" {
			res = r.Error
		}
		return []any{r.Group, dash(r.Topic), part, res}
	},
}

func groupDeleteCmd(f *connFlags) *cobra.Command {
	var topics []string
	cmd := &cobra.Command{
		Use:   "delete GROUP...",
		Short: "Delete groups, or with --topic only their committed offsets for those topics",
		Long: `Delete consumer groups (DeleteGroups): only groups without active members can
be deleted. With --topic, delete just the group's committed offsets for those
topics (OffsetDelete), which the broker allows while no member is subscribed
to them.`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeGroups(f),
		RunE: func(cmd *cobra.Command, groups []string) error {
			return groupDelete(cmd, f, groups, topics)
		},
	}
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "delete only the committed offsets of this topic (repeatable)")
	return cmd
}

func groupDelete(cmd *cobra.Command, f *connFlags, groups, topics []string) error {
	s, end, err := f.connect(cmd)
	if err != nil {
		return err
	}
	defer end()
	var out []deletedGroup
	var failed failures
	if len(topics) > 0 {
		out, failed, err = deleteGroupOffsets(s, groups, topics)
	} else {
		out, failed, err = deleteGroups(s, groups)
	}
	if err != nil {
		return err
	}
	if err := deletedGroups.print(cmd.OutOrStdout(), f.output, out); err != nil {
		return err
	}
	return failed.err("deletions")
}

// deleteGroups deletes whole groups (DeleteGroups).
func deleteGroups(s session, groups []string) ([]deletedGroup, failures, error) {
	resp, err := retryRetriable(s.ctx, func() (kadm.DeleteGroupResponses, error) {
		r, err := s.adm.DeleteGroups(s.ctx, groups...)
		if err == nil {
			for _, g := range r {
				if g.Err != nil && kerr.IsRetriable(g.Err) {
					return r, g.Err
				}
			}
		}
		return r, err
	})
	if err != nil && len(resp) == 0 {
		return nil, 0, err
	}
	out, failed := collect(groups, func(g string) (deletedGroup, error) {
		d, ok := resp[g]
		err := errNoAnswer
		if ok {
			err = withMessage(d.Err, d.ErrMessage)
		}
		return deletedGroup{Group: g, Error: errString(err)}, err
	})
	return out, failed, nil
}

// deleteGroupOffsets deletes the groups' committed offsets of topics
// (OffsetDelete), one row per partition.
func deleteGroupOffsets(s session, groups, topics []string) ([]deletedGroup, failures, error) {
	tds, err := describeTopics(s.ctx, s.adm, topics...)
	if err != nil {
		return nil, 0, err
	}
	var out []deletedGroup
	var failed failures
	for _, g := range groups {
		resp, err := retryRetriable(s.ctx, func() (kadm.DeleteOffsetsResponses, error) {
			return s.adm.DeleteOffsets(s.ctx, g, tds.TopicsSet())
		})
		if err != nil {
			out = append(out, deletedGroup{Group: g, Error: err.Error()})
			failed++
			continue
		}
		for _, topic := range topics {
			for _, p := range tds[topic].Partitions.Numbers() {
				r := deletedGroup{Group: g, Topic: topic, Partition: &p}
				if err, ok := resp.Lookup(topic, p); ok && err != nil {
					r.Error = err.Error()
					failed++
				}
				out = append(out, r)
			}
		}
	}
	return out, failed, nil
}
