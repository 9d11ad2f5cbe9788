package logdirs

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// LockFile is the file locked in every dir while a broker uses it (Kafka's
// name).
const LockFile = ".lock"

// Bootstrap writes a new cluster's (empty) metadata into dir.
type Bootstrap func(dir, clusterID string) error

// Held is a set of dirs checked and locked for one broker. The locks are
// held until Close.
type Held struct {
	Verdict
	Ensemble *Ensemble
	// Formatted: Open formatted the dirs for a new cluster.
	Formatted bool
	locks     locks
}

// Close releases the dirs' locks.
func (h *Held) Close() error { return h.locks.release() }

// Open locks every dir, reads them, and checks them (Ensemble.Check). When
// every dir is empty it formats them for a new cluster: meta.properties in
// each, then bootstrap's metadata in the metadata dir. Anything else that is
// not consistent is an *Error, and nothing has been written.
func Open(c Config, bootstrap Bootstrap, logger *slog.Logger) (*Held, error) {
	if logger == nil {
		logger = slog.Default()
	}
	if len(c.dirs()) == 0 {
		//lint:ignore ST1005 Kafka's message, word for word
		return nil, errors.New("You must specify at least one log directory.")
	}
	var ls locks
	if err := ls.lockExisting(c, logger); err != nil {
		return nil, err
	}
	e := Load(c)
	v := e.Check()
	if len(v.Problems) > 0 {
		return nil, errors.Join(&Error{Ensemble: e, Problems: v.Problems}, ls.release())
	}
	h := &Held{Verdict: v, Ensemble: e, locks: ls}
	if !v.Fresh {
		return h, nil
	}
	h.ClusterID = c.newClusterID()
	if err := format(c, e, &h.locks, h.ClusterID, v.MetadataDir, bootstrap, logger, nil); err != nil {
		return nil, errors.Join(err, h.locks.release())
	}
	h.Formatted, h.Fresh = true, false
	logger.Info("formatted new cluster", "cluster_id", h.ClusterID, "node_id", c.NodeID,
		"log_dirs", c.LogDirs, "metadata_dir", v.MetadataDir)
	return h, nil
}

// format writes meta.properties, with a new directory id, into every dir of
// e that has none and is readable, then, when no dir holds the metadata,
// bootstrap's metadata into metadataDir. The metadata comes last, so a
// crash part way leaves formatted dirs and no metadata, which Check refuses
// and Format completes. out, when not nil, is told about each dir.
func format(c Config, e *Ensemble, ls *locks, clusterID, metadataDir string, bootstrap Bootstrap, logger *slog.Logger, out io.Writer) error {
	used := map[string]bool{}
	haveMetadata := false
	for _, d := range e.Dirs {
		if d.Meta != nil && d.Meta.DirectoryID != "" {
			used[d.Meta.DirectoryID] = true
		}
		haveMetadata = haveMetadata || d.Metadata
	}
	for _, d := range e.Dirs {
		if d.Err != nil || d.Meta != nil {
			continue
		}
		if err := makeDir(c.FS, d.Path); err != nil {
			return err
		}
		if err := ls.lock(c, d.Path, logger); err != nil {
			return err
		}
		kind := "data directory"
		if d.Path == metadataDir {
			kind = "metadata directory"
		}
		if out != nil {
			fmt.Fprintf(out, "Formatting %s %s.\n", kind, d.Path)
		}
		id := RandomUUID()
		for used[id] {
			id = RandomUUID()
		}
		used[id] = true
		m := MetaProperties{Version: 1, ClusterID: clusterID, NodeID: c.NodeID, DirectoryID: id}
		if err := vfs.WriteFileAtomic(c.FS, filepath.Join(d.Path, MetaPropertiesFile), m.Marshal()); err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Join(d.Path, MetaPropertiesFile), err)
		}
	}
	if haveMetadata {
		return nil
	}
	if out != nil {
		fmt.Fprintf(out, "Writing new metadata for cluster %s in %s.\n", clusterID, metadataDir)
	}
	return bootstrap(metadataDir, clusterID)
}

// makeDir creates dir when it does not exist, durably: each directory it
// creates is synced into its parent.
func makeDir(fs vfs.FS, dir string) error {
	var created []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := fs.Stat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		created = append(created, d)
	}
	if len(created) == 0 {
		return nil
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := len(created) - 1; i >= 0; i-- {
		if err := fs.SyncDir(filepath.Dir(created[i])); err != nil {
			return err
		}
	}
	return nil
}

// locks are the .lock files a process holds, by dir.
type locks struct {
	held map[string]io.Closer
}

// lockExisting locks every dir of c that exists. A missing dir has nothing
// to protect yet; it is locked when it is created.
func (ls *locks) lockExisting(c Config, logger *slog.Logger) error {
	for _, d := range c.dirs() {
		st, err := c.FS.Stat(d)
		if err != nil || !st.IsDir() {
			continue
		}
		if err := ls.lock(c, d, logger); err != nil {
			return errors.Join(err, ls.release())
		}
	}
	return nil
}

// lock takes dir's .lock unless this process already holds it.
func (ls *locks) lock(c Config, dir string, logger *slog.Logger) error {
	if ls.held[dir] != nil {
		return nil
	}
	l, err := c.FS.Lock(filepath.Join(dir, LockFile))
	switch {
	case errors.Is(err, vfs.ErrLocked):
		return &InUseError{Dir: dir}
	case errors.Is(err, errors.ErrUnsupported):
		logger.Warn("cannot lock the log dir on this platform: nothing stops a second broker from using it", "dir", dir)
		return nil
	case err != nil:
		return fmt.Errorf("locking %s: %w", dir, err)
	}
	if ls.held == nil {
		ls.held = map[string]io.Closer{}
	}
	ls.held[dir] = l
	return nil
}

func (ls *locks) release() error {
	var errs []error
	for d, l := range ls.held {
		if err := l.Close(); err != nil {
			errs = append(errs, fmt.Errorf("unlocking %s: %w", d, err))
		}
		delete(ls.held, d)
	}
	return errors.Join(errs...)
}

// InUseError says another holder has a dir's lock. errors.Is(err,
// vfs.ErrLocked) holds for it.
type InUseError struct{ Dir string }

func (e *InUseError) Error() string {
	return fmt.Sprintf("Failed to acquire lock on file %s in %s. A Gregor instance in another process or thread is using this directory.",
		LockFile, e.Dir)
}

func (e *InUseError) Unwrap() error { return vfs.ErrLocked }
