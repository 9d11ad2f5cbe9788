package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gregor-broker/gregor/internal/broker"
	"github.com/gregor-broker/gregor/internal/config"
)

// Single-node defaults for `gregor serve` with no flags: Kafka's KRaft
// combined-mode identity, a loopback listener and a local data directory.
// The internal topics' replication is set by internalReplication from the
// number of voters.
var serveDefaults = map[string]string{
	"node.id":                        "1",
	"process.roles":                  "broker,controller",
	"controller.listener.names":      "CONTROLLER",
	"listeners":                      "PLAINTEXT://127.0.0.1:9092",
	"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
	"log.dirs":                       "./gregor-data",
}

// internalReplication are the defaults of the internal topics' replication
// for a quorum of voters nodes, where neither --config nor --set names
// them: Kafka's own (3 replicas, min ISR 2) from three voters up, as many
// replicas as there are voters below (one node: 1 and 1, as Kafka's sample
// server.properties; two: 2 and 1). A cluster whose __transaction_state
// and __consumer_offsets had one replica would lose its coordinators with
// any node: nothing could move them, and transactional clients would dial
// the dead node until it came back.
func internalReplication(voters int) map[string]string {
	rf := min(max(voters, 1), 3)
	isr := strconv.Itoa(max(min(rf-1, 2), 1))
	return map[string]string{
		"offsets.topic.replication.factor":         strconv.Itoa(rf),
		"transaction.state.log.replication.factor": strconv.Itoa(rf),
		"transaction.state.log.min.isr":            isr,
	}
}

// voterCount is the number of entries of controller.quorum.voters (1 when
// empty: this node alone).
func voterCount(voters string) int {
	n := 0
	for _, v := range strings.Split(voters, ",") {
		if strings.TrimSpace(v) != "" {
			n++
		}
	}
	return max(n, 1)
}

// configFlags are the flags that make the broker configuration: serve and
// storage share them, so storage format checks the dirs serve will use.
type configFlags struct {
	configFile string
	sets       []string
	dataDir    string
	// The cluster flags: --node-id, --voters, --controller-listen, and
	// serve's --listen.
	nodeID           int32
	voters           string
	controllerListen string
	listen           string
}

func (f *configFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.configFile, "config", "", "Kafka server.properties file")
	fs.StringArrayVar(&f.sets, "set", nil, "broker config override key=value (repeatable)")
	fs.StringVar(&f.dataDir, "data-dir", "", "data directory (sets log.dirs; default ./gregor-data)")
	fs.Int32Var(&f.nodeID, "node-id", -1, "this node's id (sets node.id; -1: node.id from the configuration, 1 by default)")
	fs.StringVar(&f.voters, "voters", "", "the metadata quorum's voters, id@host:port of each CONTROLLER listener, comma-separated "+
		"(sets controller.quorum.voters; default: this node alone)")
	fs.StringVar(&f.controllerListen, "controller-listen", "", "CONTROLLER listener HOST:PORT, where the other nodes reach this one "+
		"(default: this node's address in --voters, or a free loopback port for a one-node cluster)")
}

// props layers the single-node defaults, --config, each --set, and the
// dedicated flags (--data-dir, --node-id, --voters, --listen,
// --controller-listen), later ones winning; then the internal topics'
// replication for the number of voters where --config and --set leave it.
func (f *configFlags) props() (map[string]string, error) {
	props, explicit := map[string]string{}, map[string]bool{}
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
			explicit[k] = true
		}
	}
	for _, kv := range f.sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--set %q: want key=value", kv)
		}
		props[strings.TrimSpace(k)] = v
		explicit[strings.TrimSpace(k)] = true
	}
	if f.dataDir != "" {
		props["log.dirs"] = f.dataDir
		delete(props, "log.dir")
	}
	if f.nodeID >= 0 {
		props["node.id"] = strconv.Itoa(int(f.nodeID))
		delete(props, "broker.id")
	}
	if f.voters != "" {
		props["controller.quorum.voters"] = f.voters
	}
	for k, v := range internalReplication(voterCount(props["controller.quorum.voters"])) {
		if !explicit[k] {
			props[k] = v
		}
	}
	return props, f.setListeners(props)
}

