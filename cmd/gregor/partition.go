package main

// `gregor partition ack-unclean TOPIC/PARTITION`: acknowledge a partition's
// recorded unclean or last-known-leader election, which /v1, the console,
// `gregor cluster`, `gregor topic describe` and `gregor why isr` show as a
// possible data loss until then. Only the active controller writes it, so
// the command asks each admin listener it is given until the controller's
// answers.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gregor-broker/gregor/internal/admin"
)

func partitionCmd() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:   "partition",
		Short: "Act on one partition through Gregor's admin listener",
	}
	var epoch int32
	ack := &cobra.Command{
		Use:   "ack-unclean TOPIC/PARTITION",
		Short: "Acknowledge a partition's unclean leader election (clears its possible-data-loss warning)",
		Long: `An unclean election (unclean.leader.election.enable, or ElectLeaders UNCLEAN)
or a last-known-leader election (KIP-966) elects a leader from outside the
in-sync replicas: records the previous ISR acknowledged may be lost. Gregor
records each in the cluster metadata and shows it in /v1, the console,
gregor cluster, gregor topic describe and gregor why isr until an operator
acknowledges it here, after checking what the partition's consumers and
producers saw. --leader-epoch names the election seen (the warning prints
it), so a newer one is never cleared unseen; without it, whichever is
recorded is acknowledged.

Only the active controller writes the acknowledgement: --admin (or
GREGOR_ADMIN) may list several admin listeners separated by commas, and
each is asked until the controller's answers.`,
		Example: `  gregor partition ack-unclean orders/0 --leader-epoch 7 --admin 127.0.0.1:9644,127.0.0.1:9645,127.0.0.1:9646`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAckUnclean(cmd, &f, args[0], epoch)
		},
	}
	ack.Flags().Int32Var(&epoch, "leader-epoch", -1, "the leader epoch of the election to acknowledge (-1: whichever is recorded)")
	f.register(cmd, "text")
	cmd.AddCommand(ack)
	return cmd
}

func runAckUnclean(cmd *cobra.Command, f *adminFlags, arg string, epoch int32) error {
	tp, err := parseTopicPartition(arg)
	if err != nil {
		return err
	}
	if tp.partition < 0 {
		return fmt.Errorf("%q: want TOPIC/PARTITION", arg)
	}
	bases, err := f.baseURLs()
	if err != nil {
		return err
	}
	ctx, cancel := f.context(cmd)
	defer cancel()
	path := fmt.Sprintf("/v1/partitions/%s/%d/unclean-election/ack", url.PathEscape(tp.topic), tp.partition)
	if epoch >= 0 {
		path += fmt.Sprintf("?leader_epoch=%d", epoch)
	}
	var errs []string
	for _, base := range bases {
		status, body, err := adminPost(ctx, base, path)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", base, err))
			continue
		}
		var e struct {
			admin.APIError
			Controller int32 `json:"controller_id"`
		}
		switch {
		case status == http.StatusOK:
			var a admin.AckAnswer
			if err := json.Unmarshal(body, &a); err != nil {
				return fmt.Errorf("%s answered %q: %v", base, body, err)
			}
			if f.output == "json" {
				return writeJSON(cmd.OutOrStdout(), a)
			}
			u := a.Acknowledged
			fmt.Fprintf(cmd.OutOrStdout(), "acknowledged the %s election of %s/%d in leader epoch %d (broker %d, %s)\n",
				u.Kind, u.Topic, u.Partition, u.LeaderEpoch, u.Leader, u.At.Format("2006-01-02T15:04:05Z07:00"))
			return nil
		case json.Unmarshal(body, &e) != nil || e.Code == "":
			errs = append(errs, fmt.Sprintf("%s answered %d: %s", base, status, strings.TrimSpace(string(body))))
		case e.Code == admin.APICodeNotController:
			errs = append(errs, fmt.Sprintf("%s: %s", base, e.Error))
		default:
			return fmt.Errorf("%s: %s", base, e.Error)
		}
	}
	return fmt.Errorf("no admin listener asked wrote the acknowledgement (list the active controller's with --admin):\n%s", strings.Join(errs, "\n"))
}

// adminPost posts an empty body to base+path and returns the status and body.
func adminPost(ctx context.Context, base, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, nil)
	if err != nil {
		return 0, nil, err
	}
	return adminDo(req)
}
