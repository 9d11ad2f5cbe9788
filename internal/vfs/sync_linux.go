package vfs

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data and the metadata needed to read it back (its
// size), skipping timestamps. Control holds a reference on the descriptor so
// a concurrent Close cannot recycle it under the syscall.
func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		// Control fails only when it cannot take a reference, i.e. the
		// file is closed; report it the way (*os.File).Sync would.
		return &os.PathError{Op: "sync", Path: f.Name(), Err: os.ErrClosed}
	}
	if serr != nil {
		return &os.PathError{Op: "sync", Path: f.Name(), Err: serr}
	}
	return nil
}
