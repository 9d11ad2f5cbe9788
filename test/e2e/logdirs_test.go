package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Issue #11 §1 and §7 with the real binary: what `gregor serve` does with
// its log dirs before it serves, and `gregor storage`.

// runGregor runs the binary with args (no broker needed) and returns its
// stdout, stderr and exit error, bounded by 30 s.
func runGregor(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, gregorBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("gregor %s: still running after 30s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out.String(), errb.String())
	}
	return out.String(), errb.String(), err
}

// serveRefused runs `gregor serve` with args, which must exit non-zero
// without serving; it returns stdout and stderr together.
func serveRefused(t *testing.T, args ...string) string {
	t.Helper()
	args = append([]string{"serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--log-format", "text"}, args...)
	out, stderr, err := runGregor(t, args...)
	if err == nil || strings.Contains(out, "gregor is serving") {
		t.Fatalf("gregor %s served (exit %v), want it refused\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr)
	}
	return out + stderr
}

func produceValues(t *testing.T, addr, topic string, n int) {
	t.Helper()
	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx := testCtx(t, 30*time.Second)
	for i := range n {
		produceSync(ctx, t, cl, &kgo.Record{Value: []byte(strconv.Itoa(i))})
	}
}

// wantValues consumes topic and checks that it holds exactly 0..n-1.
func wantValues(t *testing.T, addr, topic string, n int) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range consumeN(testCtx(t, 30*time.Second), t, addr, topic, n) {
		seen[string(r.Value)] = true
	}
	for i := range n {
		if !seen[strconv.Itoa(i)] {
			t.Fatalf("record %d of %s is missing", i, topic)
		}
	}
}

