package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--nodes", "100", "--kubeconfig", "k", "--memory", "8Gi"})
	require.NoError(t, err)
	assert.Equal(t, 100, o.nodes)
	assert.Equal(t, 110, o.maxPods)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nodes", "3"}, "--kubeconfig: required"},
		{[]string{"--kubeconfig", "k", "--nodes", "0"}, "--nodes: invalid value 0: must be at least 1"},
		{[]string{"--kubeconfig", "k", "--memory", "lots"}, `--memory: invalid value "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`},
		{[]string{"--kubeconfig", "k", "extra"}, `unexpected arguments: ["extra"]`},
	} {
		_, err := parseFlags(tc.args)
		assert.EqualError(t, err, tc.want, "%v", tc.args)
	}
}
