// Command e2ereport reads the JSON reports that Kubernetes' e2e suite writes
// with --ginkgo.json-report (Ginkgo v2's format) for hack/conformance.sh.
//
// Usage:
//
//	e2ereport list DRYRUN.json
//	    the full text of every spec a --ginkgo.dry-run selected, one per line
//	e2ereport summary [-misses FILE] [-ran FILE] REPORT.json...
//	    one line per spec that ran: state, seconds, full text, first failure
//	    line (tab-separated); then a "# counts:" line. With -misses, a file of
//	    "full text<TAB>reason" lines (the specs this machine cannot pass, the
//	    kubelet included), it exits 1 if any other spec did not pass and names
//	    the listed specs that passed. With -ran, a file of full texts, it exits
//	    1 if any of them did not run (a mistyped name, a crashed process).
//
// The full text is what --ginkgo.focus matches: the container texts and the
// spec's own text joined by spaces.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// specReport holds the fields of Ginkgo's types.SpecReport read here.
type specReport struct {
	ContainerHierarchyTexts []string
	LeafNodeType            string
	LeafNodeText            string
	State                   string
	RunTime                 int64 // nanoseconds
	Failure                 *struct {
		Message           string
		AdditionalFailure *struct {
			Failure struct{ Message string }
		}
	}
}

func (r specReport) fullText() string {
	return strings.Join(append(append([]string{}, r.ContainerHierarchyTexts...), r.LeafNodeText), " ")
}

// firstLines is the failure's first two non-empty lines, at most 300 bytes;
// a suite timeout names what the spec was doing instead.
func (r specReport) firstLines() string {
	if r.Failure == nil {
		return ""
	}
	lines := nonEmptyLines(r.Failure.Message)
	if len(lines) > 0 && strings.HasPrefix(lines[0], "A suite timeout occurred") && r.Failure.AdditionalFailure != nil {
		add := nonEmptyLines(r.Failure.AdditionalFailure.Failure.Message)
		lines = []string{"[suite timeout] " + strings.Join(add[min(1, len(add)):min(3, len(add))], " ")}
	}
	msg := strings.Join(lines[:min(2, len(lines))], " ")
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return msg
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// readSpecs returns the It specs of the reports in the given files.
func readSpecs(paths []string) ([]specReport, error) {
	var specs []specReport
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var suites []struct{ SpecReports []specReport }
		if err := json.Unmarshal(data, &suites); err != nil {
			return nil, fmt.Errorf("%s: not a Ginkgo JSON report: %w", p, err)
		}
		for _, s := range suites {
			for _, r := range s.SpecReports {
				if r.LeafNodeType == "It" {
					specs = append(specs, r)
				}
			}
		}
	}
	return specs, nil
}

// readMisses parses "full text<TAB>reason" lines; # starts a comment.
func readMisses(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	misses := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		text, reason, ok := strings.Cut(line, "\t")
		if !ok || strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("%s:%d: want \"full text<TAB>reason\"", path, n)
		}
		misses[text] = strings.TrimSpace(reason)
	}
	return misses, sc.Err()
}

func list(w io.Writer, paths []string) error {
	specs, err := readSpecs(paths)
	if err != nil {
		return err
	}
	for _, r := range specs {
		if r.State == "passed" { // a dry run "passes" every selected spec
			fmt.Fprintln(w, r.fullText())
		}
	}
	return nil
}

var (
	errUnexpected = errors.New("specs failed that are not listed as misses")
	errNotRun     = errors.New("specs that had to run did not")
)

func summary(w io.Writer, missesPath, ranPath string, paths []string) error {
	specs, err := readSpecs(paths)
	if err != nil {
		return err
	}
	var misses map[string]string
	if missesPath != "" {
		if misses, err = readMisses(missesPath); err != nil {
			return err
		}
	}
	var mustRun []string
	if ranPath != "" {
		data, err := os.ReadFile(ranPath)
		if err != nil {
			return err
		}
		mustRun = nonEmptyLines(string(data))
	}
	ran := map[string]bool{}
	counts := map[string]int{}
	var unexpected, fixed []string
	for _, r := range specs {
		msg := r.firstLines()
		if r.State == "skipped" && msg == "" {
			continue // filtered out by focus or skip: never ran
		}
		counts[r.State]++
		ran[r.fullText()] = true
		fmt.Fprintf(w, "%s\t%.1f\t%s\t%s\n", r.State, float64(r.RunTime)/1e9, r.fullText(), msg)
		_, listed := misses[r.fullText()]
		switch {
		case misses != nil && r.State != "passed" && !listed:
			unexpected = append(unexpected, r.fullText())
		case r.State == "passed" && listed:
			fixed = append(fixed, r.fullText())
		}
	}
	var states []string
	total := 0
	for s, n := range counts {
		states = append(states, fmt.Sprintf("%s=%d", s, n))
		total += n
	}
	sort.Strings(states)
	fmt.Fprintf(w, "# counts: %s, total=%d\n", strings.Join(states, ", "), total)
	var notRun []string
	for _, t := range mustRun {
		if !ran[t] {
			notRun = append(notRun, t)
			fmt.Fprintf(w, "# DID NOT RUN: %s\n", t)
		}
	}
	for _, t := range fixed {
		fmt.Fprintf(w, "# listed as a miss but passed: %s\n", t)
	}
	for _, t := range unexpected {
		fmt.Fprintf(w, "# FAILED, not a listed miss: %s\n", t)
	}
	if len(unexpected) > 0 {
		return fmt.Errorf("%d %w", len(unexpected), errUnexpected)
	}
	if len(notRun) > 0 {
		return fmt.Errorf("%d %w", len(notRun), errNotRun)
	}
	return nil
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: e2ereport list DRYRUN.json | summary [-misses FILE] [-ran FILE] REPORT.json...")
	}
	fset := flag.NewFlagSet("e2ereport "+args[0], flag.ContinueOnError)
	missesPath := fset.String("misses", "", "file of \"full text<TAB>reason\" lines: specs not expected to pass here")
	ranPath := fset.String("ran", "", "file of full spec texts that must have run")
	if err := fset.Parse(args[1:]); err != nil {
		return err
	}
	if fset.NArg() == 0 {
		return fmt.Errorf("%s: no report files", args[0])
	}
	switch args[0] {
	case "list":
		return list(stdout, fset.Args())
	case "summary":
		return summary(stdout, *missesPath, *ranPath, fset.Args())
	}
	return fmt.Errorf("unknown command %q (list, summary)", args[0])
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "e2ereport:", err)
		os.Exit(1)
	}
}
