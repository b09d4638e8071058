package fieldpath_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/fieldpath"
)

func TestPodField(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1",
		Labels:      map[string]string{"app": "web", "tier": "a\"b"},
		Annotations: map[string]string{"note": "multi\nline"}},
		Spec: v1.PodSpec{NodeName: "n1", ServiceAccountName: "sa"}}
	for _, tc := range []struct{ path, want, err string }{
		{path: "metadata.name", want: "web"},
		{path: "metadata.namespace", want: "ns"},
		{path: "metadata.uid", want: "u1"},
		{path: "spec.nodeName", want: "n1"},
		{path: "spec.serviceAccountName", want: "sa"},
		{path: "metadata.labels['app']", want: "web"},
		{path: "metadata.labels['missing']", want: ""},
		{path: "metadata.annotations['note']", want: "multi\nline"},
		{path: "metadata.labels", want: "app=\"web\"\ntier=\"a\\\"b\""},
		{path: "metadata.annotations", want: `note="multi\nline"`},
		{path: "metadata.labels['", err: `unsupported value "metadata.labels['"`},
		{path: "status.podIP", err: `unsupported value "status.podIP"`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, err := fieldpath.PodField(pod, tc.path)
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestResourceValue(t *testing.T) {
	c := &v1.Container{Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m"), "hugepages-2Mi": resource.MustParse("4Mi")}}}
	alloc := v1.ResourceList{v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourceCPU: resource.MustParse("2")}
	for _, tc := range []struct {
		resource, divisor string
		alloc             v1.ResourceList
		want, err         string
	}{
		{resource: "requests.cpu", want: "1"}, // 250m rounds up to 1 core
		{resource: "requests.cpu", divisor: "1m", want: "250"},
		{resource: "limits.cpu", want: "2"},
		{resource: "requests.memory", want: "67108864"},
		{resource: "requests.memory", divisor: "1Mi", want: "64"},
		{resource: "requests.memory", divisor: "1M", want: "68"},
		{resource: "limits.memory", divisor: "1Gi", alloc: alloc, want: "8"}, // unset limit: the node's allocatable
		{resource: "limits.memory", want: "0"},                               // nor allocatable known
		{resource: "requests.ephemeral-storage", want: "0"},
		{resource: "limits.hugepages-2Mi", divisor: "1Mi", want: "4"},
		{resource: "limits.hugepages-1Gi", alloc: alloc, want: "0"},
		{resource: "limits.gpu", err: `resource: unsupported value "limits.gpu"`},
		{resource: "cpu", err: `resource: unsupported value "cpu"`},
		{resource: "requests.memory", divisor: "-1", err: `divisor: Invalid value: "-1": must be at least 1 of memory's unit`},
	} {
		t.Run(tc.resource+"/"+tc.divisor, func(t *testing.T) {
			ref := &v1.ResourceFieldSelector{Resource: tc.resource}
			if tc.divisor != "" {
				ref.Divisor = resource.MustParse(tc.divisor)
			}
			got, err := fieldpath.ResourceValue(c, ref, tc.alloc)
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
