//go:build !race

package containerlog_test

const raceDetector = false