func clusterID(t *testing.T, p *proc) string {
	t.Helper()
	resp, err := http.Get(p.admin + "/v1/cluster")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		ClusterID string `json:"cluster_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v.ClusterID == "" {
		t.Fatalf("/v1/cluster: %v, cluster id %q", err, v.ClusterID)
	}
	return v.ClusterID
}

// The reproduction of #11 §1, as a user meets it: produce with --data-dir
// old; stop; start with a server.properties holding log.dirs=new,old. The
// broker refuses, saying what each dir holds and what to do, and the data
// is intact. Formatting the new dir as the message says then starts the
// same cluster on both dirs.
func TestServeRefusesAnEmptyDirInFrontOfData(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	old, newDir := filepath.Join(root, "old"), filepath.Join(root, "new")
	p := startProc(t, old)
	id := clusterID(t, p)
	createTopic(t, p.addr, "orders", 1, nil)
	produceValues(t, p.addr, "orders", 50)
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}

	props := filepath.Join(root, "server.properties")
	body := "node.id=1\nprocess.roles=broker,controller\ncontroller.listener.names=CONTROLLER\n" +
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n" +
		"log.dirs=" + newDir + "," + old + "\n"
	if err := os.WriteFile(props, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	msg := serveRefused(t, "--config", props)
	for _, want := range []string{newDir + ": does not exist", old + ": meta.properties version=1 cluster.id=" + id,
		"1 partition dir", "No `meta.properties` found in " + newDir, "gregor storage format --ignore-formatted"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "formatted new cluster") || strings.Contains(msg, "deleting log") {
		t.Errorf("the refused start formatted or deleted something:\n%s", msg)
	}
	if _, err := os.Stat(filepath.Join(old, "orders-0")); err != nil {
		t.Fatalf("old/orders-0 after the refused start: %v", err)
	}
	// storage info says the same, without starting anything.
	out, _, err := runGregor(t, "storage", "info", "--config", props)
	if err == nil || !strings.Contains(out, "Found problem:") || !strings.Contains(out, "No `meta.properties` found in "+newDir) {
		t.Errorf("storage info (exit %v):\n%s", err, out)
	}

	out, stderr, err := runGregor(t, "storage", "format", "--ignore-formatted", "--config", props)
	if err != nil || !strings.Contains(out, "Formatting data directory "+newDir+".") || strings.Contains(out, old+".") {
		t.Fatalf("storage format --ignore-formatted (exit %v):\n%s%s", err, out, stderr)
	}
	p = startProc(t, newDir+","+old)
	if got := clusterID(t, p); got != id {
		t.Fatalf("cluster id %s after formatting %s, want %s", got, newDir, id)
	}
	wantValues(t, p.addr, "orders", 50)
}

// A reordered log.dirs starts the same cluster with all its data.
func TestServeFindsTheMetadataInAReorderedLogDirs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	p := startProc(t, a+","+b)
	id := clusterID(t, p)
	createTopic(t, p.addr, "orders", 4, nil)
	produceValues(t, p.addr, "orders", 40)
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	p = startProc(t, b+","+a)
	if got := clusterID(t, p); got != id {
		t.Fatalf("log.dirs reordered: cluster id %s, want %s", got, id)
	}
	wantValues(t, p.addr, "orders", 40)
}

// #11 §7: a second `gregor serve` on a dir a running one uses exits with
// Kafka's lock message; the first keeps serving.
func TestSecondServeOnOneDataDirIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startProc(t, dir)
	createTopic(t, p.addr, "orders", 1, nil)
	msg := serveRefused(t, "--data-dir", dir)
	if want := "Failed to acquire lock on file .lock in " + dir + ". A Gregor instance in another process or thread is using this directory."; !strings.Contains(msg, want) {
		t.Fatalf("second serve:\n%s\nwant it to say:\n%s", msg, want)
	}
	produceValues(t, p.addr, "orders", 10)
	wantValues(t, p.addr, "orders", 10)
}

// gregor storage format / info / random-uuid behave as kafka-storage's.
func TestStorageFormatAndInfo(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	dirs := a + "," + b
	uuid, _, err := runGregor(t, "storage", "random-uuid")
	uuid = strings.TrimSpace(uuid)
	if err != nil || len(uuid) != 22 {
		t.Fatalf("random-uuid = %q, %v", uuid, err)
	}
	if _, stderr, err := runGregor(t, "storage", "format", "--data-dir", dirs, "--cluster-id", "nope"); err == nil ||
		!strings.Contains(stderr, "Cluster ID string nope does not appear to be a valid UUID") {
		t.Errorf("format with a bad cluster id (exit %v): %s", err, stderr)
	}
	out, stderr, err := runGregor(t, "storage", "format", "--data-dir", dirs, "--cluster-id", uuid)
	if err != nil {
		t.Fatalf("format: %v\n%s", err, stderr)
	}
	for _, want := range []string{"Formatting metadata directory " + a + ".", "Formatting data directory " + b + ".",
		"Writing new metadata for cluster " + uuid + " in " + a + "."} {
		if !strings.Contains(out, want) {
			t.Errorf("format output lacks %q:\n%s", want, out)
		}
	}
	if _, stderr, err = runGregor(t, "storage", "format", "--data-dir", dirs, "--cluster-id", uuid); err == nil ||
		!strings.Contains(stderr, "Log directory "+a+" is already formatted. Use --ignore-formatted to ignore this directory and format the others.") {
		t.Errorf("second format (exit %v): %s", err, stderr)
	}
	if out, _, err = runGregor(t, "storage", "format", "--data-dir", dirs, "--cluster-id", uuid, "--ignore-formatted"); err != nil ||
		out != "All of the log directories are already formatted.\n" {
		t.Errorf("format --ignore-formatted (exit %v): %q", err, out)
	}
	other, _, _ := runGregor(t, "storage", "random-uuid")
	if _, stderr, err = runGregor(t, "storage", "format", "--data-dir", dirs, "--cluster-id", strings.TrimSpace(other), "-g"); err == nil ||
		!strings.Contains(stderr, "Invalid cluster.id in: "+filepath.Join(a, "meta.properties")) {
		t.Errorf("format -g with another cluster id (exit %v): %s", err, stderr)
	}
	out, _, err = runGregor(t, "storage", "info", "--data-dir", dirs)
	if err != nil || !strings.Contains(out, "Found log directories:") || !strings.Contains(out, "cluster.id="+uuid) ||
		!strings.Contains(out, "Found metadata: cluster.id="+uuid+" node.id=1 in "+filepath.Join(a, "__cluster_metadata-0")) {
		t.Errorf("info (exit %v):\n%s", err, out)
	}
	p := startProc(t, dirs)
	if got := clusterID(t, p); got != uuid {
		t.Errorf("serve after format: cluster id %s, want %s", got, uuid)
	}
	// info only reads: it runs while the broker holds the dirs.
	if out, _, err = runGregor(t, "storage", "info", "--data-dir", dirs); err != nil {
		t.Errorf("info while serving (exit %v):\n%s", err, out)
	}
	// format does not: it takes the dirs' locks.
	if _, stderr, err = runGregor(t, "storage", "format", "--data-dir", dirs, "-g"); err == nil ||
		!strings.Contains(stderr, "Failed to acquire lock on file .lock in "+a) {
		t.Errorf("format while serving (exit %v): %s", err, stderr)
	}
}
