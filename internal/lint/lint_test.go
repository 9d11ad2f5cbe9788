package lint

import (
	"bytes"
	"errors"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/gregor-broker/gregor/"

// mayImport is the dependency table: for every package of the module (by
// its path below the module), the module's packages its non-test files may
// import. Imports point down: storage (vfs, record, log, cleaner, logmgr)
// and replication never import the protocol (api, server), the admin
// listener or the composition root (broker); only broker wires everything,
// and only cmd/gregor sits above it. A new package, or a new edge, is added
// here on purpose, with the change that needs it. Tests may import what
// they like (test/ is not listed: end-to-end tests drive the whole binary).
var mayImport = map[string][]string{
	// Leaves: time, the machine's /proc counters (for benchmarks), files,
	// the shared partition name, pooled buffers, configuration, the v2
	// record batch.
	"internal/clock":     nil,
	"internal/machine":   nil,
	"internal/vfs":       nil,
	"internal/topicpart": nil,
	"internal/bufpool":   nil,
	"internal/config":    nil,
	"internal/record":    nil,

	// Storage.
	"internal/log":     {"clock", "record", "vfs"},
	"internal/cleaner": {"clock", "config", "log", "record", "topicpart"},
	"internal/logmgr":  {"clock", "log", "topicpart", "vfs"},

	// Which log dirs a broker may use (meta.properties, dir locks).
	"internal/logdirs": {"topicpart", "vfs"},

	// The metadata quorum: etcd raft with Gregor's WAL and snapshots, its TCP
	// transport, and a deterministic simulator for tests.
	"internal/quorum/wal":        {"vfs"},
	"internal/quorum":            {"clock", "quorum/wal", "vfs"},
	"internal/quorum/transport":  {"clock", "quorum", "vfs"},
	"internal/quorum/quorumtest": {"quorum", "vfs"},

	// Metadata and replication: the metadata records and image, the
	// controller's pure decisions, the controller.
	"internal/metadata":             nil,
	"internal/controller/placement": nil,
	"internal/controller/election":  {"metadata"},
	"internal/controller":           {"auth", "clock", "config", "controller/election", "controller/placement", "metadata"},
	"internal/replica/isr":          nil,
	"internal/replica":              {"clock", "log", "logmgr", "metadata", "record", "replica/isr", "topicpart", "vfs"},

	// Coordinators: the runtime, the consumer group and the transaction
	// state machines.
	"internal/coord": {"clock", "log", "record", "topicpart"},
	"internal/group": {"clock", "config", "coord", "metadata", "record", "topicpart"},
	"internal/txn":   {"clock", "config", "coord", "metadata", "topicpart"},

	// A node's membership in the cluster: the metadata log's state machine
	// and publisher, the controller on it, the broker lifecycle.
	"internal/cluster": {"clock", "config", "controller", "metadata", "quorum", "quorum/transport", "vfs"},

	// Security: TLS, SASL and the authorizer, pure over config and clock.
	"internal/auth": {"clock", "config"},

	// The Kafka protocol: framing, then one handler per API key; the client
	// side one node uses to reach another.
	"internal/server":  {"bufpool"},
	"internal/kclient": nil,
	"internal/api": {"auth", "bufpool", "clock", "config", "controller", "coord", "group", "kclient", "log", "logmgr", "metadata",
		"quorum", "record", "replica", "replica/isr", "server", "topicpart", "txn"},

	// The admin HTTP listener and the read model it shows.
	"internal/admin":             {"cleaner", "config"},
	"internal/admin/consoletest": nil,
	"internal/admin/source": {"admin", "cleaner", "clock", "config", "controller", "group", "log", "logmgr",
		"metadata", "record", "replica", "replica/isr", "topicpart", "txn", "vfs"},

	// The composition root, and what starts it.
	"internal/broker": {"admin", "admin/source", "api", "auth", "cleaner", "clock", "cluster", "config", "controller", "group",
		"kclient", "log", "logdirs", "logmgr", "metadata", "record", "replica", "server", "topicpart", "txn", "vfs"},
	"internal/broker/brokertest": {"broker", "vfs"}, // StartOn runs a broker on any vfs.FS
	"cmd/gregor":                 {"admin", "broker", "cleaner", "cluster", "config", "logdirs", "machine", "record", "vfs"},

	// Test support: imported only by tests.
	"internal/transcript": nil,
	"internal/lint":       nil,
	"internal/testpki":    nil,
}

// External imports with a rule of their own: the protocol's message types
// stay where requests are decoded and records serialised (storage and
// replication work on Gregor's own types, so protocol churn never reaches
// them; docs/architecture.md); franz-go's client is for the CLI, tests, and the
// compression codecs record and cleaner borrow from it.
var external = []struct {
	path  string // and the packages below it
	why   string
	users []string // packages, or package/file.go for one file
}{
	{"github.com/twmb/franz-go/pkg/kmsg", "Kafka message types only where requests are decoded or records serialised",
		[]string{"internal/api", "internal/server", "internal/kclient", "internal/group/records.go", "internal/txn/records.go", "cmd/gregor"}},
	{"github.com/twmb/franz-go/pkg/kgo", "the Kafka client only in the CLI, test support and for compression codecs",
		[]string{"internal/record/compression.go", "internal/cleaner/codec.go", "internal/broker/brokertest", "cmd/gregor"}},
	{"github.com/twmb/franz-go/pkg/kadm", "the admin client only in the CLI and test support",
		[]string{"internal/broker/brokertest", "cmd/gregor"}},
	{"github.com/cockroachdb/datadriven", "transcript tests only", []string{"internal/transcript"}},
	{"github.com/xdg-go/scram", "SCRAM only in the authentication package", []string{"internal/auth"}},
	{"github.com/go-jose/go-jose/v4", "JOSE only where tokens are validated, and in test support",
		[]string{"internal/auth", "internal/testpki"}},
	{"go.etcd.io/raft/v3", "etcd raft only inside the metadata quorum",
		[]string{"internal/quorum", "internal/quorum/wal", "internal/quorum/transport", "internal/quorum/quorumtest"}},
}

// root is the module's directory.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", dir, err)
	}
	return dir
}

