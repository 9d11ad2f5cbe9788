//go:build !linux

package vfs

import (
	"errors"
	"os"
)

// DiskUsage is not implemented off Linux.
func (osFS) DiskUsage(path string) (Usage, error) {
	return Usage{}, &os.PathError{Op: "statfs", Path: path, Err: errors.ErrUnsupported}
}
