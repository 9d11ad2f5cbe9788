package logmgr

import "github.com/gregor-broker/gregor/internal/vfs"

// dirFS is the filesystem the manager, its logs, the cleaner and the
// partition metadata writers use: Kafka's LogDirFailureChannel at the one
// place every write passes. A failed write, truncate or fsync of a file
// under a log dir, or a failed fsync of a directory there, is reported to
// that dir (LogDir.ioFailed): for want of space it makes the dir full,
// otherwise it takes it offline. Reads pass through untouched.
type dirFS struct {
	vfs.FS
	m *Manager
}

func (fs dirFS) wrap(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	d := fs.m.dirFor(name)
	if d == nil {
		return f, nil
	}
	return dirFile{File: f, d: d}, nil
}

func (fs dirFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	return fs.wrap(f, name, err)
}

func (fs dirFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name)
	return fs.wrap(f, name, err)
}

func (fs dirFS) SyncDir(dir string) error {
	err := fs.FS.SyncDir(dir)
	if err != nil && !vfs.IsNotExist(err) {
		if d := fs.m.dirFor(dir); d != nil {
			d.ioFailed(err, true)
		}
	}
	return err
}

// dirFile reports a failed write, truncate or sync to its log dir.
type dirFile struct {
	vfs.File
	d *LogDir
}

// ReadsUnwrapped is the file dirFile wraps: reads pass through untouched,
// so they may be made on it directly (vfs.OSFile, for sendfile).
func (f dirFile) ReadsUnwrapped() vfs.File { return f.File }

func (f dirFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	if err != nil {
		f.d.ioFailed(err, false)
	}
	return n, err
}

func (f dirFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	if err != nil {
		f.d.ioFailed(err, false)
	}
	return n, err
}

func (f dirFile) Truncate(size int64) error {
	err := f.File.Truncate(size)
	if err != nil {
		f.d.ioFailed(err, false)
	}
	return err
}

func (f dirFile) Sync() error {
	err := f.File.Sync()
	if err != nil {
		f.d.ioFailed(err, true)
	}
	return err
}
