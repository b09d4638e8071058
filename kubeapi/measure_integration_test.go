//go:build integration

package kubeapi_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMeasureInitMemory prints the resident memory of a process that has
// made its API client, kubeapi's against client-go's typed clientset (the
// same program, testdata/initrss, built once each way): what the typed
// clientset's scheme and discovery cost an agent before its first request.
func TestMeasureInitMemory(t *testing.T) {
	rss := func(tags ...string) (anon, file int) {
		bin := filepath.Join(t.TempDir(), "initrss")
		args := append([]string{"build", "-o", bin}, tags...)
		out, err := exec.Command("go", append(args, "./testdata/initrss")...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		out, err = exec.Command(bin).Output()
		require.NoError(t, err)
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(l) // "RssAnon: 2324 kB"
			require.Len(t, f, 3, l)
			n, err := strconv.Atoi(f[1])
			require.NoError(t, err)
			switch f[0] {
			case "RssAnon:":
				anon = n
			case "RssFile:":
				file = n
			}
		}
		return anon, file
	}
	kAnon, kFile := rss()
	cAnon, cFile := rss("-tags", "clientgo")
	t.Logf("resident after making the client: kubeapi %d kB (anon %d, file %d), client-go's clientset %d kB (anon %d, file %d): %d kB less",
		kAnon+kFile, kAnon, kFile, cAnon+cFile, cAnon, cFile, cAnon+cFile-kAnon-kFile)
	assert.Less(t, kAnon+kFile, cAnon+cFile, "kubeapi links client-go's typed clientset again?")
}
