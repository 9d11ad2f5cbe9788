package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gregorBin is the gregor binary the process tests run.
var gregorBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

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
	dir, err := os.MkdirTemp("", "gregor-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(dir)
	gregorBin = filepath.Join(dir, "gregor")
	goTool, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: the go tool is needed to build the gregor binary:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", gregorBin, "github.com/gregor-broker/gregor/cmd/gregor")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building the gregor binary failed:", err)
		return 2
	}
	return m.Run()
}

// proc is a gregor binary running `serve` on loopback with OS-chosen ports.
type proc struct {
	t       testing.TB
	cmd     *exec.Cmd
	dataDir string
	logPath string
	addr    string // Kafka listener, host:port
	admin   string // admin HTTP base URL
	exited  chan struct{}
	waitErr error
	// ready is how long the process took from its start until /readyz
	// answered 200.
	ready time.Duration
}

// startProc runs `gregor serve` on dataDir and waits until /readyz answers
// 200. extra is appended to the command line (e.g. "--set", "k=v").
func startProc(t testing.TB, dataDir string, extra ...string) *proc {
	t.Helper()
	return startProcWithin(t, dataDir, 30*time.Second, extra...)
}

// startProcWithin is startProc with its own bound on the wait for the
// banner and for readiness (each).
func startProcWithin(t testing.TB, dataDir string, within time.Duration, extra ...string) *proc {
	t.Helper()
	logFile, err := os.CreateTemp(t.TempDir(), "gregor-*.log")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve",
		"--data-dir", dataDir,
		"--listen", "127.0.0.1:0",
		"--admin-listen", "127.0.0.1:0",
		"--log-format", "text",
	}, extra...)
	cmd := exec.Command(gregorBin, args...)
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, dataDir: dataDir, logPath: logFile.Name(), exited: make(chan struct{})}
	banner := make(chan [2]string, 1)
	go p.readBanner(stdout, banner)
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			p.dumpLog()
		}
	})

	select {
	case b := <-banner:
		p.addr, p.admin = b[0], "http://"+b[1]
	case <-p.exited:
		p.dumpLog()
		t.Fatalf("gregor exited before serving: %v", p.waitErr)
	case <-time.After(within):
		p.dumpLog()
		t.Fatalf("gregor printed no banner within %v", within)
	}
	p.waitReady(within)
	p.ready = time.Since(started)
	return p
}

// readBanner parses the "bootstrap:" and "admin:" lines `gregor serve`
// prints once it listens, then drains stdout so the process never blocks.
func (p *proc) readBanner(r io.Reader, out chan<- [2]string) {
	sc := bufio.NewScanner(r)
	var bootstrap, admin string
	sent := false
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 {
			switch fields[0] {
			case "bootstrap:":
				bootstrap = fields[1]
			case "admin:":
				admin = strings.TrimPrefix(fields[1], "http://")
			}
		}
		if !sent && bootstrap != "" && admin != "" {
			out <- [2]string{bootstrap, admin}
			sent = true
		}
	}
}

func (p *proc) waitReady(d time.Duration) {
	p.t.Helper()
	cl := &http.Client{Timeout: 2 * time.Second}
	var last string
	ok := pollUntil(d, func() bool {
		resp, err := cl.Get(p.admin + "/readyz")
		if err != nil {
			last = err.Error()
			return false
		}
		resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == http.StatusOK
	})
	if !ok {
		p.dumpLog()
		p.t.Fatalf("gregor at %s not ready after %v (last /readyz: %s)", p.admin, d, last)
	}
}

// sigkill kills the process without warning and waits for it to be gone.
func (p *proc) sigkill() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Fatalf("SIGKILL pid %d: %v", p.cmd.Process.Pid, err)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.t.Fatalf("pid %d still running 30s after SIGKILL", p.cmd.Process.Pid)
	}
}

// stop asks for a clean shutdown (SIGTERM) and waits for the exit status.
func (p *proc) stop() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.exited:
		return p.waitErr
	case <-time.After(30 * time.Second):
		p.kill()
		return fmt.Errorf("pid %d did not exit within 30s of SIGTERM", p.cmd.Process.Pid)
	}
}

func (p *proc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
	}
}

func (p *proc) dumpLog() {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return
	}
	const max = 16 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	p.t.Logf("gregor (pid %d) log tail:\n%s", p.cmd.Process.Pid, b)
}
