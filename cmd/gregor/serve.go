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
	"node.id":                                  "1",
	"process.roles":                            "broker,controller",
	"controller.listener.names":                "CONTROLLER",
	"listeners":                                "PLAINTEXT://127.0.0.1:9092",
	"listener.security.protocol.map":           "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
	"log.dirs":                                 "./gregor-data",
	"offsets.topic.replication.factor":         "1",
	"transaction.state.log.replication.factor": "1",
	"transaction.state.log.min.isr":            "1",
}

// configFlags are the flags that make the broker configuration: serve and
// storage share them, so storage format checks the dirs serve will use.
type configFlags struct {
	configFile string
	sets       []string
	dataDir    string
}

func (f *configFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.configFile, "config", "", "Kafka server.properties file")
	fs.StringArrayVar(&f.sets, "set", nil, "broker config override key=value (repeatable)")
	fs.StringVar(&f.dataDir, "data-dir", "", "data directory (sets log.dirs; default ./gregor-data)")
}

// props layers the single-node defaults, --config, each --set and
// --data-dir, later ones winning.
func (f *configFlags) props() (map[string]string, error) {
	props := map[string]string{}
	for k, v := range serveDefaults {
		props[k] = v
	}
	if f.configFile != "" {
		loaded, err := config.LoadProperties(f.configFile)
		if err != nil {
			return nil, err
		}
		for k, v := range loaded {
			props[k] = v
		}
	}
	for _, kv := range f.sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--set %q: want key=value", kv)
		}
		props[strings.TrimSpace(k)] = v
	}
	if f.dataDir != "" {
		props["log.dirs"] = f.dataDir
		delete(props, "log.dir")
	}
	return props, nil
}

func serveCmd() *cobra.Command {
	var (
		cf          configFlags
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
name.

Before it reads anything else, serve locks every log dir (.lock) and checks
that their meta.properties agree; dirs that are all empty are formatted for a
new cluster, anything else inconsistent (an empty or unformatted dir next to
formatted ones, another cluster's or node's dir, data without the metadata)
stops it with a message saying what each dir holds and what to do. See
gregor storage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			props, err := cf.props()
			if err != nil {
				return err
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
			return serve(cmd, props, logger)
		},
	}
	cf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "", "client listener HOST:PORT, also advertised (default 127.0.0.1:9092)")
	f.StringVar(&adminListen, "admin-listen", "", "admin HTTP HOST:PORT (default 127.0.0.1:9644)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&logFormat, "log-format", "auto", "text, json, or auto (text on a terminal, JSON otherwise)")
	return cmd
}

// serve runs a broker until SIGTERM or SIGINT.
func serve(cmd *cobra.Command, props map[string]string, logger *slog.Logger) error {
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
