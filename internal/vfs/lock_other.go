//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package vfs

import (
	"errors"
	"io"
	"os"
)

// Lock is not implemented here: callers see errors.ErrUnsupported and decide
// whether to run without the lock.
func (osFS) Lock(name string) (io.Closer, error) {
	return nil, &os.PathError{Op: "lock", Path: name, Err: errors.ErrUnsupported}
}
