//go:build integration && !race

package e2e

const raceEnabled = false
