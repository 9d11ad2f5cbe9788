// Package machine reads what the whole machine has done, for benchmarks
// that must say what bounded them: CPU time from /proc/stat and each block
// device's writes and busy time from /proc/diskstats. A Sample is taken at
// the start and at the end of a measured window; Window turns two into the
// window's figures.
//
// Only whole devices backed by hardware count (a /sys/block entry with a
// device link: not loop, ram or zram devices, not partitions), so that a
// partition's writes are not counted twice. A figure that cannot be read
// (no /proc, a container without /sys/block) is left out, never guessed:
// its ok flag is false.
//
// The package only reads files; it has no state and is safe for concurrent
// use. Linux only: elsewhere every ok flag is false.
package machine
