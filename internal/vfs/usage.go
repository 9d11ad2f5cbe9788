package vfs

// Usage is the size of the volume holding a path and the bytes on it that an
// unprivileged process may still write, as Java's FileStore.getTotalSpace and
// getUsableSpace compute them (what Kafka's DescribeLogDirs reports).
type Usage struct {
	Total  int64
	Usable int64
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