// imports maps each package directory below internal/ and cmd/ (relative to
// the module) to its non-test files' imports, by file.
func imports(t *testing.T, dir string) map[string]map[string][]string {
	t.Helper()
	pkgs := map[string]map[string][]string{}
	for _, top := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(dir, top), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") {
				return nil
			}
			rel, _ := filepath.Rel(dir, filepath.Dir(path))
			rel = filepath.ToSlash(rel)
			if pkgs[rel] == nil {
				pkgs[rel] = map[string][]string{}
			}
			if strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				pkgs[rel][d.Name()] = append(pkgs[rel][d.Name()], p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return pkgs
}

// TestDependencyTable: every package is in mayImport, and imports only the
// packages its row names.
func TestDependencyTable(t *testing.T) {
	pkgs := imports(t, root(t))
	for pkg, files := range pkgs {
		allowed, listed := mayImport[pkg]
		if !listed {
			t.Errorf("%s is not in mayImport: add its row (which packages it may import) to internal/lint/lint_test.go", pkg)
			continue
		}
		for file, imps := range files {
			for _, imp := range imps {
				dep, ok := strings.CutPrefix(imp, module+"internal/")
				if !ok {
					continue
				}
				if !slices.Contains(allowed, dep) {
					t.Errorf("%s/%s imports internal/%s, which mayImport does not allow for %s", pkg, file, dep, pkg)
				}
			}
		}
	}
	for pkg := range mayImport {
		if _, ok := pkgs[pkg]; !ok {
			t.Errorf("mayImport lists %s, which does not exist", pkg)
		}
	}
}

// TestTableImportsPointDown: the table has no cycle, so it describes layers
// (a cycle would also break the build, but only once both edges exist).
func TestTableImportsPointDown(t *testing.T) {
	state := map[string]int{} // 1: on the stack, 2: done
	var visit func(pkg string, path []string)
	visit = func(pkg string, path []string) {
		switch state[pkg] {
		case 1:
			t.Fatalf("mayImport has a cycle: %s", strings.Join(append(path, pkg), " → "))
		case 2:
			return
		}
		state[pkg] = 1
		for _, dep := range mayImport[pkg] {
			visit("internal/"+dep, append(path, pkg))
		}
		state[pkg] = 2
	}
	names := make([]string, 0, len(mayImport))
	for pkg := range mayImport {
		names = append(names, pkg)
	}
	sort.Strings(names)
	for _, pkg := range names {
		visit(pkg, nil)
	}
	for _, pkg := range []string{"internal/log", "internal/cleaner", "internal/logmgr", "internal/record", "internal/vfs",
		"internal/logdirs", "internal/quorum", "internal/quorum/wal", "internal/quorum/transport", "internal/metadata",
		"internal/controller", "internal/controller/placement", "internal/controller/election", "internal/replica",
		"internal/coord", "internal/group"} {
		for _, dep := range mayImport[pkg] {
			if dep == "api" || dep == "server" || dep == "broker" || strings.HasPrefix(dep, "admin") {
				t.Errorf("%s may import %s: storage, replication and coordinators never depend on the protocol, the admin listener or the broker", pkg, dep)
			}
		}
	}
}

// TestExternalImports applies the rules of external.
func TestExternalImports(t *testing.T) {
	pkgs := imports(t, root(t))
	for pkg, files := range pkgs {
		for file, imps := range files {
			for _, imp := range imps {
				for _, rule := range external {
					under := imp == rule.path || strings.HasPrefix(imp, rule.path+"/")
					if under && !slices.Contains(rule.users, pkg) && !slices.Contains(rule.users, pkg+"/"+file) {
						t.Errorf("%s/%s imports %s: %s (allowed in %s)", pkg, file, imp, rule.why, strings.Join(rule.users, ", "))
					}
				}
			}
		}
	}
}

// TestGoModTidy: go.mod and go.sum are what `go mod tidy` makes them. It
// runs offline (GOPROXY=off) and skips when the module cache lacks what
// tidy needs to look at.
func TestGoModTidy(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	cmd := exec.Command(gobin, "mod", "tidy", "-diff")
	cmd.Dir = root(t)
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && len(out) > 0:
		t.Fatalf("go.mod or go.sum is not tidy; run go mod tidy:\n%s", out)
	case strings.Contains(stderr.String(), "GOPROXY=off") || strings.Contains(stderr.String(), "module lookup disabled"):
		t.Skipf("the module cache lacks what go mod tidy needs offline: %s", stderr.String())
	default:
		t.Fatalf("go mod tidy -diff: %v\n%s", err, stderr.String())
	}
}
