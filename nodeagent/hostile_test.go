package nodeagent_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/allocation"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/nodeagent"
	"github.com/nodekit-dev/nodekit/podsource"
)

// hostileManifest is one manifest an attacker with write access to the
// static-pod directory could drop there.
type hostileManifest struct {
	file string
	body string
	// want are substrings of the file source's error for this file (its
	// path is always checked too); nil: the file holds no manifest and is
	// skipped without an error (logged once, see package podsource).
	want []string
}

func podYAML(meta, spec string) string {
	if spec == "" {
		spec = "{containers: [{name: c, image: nodekit.local/testbin:1, args: [sleep]}]}"
	}
	return "apiVersion: v1\nkind: Pod\nmetadata: " + meta + "\nspec: " + spec + "\n"
}

func hostileManifests() []hostileManifest {
	vol := func(volName, subPath string) string {
		return fmt.Sprintf("{volumes: [{name: %q, emptyDir: {}}], containers: [{name: c, image: nodekit.local/testbin:1, args: [sleep], "+
			"volumeMounts: [{name: %q, mountPath: /v, subPath: %q}]}]}", volName, volName, subPath)
	}
	garbage := make([]byte, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(r.UintN(256))
	}
	bomb := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bomb\n  annotations:\n    a: &a [x,x,x,x,x,x,x,x,x,x]\n"
	for i, prev := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		next := string(rune('b' + i))
		bomb += fmt.Sprintf("    %s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", next, next, prev, prev, prev, prev, prev, prev, prev, prev, prev, prev)
	}
	bomb += "spec: {containers: [{name: c, image: i}]}\n"
	return []hostileManifest{
		// UIDs that lead out of RootDir/pods and PodLogsDir.
		{"uid-up.yaml", podYAML(`{name: a, uid: "../../../victim"}`, ""), []string{`metadata.uid: Invalid value: "../../../victim"`}},
		{"uid-root.yaml", podYAML(`{name: b, uid: ".."}`, ""), []string{`metadata.uid: Invalid value: ".."`}},
		{"uid-dot.yaml", podYAML(`{name: c, uid: "."}`, ""), []string{`metadata.uid: Invalid value: "."`}},
		{"uid-logs.yaml", podYAML(`{name: d, uid: "../../../logs-victim"}`, ""), []string{`metadata.uid: Invalid value: "../../../logs-victim"`}},
		{"uid-abs.yaml", podYAML(`{name: e, uid: "/tmp/x"}`, ""), []string{`metadata.uid: Invalid value: "/tmp/x"`}},
		{"uid-nul.yaml", podYAML(`{name: f, uid: "a\0b"}`, ""), []string{`metadata.uid: Invalid value: "a\x00b"`}},
		{"uid-long.yaml", podYAML("{name: g, uid: "+strings.Repeat("u", 2000)+"}", ""), []string{"metadata.uid", "(2000 bytes): must be no more than 128"}},
		// Names that reach paths.
		{"name-up.yaml", podYAML(`{name: "../../../victim"}`, ""), []string{`metadata.name: Invalid value: "../../../victim-n1"`}},
		{"ns-up.yaml", podYAML(`{name: h, namespace: "../../victim"}`, ""), []string{`metadata.namespace: Invalid value: "../../victim"`}},
		{"container-up.yaml", podYAML("{name: i}", `{containers: [{name: "../../../victim", image: i}]}`), []string{`spec.containers[0].name: Invalid value: "../../../victim"`}},
		{"volume-up.yaml", podYAML("{name: j}", vol("../../../../victim", "")), []string{`spec.volumes[0].name: Invalid value: "../../../../victim"`}},
		{"subpath-up.yaml", podYAML("{name: k}", vol("v", "a/../../../../../../victim")), []string{`subPath: Invalid value: "a/../../../../../../victim": must not contain '..'`}},
		{"subpath-abs.yaml", podYAML("{name: l}", vol("v", "/etc")), []string{`subPath: Invalid value: "/etc": must be a relative path`}},
		{"hostpath-up.yaml", podYAML("{name: m}", `{volumes: [{name: h, hostPath: {path: "/srv/../etc"}}], containers: [{name: c, image: i}]}`), []string{`hostPath.path: Invalid value: "/srv/../etc"`}},
		// Huge fields, huge files, garbage.
		{"name-long.yaml", podYAML("{name: "+strings.Repeat("n", 240)+"}", ""), []string{"metadata.name", "over the 255 a file name may have"}},
		{"annotation-huge.yaml", podYAML("{name: o, annotations: {big: "+strings.Repeat("x", 300<<10)+"}}", ""), []string{"metadata.annotations: Too long"}},
		{"file-huge.yaml", podYAML("{name: p}", "") + "#" + strings.Repeat("x", 11<<20) + "\n", []string{"over the limit of 10485760"}},
		{"garbage.yaml", string(garbage), []string{"invalid manifest"}},
		{"bomb.yaml", bomb, []string{"excessive aliasing"}},
		{"deep.yaml", strings.Repeat("[", 20000) + strings.Repeat("]", 20000), []string{"invalid manifest"}},
		// Not manifests at all: skipped, logged once, no error.
		{"empty.yaml", "", nil},
	}
}

