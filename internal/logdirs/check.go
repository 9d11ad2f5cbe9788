package logdirs

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Verdict is what a broker may do with an Ensemble.
type Verdict struct {
	// MetadataDir is the dir that holds the metadata, or that a new
	// cluster's metadata goes to: metadata.log.dir when set, else the one
	// log dir holding the metadata file, else the first log dir.
	MetadataDir string
	// ClusterID is the cluster the dirs belong to; "" for a new cluster.
	ClusterID string
	// Fresh: every dir is empty, so a new cluster may be formatted without
	// losing anything.
	Fresh bool
	// Legacy: the metadata dir holds an older Gregor's metadata file, not
	// the metadata log; the broker converts it before it starts.
	Legacy bool
	// Problems, when any, each say what is wrong and what to do; a broker
	// must not start while there are any.
	Problems []string
}

// formatHint is the command line that formats the dirs a broker will use.
const formatHint = "`gregor storage format --ignore-formatted` (with the --config, --data-dir and --set you give gregor serve)"

// Check applies the start rules to what Load read (the package
// documentation lists them).
func (e *Ensemble) Check() Verdict {
	var v Verdict
	mf := e.Config.MetadataFile
	if len(e.Dirs) == 0 {
		v.Problems = []string{"You must specify at least one log directory."}
		return v
	}
	v.MetadataDir, v.Problems = e.metadataLocation()
	md := e.dir(v.MetadataDir)
	if md != nil && md.Meta != nil {
		v.ClusterID = md.Meta.ClusterID
	}
	v.Legacy = md != nil && md.Legacy
	for _, d := range e.Dirs {
		if d.Meta != nil && v.ClusterID == "" {
			v.ClusterID = d.Meta.ClusterID
		}
	}
	for _, d := range e.Dirs {
		if d.Err != nil {
			v.Problems = append(v.Problems, fmt.Sprintf("%s cannot be read (%v): repair it, or take it out of log.dirs.", d.Path, d.Err))
		}
	}
	v.Problems = append(v.Problems, e.checkMeta(v.ClusterID)...)
	switch {
	case e.holdsMetadata():
		v.Problems = append(v.Problems, e.checkFormatted(v.MetadataDir)...)
	case e.allEmpty():
		v.Fresh, v.ClusterID = true, ""
	default:
		var held []string
		for _, d := range e.Dirs {
			if !d.Empty() && d.Err == nil {
				held = append(held, fmt.Sprintf("%s holds %s", d.Path, d.Describe(mf)))
			}
		}
		if len(held) > 0 {
			v.Problems = append(v.Problems, fmt.Sprintf("No log dir holds the metadata (%s), but %s. "+
				"The dir that held it is missing from log.dirs, or its disk is not mounted: add it back "+
				"(the order of log.dirs does not matter) and start again. If this node was never started "+
				"(its first start or format was interrupted), or the metadata is lost for good, %s writes a "+
				"new, empty metadata in %s; partitions already on disk are then kept as stray logs, not deleted.",
				mf, strings.Join(held, ", and "), formatHint, v.MetadataDir))
		}
	}
	return v
}

// metadataLocation finds the metadata dir and reports a metadata file where
// it must not be.
func (e *Ensemble) metadataLocation() (string, []string) {
	mf := e.Config.MetadataFile
	var holders []string
	for _, d := range e.Dirs {
		if d.Metadata {
			holders = append(holders, d.Path)
		}
	}
	var problems []string
	if e.Config.MetadataLogDir != "" {
		md := filepath.Clean(e.Config.MetadataLogDir)
		for _, h := range holders {
			if h != md {
				problems = append(problems, fmt.Sprintf("Found unexpected metadata location in data directory `%s` "+
					"(the configured metadata directory is %s). Move %s into %s, or unset metadata.log.dir.",
					filepath.Join(h, mf), md, mf, md))
			}
		}
		return md, problems
	}
	switch len(holders) {
	case 0:
		return e.Dirs[0].Path, nil
	case 1:
		return holders[0], nil
	}
	return holders[0], []string{fmt.Sprintf("The metadata (%s) is in more than one log dir: %s. "+
		"Only one may hold it: keep the copy this node last ran with and move the others out of the log dirs "+
		"(or set metadata.log.dir to the dir that keeps it).", mf, strings.Join(holders, ", "))}
}

