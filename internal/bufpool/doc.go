// Package bufpool keeps large byte buffers for reuse across requests: the
// fetch path's read buffers and the server's large request frames.
//
// A Pool hands out buffers in power-of-two capacities between its minimum
// and maximum and keeps at most a fixed number of bytes of returned buffers,
// so a burst of large requests does not pin its peak memory. Unlike a
// sync.Pool it survives garbage collections (a broker moving hundreds of
// MiB/s collects often enough to empty a sync.Pool between uses), and unlike
// make it does not clear what it hands out: a buffer holds whatever its last
// user left, and callers overwrite what they use.
//
// # Concurrency
//
// Get and Put are safe for concurrent use (one mutex per Pool). A buffer
// must not be used after it is Put.
package bufpool
