package main

// `gregor dev --nodes N`: a local N-node cluster in one command, for trying
// a cluster on a laptop. Each node is a child `gregor serve` process started
// exactly as the manual three-command start does it (its own --node-id,
// --data-dir, --listen, --controller-listen, --admin-listen, the same
// --voters), its data in DIR/node-N and its log in DIR/node-N.log. The
// ports are chosen on the first run and kept in DIR/gregor-dev.json, so a
// second run starts the same cluster on its data. Ctrl-C (SIGINT) or SIGTERM
// stops every node by its pid (each does a controlled shutdown).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// devFile is where `gregor dev` keeps the cluster's layout.
const devFile = "gregor-dev.json"

// devLayout is a dev cluster's nodes and their ports, fixed by the first
// run: the voters' addresses name the cluster (its id is derived from
// them), and every node finds the others there.
type devLayout struct {
	Nodes []devPorts `json:"nodes"`
}

type devPorts struct {
	ID         int32 `json:"node_id"`
	Client     int   `json:"client_port"`
	Controller int   `json:"controller_port"`
	Admin      int   `json:"admin_port"`
}

// planDevLayout lays out n nodes: node i (from 1) listens for clients on
// portBase+100(i-1), its CONTROLLER listener one port above, its admin
// listener on adminBase+100(i-1), as in the README's manual start. A base of
// 0 asks free for each port instead, a different one for every listener.
func planDevLayout(n, portBase, adminBase int, free func() (int, error)) (devLayout, error) {
	var l devLayout
	// free may hand out a port again once its probe listener closed: no
	// two listeners of the cluster may get the same one.
	taken := map[int]bool{}
	pick := func(base, i, off int) (int, error) {
		if base == 0 {
			for range 100 {
				p, err := free()
				if err != nil || !taken[p] {
					taken[p] = true
					return p, err
				}
			}
			return 0, errors.New("no free loopback port that another node's listener has not taken")
		}
		p := base + 100*i + off
		if p <= 0 || p > 65535 {
			return 0, fmt.Errorf("node %d would listen on port %d", i+1, p)
		}
		return p, nil
	}
	for i := range n {
		var p devPorts
		var err error
		p.ID = int32(i + 1)
		if p.Client, err = pick(portBase, i, 0); err != nil {
			return l, err
		}
		if p.Controller, err = pick(portBase, i, 1); err != nil {
			return l, err
		}
		if p.Admin, err = pick(adminBase, i, 0); err != nil {
			return l, err
		}
		l.Nodes = append(l.Nodes, p)
	}
	return l, nil
}

// freePort is a loopback port nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (l devLayout) voters() string {
	var v []string
	for _, n := range l.Nodes {
		v = append(v, fmt.Sprintf("%d@127.0.0.1:%d", n.ID, n.Controller))
	}
	return strings.Join(v, ",")
}

func (l devLayout) bootstrap() string {
	var b []string
	for _, n := range l.Nodes {
		b = append(b, fmt.Sprintf("127.0.0.1:%d", n.Client))
	}
	return strings.Join(b, ",")
}

type devFlags struct {
	nodes        int
	dir          string
	portBase     int
	adminBase    int
	sets         []string
	logLevel     string
	restartAfter time.Duration
}

