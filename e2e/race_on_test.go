//go:build integration && race

package e2e

// raceEnabled: the agent under test is built with -race too.
const raceEnabled = true
