package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gregor-broker/gregor/internal/broker"
	"github.com/gregor-broker/gregor/internal/config"
)

// Single-node defaults for `gregor serve` with no flags: Kafka's KRaft
// combined-mode identity, a loopback listener and a local data directory.
var serveDefaults = map[string]string{
	"node.id":                          "1",
	"process.roles":                    "broker,controller",
	"controller.listener.names":        "CONTROLLER",
	"listeners":                        "PLAINTEXT://127.0.0.1:9092",
	"listener.security.protocol.map":   "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
	"log.dirs":                         "./gregor-data",
	"offsets.topic.replication.factor": "1",
}

func serveCmd() *cobra.Command {
	var (
		configFile  string
		sets        []string
		dataDir     string
		listen      string
		adminListen string
		logLevel    string
		logFormat   string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a Gregor broker (single node by default: 127.0.0.1:9092, data in ./gregor-data)",
		Long: `Run a Gregor broker.

With no flags it runs a single node on 127.0.0.1:9092 with its data in
./gregor-data (formatted on first start) and the admin HTTP listener on
127.0.0.1:9644 (/livez, /readyz, /metrics). A Kafka server.properties file
loads unchanged with --config; --set overrides any broker config by its Kafka
name.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			props := map[string]string{}
			for k, v := range serveDefaults {
				props[k] = v
			}
			if configFile != "" {
				loaded, err := config.LoadProperties(configFile)
				if err != nil {
					return err
				}
				for k, v := range loaded {
					props[k] = v
				}
			}
			for _, kv := range sets {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || strings.TrimSpace(k) == "" {
					return fmt.Errorf("--set %q: want key=value", kv)
				}
				props[strings.TrimSpace(k)] = v
			}
			if dataDir != "" {
				props["log.dirs"] = dataDir
				delete(props, "log.dir")
			}
			if listen != "" {
				if _, _, err := net.SplitHostPort(listen); err != nil {
					return fmt.Errorf("--listen %q: %w", listen, err)
				}
				props["listeners"] = "PLAINTEXT://" + listen
				props["advertised.listeners"] = "PLAINTEXT://" + listen
			}
			if adminListen != "" {
				props["gregor.admin.listen"] = adminListen
			}
			logger, err := newLogger(logLevel, logFormat)
			if err != nil {
				return err
			}
			slog.SetDefault(logger)
			b, err := broker.New(broker.Options{Static: props, Logger: logger})
			if err != nil {
				return err
			}
			if err := b.Start(); err != nil {
				sctx, cancel := context.WithCancel(context.Background())
				cancel()
				_ = b.Shutdown(sctx)
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "gregor is serving\n  bootstrap: %s\n  admin:     http://%s\n  data:      %s\n",
				b.Addr(), b.AdminAddr(), strings.Join(b.DataDirs(), ","))
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return b.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "Kafka server.properties file")
	f.StringArrayVar(&sets, "set", nil, "broker config override key=value (repeatable)")
	f.StringVar(&dataDir, "data-dir", "", "data directory (sets log.dirs; default ./gregor-data)")
	f.StringVar(&listen, "listen", "", "client listener HOST:PORT, also advertised (default 127.0.0.1:9092)")
	f.StringVar(&adminListen, "admin-listen", "", "admin HTTP HOST:PORT (default 127.0.0.1:9644)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&logFormat, "log-format", "auto", "text, json, or auto (text on a terminal, JSON otherwise)")
	return cmd
}

func newLogger(level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	if format == "auto" {
		format = "json"
		if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			format = "text"
		}
	}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text, json or auto", format)
}
