//go:build !race

package prober

const raceDetector = false
