package kubecontainer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestResolvePort(t *testing.T) {
	c := &v1.Container{Name: "c", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	for _, tc := range []struct {
		port intstr.IntOrString
		c    *v1.Container
		want int
		err  string
	}{
		{intstr.FromInt32(9000), c, 9000, ""},
		{intstr.FromString("http"), c, 8080, ""},
		{intstr.FromString("9001"), c, 9001, ""},
		{intstr.FromString("grpc"), c, 0, `port "grpc": no container port with that name in container c`},
		{intstr.FromString("grpc"), nil, 0, `port "grpc": no container port with that name`},
	} {
		got, err := ResolvePort(tc.port, tc.c)
		if tc.err != "" {
			assert.EqualError(t, err, tc.err)
			continue
		}
		assert.NoError(t, err)
		assert.Equal(t, tc.want, got)
	}
}

func TestTrimRuntimeType(t *testing.T) {
	assert.Equal(t, "abc", TrimRuntimeType("containerd://abc"))
	assert.Equal(t, "abc", TrimRuntimeType("abc"))
	assert.Equal(t, "", TrimRuntimeType(""))
}
