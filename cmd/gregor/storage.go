package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gregor-broker/gregor/internal/cluster"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/logdirs"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// storageCmd is Kafka's kafka-storage: format and inspect the log dirs a
// broker with the same configuration would use, without starting it.
func storageCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "storage",
		Short: "Format and inspect log dirs (Kafka's kafka-storage: format, info, random-uuid)",
		Long: `Format and inspect the log dirs of a broker, as Kafka's kafka-storage tool does.

The dirs are the ones gregor serve would use with the same --config, --set and
--data-dir: log.dirs (default ./gregor-data), and metadata.log.dir when set.
gregor serve formats dirs that are all empty by itself; format is for adding a
dir to a node that already has data, for choosing the cluster id, and for
finishing a format that was interrupted.`,
	}
	cmd.AddCommand(storageFormatCmd(), storageInfoCmd(), storageRandomUUIDCmd())
	return cmd
}

func storageFormatCmd() *cobra.Command {
	var (
		cf   configFlags
		opts logdirs.FormatOptions
	)
	cmd := &cobra.Command{
		Use:   "format",
		Short: "Write meta.properties into the log dirs (and a new metadata log when there is none)",
		Long: `Write meta.properties (cluster.id, node.id, a new directory.id) into every log
dir that has none, and a new metadata log (__cluster_metadata-0: the
cluster's first snapshot, with the voters of controller.quorum.voters or
--voters) into the metadata dir when no dir holds one. A dir that is already
formatted is refused, unless --ignore-formatted, which skips it. Dirs of
another cluster or node are always refused.

Every voter of a new cluster must be formatted with the same cluster id and
voters: give each the same --cluster-id (kafka-storage format -t), or give
none and the id is derived from --voters, the same on every node. gregor
serve formats empty dirs the same way by itself.

To add a disk to a node that has data: add it to log.dirs, then
  gregor storage format --ignore-formatted --config server.properties`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := storageConfig(&cf)
			if err != nil {
				return err
			}
			l, err := storageLayout(&cf)
			if err != nil {
				return err
			}
			return logdirs.Format(c, opts, cluster.Format(c.FS, c.NodeID, l.VoterIDs()), cmd.OutOrStdout())
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVarP(&opts.ClusterID, "cluster-id", "t", "", "the cluster id (a Kafka UUID, see random-uuid); default: the formatted dirs' one, "+
		"else one derived from --voters (the same on every node), else a random one")
	cmd.Flags().BoolVarP(&opts.IgnoreFormatted, "ignore-formatted", "g", false, "skip dirs that are already formatted instead of failing")
	return cmd
}

func storageInfoCmd() *cobra.Command {
	var cf configFlags
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Show what each log dir holds and any problem that would stop gregor serve",
		Long: `Show each log dir with what it holds (meta.properties, partition and stray
dirs, the metadata), where the metadata is, and every problem that would stop
gregor serve from starting, with what to do. Exits non-zero when there is a
problem. It only reads, and may run while the broker runs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := storageConfig(&cf)
			if err != nil {
				return err
			}
			if !logdirs.Info(c, cmd.OutOrStdout()) {
				return errors.New("the log dirs have problems (listed above)")
			}
			return nil
		},
	}
	cf.register(cmd)
	return cmd
}

func storageRandomUUIDCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "random-uuid",
		Short: "Print a random UUID in Kafka's form, for --cluster-id",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), logdirs.RandomUUID())
		},
	}
}

// storageConfig resolves the broker configuration the flags give into the
// dirs to format or inspect.
func storageConfig(cf *configFlags) (logdirs.Config, error) {
	props, err := cf.props()
	if err != nil {
		return logdirs.Config{}, err
	}
	b, err := config.NewBroker(props)
	if err != nil {
		return logdirs.Config{}, err
	}
	l, err := cluster.ParseLayout(b)
	if err != nil {
		return logdirs.Config{}, err
	}
	c := logdirs.Config{FS: vfs.Default, LogDirs: b.LogDirs(), MetadataLogDir: b.String("metadata.log.dir"),
		NodeID: b.NodeID(), MetadataFile: cluster.MetadataDirName, LegacyMetadataFile: cluster.LegacyMetadataFile}
	if l.ExplicitVoters {
		c.NewClusterID = func() string { return cluster.DeriveClusterID(l.Voters) }
	}
	return c, nil
}

// storageLayout is the node's place in the cluster the flags describe.
func storageLayout(cf *configFlags) (*cluster.Layout, error) {
	props, err := cf.props()
	if err != nil {
		return nil, err
	}
	b, err := config.NewBroker(props)
	if err != nil {
		return nil, err
	}
	return cluster.ParseLayout(b)
}
