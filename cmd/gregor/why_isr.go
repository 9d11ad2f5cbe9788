package main

// `gregor why isr TOPIC/PARTITION`: which replicas are out of the ISR, why
// each left (the cause and config the leader recorded when it shrank the
// ISR) and which expansion rules it does not meet yet. Only the partition's
// leader knows this (Kafka keeps it nowhere else), so the command asks each
// admin listener it is given until one is the leader.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gregor-broker/gregor/internal/admin"
)

func whyISRCmd(f *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "isr TOPIC/PARTITION",
		Short: "Why a replica is out of a partition's ISR and what it waits for to rejoin",
		Long: `Ask the partition's leader which replicas are out of the ISR, why each
left (the cause the leader recorded when it shrank the ISR: lagged past
replica.lag.time.max.ms, fenced, controlled shutdown, ...), each replica's log
end offset and lag, and the rules a replica outside the ISR does not meet yet
(fetched in this leader epoch, caught up to the high watermark and to the
start of the leader epoch, registered and unfenced with the same broker epoch).

Only the leader has this state. --admin (or GREGOR_ADMIN) may list several
admin listeners separated by commas (gregor dev prints them all); the first
that leads the partition answers (the other commands that read the admin
listener use the first of such a list). Asked only a follower, why isr says which
broker leads and exits non-zero.`,
		Example: `  gregor why isr orders/0 --admin 127.0.0.1:9644,127.0.0.1:9645,127.0.0.1:9646
  gregor why isr orders/0 -o json | jq '.partition_view.replica_state'`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeAdminPartitions(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWhyISR(cmd, f, args[0])
		},
	}
}

