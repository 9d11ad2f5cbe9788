package main

// gregor user scram set|delete|list: SCRAM credentials, as
// kafka-configs.sh --alter --add-config 'SCRAM-SHA-256=[password=...]'
// manages them. The password is salted here (AlterUserScramCredentials
// carries the salted password, never the password).

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func userCmd() *cobra.Command {
	var f connFlags
	cmd := &cobra.Command{Use: "user", Short: "Manage users' SCRAM credentials"}
	f.register(cmd)
	scram := &cobra.Command{
		Use:   "scram",
		Short: "Set, delete and list SCRAM-SHA-256/512 credentials",
		Long: `SCRAM credentials are stored salted in the cluster metadata. Setting one needs
ALTER on the cluster, listing DESCRIBE (a super user, or an ACL).

Examples:
  GREGOR_SCRAM_PASSWORD=alice-secret gregor user scram set alice
  gregor user scram set bob --mechanism SCRAM-SHA-512 --iterations 8192 < password-file
  gregor user scram list
  gregor user scram delete alice --mechanism SCRAM-SHA-256`,
	}
	scram.AddCommand(scramSetCmd(&f), scramDeleteCmd(&f), scramListCmd(&f))
	cmd.AddCommand(scram)
	return cmd
}

func scramMechanism(s string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(s) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, fmt.Errorf("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", s)
}

func scramSetCmd(f *connFlags) *cobra.Command {
	var mechanism string
	var iterations int32
	cmd := &cobra.Command{
		Use:   "set USER",
		Short: "Set a user's credential (password from GREGOR_SCRAM_PASSWORD, else the first line of stdin)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := scramMechanism(mechanism)
			if err != nil {
				return err
			}
			password := os.Getenv("GREGOR_SCRAM_PASSWORD")
			if password == "" {
				line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if err != nil && line == "" {
					return errors.New("no password: set GREGOR_SCRAM_PASSWORD or give it on stdin")
				}
				password = strings.TrimRight(line, "\r\n")
			}
			return scramAlter(cmd, f, nil, []kadm.UpsertSCRAM{{User: args[0], Mechanism: m, Iterations: iterations, Password: password}})
		},
	}
	cmd.Flags().StringVar(&mechanism, "mechanism", "SCRAM-SHA-256", "SCRAM-SHA-256 or SCRAM-SHA-512")
	cmd.Flags().Int32Var(&iterations, "iterations", 4096, "PBKDF2 iterations (4096 to 16384)")
	return cmd
}

func scramDeleteCmd(f *connFlags) *cobra.Command {
	var mechanism string
	cmd := &cobra.Command{
		Use:   "delete USER",
		Short: "Delete a user's credential for a mechanism",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := scramMechanism(mechanism)
			if err != nil {
				return err
			}
			return scramAlter(cmd, f, []kadm.DeleteSCRAM{{User: args[0], Mechanism: m}}, nil)
		},
	}
	cmd.Flags().StringVar(&mechanism, "mechanism", "SCRAM-SHA-256", "SCRAM-SHA-256 or SCRAM-SHA-512")
	return cmd
}

// scramResult is one user's outcome of set or delete.
type scramResult struct {
	User  string `json:"user"`
	Error string `json:"error,omitempty"`
}

var scramResults = tableView[scramResult]{
	header: []any{"user", "result"},
	row: func(r scramResult) []any {
		if r.Error == "" {
			return []any{r.User, "OK"}
		}
		return []any{r.User, r.Error}
	},
}

func scramAlter(cmd *cobra.Command, f *connFlags, del []kadm.DeleteSCRAM, up []kadm.UpsertSCRAM) error {
	s, end, err := f.connect(cmd)
	if err != nil {
		return err
	}
	defer end()
	res, err := s.adm.AlterUserSCRAMs(s.ctx, del, up)
	if err != nil {
		return err
	}
	var rows []scramResult
	var failed failures
	for _, r := range res.Sorted() {
		e := withMessage(r.Err, r.ErrMessage)
		failed.add(e)
		rows = append(rows, scramResult{User: r.User, Error: errString(e)})
	}
	if err := scramResults.print(cmd.OutOrStdout(), f.output, rows); err != nil {
		return err
	}
	return failed.err("users")
}

// scramCredential is one row of `user scram list`.
type scramCredential struct {
	User       string `json:"user"`
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

var scramCredentials = tableView[scramCredential]{
	header: []any{"user", "mechanism", "iterations"},
	right:  []int{3},
	row:    func(c scramCredential) []any { return []any{c.User, c.Mechanism, c.Iterations} },
}

func scramListCmd(f *connFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "list [USER...]",
		Aliases: []string{"ls"},
		Short:   "List users' SCRAM mechanisms and iterations (never their keys)",
		RunE: func(cmd *cobra.Command, args []string) error {
			s, end, err := f.connect(cmd)
			if err != nil {
				return err
			}
			defer end()
			described, err := s.adm.DescribeUserSCRAMs(s.ctx, args...)
			if err != nil {
				return err
			}
			rows := []scramCredential{}
			var failed failures
			for _, u := range described.Sorted() {
				if e := withMessage(u.Err, u.ErrMessage); e != nil {
					failed.add(e)
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", u.User, e)
					continue
				}
				for _, c := range u.CredInfos {
					rows = append(rows, scramCredential{User: u.User, Mechanism: c.Mechanism.String(), Iterations: c.Iterations})
				}
			}
			if err := scramCredentials.print(cmd.OutOrStdout(), f.output, rows); err != nil {
				return err
			}
			return failed.err("users")
		},
	}
}
