package main

// `gregor cluster`: the brokers of the cluster with their state and epochs,
// the active controller, and the metadata quorum's voters with their raft
// index and lag, read from one node's admin HTTP API (GET /v1/cluster).
// Kafka's protocol has part of this (DescribeCluster, DescribeQuorum) but
// not the broker epochs or controlled shutdowns, so like `why` it asks the
// admin listener.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gregor-broker/gregor/internal/admin"
)

func clusterCmd() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show the cluster: brokers with their state and epochs, the controller, the metadata quorum's voters and lag",
		Long: `Show the cluster as one node sees it: every registered broker (unfenced,
fenced, or in controlled shutdown) with its broker epoch, client endpoint and
rack; the active controller; and the metadata quorum, from its leader: each
voter's raft index (log end offset), how far it is behind the leader, when
the leader last heard from it, and this node's own place in the log.

It reads Gregor's admin HTTP API (GET /v1/cluster) of the node --admin names
(GREGOR_ADMIN, default 127.0.0.1:9644); any node answers for the whole
cluster. -o json prints that document as the node answered it.`,
		Example: `  gregor cluster
  gregor cluster --admin 127.0.0.1:9744 -o json | jq '.quorum.voters'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCluster(cmd, &f) },
	}
	f.register(cmd, "table")
	return cmd
}

// notServingYet explains a Gregor node that does not serve /v1/cluster yet
// (it does once it has caught up with the metadata log, which needs a
// majority of the voters running) with its /readyz; "" if base does not
// answer /readyz as Gregor does.
func notServingYet(ctx context.Context, base string) string {
	status, body, err := adminGet(ctx, base, "/readyz")
	text := strings.TrimSpace(string(body))
	if err != nil || (status != http.StatusOK && status != http.StatusServiceUnavailable) ||
		!(strings.HasPrefix(text, "[+]") || strings.HasPrefix(text, "[-]") || strings.HasPrefix(text, "[!]")) {
		return ""
	}
	return fmt.Sprintf("the node at %s does not show the cluster yet: it does once it has caught up with the metadata "+
		"log, which needs a majority of the voters running. Its /readyz:\n%s", base, text)
}

func runCluster(cmd *cobra.Command, f *adminFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	base, err := f.baseURL()
	if err != nil {
		return err
	}
	ctx, cancel := f.context(cmd)
	defer cancel()
	status, body, err := adminGet(ctx, base, "/v1/cluster")
	if err != nil {
		return fmt.Errorf("cannot reach the admin listener at %s: %w\n%s", base, err, notGregorHint("cluster", base))
	}
	if status == http.StatusNotFound {
		if why := notServingYet(ctx, base); why != "" {
			return errors.New(why)
		}
	}
	if status != http.StatusOK {
		return fmt.Errorf("GET %s/v1/cluster: %d %s: %s\n%s", base, status, http.StatusText(status), bodyText(body),
			notGregorHint("cluster", base))
	}
	var v admin.ClusterView
	if err := json.Unmarshal(body, &v); err != nil || v.ClusterID == "" {
		return fmt.Errorf("GET %s/v1/cluster did not answer a cluster document\n%s", base, notGregorHint("cluster", base))
	}
	w := cmd.OutOrStdout()
	if f.output == "json" {
		_, err := w.Write(body)
		return err
	}
	printCluster(w, v, time.Now())
	return nil
}

// printCluster writes the cluster view as a heading and two tables.
func printCluster(w io.Writer, v admin.ClusterView, now time.Time) {
	ctrl := "none"
	if v.ControllerID >= 0 {
		ctrl = fmt.Sprintf("node %d", v.ControllerID)
	}
	fmt.Fprintf(w, "Cluster %s: controller %s (as node %d sees it)\n\n", v.ClusterID, ctrl, v.NodeID)
	t := newTable(w, "broker", "state", "epoch", "endpoint", "rack", "")
	alignRight(t, 1, 3)
	for _, b := range v.Brokers {
		endpoint := "-"
		if b.Host != "" {
			endpoint = fmt.Sprintf("%s:%d", b.Host, b.Port)
		}
		note := ""
		if b.Controller {
			note = "controller"
		}
		t.AppendRow([]any{b.NodeID, b.State, b.Epoch, endpoint, orDash(b.Rack), note})
	}
	renderTable(w, t)
	for _, u := range v.UncleanElections {
		fmt.Fprintf(w, "\nWARNING %s/%d: %s\n", u.Topic, u.Partition, u.Explanation)
	}
	q := v.Quorum
	if q == nil {
		return
	}
	fmt.Fprintln(w)
	if q.Error != "" {
		fmt.Fprintf(w, "Metadata quorum: %s\n", q.Error)
	} else {
		fmt.Fprintf(w, "Metadata quorum: leader node %d, term %d, committed up to index %d\n", q.LeaderID, q.LeaderEpoch, q.HighWatermark)
	}
	t = newTable(w, "voter", "raft index", "lag", "last fetch", "last caught up", "endpoint", "")
	alignRight(t, 1, 2, 3)
	for _, vv := range q.Voters {
		note := ""
		if vv.NodeID == q.LeaderID {
			note = "leader"
		}
		t.AppendRow([]any{vv.NodeID, orUnknown(vv.LogEndOffset), orUnknown(vv.Lag), ago(now, vv.LastFetch),
			ago(now, vv.LastCaughtUp), vv.Endpoint, note})
	}
	renderTable(w, t)
	l := q.Local
	var caught string
	if l.CaughtUpAt != nil {
		caught = fmt.Sprintf("; caught up with the log at index %d %s", l.CaughtUpIndex, ago(now, l.CaughtUpAt))
	}
	fmt.Fprintf(w, "\nNode %d is a %s in term %d: applied up to index %d, %d committed%s\n", v.NodeID, orDash(l.Role), l.Term,
		l.AppliedIndex, l.CommitIndex, caught)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orUnknown(n int64) string {
	if n < 0 {
		return "?"
	}
	return fmt.Sprint(n)
}

// ago is how long before now t was: "0.3s ago", "never" for nil.
func ago(now time.Time, t *time.Time) string {
	if t == nil {
		return "never"
	}
	d := now.Sub(*t)
	if d < 0 {
		d = 0
	}
	if d < time.Minute {
		return fmt.Sprintf("%.1fs ago", d.Seconds())
	}
	return d.Round(time.Second).String() + " ago"
}
