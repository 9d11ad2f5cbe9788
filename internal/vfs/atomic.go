package vfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrCorruptCheckpoint: a checkpoint file whose version, count or entries do
// not parse.
var ErrCorruptCheckpoint = errors.New("vfs: corrupt checkpoint file")

// WriteFileAtomic replaces path with data durably: write path.tmp, fsync it,
// rename over path, fsync the directory. A crash at any point leaves either
// the old file or the new one.
func WriteFileAtomic(fs FS, path string, data []byte) error {
	if err := WriteFileSynced(fs, path, data); err != nil {
		return err
	}
	return fs.SyncDir(filepath.Dir(path))
}

// WriteFileSynced is WriteFileAtomic without the directory fsync, for a
// caller that syncs the directory once for several files: until it does, a
// crash leaves either the old file or the new one.
func WriteFileSynced(fs FS, path string, data []byte) error {
	f, err := writeTemp(fs, path, data)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return fs.Rename(path+".tmp", path)
}

// WriteFileUnsynced replaces path with data (write path.tmp, rename over
// path) and returns the new file still open, unsynced: a crash may leave
// the old file, the new one, or the new name with only part of data (or
// none). It is for files whose readers check them (a CRC, a format) and can
// do without them; a caller that needs the contents durable later fsyncs the
// returned file, then the directory.
func WriteFileUnsynced(fs FS, path string, data []byte) (File, error) {
	f, err := writeTemp(fs, path, data)
	if err != nil {
		return nil, err
	}
	if err := fs.Rename(path+".tmp", path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// writeTemp writes data to a new path.tmp and returns it open.
func writeTemp(fs FS, path string, data []byte) (File, error) {
	f, err := fs.Create(path + ".tmp")
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile reads a whole (small) file.
func ReadFile(fs FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Checkpoint files share Kafka's text layout: a version line, a count line,
// then one entry per line with space-separated fields.
//
//	0
//	2
//	my-topic 0 1234
//	my-topic 1 99

// WriteCheckpoint writes version, len(lines) and lines atomically.
func WriteCheckpoint(fs FS, path string, version int, lines []string) error {
	return WriteFileAtomic(fs, path, EncodeCheckpoint(version, lines))
}

// EncodeCheckpoint is the contents WriteCheckpoint writes.
func EncodeCheckpoint(version int, lines []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", version, len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// ReadCheckpoint reads a checkpoint file written by WriteCheckpoint, checking
// the version and the entry count. Each entry is returned split on spaces.
func ReadCheckpoint(fs FS, path string, version int) ([][]string, error) {
	data, err := ReadFile(fs, path)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return strings.TrimSpace(sc.Text()), true
	}
	v, ok := next()
	if !ok || v != strconv.Itoa(version) {
		return nil, fmt.Errorf("%w: checkpoint %s: version %q, want %d", ErrCorruptCheckpoint, path, v, version)
	}
	c, ok := next()
	n, err := strconv.Atoi(c)
	if !ok || err != nil || n < 0 {
		return nil, fmt.Errorf("%w: checkpoint %s: bad count %q", ErrCorruptCheckpoint, path, c)
	}
	var out [][]string
	for line, ok := next(); ok; line, ok = next() {
		if line == "" {
			continue
		}
		out = append(out, strings.Fields(line))
	}
	if len(out) != n {
		return nil, fmt.Errorf("%w: checkpoint %s: %d entries, header says %d", ErrCorruptCheckpoint, path, len(out), n)
	}
	return out, nil
}
