package vfs

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// File is an open file. Offsets used by ReadAt/WriteAt are absolute; Write
// appends at the file's current write position (files opened for writing
// start positioned at their end).
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Closer
	// Sync makes everything written so far durable (fdatasync).
	Sync() error
	// Truncate sets the file's size; the write position moves to the new end
	// if it was past it.
	Truncate(size int64) error
	// Size reports the current size, including unsynced writes.
	Size() (int64, error)
}

// FS is the filesystem surface Gregor's storage uses. Paths are ordinary
// slash-separated OS paths. Directory entries (create, rename, remove) are
// durable only after SyncDir on the parent directory.
type FS interface {
	// Create creates or truncates name for reading and writing.
	Create(name string) (File, error)
	// OpenReadWrite opens name for reading and writing, creating it if it
	// does not exist; the write position is at the end of the file.
	OpenReadWrite(name string) (File, error)
	// Open opens name read-only.
	Open(name string) (File, error)
	Remove(name string) error
	// RemoveAll removes a directory tree; a missing path is not an error.
	RemoveAll(name string) error
	Rename(oldname, newname string) error
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names (not paths) of the entries of dir, sorted.
	List(dir string) ([]string, error)
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the directory's entries durable (fsync on the directory).
	SyncDir(dir string) error
	// DiskUsage reports the volume holding path: its size and the bytes
	// still writable there.
	DiskUsage(path string) (Usage, error)
	// Lock creates name if it does not exist and takes an exclusive
	// advisory lock on it, held until the returned Closer is closed or the
	// process ends. While it is held, any other Lock of the same file, from
	// another process or from this one, fails at once with an error for
	// which errors.Is(err, ErrLocked) holds.
	Lock(name string) (io.Closer, error)
}

// ErrLocked says a file is locked by another holder (FS.Lock).
var ErrLocked = errors.New("locked by another holder")

// ErrInjected is returned by filesystems that inject faults.
var ErrInjected = errors.New("vfs: injected error")

// IsNoSpace reports whether err is a write, create or truncate refused for
// want of space (ENOSPC, or EDQUOT: over quota): nothing was lost, and the
// caller may cut back what it wrote and try again later. A failed Sync or
// SyncDir is never "just" no space, whatever its errno: the kernel may have
// dropped the pages it could not write (Linux marks them clean), so what the
// file holds is no longer known.
func IsNoSpace(err error) bool {
	if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EDQUOT) {
		return false
	}
	var pe *os.PathError
	return !errors.As(err, &pe) || (pe.Op != "sync" && pe.Op != OpSyncDir.String() && pe.Op != "fsync")
}

// IsNotExist reports whether err says a file does not exist.
func IsNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }
