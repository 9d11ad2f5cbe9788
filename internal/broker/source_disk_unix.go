//go:build linux || darwin || freebsd

package broker

import "syscall"

// diskUsage is the size of the filesystem holding path and the bytes free
// for an unprivileged user there.
func diskUsage(path string) (total, free int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize), nil
}
