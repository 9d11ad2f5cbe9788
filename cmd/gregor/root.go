package main

import (
	"github.com/spf13/cobra"
)

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "gregor",
		Short:         "Gregor: a Kafka-compatible streaming log broker",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(serveCmd(), storageCmd(), benchCmd(), topicCmd(), offsetsCmd(), produceCmd(), consumeCmd(), groupCmd(), txnCmd(),
		logCmd(), whyCmd(), aclCmd(), userCmd(), clusterCmd(), partitionCmd(), devCmd())
	return root
}
