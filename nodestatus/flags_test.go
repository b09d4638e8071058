package nodestatus

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

func TestParseLabelsAndTaints(t *testing.T) {
	l, err := ParseLabels("a=1, node-role.kubernetes.io/worker=")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "1", "node-role.kubernetes.io/worker": ""}, l)
	_, err = ParseLabels("novalue")
	assert.EqualError(t, err, `--node-labels: Invalid value: "novalue": want key=value`)

	ts, err := ParseTaints("dedicated=infra:NoSchedule,gpu:NoExecute")
	require.NoError(t, err)
	assert.Equal(t, []v1.Taint{{Key: "dedicated", Value: "infra", Effect: v1.TaintEffectNoSchedule},
		{Key: "gpu", Effect: v1.TaintEffectNoExecute}}, ts)
	for _, bad := range []string{"a=b", "a=b:Sometimes", "=b:NoSchedule"} {
		_, err := ParseTaints(bad)
		assert.ErrorContains(t, err, "--register-with-taints: Invalid value", bad)
	}
}
