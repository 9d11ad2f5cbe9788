//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package vfs

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// Lock implements FS with flock(2): the lock belongs to the open file
// description, so a second Lock in the same process conflicts too, and the
// kernel drops it when the process dies however it dies.
func (osFS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if lerr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	if lerr == syscall.EWOULDBLOCK {
		lerr = ErrLocked
	}
	if lerr != nil {
		return nil, errors.Join(&os.PathError{Op: "lock", Path: name, Err: lerr}, f.Close())
	}
	// Closing the descriptor releases the lock.
	return f, nil
}
