package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// partitionOffsets is one row of `gregor offsets`.
type partitionOffsets struct {
	Topic            string         `json:"topic"`
	Partition        int32          `json:"partition"`
	Leader           int32          `json:"leader"`
	LogStartOffset   int64          `json:"log_start_offset"`
	LastStableOffset int64          `json:"last_stable_offset"`
	HighWatermark    int64          `json:"high_watermark"`
	LogEndOffset     *int64         `json:"log_end_offset"`
	Replicas         []replicaState `json:"replicas,omitempty"`
	Errors           []string       `json:"errors,omitempty"`
}

func offsetsCmd() *cobra.Command {
	var f connFlags
	cmd := &cobra.Command{
		Use:   "offsets [TOPIC[/PARTITION]...]",
		Short: "Show each partition's log start offset, LSO, high watermark and log end offset side by side",
		Long: `Show the four offsets of every partition, in the order they always keep:

  log start offset ≤ last stable offset ≤ high watermark ≤ log end offset

  LOG-START  the first offset still in the log. Retention and DeleteRecords
             (gregor topic trim) move it up; compaction never does.
  LSO        last stable offset: below it every transaction is decided;
             read_committed consumers read up to here.
  HW         high watermark: replicated to the whole ISR; read_uncommitted
             consumers read up to here.
  LEO        log end offset on the leader: the offset of the next record.
             Kafka gives it to clients only through ListOffsets with the
             debugging replica id (-2); "-" if the broker would not say.
             With several replicas REPLICA-LEOS shows each replica's LEO.

Without arguments every topic is shown (add --internal for internal ones).`,
		Example: `  gregor offsets orders
  gregor offsets orders/0 payments -o json`,
		ValidArgsFunction: completeTopics(&f, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			internal, _ := cmd.Flags().GetBool("internal")
			return offsets(cmd, &f, args, internal)
		},
	}
	f.register(cmd)
	cmd.Flags().Bool("internal", false, "with no arguments, include internal topics")
	return cmd
}

func offsets(cmd *cobra.Command, f *connFlags, args []string, internal bool) error {
	s, end, err := f.connectTopics(cmd, args)
	if err != nil {
		return err
	}
	defer end()
	if err := checkPartitions(s.tds, s.tps); err != nil {
		return err
	}
	keep := func(t string, p int32) bool {
		if len(s.tps) == 0 {
			return internal || !s.tds[t].IsInternal
		}
		return s.named(t, p)
	}
	parts, err := gatherPartitions(s.ctx, s.cl, s.adm, s.tds, keep, false)
	if err != nil {
		return err
	}
	out := []partitionOffsets{}
	multi := false
	for _, ps := range parts {
		po := partitionOffsets{Topic: ps.Topic, Partition: ps.Partition, Leader: ps.Leader,
			LogStartOffset: ps.LogStartOffset, LastStableOffset: ps.LastStableOffset,
			HighWatermark: ps.HighWatermark, LogEndOffset: ps.LogEndOffset, Errors: ps.Errors}
		if len(ps.Replicas) > 1 {
			po.Replicas = ps.ReplicaStates
			multi = true
		}
		for _, rs := range ps.ReplicaStates {
			if rs.Error != "" {
				po.Errors = append(po.Errors, fmt.Sprintf("replica %d: log end offset: %s", rs.Broker, rs.Error))
			}
		}
		out = append(out, po)
	}
	if f.output == "json" {
		return writeJSON(cmd.OutOrStdout(), out)
	}
	printOffsets(cmd.OutOrStdout(), cmd.ErrOrStderr(), out, multi)
	return nil
}

// printOffsets prints the offsets table, with each replica's log end
// offset when multi, and then each partition's errors as warnings on errw.
func printOffsets(w, errw io.Writer, out []partitionOffsets, multi bool) {
	header := []any{"topic", "partition", "leader", "log-start", "lso", "hw", "leo"}
	if multi {
		header = append(header, "replica-leos")
	}
	t := newTable(w, header...)
	alignRight(t, 2, 3, 4, 5, 6, 7)
	var warnings []string
	for _, po := range out {
		row := []any{po.Topic, po.Partition, po.Leader, formatOffset(po.LogStartOffset), formatOffset(po.LastStableOffset),
			formatOffset(po.HighWatermark), formatOptOffset(po.LogEndOffset)}
		if multi {
			row = append(row, replicaLEOs(po.Replicas))
		}
		t.AppendRow(row)
		for _, e := range po.Errors {
			warnings = append(warnings, fmt.Sprintf("%s/%d: %s", po.Topic, po.Partition, e))
		}
	}
	renderTable(w, t)
	for _, e := range warnings {
		fmt.Fprintln(errw, "warning:", e)
	}
}

// replicaLEOs shows each replica's log end offset as BROKER:LEO,...
func replicaLEOs(rs []replicaState) string {
	var leos []string
	for _, r := range rs {
		leos = append(leos, fmt.Sprintf("%d:%s", r.Broker, formatOptOffset(r.LogEndOffset)))
	}
	return strings.Join(leos, ",")
}

// replicaLEOLags shows each replica's log end offset and lag behind the
// leader as BROKER:LEO(LAG),...
func replicaLEOLags(rs []replicaState) string {
	var out []string
	for _, r := range rs {
		lag := "-"
		if r.Lag != nil {
			lag = fmt.Sprint(*r.Lag)
		}
		out = append(out, fmt.Sprintf("%d:%s(%s)", r.Broker, formatOptOffset(r.LogEndOffset), lag))
	}
	return strings.Join(out, ",")
}
