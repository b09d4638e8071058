package kubecontainer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
)

func TestHashContainerMatchesKubelet(t *testing.T) {
	// Value from the kubelet's container_hash_test.go (v1.31+).
	c := &v1.Container{Name: "test_container", Image: "foo/image:v1", Command: []string{"/bin/testcmd"},
		Env: []v1.EnvVar{{Name: "ENV_FOO", Value: "bar"}}}
	assert.Equal(t, uint64(0x8e45cbd0), HashContainer(c))
	c.Env = nil
	assert.Equal(t, uint64(0x8e45cbd0), HashContainer(c), "env is not part of the hash")
	c.Image = "foo/image:v2"
	assert.NotEqual(t, uint64(0x8e45cbd0), HashContainer(c), "image is")
}
