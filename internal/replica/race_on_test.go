//go:build race

package replica

// raceEnabled: the race detector makes the simulation tens of times
// slower, so it runs fewer seeds.
const raceEnabled = true
