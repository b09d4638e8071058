//go:build !race

package gc_test

const raceDetector = false
