package logmgr

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// PartitionMetadataFile is Kafka's per-partition file naming the topic id
// (see log.PartitionMetadataFile).
const PartitionMetadataFile = log.PartitionMetadataFile

// ReadTopicID returns the topic id a partition dir's partition.metadata
// names; the zero id when the file is missing or says nothing readable.
func ReadTopicID(fs vfs.FS, partitionDir string) [16]byte { return log.ReadTopicID(fs, partitionDir) }

// StrayLog is a partition log set aside because the metadata does not know
// it: renamed <topic>-<partition>.<id>-stray, never loaded, never deleted.
type StrayLog struct {
	Dir  string // the log dir
	Name string // the directory name in it
	TP   topicpart.TopicPartition
	// Bytes is the size of its files when the broker started.
	Bytes int64
}

// Strays lists the stray logs of every log dir, by dir then name.
func (m *Manager) Strays() []StrayLog {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []StrayLog
	for _, d := range m.o.Dirs {
		out = append(out, m.strays[d]...)
	}
	return out
}

// setAside renames a partition dir the metadata does not know to Kafka's
// stray name (KIP-858) instead of deleting it: the metadata may be the thing
// that is wrong, and the records are then still there.
func (m *Manager) setAside(dir, name string, tp topicpart.TopicPartition, reason string) (StrayLog, error) {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return StrayLog{}, err
	}
	to := topicpart.StrayDirName(tp, hex.EncodeToString(id[:]))
	if err := m.o.FS.Rename(filepath.Join(dir, name), filepath.Join(dir, to)); err != nil {
		return StrayLog{}, fmt.Errorf("setting aside stray log %s: %w", filepath.Join(dir, name), err)
	}
	m.o.Logger.Warn("log for a partition the metadata does not know is marked as stray and renamed; it is kept, not deleted",
		"partition", tp, "reason", reason, "dir", dir, "renamed_to", to)
	return m.strayLog(dir, to, tp), nil
}

// strayLog describes the stray dir name in dir.
func (m *Manager) strayLog(dir, name string, tp topicpart.TopicPartition) StrayLog {
	s := StrayLog{Dir: dir, Name: name, TP: tp}
	files, _ := m.o.FS.List(filepath.Join(dir, name))
	for _, f := range files {
		if st, err := m.o.FS.Stat(filepath.Join(dir, name, f)); err == nil && !st.IsDir() {
			s.Bytes += st.Size()
		}
	}
	return s
}

// sortStrays orders a dir's strays by name.
func sortStrays(s []StrayLog) {
	slices.SortFunc(s, func(a, b StrayLog) int { return strings.Compare(a.Name, b.Name) })
}
