package logdirs

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gregor-broker/gregor/internal/vfs"
)

const metadataFile = "gregor-metadata.json"

var quiet = slog.New(slog.DiscardHandler)

func cfg(fs vfs.FS, dirs ...string) Config {
	return Config{FS: fs, LogDirs: dirs, NodeID: 1, MetadataFile: metadataFile}
}

// bootstrap writes the cluster id as the metadata, as the controller's
// bootstrap writes an empty image.
func bootstrap(fs vfs.FS) Bootstrap {
	return func(dir, clusterID string) error {
		return vfs.WriteFileAtomic(fs, filepath.Join(dir, metadataFile), []byte(clusterID))
	}
}

func mustOpen(t *testing.T, c Config) *Held {
	t.Helper()
	h, err := Open(c, bootstrap(c.FS), quiet)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func readFile(t *testing.T, fs vfs.FS, path string) string {
	t.Helper()
	b, err := vfs.ReadFile(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func meta(t *testing.T, fs vfs.FS, dir string) MetaProperties {
	t.Helper()
	m, err := ParseMetaProperties([]byte(readFile(t, fs, filepath.Join(dir, MetaPropertiesFile))))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// addPartition makes a partition dir with one file in it.
func addPartition(t *testing.T, fs vfs.FS, dir, name string) {
	t.Helper()
	if err := fs.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileAtomic(fs, filepath.Join(dir, name, "00000000000000000000.log"), []byte("batch")); err != nil {
		t.Fatal(err)
	}
}

// wantRefused opens c, expects an *Error, and checks that every want is in
// its message.
func wantRefused(t *testing.T, c Config, want ...string) *Error {
	t.Helper()
	before := c.FS.(*vfs.MemFS).String()
	h, err := Open(c, bootstrap(c.FS), quiet)
	if err == nil {
		h.Close()
		t.Fatalf("Open succeeded, want a refusal")
	}
	var de *Error
	if !errors.As(err, &de) {
		t.Fatalf("Open: %v, want an *Error", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal does not say %q:\n%s", w, err)
		}
	}
	// Open locks the dirs (creating .lock files) but writes nothing else.
	if after := c.FS.(*vfs.MemFS).String(); stripLocks(after) != stripLocks(before) {
		t.Errorf("a refused Open changed the dirs:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// The locks are released.
	for _, d := range c.dirs() {
		if l, err := c.FS.Lock(filepath.Join(d, LockFile)); err == nil {
			l.Close()
		} else if !vfs.IsNotExist(err) {
			t.Errorf("%s is still locked after a refused Open: %v", d, err)
		}
	}
	return de
}

func stripLocks(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, LockFile) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestOpenFormatsEmptyDirs(t *testing.T) {
	fs := vfs.NewMem()
	c := cfg(fs, "/data/a", "/data/b")
	h := mustOpen(t, c)
	if !h.Formatted || h.MetadataDir != "/data/a" || h.ClusterID == "" {
		t.Fatalf("Open on empty dirs: formatted=%v metadata dir %q cluster %q", h.Formatted, h.MetadataDir, h.ClusterID)
	}
	a, b := meta(t, fs, "/data/a"), meta(t, fs, "/data/b")
	if a.ClusterID != h.ClusterID || b.ClusterID != h.ClusterID || a.NodeID != 1 || b.NodeID != 1 {
		t.Fatalf("meta.properties: %v / %v, cluster %s", a, b, h.ClusterID)
	}
	if a.DirectoryID == "" || a.DirectoryID == b.DirectoryID {
		t.Fatalf("directory ids %q and %q", a.DirectoryID, b.DirectoryID)
	}
	if got := readFile(t, fs, "/data/a/"+metadataFile); got != h.ClusterID {
		t.Fatalf("metadata = %q", got)
	}
	if _, err := fs.Stat("/data/b/" + metadataFile); !vfs.IsNotExist(err) {
		t.Fatal("the metadata was written into the second dir too")
	}
	// Everything is durable: a crash right after keeps the format.
	crashed := fs.CrashClone()
	h.Close()
	h2 := mustOpen(t, cfg(crashed, "/data/a", "/data/b"))
	defer h2.Close()
	if h2.Formatted || h2.ClusterID != h.ClusterID || h2.MetadataDir != "/data/a" {
		t.Fatalf("reopen after a crash: formatted=%v cluster %q metadata dir %q", h2.Formatted, h2.ClusterID, h2.MetadataDir)
	}
}

// The failure of issue #11: data in old, then log.dirs=new,old. Kafka
// refuses; so does Gregor, naming both dirs, and writes nothing.
func TestOpenRefusesEmptyDirInFrontOfData(t *testing.T) {
	fs := vfs.NewMem()
	h := mustOpen(t, cfg(fs, "/old"))
	addPartition(t, fs, "/old", "orders-0")
	h.Close()
	de := wantRefused(t, cfg(fs, "/new", "/old"),
		"/new: does not exist", "/old: meta.properties version=1 cluster.id="+h.ClusterID, "1 partition dir",
		"No `meta.properties` found in /new", "gregor storage format --ignore-formatted", "not mounted")
	if len(de.Problems) != 1 {
		t.Errorf("problems: %q", de.Problems)
	}
	// The same with the new dir present and empty (a mount point).
	if err := fs.MkdirAll("/new", 0o755); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, cfg(fs, "/new", "/old"), "/new: empty", "No `meta.properties` found in /new")
	// Formatting the new disk as told makes the pair usable, same cluster.
	var out strings.Builder
	if err := Format(cfg(fs, "/new", "/old"), FormatOptions{IgnoreFormatted: true}, bootstrap(fs), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Formatting data directory /new.") || strings.Contains(out.String(), "/old.") {
		t.Errorf("format output:\n%s", out.String())
	}
	h2 := mustOpen(t, cfg(fs, "/new", "/old"))
	defer h2.Close()
	if h2.ClusterID != h.ClusterID || h2.MetadataDir != "/old" {
		t.Fatalf("after formatting /new: cluster %q metadata dir %q, want %q in /old", h2.ClusterID, h2.MetadataDir, h.ClusterID)
	}
}

func TestOpenFindsMetadataWhateverTheOrder(t *testing.T) {
	fs := vfs.NewMem()
	h := mustOpen(t, cfg(fs, "/a", "/b", "/c"))
	h.Close()
	for _, order := range [][]string{{"/c", "/b", "/a"}, {"/b", "/a", "/c"}} {
		h2 := mustOpen(t, cfg(fs, order...))
		if h2.ClusterID != h.ClusterID || h2.MetadataDir != "/a" || h2.Formatted {
			t.Errorf("log.dirs=%v: cluster %q metadata dir %q formatted=%v", order, h2.ClusterID, h2.MetadataDir, h2.Formatted)
		}
		h2.Close()
	}
}

func TestOpenRefusesInconsistentDirs(t *testing.T) {
	newNode := func(t *testing.T, dirs ...string) (*vfs.MemFS, *Held) {
		fs := vfs.NewMem()
		h := mustOpen(t, cfg(fs, dirs...))
		h.Close()
		return fs, h
	}
	t.Run("another cluster's dir", func(t *testing.T) {
		fs, h := newNode(t, "/a")
		other := mustOpen(t, cfg(fs, "/b"))
		other.Close()
		wantRefused(t, cfg(fs, "/a", "/b"), "Invalid cluster.id in: /b/meta.properties. Expected "+h.ClusterID+", but read "+other.ClusterID,
			"more than one log dir")
	})
	t.Run("another node's dir", func(t *testing.T) {
		fs, _ := newNode(t, "/a")
		c := cfg(fs, "/a")
		c.NodeID = 2
		wantRefused(t, c, "Stored node id 1 doesn't match the configured node.id 2 in /a/meta.properties")
	})
	t.Run("copied dir", func(t *testing.T) {
		fs, _ := newNode(t, "/a", "/b")
		if err := vfs.WriteFileAtomic(fs, "/b/meta.properties", []byte(readFile(t, fs, "/a/meta.properties"))); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, cfg(fs, "/a", "/b"), "Duplicate directory ID")
	})
	t.Run("unreadable meta.properties", func(t *testing.T) {
		fs, _ := newNode(t, "/a", "/b")
		if err := vfs.WriteFileAtomic(fs, "/b/meta.properties", []byte("version=1\nnode.id=1\n")); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, cfg(fs, "/a", "/b"), "/b cannot be read", "cluster.id was not specified")
	})
	t.Run("metadata dir missing", func(t *testing.T) {
		fs, _ := newNode(t, "/a", "/b")
		addPartition(t, fs, "/b", "orders-0")
		wantRefused(t, cfg(fs, "/b"), "No log dir holds the metadata (gregor-metadata.json), but /b holds meta.properties", "1 partition dir")
	})
	t.Run("partitions without anything else", func(t *testing.T) {
		fs := vfs.NewMem()
		addPartition(t, fs, "/a", "orders-0")
		wantRefused(t, cfg(fs, "/a"), "/a: no meta.properties; 1 partition dir", "No log dir holds the metadata")
	})
	t.Run("metadata outside metadata.log.dir", func(t *testing.T) {
		fs, _ := newNode(t, "/a", "/b")
		c := cfg(fs, "/a", "/b")
		c.MetadataLogDir = "/b"
		wantRefused(t, c, "Found unexpected metadata location in data directory `/a/gregor-metadata.json` (the configured metadata directory is /b)")
	})
}

func TestOpenHonoursMetadataLogDir(t *testing.T) {
	fs := vfs.NewMem()
	c := cfg(fs, "/a", "/b")
	c.MetadataLogDir = "/meta"
	h := mustOpen(t, c)
	h.Close()
	if h.MetadataDir != "/meta" || meta(t, fs, "/meta").ClusterID != h.ClusterID {
		t.Fatalf("metadata dir %q", h.MetadataDir)
	}
	if _, err := fs.Stat("/meta/" + metadataFile); err != nil {
		t.Fatal(err)
	}
}

// Kafka's LogManager lock: one holder per dir, in any process or thread.
func TestOpenLocksEveryDir(t *testing.T) {
	fs := vfs.NewMem()
	h := mustOpen(t, cfg(fs, "/a", "/b"))
	_, err := Open(cfg(fs, "/b"), bootstrap(fs), nil)
	var inUse *InUseError
	if !errors.As(err, &inUse) || !errors.Is(err, vfs.ErrLocked) || inUse.Dir != "/b" {
		t.Fatalf("second Open = %v, want InUseError for /b", err)
	}
	if want := "Failed to acquire lock on file .lock in /b. A Gregor instance in another process or thread is using this directory."; err.Error() != want {
		t.Errorf("message:\n%s\nwant:\n%s", err, want)
	}
	if err := Format(cfg(fs, "/a"), FormatOptions{IgnoreFormatted: true}, bootstrap(fs), new(strings.Builder)); !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("Format on a held dir = %v, want the lock refused", err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	mustOpen(t, cfg(fs, "/a", "/b")).Close()
}

func TestFormat(t *testing.T) {
	fs := vfs.NewMem()
	c := cfg(fs, "/a", "/b")
	var out strings.Builder
	if err := Format(c, FormatOptions{ClusterID: "not-a-uuid"}, bootstrap(fs), &out); err == nil ||
		!strings.Contains(err.Error(), "Cluster ID string not-a-uuid does not appear to be a valid UUID") {
		t.Fatalf("bad cluster id: %v", err)
	}
	id := RandomUUID()
	if err := Format(c, FormatOptions{ClusterID: id}, bootstrap(fs), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Formatting metadata directory /a.", "Formatting data directory /b.", "Writing new metadata for cluster " + id + " in /a."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not say %q:\n%s", want, out.String())
		}
	}
	if meta(t, fs, "/b").ClusterID != id || readFile(t, fs, "/a/"+metadataFile) != id {
		t.Fatal("format did not write the cluster id")
	}
	err := Format(c, FormatOptions{ClusterID: id}, bootstrap(fs), &out)
	if err == nil || err.Error() != "Log directory /a is already formatted. Use --ignore-formatted to ignore this directory and format the others." {
		t.Fatalf("second format = %v", err)
	}
	out.Reset()
	if err := Format(c, FormatOptions{ClusterID: id, IgnoreFormatted: true}, bootstrap(fs), &out); err != nil ||
		out.String() != "All of the log directories are already formatted.\n" {
		t.Fatalf("format --ignore-formatted of formatted dirs = %v, %q", err, out.String())
	}
	if err := Format(cfg(fs, "/a", "/c"), FormatOptions{ClusterID: RandomUUID(), IgnoreFormatted: true}, bootstrap(fs), &out); err == nil ||
		!strings.Contains(err.Error(), "Invalid cluster.id in: /a/meta.properties") {
		t.Fatalf("format with another cluster id = %v", err)
	}
	if _, err := fs.Stat("/c"); !vfs.IsNotExist(err) {
		t.Fatal("a refused format created /c")
	}
	h := mustOpen(t, c)
	defer h.Close()
	if h.ClusterID != id || h.Formatted {
		t.Fatalf("serve after format: cluster %q formatted=%v", h.ClusterID, h.Formatted)
	}
}

// A first start that crashed after meta.properties but before the metadata
// is refused, and format --ignore-formatted finishes it.
func TestFormatCompletesAnInterruptedFormat(t *testing.T) {
	fs := vfs.NewMem()
	c := cfg(fs, "/a", "/b")
	crash := errors.New("crash")
	if _, err := Open(c, func(string, string) error { return crash }, quiet); !errors.Is(err, crash) {
		t.Fatalf("Open = %v", err)
	}
	wantRefused(t, c, "No log dir holds the metadata", "never started")
	var out strings.Builder
	if err := Format(c, FormatOptions{IgnoreFormatted: true}, bootstrap(fs), &out); err != nil {
		t.Fatal(err)
	}
	h := mustOpen(t, c)
	defer h.Close()
	if h.ClusterID != meta(t, fs, "/b").ClusterID {
		t.Fatalf("cluster %q", h.ClusterID)
	}
}

func TestInfo(t *testing.T) {
	fs := vfs.NewMem()
	var out strings.Builder
	if Info(cfg(fs), &out) || !strings.Contains(out.String(), "You must specify at least one log directory.") {
		t.Fatalf("info without dirs:\n%s", out.String())
	}
	out.Reset()
	if !Info(cfg(fs, "/a"), &out) || !strings.Contains(out.String(), "Every dir is empty") {
		t.Fatalf("info on an empty dir:\n%s", out.String())
	}
	h := mustOpen(t, cfg(fs, "/a"))
	h.Close()
	addPartition(t, fs, "/a", "orders-0")
	out.Reset()
	if !Info(cfg(fs, "/a"), &out) || !strings.Contains(out.String(), "Found metadata: cluster.id="+h.ClusterID+" node.id=1 in /a/gregor-metadata.json") ||
		!strings.Contains(out.String(), "1 partition dir") {
		t.Fatalf("info on a formatted dir:\n%s", out.String())
	}
	out.Reset()
	if Info(cfg(fs, "/new", "/a"), &out) || !strings.Contains(out.String(), "Found problem:\n  No `meta.properties` found in /new") {
		t.Fatalf("info with an unformatted dir:\n%s", out.String())
	}
}

func TestParseMetaProperties(t *testing.T) {
	m, err := ParseMetaProperties([]byte("#\n#Thu\nnode.id=3\ndirectory.id=abc\nversion=1\ncluster.id=xyz\n"))
	if err != nil || m != (MetaProperties{Version: 1, ClusterID: "xyz", NodeID: 3, DirectoryID: "abc"}) {
		t.Fatalf("%+v, %v", m, err)
	}
	back, err := ParseMetaProperties(m.Marshal())
	if err != nil || back != m {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	m, err = ParseMetaProperties([]byte("broker.id=5\n"))
	if err != nil || m.Version != 0 || m.NodeID != 5 {
		t.Fatalf("v0: %+v, %v", m, err)
	}
	for _, bad := range []string{"version=1\nnode.id=1\n", "version=1\ncluster.id=x\n", "version=2\n", "version=1\ncluster.id=x\nnode.id=-1\n"} {
		if _, err := ParseMetaProperties([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	for range 100 {
		if err := ValidateClusterID(RandomUUID()); err != nil {
			t.Fatal(err)
		}
	}
}

// An older Gregor's metadata file marks the metadata dir too, and the
// verdict says it must be converted; once the new metadata is beside it, the
// new one counts.
func TestOpenFindsLegacyMetadata(t *testing.T) {
	fs := vfs.NewMem()
	const legacy = "old-metadata.json"
	h := mustOpen(t, cfg(fs, "/a", "/b"))
	h.Close()
	if err := fs.Rename("/a/"+metadataFile, "/a/"+legacy); err != nil {
		t.Fatal(err)
	}
	c := cfg(fs, "/b", "/a")
	c.LegacyMetadataFile = legacy
	h2 := mustOpen(t, c)
	if !h2.Legacy || h2.MetadataDir != "/a" || h2.ClusterID != h.ClusterID {
		t.Fatalf("legacy metadata: legacy=%v metadata dir %q cluster %q", h2.Legacy, h2.MetadataDir, h2.ClusterID)
	}
	if d := h2.Ensemble.dir("/a").Describe(metadataFile); !strings.Contains(d, "older Gregor") {
		t.Errorf("describe: %s", d)
	}
	h2.Close()
	if err := vfs.WriteFileAtomic(fs, "/a/"+metadataFile, []byte(h.ClusterID)); err != nil {
		t.Fatal(err)
	}
	h3 := mustOpen(t, c)
	defer h3.Close()
	if h3.Legacy {
		t.Fatal("a dir holding both the new and the legacy metadata is legacy")
	}
	// The legacy file without meta.properties is refused like the new
	// metadata would be, never formatted over.
	fs2 := vfs.NewMem()
	if err := fs2.MkdirAll("/x", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileAtomic(fs2, "/x/"+legacy, nil); err != nil {
		t.Fatal(err)
	}
	c2 := cfg(fs2, "/x")
	c2.LegacyMetadataFile = legacy
	wantRefused(t, c2, "metadata of an older Gregor", "No `meta.properties` found in /x")
}

func TestOpenFormatsWithTheGivenClusterID(t *testing.T) {
	fs := vfs.NewMem()
	c := cfg(fs, "/a")
	c.NewClusterID = func() string { return "Lk3jAyxKQRGk0OlLdPuj6A" }
	h := mustOpen(t, c)
	defer h.Close()
	if h.ClusterID != "Lk3jAyxKQRGk0OlLdPuj6A" || meta(t, fs, "/a").ClusterID != h.ClusterID {
		t.Fatalf("cluster %q, meta.properties %v", h.ClusterID, meta(t, fs, "/a"))
	}
}
