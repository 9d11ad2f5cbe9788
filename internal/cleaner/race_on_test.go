//go:build race

package cleaner

// raceEnabled: the race detector makes the model and crash tests tens of
// times slower, so they run fewer cases.
const raceEnabled = true