func runWhyISR(cmd *cobra.Command, f *adminFlags, arg string) error {
	tp, err := parseTopicPartition(arg)
	if err != nil {
		return err
	}
	if tp.partition < 0 {
		return fmt.Errorf("%q: want TOPIC/PARTITION (why explains one partition)", arg)
	}
	bases, err := f.baseURLs()
	if err != nil {
		return err
	}
	ctx, cancel := f.context(cmd)
	defer cancel()
	raw, view, asked, err := leaderView(ctx, bases, tp.topic, tp.partition)
	if err != nil {
		return err
	}
	lines := explainISR(view, time.Now())
	w := cmd.OutOrStdout()
	if f.output == "json" {
		if err := writeJSON(w, whyOutput{Topic: tp.topic, Partition: tp.partition, Explanation: lines, PartitionView: raw}); err != nil {
			return err
		}
	} else {
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	if !isLeaderView(view) && view.Leader < 0 {
		return fmt.Errorf("%s/%d has no leader (offline): no broker tracks its ISR now; see gregor topic describe %s", tp.topic, tp.partition, tp.topic)
	}
	if !isLeaderView(view) {
		return fmt.Errorf("none of %s leads %s/%d (the leader is broker %d): point --admin at broker %d's admin listener",
			strings.Join(asked, ", "), tp.topic, tp.partition, view.Leader, view.Leader)
	}
	return nil
}

// baseURLs is --admin split at commas, each as baseURL makes it.
func (f *adminFlags) baseURLs() ([]string, error) {
	var out []string
	for _, a := range strings.Split(f.admin, ",") {
		if strings.TrimSpace(a) == "" {
			continue
		}
		b, err := (&adminFlags{admin: a}).baseURL()
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--admin is empty: give Gregor's admin listener, e.g. %s", defaultAdmin)
	}
	return out, nil
}

// isLeaderView: the broker that answered v leads the partition (a
// follower's view holds only its own replica, not marked leader).
func isLeaderView(v admin.PartitionView) bool {
	return slices.ContainsFunc(v.ReplicaState, func(r admin.ReplicaView) bool { return r.Leader && r.BrokerID == v.Leader })
}

// leaderView asks each base for the partition until one is its leader. It
// returns the leader's view, or else the last view it got (a follower's),
// and the bases it asked. It fails only when no base answered a view.
func leaderView(ctx context.Context, bases []string, topic string, partition int32) (json.RawMessage, admin.PartitionView, []string, error) {
	var (
		raw   json.RawMessage
		view  admin.PartitionView
		got   bool
		asked []string
		errs  []string
	)
	for _, base := range bases {
		asked = append(asked, base)
		r, v, err := fetchPartitionView(ctx, base, topic, partition)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		raw, view, got = r, v, true
		if isLeaderView(v) {
			return raw, view, asked, nil
		}
	}
	if !got {
		return nil, view, asked, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return raw, view, asked, nil
}

// explainISR words the leader's view of every replica of v. A follower's
// view (not isLeaderView) yields what the metadata says and who leads.
func explainISR(v admin.PartitionView, now time.Time) []string {
	name := fmt.Sprintf("%s/%d", v.Topic, v.Partition)
	minISR, _ := configValue(v, "min.insync.replicas")
	head := []string{fmt.Sprintf("partition %s: leader %d (leader epoch %d), replicas %s, ISR %s, min.insync.replicas=%s.",
		name, v.Leader, v.LeaderEpoch, formatBrokers(v.Replicas), formatBrokers(v.ISR), minISR)}
	if u := v.UncleanElection; u != nil {
		head = append(head, "WARNING: "+u.Explanation)
	}
	if !isLeaderView(v) && v.Leader < 0 {
		return append(head, "the partition has no leader: it is offline until an eligible replica's broker is back.")
	}
	if !isLeaderView(v) {
		return append(head, fmt.Sprintf("the broker that answered is not the leader; only broker %d knows why a replica left the ISR and what it waits for.", v.Leader))
	}
	lines := append(head, fmt.Sprintf("the leader's log end offset is %d, its high watermark %d.", v.LEO, v.HW))
	if n, err := strconv.ParseInt(minISR, 10, 64); err == nil && int64(len(v.ISR)) < n {
		lines = append(lines, fmt.Sprintf("the ISR has %d member(s), fewer than min.insync.replicas=%d: produce requests with acks=all fail with NOT_ENOUGH_REPLICAS and the high watermark does not advance until a replica rejoins.", len(v.ISR), n))
	}
	out := 0
	for _, r := range v.ReplicaState {
		switch {
		case r.Leader:
			continue
		case r.InISR:
			lines = append(lines, fmt.Sprintf("replica %d is in the ISR: log end offset %s, %d behind the leader, last caught up %s.",
				r.BrokerID, leoText(r.LogEndOffset), r.LagOffsets, whenMs(r.LastCaughtUpMs, now)))
			continue
		}
		out++
		lines = append(lines, explainOutOfISR(r, now)...)
	}
	if out == 0 {
		lines = append(lines, "every replica is in the ISR.")
	}
	return lines
}

// explainOutOfISR is the sentences about one replica outside the ISR.
func explainOutOfISR(r admin.ReplicaView, now time.Time) []string {
	var lines []string
	if d := r.OutOfISR; d != nil {
		lines = append(lines, fmt.Sprintf("replica %d is out of the ISR since %s: %s: %s.", r.BrokerID, whenMs(d.AtMs, now), d.Cause, strings.TrimSuffix(d.Detail, ".")))
	} else {
		lines = append(lines, fmt.Sprintf("replica %d is out of the ISR; this leader did not remove it (it was out when this broker became leader), so it has no record of why.", r.BrokerID))
	}
	caught := "it has not been caught up since this broker became leader"
	if r.LastCaughtUpMs > 0 {
		caught = "it was last caught up " + whenMs(r.LastCaughtUpMs, now)
	}
	if r.LogEndOffset < 0 {
		lines = append(lines, fmt.Sprintf("  its log end offset is unknown (no fetch from it since this broker became leader); %s.", caught))
	} else {
		lines = append(lines, fmt.Sprintf("  its log end offset is %d, %d behind the leader; %s.", r.LogEndOffset, r.LagOffsets, caught))
	}
	if len(r.WaitsFor) == 0 {
		lines = append(lines, "  it meets every rule to rejoin: the leader adds it with its next ISR change (AlterPartition to the controller).")
		return lines
	}
	lines = append(lines, "  it rejoins the ISR when all of these clear:")
	for _, w := range r.WaitsFor {
		lines = append(lines, "  - "+w)
	}
	return lines
}

func leoText(o int64) string {
	if o < 0 {
		return "unknown"
	}
	return fmt.Sprint(o)
}
