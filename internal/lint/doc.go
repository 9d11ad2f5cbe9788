// Package lint holds Gregor's rules about its own code, written as tests
// (as pebble's internal/lint does): which package may import which, where
// the Kafka protocol's message types may be used, and that go.mod is tidy.
// It has no code of its own; `go test ./internal/lint` runs the rules in
// well under a second.
package lint
