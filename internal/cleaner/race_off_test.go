//go:build !race

package cleaner

const raceEnabled = false
