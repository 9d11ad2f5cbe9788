package vfs

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// Default is the filesystem production code uses.
var Default FS = OS()

// OS returns the real filesystem.
func OS() FS { return osFS{} }

type osFS struct{}

func (osFS) Create(name string) (File, error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f}, nil
}

func (osFS) OpenReadWrite(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return &osFile{f: f}, nil
}

func (osFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f}, nil
}

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) RemoveAll(name string) error { return os.RemoveAll(name) }

func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

func (osFS) List(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

func (osFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = syncDir(d)
	return errors.Join(err, d.Close())
}

func syncDir(d *os.File) error {
	// A file here is a caller's bug that fsync would hide; MemFS rejects it
	// the same way.
	fi, err := d.Stat()
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &os.PathError{Op: "syncdir", Path: d.Name(), Err: syscall.ENOTDIR}
	}
	// fsync, not fdatasync: a directory's entries are what we want on disk,
	// and fsync is the call every filesystem documents for directories.
	return d.Sync()
}

// OSFile returns the operating system's file behind f, for calls that need
// its descriptor (sendfile(2)), looking through wrappers that leave reads
// alone and say so with ReadsUnwrapped; ok is false for files of other
// filesystems (MemFS, an injecting FS, whose reads must go through it),
// whose callers take the portable path.
func OSFile(f File) (*os.File, bool) {
	for {
		switch w := f.(type) {
		case *osFile:
			return w.f, true
		case interface{ ReadsUnwrapped() File }:
			f = w.ReadsUnwrapped()
		default:
			return nil, false
		}
	}
}

var _ File = (*osFile)(nil)

// osFile is a thin wrapper so that the hot calls (Write, ReadAt) cost one
// interface dispatch and no allocation.
type osFile struct {
	f *os.File
}

func (o *osFile) Read(p []byte) (int, error)               { return o.f.Read(p) }
func (o *osFile) ReadAt(p []byte, off int64) (int, error)  { return o.f.ReadAt(p, off) }
func (o *osFile) Write(p []byte) (int, error)              { return o.f.Write(p) }
func (o *osFile) WriteAt(p []byte, off int64) (int, error) { return o.f.WriteAt(p, off) }
func (o *osFile) Close() error                             { return o.f.Close() }
func (o *osFile) Sync() error                              { return fdatasync(o.f) }

func (o *osFile) Truncate(size int64) error {
	if err := o.f.Truncate(size); err != nil {
		return err
	}
	// ftruncate leaves the offset alone; the File contract moves it back to
	// the new end so the next Write does not leave a hole.
	pos, err := o.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if pos > size {
		_, err = o.f.Seek(size, io.SeekStart)
	}
	return err
}

func (o *osFile) Size() (int64, error) {
	fi, err := o.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
