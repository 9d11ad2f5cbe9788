package logmgr

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// CleanerCheckpoint is the per-log-dir file holding each compacted
// partition's cleaner point (Kafka's LogCleanerManager checkpoint): version
// 0, a count, then "topic partition offset" lines. Below the offset the
// partition's log is clean.
const CleanerCheckpoint = "cleaner-offset-checkpoint"

// cleanerPoints caches the cleaner-offset-checkpoint files of every dir,
// read on first use.
type cleanerPoints struct {
	mu     sync.Mutex
	loaded bool
	points map[topicpart.TopicPartition]int64
}

func (m *Manager) cleanerPointsLocked() map[topicpart.TopicPartition]int64 {
	c := &m.cleaner
	if !c.loaded {
		c.points = make(map[topicpart.TopicPartition]int64)
		for _, d := range m.o.Dirs {
			for tp, off := range m.readCheckpoint(d, CleanerCheckpoint) {
				c.points[tp] = off
			}
		}
		c.loaded = true
	}
	return c.points
}

// CleanerOffset is tp's cleaner point from cleaner-offset-checkpoint; ok is
// false when the partition has none (it has never been cleaned).
func (m *Manager) CleanerOffset(tp topicpart.TopicPartition) (int64, bool) {
	m.cleaner.mu.Lock()
	defer m.cleaner.mu.Unlock()
	off, ok := m.cleanerPointsLocked()[tp]
	return off, ok
}

// SetCleanerOffset records tp's cleaner point, or forgets it when offset is
// negative, and rewrites the checkpoint file of tp's log dir atomically.
func (m *Manager) SetCleanerOffset(tp topicpart.TopicPartition, offset int64) error {
	m.cleaner.mu.Lock()
	defer m.cleaner.mu.Unlock()
	points := m.cleanerPointsLocked()
	dir := m.DirOf(tp)
	if offset < 0 {
		delete(points, tp)
	} else {
		points[tp] = offset
	}
	if dir == "" {
		return nil // not hosted (deleted meanwhile): nothing to write
	}
	return m.writeCleanerCheckpointLocked(dir)
}

// forgetCleanerOffset drops a deleted partition's cleaner point.
func (m *Manager) forgetCleanerOffset(tp topicpart.TopicPartition, dir string) error {
	m.cleaner.mu.Lock()
	defer m.cleaner.mu.Unlock()
	points := m.cleanerPointsLocked()
	if _, ok := points[tp]; !ok {
		return nil
	}
	delete(points, tp)
	return m.writeCleanerCheckpointLocked(dir)
}

// writeCleanerCheckpointLocked writes dir's file with the points of the
// partitions dir holds. m.cleaner.mu is held.
func (m *Manager) writeCleanerCheckpointLocked(dir string) error {
	var tps []topicpart.TopicPartition
	for tp := range m.cleaner.points {
		if d := m.DirOf(tp); d == dir {
			tps = append(tps, tp)
		}
	}
	slices.SortFunc(tps, topicpart.Compare)
	lines := make([]string, len(tps))
	for i, tp := range tps {
		lines[i] = fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, m.cleaner.points[tp])
	}
	if err := vfs.WriteCheckpoint(m.fs, filepath.Join(dir, CleanerCheckpoint), checkpointVersion, lines); err != nil {
		return fmt.Errorf("write %s in %s: %w", CleanerCheckpoint, dir, err)
	}
	return nil
}
