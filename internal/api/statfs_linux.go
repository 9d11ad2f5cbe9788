//go:build linux

package api

import "syscall"

// volumeBytes reports the total and usable bytes of the volume holding dir,
// as Java's FileStore.getTotalSpace and getUsableSpace compute them (blocks
// and blocks available to unprivileged users, times the fragment size).
func volumeBytes(dir string) (total, usable int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1, -1, err
	}
	return clampBytes(uint64(st.Blocks), int64(st.Frsize)), clampBytes(uint64(st.Bavail), int64(st.Frsize)), nil
}

// clampBytes multiplies without overflowing: Kafka reports a volume too
// large for a long as Long.MAX_VALUE.
func clampBytes(blocks uint64, size int64) int64 {
	if size <= 0 {
		return 0
	}
	if blocks > uint64(1<<63-1)/uint64(size) {
		return 1<<63 - 1
	}
	return int64(blocks) * size
}
