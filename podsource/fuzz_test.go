package podsource

import (
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/podpath"
)

const fuzzOrigin = "/etc/kubernetes/manifests/fuzz.yaml"

// seeds reads the seed manifests in testdata/seeds (valid ones and hostile
// ones: traversal UIDs and names, huge fields, a YAML bomb, deep nesting,
// binary garbage).
func seeds(tb testing.TB) map[string][]byte {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "seeds", "*"))
	require.NoError(tb, err)
	require.NotEmpty(tb, files)
	out := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(tb, err)
		out[filepath.Base(f)] = data
	}
	return out
}

// FuzzParse feeds the manifest parser arbitrary bytes, as a manifest
// directory, URL or push could. It must not panic, and whatever it accepts
// must be a pod a node can run without any of its data leading a path out
// of its directories: valid by ValidatePod, with a UID, log directory,
// pod directory, volume directories, container log paths and subPaths that
// package podpath accepts below their bases. Errors must name the origin.
func FuzzParse(f *testing.F) {
	for _, data := range seeds(f) {
		f.Add(data, false, false)
		f.Add(data, true, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, list, strict bool) {
		o := ParseOptions{Kind: SourceFile, Origin: fuzzOrigin, NodeName: node, Strict: strict, AllowList: list}
		parsed, err := Parse(data, o)
		if err != nil {
			var me *ManifestError
			if !errors.As(err, &me) || me.Origin != fuzzOrigin {
				t.Fatalf("error does not name the manifest: %v", err)
			}
			return
		}
		for i, p := range parsed {
			if (p.Pod == nil) == (p.Err == nil) {
				t.Fatalf("item %d: want exactly one of Pod and Err, got %v and %v", i, p.Pod, p.Err)
			}
			if p.Err != nil {
				if p.Err.Origin != fuzzOrigin || !strings.Contains(p.Err.Error(), fuzzOrigin) {
					t.Fatalf("item %d: error does not name the manifest: %v", i, p.Err)
				}
				continue
			}
			checkRunnable(t, p.Pod)
		}
		if len(parsed) == 1 && parsed[0].Pod != nil && !list {
			again, err := Parse(data, o)
			if err != nil || again[0].Pod == nil || again[0].Pod.UID != parsed[0].Pod.UID {
				t.Fatalf("parsing the same bytes again gave another result: %v", err)
			}
		}
	})
}

// checkRunnable asserts what a pod accepted by a source promises.
func checkRunnable(t *testing.T, pod *v1.Pod) {
	t.Helper()
	if errs := ValidatePod(pod); len(errs) > 0 {
		t.Fatalf("accepted pod fails validation: %v", errs.ToAggregate())
	}
	if !strings.HasSuffix(pod.Name, "-"+strings.ToLower(node)) {
		t.Fatalf("name %q lacks the node suffix", pod.Name)
	}
	l := podpath.Layout{RootDir: "/r", PodLogsDir: "/l"}
	below := func(what, base, p string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s of an accepted pod: %v", what, err)
		}
		if !strings.HasPrefix(p, base+"/") {
			t.Fatalf("%s %q is not below %s", what, p, base)
		}
	}
	dir, err := l.PodDir(pod.UID)
	below("pod directory", "/r/pods", dir, err)
	logs, err := l.PodLogsDirectory(pod.Namespace, pod.Name, pod.UID)
	below("log directory", "/l", logs, err)
	for _, v := range pod.Spec.Volumes {
		vd, err := l.PodVolumeDir(pod.UID, "kubernetes.io~empty-dir", v.Name)
		below("volume directory", dir, vd, err)
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			rel, err := podpath.ContainerLogPath(c.Name, 0)
			if err == nil {
				p := filepath.Join(logs, rel)
				below("container log", logs, p, nil)
			} else {
				t.Fatalf("container log path of an accepted pod: %v", err)
			}
			for _, m := range c.VolumeMounts {
				if m.SubPath == "" {
					continue
				}
				p, err := podpath.JoinLocal("/v", m.SubPath)
				below("subPath", "/v", p, err)
			}
		}
	}
}

