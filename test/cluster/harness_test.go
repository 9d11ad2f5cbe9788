package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
)

// gregorBin is the gregor binary the tests run.
var gregorBin string

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	if bin := os.Getenv("GREGOR_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			fmt.Fprintln(os.Stderr, "GREGOR_BIN:", err)
			return 2
		}
		gregorBin = abs
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "gregor-cluster-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(dir)
	gregorBin = filepath.Join(dir, "gregor")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", gregorBin, "github.com/gregor-broker/gregor/cmd/gregor")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "test/cluster: building the gregor binary failed:", err)
		return 2
	}
	return m.Run()
}

// fastSettings are every node's settings in these tests: elections,
// heartbeats and session expiry a few times faster than Kafka's defaults.
var fastSettings = []string{
	"controller.quorum.election.timeout.ms=500",
	"broker.heartbeat.interval.ms=200",
	"broker.session.timeout.ms=2000",
	"group.initial.rebalance.delay.ms=0",
	"num.partitions=3",
}

// node is one `gregor serve` process of a cluster, with fixed loopback
// addresses so it can be restarted where the others expect it.
type node struct {
	id                  int32
	dir                 string
	client, ctrl, admin string
	cmd                 *exec.Cmd
	logPath             string
	exited              chan struct{}
	waitErr             error
	extra               []string
	// properties: start from a server.properties with Kafka's names
	// instead of the dedicated flags.
	properties bool
	// unready: the test expects the node never to serve.
	unready bool
	// netns: run the process in this network namespace (ip netns exec,
	// which execs it: the pid is gregor's own).
	netns string
}

// cluster is n nodes started as the example starts them.
type cluster struct {
	t      *testing.T
	nodes  []*node
	voters string
}

// freeAddr is a loopback address for a listener the test starts next
// (brokertest.FreeAddr: below the ephemeral port range, so no outgoing
// connection takes it meanwhile).
func freeAddr(t *testing.T) string { return brokertest.FreeAddr(t) }

// newCluster starts n nodes at once and waits until every one is ready.
func newCluster(t *testing.T, n int) *cluster { return newClusterWith(t, n, nil) }

// newClusterWith is newCluster with prepare run before any node starts
// (the nodes' dirs and addresses are chosen then).
func newClusterWith(t *testing.T, n int, prepare func(c *cluster)) *cluster {
	t.Helper()
	c := &cluster{t: t}
	base := t.TempDir()
	var voters []string
	for i := range n {
		nd := &node{id: int32(i + 1), dir: filepath.Join(base, fmt.Sprintf("d%d", i+1)),
			client: freeAddr(t), ctrl: freeAddr(t), admin: freeAddr(t)}
		c.nodes = append(c.nodes, nd)
		voters = append(voters, fmt.Sprintf("%d@%s", nd.id, nd.ctrl))
	}
	c.voters = strings.Join(voters, ",")
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			nd.kill()
			if t.Failed() {
				nd.dumpLog(t)
			}
		}
	})
	if prepare != nil {
		prepare(c)
	}
	for _, nd := range c.nodes {
		c.start(nd.id)
	}
	for _, nd := range c.nodes {
		c.waitReady(nd.id, 60*time.Second)
	}
	return c
}

func (c *cluster) node(id int32) *node { return c.nodes[id-1] }

// start runs node id's process (not waiting for it to be ready).
func (c *cluster) start(id int32) {
	c.t.Helper()
	nd := c.node(id)
	args := []string{"serve", "--node-id", fmt.Sprint(id), "--data-dir", nd.dir, "--listen", nd.client,
		"--controller-listen", nd.ctrl, "--voters", c.voters, "--admin-listen", nd.admin, "--log-format", "text"}
	for _, s := range fastSettings {
		args = append(args, "--set", s)
	}
	if nd.properties {
		args = []string{"serve", "--config", c.writeProperties(nd), "--log-format", "text"}
	}
	args = append(args, nd.extra...)
	nd.logPath = filepath.Join(c.t.TempDir(), fmt.Sprintf("node%d.log", id))
	logFile, err := os.Create(nd.logPath)
	if err != nil {
		c.t.Fatal(err)
	}
	nd.cmd = exec.Command(gregorBin, args...)
	if nd.netns != "" {
		nd.cmd = exec.Command("ip", append([]string{"netns", "exec", nd.netns, gregorBin}, args...)...)
	}
	nd.cmd.Stdout, nd.cmd.Stderr = logFile, logFile
	if err := nd.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	nd.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		nd.waitErr = cmd.Wait()
		logFile.Close()
		close(exited)
	}(nd.cmd, nd.exited)
}

