//go:build linux

package vfs

import (
	"os"
	"syscall"
)

// DiskUsage is statfs(2) of path. Blocks are counted in fragments (f_frsize),
// as statvfs(3) documents and Java's FileStore computes; f_bsize is only the
// preferred I/O size.
func (osFS) DiskUsage(path string) (Usage, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return Usage{}, &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	return Usage{Total: clampBytes(st.Blocks, st.Frsize), Usable: clampBytes(st.Bavail, st.Frsize)}, nil
}
