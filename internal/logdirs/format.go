package logdirs

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
)

// FormatOptions are kafka-storage format's choices.
type FormatOptions struct {
	// ClusterID is --cluster-id; "" takes the cluster id of the dirs
	// already formatted, or a new one (Config.NewClusterID) when there
	// are none.
	ClusterID string
	// IgnoreFormatted is --ignore-formatted: skip dirs that are formatted
	// (for this cluster and node) instead of refusing.
	IgnoreFormatted bool
}

// Format is kafka-storage format for a Gregor node: it locks the dirs,
// refuses a formatted dir unless IgnoreFormatted (which then skips it),
// refuses dirs of another cluster or node, writes meta.properties into every
// dir without one, and writes a new empty metadata (bootstrap) into the
// metadata dir when no dir holds one. It reports each step on out, with
// Kafka's wording where Kafka has one.
func Format(c Config, o FormatOptions, bootstrap Bootstrap, out io.Writer) error {
	if len(c.dirs()) == 0 {
		//lint:ignore ST1005 Kafka's message, word for word
		return errors.New("No log directories found in the configuration.")
	}
	if o.ClusterID != "" {
		if err := ValidateClusterID(o.ClusterID); err != nil {
			return err
		}
	}
	var ls locks
	if err := ls.lockExisting(c, slog.New(slog.DiscardHandler)); err != nil {
		return err
	}
	defer ls.release()
	e := Load(c)
	usable := 0
	for _, d := range e.Dirs {
		if d.Err != nil {
			fmt.Fprintf(out, "I/O error trying to read log directory %s. Ignoring...\n", d.Path)
			continue
		}
		usable++
	}
	if usable == 0 {
		//lint:ignore ST1005 Kafka's message, word for word
		return errors.New("No available log directories to format.")
	}
	clusterID := o.ClusterID
	var formatted []string
	for _, d := range e.Dirs {
		if d.Meta != nil {
			formatted = append(formatted, d.Path)
			if clusterID == "" {
				clusterID = d.Meta.ClusterID
			}
		}
	}
	if clusterID == "" {
		clusterID = c.newClusterID()
	}
	metadataDir, problems := e.metadataLocation()
	problems = append(problems, e.checkMeta(clusterID)...)
	if len(problems) > 0 {
		return &Error{Ensemble: e, Problems: problems}
	}
	if len(formatted) > 0 && !o.IgnoreFormatted {
		//lint:ignore ST1005 Kafka's message, word for word
		return fmt.Errorf("Log directory %s is already formatted. Use --ignore-formatted to ignore this directory and format the others.", formatted[0])
	}
	if len(formatted) == usable && e.holdsMetadata() {
		fmt.Fprintln(out, "All of the log directories are already formatted.")
		return nil
	}
	return format(c, e, &ls, clusterID, metadataDir, bootstrap, slog.New(slog.DiscardHandler), out)
}

func (e *Ensemble) holdsMetadata() bool {
	for _, d := range e.Dirs {
		if d.Metadata {
			return true
		}
	}
	return false
}

// Info is kafka-storage info: what each dir holds, where the metadata is, and
// every problem a broker would refuse to start with. It reports whether
// there were problems.
func Info(c Config, out io.Writer) (ok bool) {
	e := Load(c)
	v := e.Check()
	mf := c.MetadataFile
	if len(e.Dirs) == 1 {
		fmt.Fprintln(out, "Found log directory:")
	} else {
		fmt.Fprintln(out, "Found log directories:")
	}
	for _, d := range e.Dirs {
		fmt.Fprintf(out, "  %s: %s\n", d.Path, d.Describe(mf))
	}
	fmt.Fprintln(out)
	switch {
	case v.Fresh:
		fmt.Fprintf(out, "Every dir is empty: gregor serve formats them for a new cluster, with the metadata in %s.\n", v.MetadataDir)
	case len(v.Problems) == 0:
		fmt.Fprintf(out, "Found metadata: cluster.id=%s node.id=%d in %s\n", v.ClusterID, c.NodeID, filepath.Join(v.MetadataDir, mf))
	}
	if len(v.Problems) == 0 {
		return true
	}
	if len(v.Problems) == 1 {
		fmt.Fprintln(out, "Found problem:")
	} else {
		fmt.Fprintln(out, "Found problems:")
	}
	for _, p := range v.Problems {
		fmt.Fprintf(out, "  %s\n", p)
	}
	return false
}
