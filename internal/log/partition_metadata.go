package log

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// PartitionMetadataFile is Kafka's per-partition file naming the topic id the
// log belongs to: "version: 0" and "topic_id: <base64url id>" lines.
const PartitionMetadataFile = "partition.metadata"

func encodePartitionMetadata(id [16]byte) []byte {
	return fmt.Appendf(nil, "version: 0\ntopic_id: %s\n", base64.RawURLEncoding.EncodeToString(id[:]))
}

// ParsePartitionMetadata returns the topic id partition.metadata contents
// name; the zero id when they name none readable.
func ParsePartitionMetadata(data []byte) [16]byte {
	var id [16]byte
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != "topic_id" {
			continue
		}
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(v))
		if err == nil && len(b) == 16 {
			copy(id[:], b)
		}
	}
	return id
}

// ReadTopicID returns the topic id the partition.metadata file in a
// partition directory names; the zero id when it is missing or names none.
func ReadTopicID(fs vfs.FS, partitionDir string) [16]byte {
	data, err := vfs.ReadFile(fs, filepath.Join(partitionDir, PartitionMetadataFile))
	if err != nil {
		return [16]byte{}
	}
	return ParsePartitionMetadata(data)
}

// TopicID is the topic id partition.metadata names (as Options.TopicID or
// AssignTopicID set it); zero if none.
func (l *Log) TopicID() [16]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.topicID
}

// AssignTopicID records in partition.metadata the id of the topic the log
// belongs to (Kafka's UnifiedLog.assignTopicId), unless it says so already.
// The file must be durable before any record is acknowledged, since a log
// found at start without one is set aside as stray: a log holding no record
// yet writes it without an fsync and the sync of its first record rewrites
// it durably (Kafka flushes it before the first append), so creating a
// partition costs no fsync; a log holding records writes it durably at once.
func (l *Log) AssignTopicID(id [16]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if l.topicID == id {
		return nil
	}
	path := filepath.Join(l.dir, PartitionMetadataFile)
	body := encodePartitionMetadata(id)
	if !l.created {
		if old, err := vfs.ReadFile(l.fs, path); err == nil && bytes.Equal(old, body) {
			l.topicID = id
			return nil
		}
	}
	if l.durable.Load() > 0 || l.leo.Load() > 0 {
		if err := vfs.WriteFileAtomic(l.fs, path, body); err != nil {
			return l.ioErr(err)
		}
		l.topicID = id
		return nil
	}
	if err := l.writeFresh(path, body); err != nil {
		return l.ioErr(err)
	}
	l.topicID, l.metaPending = id, body
	l.dirDirty = true
	l.noteSyncStateLocked()
	return nil
}

// writeFresh writes a small file without an fsync: straight into place in a
// directory Open has just created (no older file to keep), through a temp
// file and a rename otherwise.
func (l *Log) writeFresh(path string, data []byte) error {
	if !l.created || l.topicID != ([16]byte{}) {
		f, err := vfs.WriteFileUnsynced(l.fs, path, data)
		if err != nil {
			return err
		}
		return f.Close()
	}
	f, err := l.fs.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
