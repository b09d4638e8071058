package fake

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// writeLog appends lines to a container log file in the CRI format
// kubelet parses ("<RFC3339Nano> <stream> F <line>"), creating the file and
// its directory. The file is opened per write so that log rotation (rename
// plus ReopenContainerLog) needs no bookkeeping. Errors are dropped: a
// real runtime does not fail a container over its log either.
func writeLog(path string, t time.Time, s Stream, lines []string) {
	f, err := openLog(path)
	if err != nil {
		return
	}
	defer f.Close()
	if len(lines) == 0 {
		return
	}
	ts := t.Format(time.RFC3339Nano)
	var b strings.Builder
	for _, l := range lines {
		// A line with embedded newlines is several lines in the log.
		for _, part := range strings.Split(l, "\n") {
			b.WriteString(ts)
			b.WriteByte(' ')
			b.WriteString(string(s))
			b.WriteString(" F ")
			b.WriteString(part)
			b.WriteByte('\n')
		}
	}
	_, _ = f.WriteString(b.String())
}

// touchLog creates the log file if it does not exist.
func touchLog(path string) error {
	f, err := openLog(path)
	if err != nil {
		return err
	}
	return f.Close()
}

func openLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
}
