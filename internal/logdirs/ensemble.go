package logdirs

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Config names a broker's dirs and what they must agree on.
type Config struct {
	FS vfs.FS
	// LogDirs is log.dirs (or log.dir), in configuration order.
	LogDirs []string
	// MetadataLogDir is metadata.log.dir; "" when unset, and the metadata
	// is then found in whichever log dir holds it.
	MetadataLogDir string
	// NodeID is node.id, which every meta.properties must name.
	NodeID int32
	// MetadataFile is the name of the entry (the metadata log's directory,
	// __cluster_metadata-0) whose presence marks the metadata dir.
	MetadataFile string
	// LegacyMetadataFile, when set, marks the metadata dir too: the
	// metadata file of an older Gregor, which the broker converts into
	// MetadataFile at its next start.
	LegacyMetadataFile string
	// NewClusterID names a new cluster when Open formats empty dirs;
	// nil draws a random one.
	NewClusterID func() string
}

func (c Config) newClusterID() string {
	if c.NewClusterID != nil {
		return c.NewClusterID()
	}
	return RandomUUID()
}

// dirs returns every dir to check: log.dirs in order, then
// metadata.log.dir when it is not one of them; cleaned, each once.
func (c Config) dirs() []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range append(append([]string(nil), c.LogDirs...), c.MetadataLogDir) {
		if d == "" {
			continue
		}
		d = filepath.Clean(d)
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// Dir is what one dir held when it was read.
type Dir struct {
	Path string
	// Missing: the directory does not exist.
	Missing bool
	// Meta is its meta.properties; nil when it has none.
	Meta *MetaProperties
	// Err: the dir or its meta.properties could not be read or parsed.
	Err error
	// Partitions counts its <topic>-<partition> directories, Strays its
	// <topic>-<partition>.<id>-stray ones.
	Partitions, Strays int
	// Metadata: it holds Config.MetadataFile or Config.LegacyMetadataFile;
	// Legacy: it holds the legacy file and not MetadataFile (the broker
	// converts it at its next start).
	Metadata, Legacy bool
}

// Empty reports whether the dir holds nothing of a broker's: no
// meta.properties, no partition or stray logs, no metadata. Other files
// (lost+found on a fresh filesystem, a .lock) do not count.
func (d Dir) Empty() bool {
	return d.Err == nil && d.Meta == nil && d.Partitions == 0 && d.Strays == 0 && !d.Metadata
}

// Describe says in a phrase what the dir holds, for messages.
func (d Dir) Describe(metadataFile string) string {
	switch {
	case d.Missing:
		return "does not exist"
	case d.Err != nil:
		return "cannot be read: " + d.Err.Error()
	case d.Empty():
		return "empty (no meta.properties, no partition dirs)"
	}
	var parts []string
	if d.Meta != nil {
		parts = append(parts, "meta.properties "+d.Meta.String())
	} else {
		parts = append(parts, "no meta.properties")
	}
	parts = append(parts, plural(d.Partitions, "partition dir"))
	if d.Strays > 0 {
		parts = append(parts, plural(d.Strays, "stray log"))
	}
	switch {
	case d.Legacy:
		parts = append(parts, "the metadata of an older Gregor (converted to "+metadataFile+" at the next start)")
	case d.Metadata:
		parts = append(parts, "the metadata ("+metadataFile+")")
	}
	return strings.Join(parts, "; ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Ensemble is every dir of a broker as read, before anything is written
// (Kafka's MetaPropertiesEnsemble).
type Ensemble struct {
	Config Config
	Dirs   []Dir // Config.dirs() order
}

// Load reads every dir. It writes nothing and takes no lock.
func Load(c Config) *Ensemble {
	e := &Ensemble{Config: c}
	for _, path := range c.dirs() {
		e.Dirs = append(e.Dirs, loadDir(c, path))
	}
	return e
}

func loadDir(c Config, path string) Dir {
	d := Dir{Path: path}
	names, err := c.FS.List(path)
	if vfs.IsNotExist(err) {
		d.Missing = true
		return d
	}
	if err != nil {
		d.Err = err
		return d
	}
	for _, n := range names {
		switch {
		case n == MetaPropertiesFile:
			data, err := vfs.ReadFile(c.FS, filepath.Join(path, n))
			if err != nil {
				d.Err = err
				continue
			}
			m, err := ParseMetaProperties(data)
			if err != nil {
				d.Err = fmt.Errorf("%s: %w", filepath.Join(path, n), err)
				continue
			}
			d.Meta = &m
		case n == c.MetadataFile:
			d.Metadata, d.Legacy = true, false
		case c.LegacyMetadataFile != "" && n == c.LegacyMetadataFile:
			if !d.Metadata {
				d.Metadata, d.Legacy = true, true
			}
		default:
			_, part := topicpart.ParseDirName(n)
			_, stray := topicpart.ParseStrayDirName(n)
			if !part && !stray {
				continue
			}
			if st, err := c.FS.Stat(filepath.Join(path, n)); err != nil || !st.IsDir() {
				continue
			}
			if part {
				d.Partitions++
			} else {
				d.Strays++
			}
		}
	}
	return d
}

// dir returns the loaded dir at path (cleaned).
func (e *Ensemble) dir(path string) *Dir {
	for i := range e.Dirs {
		if e.Dirs[i].Path == path {
			return &e.Dirs[i]
		}
	}
	return nil
}