// setListeners puts --listen (the client listener, also advertised) and
// --controller-listen (the CONTROLLER listener) into listeners, keeping the
// other entries.
func (f *configFlags) setListeners(props map[string]string) error {
	if f.listen == "" && f.controllerListen == "" {
		return nil
	}
	ctrlName := "CONTROLLER"
	if names := strings.Split(props["controller.listener.names"], ","); names[0] != "" {
		ctrlName = strings.ToUpper(strings.TrimSpace(names[0]))
	}
	var client, ctrl, rest []string
	for _, l := range strings.Split(props["listeners"], ",") {
		l = strings.TrimSpace(l)
		name, _, _ := strings.Cut(l, "://")
		switch {
		case l == "":
		case strings.EqualFold(name, ctrlName):
			ctrl = append(ctrl, l)
		case client == nil:
			client = append(client, l)
		default:
			rest = append(rest, l)
		}
	}
	if f.listen != "" {
		if _, _, err := net.SplitHostPort(f.listen); err != nil {
			return fmt.Errorf("--listen %q: %w", f.listen, err)
		}
		client = []string{"PLAINTEXT://" + f.listen}
		props["advertised.listeners"] = "PLAINTEXT://" + f.listen
	}
	if f.controllerListen != "" {
		if _, _, err := net.SplitHostPort(f.controllerListen); err != nil {
			return fmt.Errorf("--controller-listen %q: %w", f.controllerListen, err)
		}
		ctrl = []string{ctrlName + "://" + f.controllerListen}
	}
	props["listeners"] = strings.Join(append(append(client, ctrl...), rest...), ",")
	return nil
}

func serveCmd() *cobra.Command {
	var (
		cf          configFlags
		adminListen string
		logLevel    string
		logFormat   string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a Gregor broker (single node by default: 127.0.0.1:9092, data in ./gregor-data)",
		Long: `Run a Gregor node: a broker and a voter of the cluster's metadata quorum.

With no flags it runs a one-node cluster on 127.0.0.1:9092 with its data in
./gregor-data (formatted on first start) and the admin HTTP listener on
127.0.0.1:9644 (/livez, /readyz, /metrics); the node is its own metadata
quorum, its CONTROLLER listener on a free loopback port. A Kafka
server.properties file loads unchanged with --config; --set overrides any
broker config by its Kafka name.

Several nodes make one cluster when each is started with its own --node-id,
--listen and --controller-listen and the same --voters, the id and
CONTROLLER address of every node:

  gregor serve --node-id 1 --data-dir d1 --listen 127.0.0.1:9092 --controller-listen 127.0.0.1:9093 \
      --voters 1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293 --admin-listen 127.0.0.1:9644

(and nodes 2 and 3 likewise). A node serves clients once a majority of the
voters run; fresh nodes name their cluster after the voters, so no format
step is needed (gregor storage format -t sets another id). SIGTERM moves the
node's partition leaderships away, then stops it (exit 0).

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
	f.StringVar(&cf.listen, "listen", "", "client listener HOST:PORT, also advertised (default 127.0.0.1:9092)")
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
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	select {
	case <-b.Ready():
		scheme := "http"
		if b.Config().String("gregor.admin.tls.certificate") != "" {
			scheme = "https"
		}
		fmt.Fprintf(cmd.OutOrStdout(), "gregor is serving\n  bootstrap: %s\n  admin:     %s://%s\n  controller: %s\n  data:      %s\n",
			b.Addr(), scheme, b.AdminAddr(), b.ControllerAddr(), strings.Join(b.DataDirs(), ","))
		if m := b.Admin().MetricsAddr(); m != nil {
			fmt.Fprintf(cmd.OutOrStdout(), "  metrics:   http://%s\n", m)
		}
		for _, name := range b.ListenerNames() {
			fmt.Fprintf(cmd.OutOrStdout(), "  listener %s: %s\n", name, b.ListenerAddr(name))
		}
	case err := <-done:
		return err
	}
	return <-done
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
