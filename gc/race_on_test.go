//go:build race

package gc_test

// raceDetector: the race detector slows the gRPC calls ten times over, so
// BenchmarkContainerGC runs a tenth of its pods (CI checks that it works;
// its figures come from runs without -race).
const raceDetector = true