func devCmd() *cobra.Command {
	var f devFlags
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local N-node cluster (default 3) in one command; Ctrl-C stops it",
		Long: `Run a local cluster for trying Gregor on one machine: --nodes child
'gregor serve' processes on loopback, each a broker and a voter of the
metadata quorum, started as the manual start does it (see gregor serve --help).

Node N keeps its data in DIR/node-N and its log in DIR/node-N.log. With the
default ports node N serves clients on 9092+100(N-1) (9092, 9192, 9292), its
CONTROLLER listener one port above, and its admin listener on 9644+100(N-1);
--port-base 0 and --admin-port-base 0 pick free ports instead. The first run
writes the layout to DIR/gregor-dev.json; a later run starts the same
cluster again on its data (the flags that shape it must then agree).

Ctrl-C or SIGTERM stops every node by its pid (each moves its leaderships
away first) and waits for them. A node that exits by itself (kill -9 one to
see the others go on) is left stopped, or started again after
--restart-after.`,
		Example: `  gregor dev
  gregor dev --nodes 5 --dir /tmp/five --set num.partitions=6
  gregor dev --port-base 0 --admin-port-base 0 --restart-after 10s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDev(cmd, &f) },
	}
	fs := cmd.Flags()
	fs.IntVar(&f.nodes, "nodes", 3, "number of nodes (1, 3 or 5 make sense: a majority must run)")
	fs.StringVar(&f.dir, "dir", "gregor-dev", "directory for the nodes' data and logs")
	fs.IntVar(&f.portBase, "port-base", 9092, "node N's client port is this + 100(N-1), its CONTROLLER port one above; 0: free ports")
	fs.IntVar(&f.adminBase, "admin-port-base", 9644, "node N's admin HTTP port is this + 100(N-1); 0: free ports")
	fs.StringArrayVar(&f.sets, "set", nil, "broker config key=value for every node (repeatable)")
	fs.StringVar(&f.logLevel, "log-level", "info", "the nodes' log level: debug, info, warn or error")
	fs.DurationVar(&f.restartAfter, "restart-after", 0, "start a node that exited by itself again after this long (0: leave it stopped)")
	return cmd
}

// loadDevLayout reads DIR's layout, or plans and writes a new one; it
// refuses flags that would change an existing cluster's shape.
func loadDevLayout(cmd *cobra.Command, f *devFlags) (devLayout, bool, error) {
	path := filepath.Join(f.dir, devFile)
	data, err := os.ReadFile(path)
	if err == nil {
		var l devLayout
		if err := json.Unmarshal(data, &l); err != nil || len(l.Nodes) == 0 {
			return l, false, fmt.Errorf("%s is not a gregor dev layout (%v): remove %s to start a new cluster", path, err, f.dir)
		}
		if cmd.Flags().Changed("nodes") && f.nodes != len(l.Nodes) {
			return l, false, fmt.Errorf("%s holds a %d-node cluster, not %d: the voters cannot change; remove %s for a new one",
				f.dir, len(l.Nodes), f.nodes, f.dir)
		}
		for _, name := range []string{"port-base", "admin-port-base"} {
			if cmd.Flags().Changed(name) {
				return l, false, fmt.Errorf("%s keeps its ports in %s; --%s applies to a new cluster (remove %s first)",
					f.dir, devFile, name, f.dir)
			}
		}
		return l, true, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return devLayout{}, false, err
	}
	if f.nodes < 1 || f.nodes > 9 {
		return devLayout{}, false, fmt.Errorf("--nodes %d: want 1 to 9", f.nodes)
	}
	l, err := planDevLayout(f.nodes, f.portBase, f.adminBase, freePort)
	if err != nil {
		return l, false, err
	}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return l, false, err
	}
	data, _ = json.MarshalIndent(l, "", "  ")
	return l, false, os.WriteFile(path, append(data, '\n'), 0o644)
}

// devNode is one child `gregor serve` process.
type devNode struct {
	devPorts
	dir, logPath string
	args         []string
	cmd          *exec.Cmd
	exited       chan struct{}
	waitErr      error
}

func (n *devNode) running() bool {
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// start runs the node's process, appending to its log. Children get their
// own process group, so a Ctrl-C reaches only `gregor dev`, which stops
// them in order; they also get SIGTERM should gregor dev die (Linux).
func (n *devNode) start(self string) error {
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(self, n.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = devChildAttrs()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	n.cmd, n.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		n.waitErr = cmd.Wait()
		logf.Close()
		close(exited)
	}(n.exited)
	return nil
}

func newDevNodes(f *devFlags, l devLayout) []*devNode {
	var out []*devNode
	for _, p := range l.Nodes {
		n := &devNode{devPorts: p, dir: filepath.Join(f.dir, fmt.Sprintf("node-%d", p.ID)),
			logPath: filepath.Join(f.dir, fmt.Sprintf("node-%d.log", p.ID))}
		n.args = []string{"serve", "--node-id", strconv.Itoa(int(p.ID)), "--data-dir", n.dir,
			"--listen", fmt.Sprintf("127.0.0.1:%d", p.Client), "--controller-listen", fmt.Sprintf("127.0.0.1:%d", p.Controller),
			"--voters", l.voters(), "--admin-listen", fmt.Sprintf("127.0.0.1:%d", p.Admin),
			"--log-format", "text", "--log-level", f.logLevel}
		for _, s := range f.sets {
			n.args = append(n.args, "--set", s)
		}
		out = append(out, n)
	}
	return out
}

func runDev(cmd *cobra.Command, f *devFlags) error {
	// Pdeathsig follows the thread that started the child: keep this
	// goroutine on its thread for the life of the process.
	runtime.LockOSThread()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	l, reused, err := loadDevLayout(cmd, f)
	if err != nil {
		return err
	}
	nodes := newDevNodes(f, l)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	w := cmd.OutOrStdout()
	what := "a new"
	if reused {
		what = "the"
	}
	fmt.Fprintf(w, "gregor dev: starting %s %d-node cluster in %s\n", what, len(nodes), f.dir)
	for _, n := range nodes {
		if err := n.start(self); err != nil {
			stopDevNodes(w, nodes)
			return fmt.Errorf("node %d: %w", n.ID, err)
		}
		fmt.Fprintf(w, "  node %d  pid %-7d  bootstrap 127.0.0.1:%d  controller 127.0.0.1:%d  admin http://127.0.0.1:%d  data %s  log %s\n",
			n.ID, n.cmd.Process.Pid, n.Client, n.Controller, n.Admin, n.dir, n.logPath)
	}
	if err := waitDevReady(nodes, sig); err != nil {
		stopDevNodes(w, nodes)
		return err
	}
	fmt.Fprintf(w, "all %d nodes ready; bootstrap servers: %s\n", len(nodes), l.bootstrap())
	fmt.Fprintf(w, "try:  gregor cluster --admin 127.0.0.1:%d\n      gregor topic create demo -p 6 -b %s\n", l.Nodes[0].Admin, l.bootstrap())
	fmt.Fprintf(w, "Ctrl-C stops all nodes; a later `gregor dev --dir %s` starts them again on their data.\n", f.dir)
	superviseDev(w, nodes, sig, self, f.restartAfter)
	stopDevNodes(w, nodes)
	return nil
}

// devReadyTimeout bounds how long the nodes may take to serve.
const devReadyTimeout = 2 * time.Minute

// waitDevReady polls every node's /readyz until each answers 200; a node
// that exits, a signal or the timeout ends it with an error.
func waitDevReady(nodes []*devNode, sig <-chan os.Signal) error {
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(devReadyTimeout)
	ready := map[int32]bool{}
	for len(ready) < len(nodes) {
		for _, n := range nodes {
			if ready[n.ID] {
				continue
			}
			if !n.running() {
				return fmt.Errorf("node %d exited before it was ready (%v); its log:\n%s", n.ID, n.waitErr, logTail(n.logPath))
			}
			resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", n.Admin))
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ready[n.ID] = true
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the nodes were not all ready within %v; see their logs", devReadyTimeout)
		}
		select {
		case s := <-sig:
			return fmt.Errorf("%v before the nodes were ready", s)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// superviseDev waits for a signal, reporting nodes that exit on their own
// and starting them again after restartAfter when it is set.
func superviseDev(w io.Writer, nodes []*devNode, sig <-chan os.Signal, self string, restartAfter time.Duration) {
	type exit struct{ n *devNode }
	exits := make(chan exit, len(nodes))
	watch := func(n *devNode) {
		go func(done <-chan struct{}) { <-done; exits <- exit{n} }(n.exited)
	}
	for _, n := range nodes {
		watch(n)
	}
	restart := make(chan *devNode, len(nodes))
	for {
		select {
		case s := <-sig:
			fmt.Fprintf(w, "\n%v: stopping the nodes\n", s)
			return
		case e := <-exits:
			fmt.Fprintf(w, "node %d (pid %d) exited: %v\n", e.n.ID, e.n.cmd.Process.Pid, exitText(e.n.waitErr))
			if restartAfter > 0 {
				fmt.Fprintf(w, "  starting it again in %v\n", restartAfter)
				time.AfterFunc(restartAfter, func() { restart <- e.n })
			}
		case n := <-restart:
			if err := n.start(self); err != nil {
				fmt.Fprintf(w, "node %d: %v\n", n.ID, err)
				continue
			}
			watch(n)
			fmt.Fprintf(w, "node %d started again: pid %d\n", n.ID, n.cmd.Process.Pid)
		}
	}
}

// devStopTimeout bounds a node's shutdown after SIGTERM before it is
// killed: a controlled shutdown waits at most broker.session.timeout.ms.
const devStopTimeout = 30 * time.Second

// stopDevNodes sends SIGTERM to every running node (by its pid) at once,
// so none is left without a quorum while the others finish, and waits for
// each; one still running after devStopTimeout is killed.
func stopDevNodes(w io.Writer, nodes []*devNode) {
	var running []*devNode
	for _, n := range nodes {
		if n.running() {
			_ = n.cmd.Process.Signal(syscall.SIGTERM)
			running = append(running, n)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), devStopTimeout)
	defer cancel()
	for _, n := range running {
		select {
		case <-n.exited:
			fmt.Fprintf(w, "node %d (pid %d) stopped: %s\n", n.ID, n.cmd.Process.Pid, exitText(n.waitErr))
		case <-ctx.Done():
			_ = n.cmd.Process.Kill()
			<-n.exited
			fmt.Fprintf(w, "node %d (pid %d) did not stop within %v of SIGTERM: killed\n", n.ID, n.cmd.Process.Pid, devStopTimeout)
		}
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// logTail is the end of a node's log, for a node that failed to start.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	const max = 4 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}