// checkMeta is Kafka's MetaPropertiesEnsemble.verify over the readable
// meta.properties files: one cluster id, this node's id, distinct directory
// ids.
func (e *Ensemble) checkMeta(clusterID string) []string {
	var problems []string
	byDirID := map[string]string{}
	for _, d := range e.Dirs {
		if d.Meta == nil {
			continue
		}
		path := filepath.Join(d.Path, MetaPropertiesFile)
		if d.Meta.Version != 1 {
			problems = append(problems, fmt.Sprintf("Found unexpected version in %s: %d. "+
				"Gregor, like a KRaft-mode Kafka, reads version 1 only (a version 0 file is ZooKeeper-era Kafka's).", path, d.Meta.Version))
			continue
		}
		if d.Meta.ClusterID != clusterID {
			problems = append(problems, fmt.Sprintf("Invalid cluster.id in: %s. Expected %s, but read %s. "+
				"The dir belongs to another cluster: take it out of log.dirs, or, only if its data is not wanted, "+
				"empty it and format it with %s.", path, clusterID, d.Meta.ClusterID, formatHint))
		}
		if d.Meta.NodeID != e.Config.NodeID {
			problems = append(problems, fmt.Sprintf("Stored node id %d doesn't match the configured node.id %d in %s. "+
				"If you moved your data, make sure your configured node.id matches. If you intend to create a new node, "+
				"you should remove all data in your data directories.", d.Meta.NodeID, e.Config.NodeID, path))
		}
		if id := d.Meta.DirectoryID; id != "" {
			if prev, dup := byDirID[id]; dup {
				problems = append(problems, fmt.Sprintf("Duplicate directory ID %s found. It was the ID of %s, but also of %s. "+
					"One is a copy of the other: take the copy out of log.dirs.", id, prev, d.Path))
			}
			byDirID[id] = d.Path
		}
	}
	return problems
}

// checkFormatted requires every dir of an existing cluster to be formatted,
// as Kafka 4 does: a dir without meta.properties is a disk that is not
// mounted, or a new one nobody formatted, and the broker cannot tell which.
func (e *Ensemble) checkFormatted(metadataDir string) []string {
	var problems []string
	for _, d := range e.Dirs {
		if d.Err != nil || d.Meta != nil {
			continue
		}
		msg := fmt.Sprintf("No `meta.properties` found in %s (have you run `gregor storage format` to format the directory?). ", d.Path)
		switch {
		case d.Path == metadataDir:
			msg += fmt.Sprintf("It holds the metadata (%s) but no meta.properties; if the file was lost, "+
				"%s writes it again with the cluster id of the other dirs.", e.Config.MetadataFile, formatHint)
		case d.Missing || d.Empty():
			msg += fmt.Sprintf("It %s. If it is a new disk for this node, format it with %s; "+
				"if it should hold data, its disk is probably not mounted: mount it, or take it out of log.dirs.",
				d.Describe(e.Config.MetadataFile), formatHint)
		default:
			msg += fmt.Sprintf("It holds %s but was never formatted for this node: check that it is the dir you meant; "+
				"%s adopts it (its partitions the metadata does not know are then kept as stray logs).",
				d.Describe(e.Config.MetadataFile), formatHint)
		}
		problems = append(problems, msg)
	}
	return problems
}

func (e *Ensemble) allEmpty() bool {
	for _, d := range e.Dirs {
		if !d.Empty() {
			return false
		}
	}
	return true
}

// Error is a refusal to start: what each dir holds and what is wrong.
type Error struct {
	Ensemble *Ensemble
	Problems []string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("the log dirs cannot be used as they are (nothing was written to them):\n")
	for _, d := range e.Ensemble.Dirs {
		fmt.Fprintf(&b, "  %s: %s\n", d.Path, d.Describe(e.Ensemble.Config.MetadataFile))
	}
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p)
	}
	return b.String()
}