// snapshot describes every file, directory and link below root (links not
// followed), except the subtrees skip says are the agent's or the test's.
func snapshot(t *testing.T, root string, skip func(rel string) bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := info.Mode().String()
		switch {
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			desc += " " + hex.EncodeToString(sum[:8])
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		}
		out[rel] = desc
		return nil
	}))
	return out
}

// TestHostileManifestsStayInside drops hostile manifests into the
// static-pod directory of an agent on the fake runtime, next to good ones:
// traversal UIDs, names, namespaces, container and volume names and
// subPaths; huge fields and files; binary garbage; a YAML bomb; deep
// nesting; symlink loops, a dangling link, a link to a secret outside, a
// directory named like a manifest; two files with one name and two with
// one UID. Each bad one is refused with an error naming its file and
// field, the good ones run, and once every manifest is deleted nothing
// outside Config.RootDir and PodLogsDir has changed, and nothing of the
// pods is left inside them either (their log directories included).
func TestHostileManifestsStayInside(t *testing.T) {
	world := t.TempDir()
	base := filepath.Join(world, "w1", "w2", "w3")
	manifests, root, logs := filepath.Join(base, "manifests"), filepath.Join(base, "root"), filepath.Join(base, "logs")
	for _, d := range []string{manifests, filepath.Join(root, "plugins"), logs, filepath.Join(world, "w1", "w2", "victim"),
		filepath.Join(world, "w1", "victim"), filepath.Join(world, "secrets")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	for _, f := range []string{filepath.Join(root, "keep"), filepath.Join(logs, "keep"), filepath.Join(world, "w1", "w2", "victim", "data"),
		filepath.Join(world, "w1", "victim", "data"), filepath.Join(world, "secrets", "token")} {
		require.NoError(t, os.WriteFile(f, []byte("precious "+f), 0o600))
	}
	// The agent's own: the manifests, pod directories and the allocation
	// checkpoints.
	outside := func(rel string) bool {
		switch rel {
		case filepath.Join("w1", "w2", "w3", "manifests"), filepath.Join("w1", "w2", "w3", "root", "pods"),
			filepath.Join("w1", "w2", "w3", "root", allocation.AllocatedStateFile), filepath.Join("w1", "w2", "w3", "root", allocation.ActuatedStateFile):
			return true
		}
		return false
	}
	before := snapshot(t, world, outside)

	cases := hostileManifests()
	for _, c := range cases {
		require.NoError(t, os.WriteFile(filepath.Join(manifests, c.file), []byte(c.body), 0o644))
	}
	good := podYAML("{name: good, uid: good-uid-1}", "{volumes: [{name: data, emptyDir: {}}], containers: [{name: c, image: nodekit.local/testbin:1, "+
		"args: [sleep], volumeMounts: [{name: data, mountPath: /data, subPath: a/b}]}]}")
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(manifests, name), []byte(body), 0o644))
	}
	write("good.yaml", good)
	write("dup-name-a.yaml", podYAML("{name: dup}", ""))
	write("dup-name-b.yaml", podYAML("{name: dup}", `{containers: [{name: other, image: nodekit.local/testbin:1, args: [sleep]}]}`))
	write("zz-dup-uid.yaml", podYAML("{name: twin, uid: good-uid-1}", ""))
	link := func(target, name string) { require.NoError(t, os.Symlink(target, filepath.Join(manifests, name))) }
	link(filepath.Join(manifests, "loop-b.yaml"), "loop-a.yaml")
	link(filepath.Join(manifests, "loop-a.yaml"), "loop-b.yaml")
	link(filepath.Join(world, "nowhere.yaml"), "dangling.yaml")
	link(filepath.Join(world, "secrets", "token"), "secret.yaml")
	require.NoError(t, os.Mkdir(filepath.Join(manifests, "dir.yaml"), 0o755))
	cases = append(cases,
		hostileManifest{"dup-name-b.yaml", "", []string{`metadata.name: Duplicate value: "default/dup-n1"`, filepath.Join(manifests, "dup-name-a.yaml")}},
		hostileManifest{"zz-dup-uid.yaml", "", []string{`metadata.uid: Duplicate value: "good-uid-1"`, filepath.Join(manifests, "good.yaml")}},
		hostileManifest{"secret.yaml", "", []string{"not a Kubernetes object: the document is a string"}},
	)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := startFakeAgent(t, ctx, manifests, func(c *nodeagent.Config) { c.RootDir, c.PodLogsDir = root, logs }).Agent
	files := a.FileSource()

	poll.Eventually(t, func() bool {
		g, d := podNamed(a, "good-n1"), podNamed(a, "dup-n1")
		return g != nil && g.Status.Phase == "Running" && d != nil && d.Status.Phase == "Running"
	}, 20*time.Second, 20*time.Millisecond, "the good pods running")
	assert.Equal(t, "c", podNamed(a, "dup-n1").Spec.Containers[0].Name, "the first file keeps the name")
	var wantErrs int
	for _, c := range cases {
		if c.want != nil {
			wantErrs++
		}
	}
	poll.Eventually(t, func() bool { return len(files.Errors()) == wantErrs }, 20*time.Second, 20*time.Millisecond, "every hostile manifest refused")
	errs := map[string]string{}
	for _, err := range files.Errors() {
		var me *podsource.ManifestError
		require.ErrorAs(t, err, &me)
		errs[filepath.Base(me.Origin)] = err.Error()
	}
	for _, c := range cases {
		msg, ok := errs[c.file]
		if c.want == nil {
			assert.False(t, ok, "%s: no error expected, got %s", c.file, msg)
			continue
		}
		require.True(t, ok, "%s: refused with an error", c.file)
		assert.Contains(t, msg, filepath.Join(manifests, c.file), "%s: the error names the file", c.file)
		for _, w := range c.want {
			assert.Contains(t, msg, w, c.file)
		}
	}
	pods, err := a.Runtime().GetPods(ctx, true)
	require.NoError(t, err)
	var running []string
	for _, p := range pods {
		running = append(running, p.Name)
	}
	assert.ElementsMatch(t, []string{"good-n1", "dup-n1"}, running, "only the good pods reach the runtime")
	assert.DirExists(t, filepath.Join(root, "pods", "good-uid-1", "volumes", "kubernetes.io~empty-dir", "data", "a", "b"))
	assert.DirExists(t, filepath.Join(logs, "default_good-n1_good-uid-1", "c"))

	// Delete every manifest: the pods go, and so does everything of theirs.
	entries, err := os.ReadDir(manifests)
	require.NoError(t, err)
	for _, e := range entries {
		require.NoError(t, os.RemoveAll(filepath.Join(manifests, e.Name())))
	}
	poll.Eventually(t, func() bool {
		pods, err := a.Runtime().GetPods(ctx, true)
		require.NoError(t, err)
		left, _ := os.ReadDir(filepath.Join(root, "pods"))
		logDirs, _ := os.ReadDir(logs)
		return len(pods) == 0 && len(left) == 0 && len(logDirs) == 1 && podNamed(a, "good-n1") == nil
	}, 20*time.Second, 20*time.Millisecond, "pods, pod directories and log directories removed")
	assert.Equal(t, before, snapshot(t, world, outside), "nothing outside the agent's directories changed")
}