// TestSeedManifests pins the verdict on each seed: only the good ones run,
// every hostile one is refused with the field at fault.
func TestSeedManifests(t *testing.T) {
	want := map[string][]string{ // file -> substrings of the error; nil: accepted
		"good.yaml":            nil,
		"list.json":            {"items[2].spec.containers[0].image: Required value"},
		"uid-traversal.yaml":   {`metadata.uid: Invalid value: "../../victim"`},
		"uid-dotdot.yaml":      {`metadata.uid: Invalid value: ".."`},
		"uid-nul.yaml":         {`metadata.uid: Invalid value: "a\x00b"`},
		"uid-long.yaml":        {"metadata.uid: Invalid value", "(2000 bytes): must be no more than 128 characters"},
		"names-traversal.yaml": {`metadata.name: Invalid value: "../../evil-node-1"`, `metadata.namespace: Invalid value: "../.."`, `spec.volumes[0].name: Invalid value: "../../v"`, `spec.volumes[1].hostPath.path: Invalid value: "/srv/../etc"`, `spec.containers[0].name: Invalid value: "../../../c"`, "subPath"},
		"name-long.yaml":       {"metadata.name: Invalid value", "over the 255 a file name may have"},
		"yaml-bomb.yaml":       {fuzzOrigin, "excessive aliasing"},
		"deep.yaml":            {fuzzOrigin},
		"garbage.bin":          {fuzzOrigin},
		"control-chars.yaml":   {`metadata.name: Invalid value: "w\x00eb-node-1"`},
	}
	for name, data := range seeds(t) {
		w, ok := want[name]
		require.True(t, ok, "seed %s has no expected verdict", name)
		parsed, err := Parse(data, ParseOptions{Kind: SourceFile, Origin: fuzzOrigin, NodeName: node, AllowList: true})
		if err == nil {
			for _, p := range parsed {
				if p.Err != nil {
					err = errors.Join(err, p.Err)
				} else {
					checkRunnable(t, p.Pod)
				}
			}
		}
		if w == nil {
			assert.NoError(t, err, name)
			continue
		}
		require.Error(t, err, name)
		for _, s := range w {
			assert.Contains(t, err.Error(), s, name)
		}
	}
}

// TestEverySourceRefusesHostileUIDs: the file, URL and push sources all
// refuse a pod whose UID would lead out of the agent's directories, with
// an error naming the origin (file path, URL, push) and metadata.uid; the
// good pods next to it still flow.
func TestEverySourceRefusesHostileUIDs(t *testing.T) {
	evil := "apiVersion: v1\nkind: Pod\nmetadata: {name: evil, uid: \"../../victim\"}\nspec: {containers: [{name: c, image: i}]}\n"
	const field = `metadata.uid: Invalid value: "../../victim"`

	dir := t.TempDir()
	write(t, filepath.Join(dir, "evil.yaml"), evil)
	write(t, filepath.Join(dir, "good.yaml"), manifest("good", "i"))
	m := NewMux(MuxConfig{Buffer: 100})
	fs := newTestFileSource(t, dir, m)
	require.NoError(t, fs.send(t.Context(), fs.resync()))
	require.Len(t, fs.Errors(), 1)
	assert.Contains(t, fs.Errors()[0].Error(), filepath.Join(dir, "evil.yaml"))
	assert.Contains(t, fs.Errors()[0].Error(), field)

	srv := newServer(t)
	srv.set(200, "apiVersion: v1\nkind: PodList\nitems:\n- "+strings.ReplaceAll(strings.TrimPrefix(evil, "apiVersion: v1\nkind: Pod\n"), "\n", "\n  ")+
		"\n- {metadata: {name: good}, spec: {containers: [{name: c, image: i}]}}\n")
	us, err := NewURLSource(URLConfig{URL: srv.srv.URL + "/pods", NodeName: node, Name: "url"}, m)
	require.NoError(t, err)
	m.Register(us.Name())
	require.Error(t, us.Poll(t.Context()))
	assert.Contains(t, us.Err().Error(), srv.srv.URL+"/pods")
	assert.Contains(t, us.Err().Error(), "items[0]."+field)

	ph, err := NewPushHandler(PushConfig{NodeName: node}, m)
	require.NoError(t, err)
	m.Register(ph.Name())
	rec := httptest.NewRecorder()
	ph.ServeHTTP(rec, httptest.NewRequest("POST", "/", strings.NewReader(evil)))
	assert.Equal(t, 400, rec.Code)
	assert.Contains(t, rec.Body.String(), `"field":"metadata.uid"`)
	assert.Contains(t, rec.Body.String(), "push:push")

	for _, p := range m.Pods() {
		assert.NotEqual(t, "evil-node-1", p.Name)
	}
	assert.Len(t, m.Pods(), 1, "good-node-1 from the file; the URL's good pod conflicts with it by name")
}
