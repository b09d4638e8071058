package kubecontainer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

func TestFindContainerAndFieldPath(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "init"}}, Containers: []v1.Container{{Name: "app"}}}}
	for _, tc := range []struct{ name, path string }{
		{"app", "spec.containers{app}"},
		{"init", "spec.initContainers{init}"},
	} {
		assert.Equal(t, tc.name, kc.FindContainer(pod, tc.name).Name)
		assert.Equal(t, tc.path, kc.ContainerFieldPath(pod, tc.name))
	}
	assert.Nil(t, kc.FindContainer(pod, "missing"))
}
