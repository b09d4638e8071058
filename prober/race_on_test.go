//go:build race

package prober

// raceDetector: the race detector slows probing several times over, so
// BenchmarkManyWorkers runs a tenth of its workers (CI checks that it works;
// its figures come from runs without -race).
const raceDetector = true
