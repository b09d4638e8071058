package podsource

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func parseOne(t *testing.T, data, origin string, kind string) *v1.Pod {
	t.Helper()
	ps, err := Parse([]byte(data), ParseOptions{Kind: kind, Origin: origin, NodeName: node})
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Nil(t, ps[0].Err)
	return ps[0].Pod
}

func TestKubeletDefaults(t *testing.T) {
	p := parseOne(t, manifest("web", "nginx"), "/m/web.yaml", SourceFile)
	assert.Equal(t, "web-node-1", p.Name)
	assert.Equal(t, "default", p.Namespace)
	assert.Equal(t, node, p.Spec.NodeName)
	assert.Len(t, string(p.UID), 32)
	assert.Equal(t, string(p.UID), p.Annotations[ConfigHashAnnotation])
	assert.Equal(t, SourceFile, p.Annotations[ConfigSourceAnnotation])
	assert.Contains(t, p.Spec.Tolerations, v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
	assert.Equal(t, v1.PodPending, p.Status.Phase)
	assert.Empty(t, p.Kind)

	h := parseOne(t, manifest("web", "nginx"), "http://x/pods", SourceHTTP)
	assert.Equal(t, SourceHTTP, h.Annotations[ConfigSourceAnnotation])
	assert.Empty(t, h.Spec.Tolerations, "only file pods get the NoExecute toleration")

	explicit := parseOne(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: kube-system, uid: given}\nspec: {containers: [{name: c, image: i}]}\n", "/m/a", SourceFile)
	assert.Equal(t, "given", string(explicit.UID))
	assert.Equal(t, "kube-system", explicit.Namespace)
}

func TestUIDHash(t *testing.T) {
	base := manifest("web", "nginx:1.27")
	uid := func(data, origin, kind, nodeName string) string {
		ps, err := Parse([]byte(data), ParseOptions{Kind: kind, Origin: origin, NodeName: nodeName})
		require.NoError(t, err)
		require.Nil(t, ps[0].Err)
		return string(ps[0].Pod.UID)
	}
	ref := uid(base, "/m/web.yaml", SourceFile, node)
	tests := []struct {
		name   string
		data   string
		origin string
		kind   string
		node   string
		same   bool
	}{
		{"same content again (restart)", base, "/m/web.yaml", SourceFile, node, true},
		{"same content as JSON", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}`, "/m/web.yaml", SourceFile, node, true},
		{"explicit API defaults hash the same", base + "  restartPolicy: Always\n", "/m/web.yaml", SourceFile, node, true},
		{"content changed", manifest("web", "nginx:1.28"), "/m/web.yaml", SourceFile, node, false},
		{"other file", base, "/m/other.yaml", SourceFile, node, false},
		{"other node", base, "/m/web.yaml", SourceFile, "node-2", false},
		{"url source", base, "/m/web.yaml", SourceHTTP, node, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := uid(tt.data, tt.origin, tt.kind, tt.node)
			if tt.same {
				assert.Equal(t, ref, got)
			} else {
				assert.NotEqual(t, ref, got)
			}
		})
	}
	// Pinned: a change in the hashing would change every static pod's UID
	// across an upgrade, restarting them all.
	assert.Equal(t, ref, uid(base, "/m/web.yaml", SourceFile, node))
}

func TestAPIDefaults(t *testing.T) {
	p := parseOne(t, `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  volumes:
  - {name: data}
  - {name: img, image: {reference: "data:1"}}
  - {name: latest, image: {reference: data}}
  - {name: never, image: {reference: "data:1", pullPolicy: Never}}
  containers:
  - name: a
    image: nginx
    ports: [{containerPort: 80}]
    livenessProbe: {httpGet: {port: 80}}
    resources: {limits: {cpu: 500m, memory: 64Mi}, requests: {cpu: 100m}}
  - {name: b, image: "nginx:latest"}
  - {name: c, image: "nginx:1.27"}
  - {name: d, image: "reg:5000/nginx"}
  - {name: e, image: "nginx@sha256:0123"}
`, "/m/web", SourceFile)
	s := p.Spec
	assert.Equal(t, v1.RestartPolicyAlways, s.RestartPolicy)
	assert.Equal(t, v1.DNSClusterFirst, s.DNSPolicy)
	assert.Equal(t, int64(30), *s.TerminationGracePeriodSeconds)
	assert.NotNil(t, s.Volumes[0].EmptyDir)
	a := s.Containers[0]
	assert.Equal(t, "/dev/termination-log", a.TerminationMessagePath)
	assert.Equal(t, v1.TerminationMessageReadFile, a.TerminationMessagePolicy)
	assert.Equal(t, v1.ProtocolTCP, a.Ports[0].Protocol)
	lp := a.LivenessProbe
	assert.Equal(t, []int32{1, 10, 1, 3}, []int32{lp.TimeoutSeconds, lp.PeriodSeconds, lp.SuccessThreshold, lp.FailureThreshold})
	assert.Equal(t, "/", lp.HTTPGet.Path)
	assert.True(t, a.Resources.Requests[v1.ResourceCPU].Equal(resource.MustParse("100m")), "explicit request kept")
	assert.True(t, a.Resources.Requests[v1.ResourceMemory].Equal(resource.MustParse("64Mi")), "request defaulted from limit")
	pulls := []v1.PullPolicy{}
	for _, c := range s.Containers {
		pulls = append(pulls, c.ImagePullPolicy)
	}
	assert.Equal(t, []v1.PullPolicy{v1.PullAlways, v1.PullAlways, v1.PullIfNotPresent, v1.PullAlways, v1.PullIfNotPresent}, pulls)
	volPulls := []v1.PullPolicy{}
	for _, v := range s.Volumes[1:] {
		volPulls = append(volPulls, v.Image.PullPolicy)
	}
	assert.Equal(t, []v1.PullPolicy{v1.PullIfNotPresent, v1.PullAlways, v1.PullNever}, volPulls, "image volumes: as containers")
}
