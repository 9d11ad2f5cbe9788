//go:build race

package log

// raceEnabled: the race detector makes the crash tests ~50x slower, so they
// sample crash points instead of trying every one.
const raceEnabled = true