// writeProperties writes the server.properties a Kafka user would write for
// node nd in combined mode, by Kafka's config names only, with the same
// settings as the dedicated flags give, and returns its path.
func (c *cluster) writeProperties(nd *node) string {
	c.t.Helper()
	lines := []string{
		fmt.Sprintf("node.id=%d", nd.id),
		"process.roles=broker,controller",
		"controller.quorum.voters=" + c.voters,
		fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://%s", nd.client, nd.ctrl),
		"advertised.listeners=PLAINTEXT://" + nd.client,
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=PLAINTEXT",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"controller.quorum.fetch.timeout.ms=2000",
		"log.dirs=" + nd.dir,
		"gregor.admin.listen=" + nd.admin,
	}
	lines = append(lines, fastSettings...)
	path := filepath.Join(c.t.TempDir(), fmt.Sprintf("server-%d.properties", nd.id))
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// gregor runs the binary with args and returns its combined output.
func (c *cluster) gregor(args ...string) (string, error) {
	out, err := exec.Command(gregorBin, args...).CombinedOutput()
	return string(out), err
}

// ready reports whether node id's /readyz answers 200.
func (nd *node) ready() bool {
	cl := &http.Client{Timeout: time.Second}
	resp, err := cl.Get("http://" + nd.admin + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (c *cluster) waitReady(id int32, d time.Duration) {
	c.t.Helper()
	nd := c.node(id)
	if !poll(d, func() bool {
		select {
		case <-nd.exited:
			return true
		default:
		}
		return nd.ready()
	}) || !nd.running() {
		nd.dumpLog(c.t)
		c.t.Fatalf("node %d not ready within %v (exited: %v)", id, d, !nd.running())
	}
}

func (nd *node) running() bool {
	select {
	case <-nd.exited:
		return false
	default:
		return nd.cmd != nil
	}
}

// sigkill kills node id's process at once and waits for it to be gone.
func (c *cluster) sigkill(id int32) {
	c.t.Helper()
	nd := c.node(id)
	if err := nd.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		c.t.Fatal(err)
	}
	select {
	case <-nd.exited:
	case <-time.After(30 * time.Second):
		c.t.Fatalf("node %d still runs 30s after SIGKILL", id)
	}
}

// sigterm asks node id to shut down and returns how it exited.
func (c *cluster) sigterm(id int32) error {
	c.t.Helper()
	nd := c.node(id)
	if err := nd.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-nd.exited:
		return nd.waitErr
	case <-time.After(30 * time.Second):
		nd.kill()
		return fmt.Errorf("node %d did not exit within 30s of SIGTERM", id)
	}
}

// kill ends the process if it runs (this test's own pid only).
func (nd *node) kill() {
	if nd.cmd == nil || !nd.running() {
		return
	}
	_ = nd.cmd.Process.Kill()
	select {
	case <-nd.exited:
	case <-time.After(30 * time.Second):
	}
}

func (nd *node) log(t *testing.T) string {
	b, err := os.ReadFile(nd.logPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (nd *node) dumpLog(t *testing.T) {
	b, err := os.ReadFile(nd.logPath)
	if err != nil {
		return
	}
	const max = 12 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	t.Logf("node %d log tail:\n%s", nd.id, b)
}

// client is a kgo client seeded with the running nodes (a running node
// that is not ready accepts connections but answers nothing yet).
func (c *cluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	var seeds []string
	for _, nd := range c.nodes {
		if nd.running() && !nd.unready {
			seeds = append(seeds, nd.client)
		}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// nodeClient is a kgo client of one node only.
func (c *cluster) nodeClient(id int32, opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.node(id).client)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// controller asks a running node which node is the active controller.
func (c *cluster) controller(ctx context.Context, via int32) int32 {
	c.t.Helper()
	m, err := kadm.NewClient(c.nodeClient(via)).BrokerMetadata(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	return m.Controller
}

func poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
