//go:build race

package containerlog_test

// raceDetector: the race detector slows gzip about twenty times over (0.4s
// a MiB), so TestWriterKeepsWriting writes a fifth of its 50 MiB under it.
const raceDetector = true
