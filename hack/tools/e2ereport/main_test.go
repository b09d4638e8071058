package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const report = `[{"SpecReports":[
 {"LeafNodeType":"SynchronizedBeforeSuite","State":"passed"},
 {"ContainerHierarchyTexts":["[sig-node] Pods"],"LeafNodeType":"It","LeafNodeText":"should get a host IP [NodeConformance]","State":"passed","RunTime":4200000000},
 {"ContainerHierarchyTexts":["[sig-node] PrivilegedPod [NodeConformance]"],"LeafNodeType":"It","LeafNodeText":"should enable privileged commands","State":"failed","RunTime":2000000000,
  "Failure":{"Message":"\ncmd [ip link add dummy1 type dummy]\nstderr: Operation not supported\nmore"}},
 {"ContainerHierarchyTexts":["[sig-node] Probing"],"LeafNodeType":"It","LeafNodeText":"filtered out","State":"skipped"}
]}]`

func write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestSummary(t *testing.T) {
	rep := write(t, "r.json", report)
	for name, tc := range map[string]struct {
		misses  string // "" for no -misses flag
		wantErr bool
		want    []string
	}{
		"no misses file": {
			want: []string{
				"passed\t4.2\t[sig-node] Pods should get a host IP [NodeConformance]\t\n",
				"failed\t2.0\t[sig-node] PrivilegedPod [NodeConformance] should enable privileged commands\tcmd [ip link add dummy1 type dummy] stderr: Operation not supported\n",
				"# counts: failed=1, passed=1, total=2\n",
			},
		},
		"the failure is a listed miss": {
			misses: "# environmental\n[sig-node] PrivilegedPod [NodeConformance] should enable privileged commands\tno dummy links\n",
		},
		"an unlisted failure fails the run": {
			misses:  "[sig-node] Pods should get a host IP [NodeConformance]\tsomething\n",
			wantErr: true,
			want: []string{
				"# listed as a miss but passed: [sig-node] Pods should get a host IP [NodeConformance]\n",
				"# FAILED, not a listed miss: [sig-node] PrivilegedPod [NodeConformance] should enable privileged commands\n",
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{"summary"}
			if tc.misses != "" {
				args = append(args, "-misses", write(t, "misses.tsv", tc.misses))
			}
			var out bytes.Buffer
			err := run(append(args, rep), &out)
			if tc.wantErr {
				assert.ErrorIs(t, err, errUnexpected)
			} else {
				assert.NoError(t, err)
			}
			for _, w := range tc.want {
				assert.Contains(t, out.String(), w)
			}
			assert.NotContains(t, out.String(), "filtered out")
		})
	}
}

// -ran catches a spec that never ran: a mistyped name in a list, or an e2e
// process that died before writing its report.
func TestSummaryRan(t *testing.T) {
	rep := write(t, "r.json", report)
	for name, tc := range map[string]struct {
		ran     string
		wantErr bool
	}{
		"all ran":             {ran: "[sig-node] Pods should get a host IP [NodeConformance]\n"},
		"a failed spec ran":   {ran: "[sig-node] PrivilegedPod [NodeConformance] should enable privileged commands\n"},
		"a filtered spec":     {ran: "[sig-node] Probing filtered out\n", wantErr: true},
		"a name not in a run": {ran: "[sig-node] Pods should get a host IP\n", wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			err := run([]string{"summary", "-ran", write(t, "ran.txt", tc.ran), rep}, &out)
			if tc.wantErr {
				assert.ErrorIs(t, err, errNotRun)
				assert.Contains(t, out.String(), "# DID NOT RUN: ")
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

func TestList(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run([]string{"list", write(t, "dry.json", report)}, &out))
	assert.Equal(t, "[sig-node] Pods should get a host IP [NodeConformance]\n", out.String())
}

func TestBadInput(t *testing.T) {
	for name, args := range map[string][]string{
		"no command":   nil,
		"unknown":      {"frobnicate", "x.json"},
		"no files":     {"summary"},
		"not json":     {"summary", write(t, "bad.json", "{")},
		"bad misses":   {"summary", "-misses", write(t, "m.tsv", "no reason here\n"), write(t, "r.json", report)},
		"missing file": {"list", "/nonexistent/report.json"},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Error(t, run(args, &bytes.Buffer{}))
		})
	}
}
