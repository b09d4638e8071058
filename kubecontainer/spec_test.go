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

// TestShouldRestart: the kubelet's ContainerShouldRestart, with container
// restart rules.
func TestShouldRestart(t *testing.T) {
	policy := func(p v1.ContainerRestartPolicy) *v1.ContainerRestartPolicy { return &p }
	rule := func(op v1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) []v1.ContainerRestartRule {
		return []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
			ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}}
	}
	for _, tc := range []struct {
		name     string
		pod      v1.RestartPolicy
		policy   *v1.ContainerRestartPolicy
		rules    []v1.ContainerRestartRule
		exitCode int32
		want     bool
	}{
		{"pod Always", v1.RestartPolicyAlways, nil, nil, 0, true},
		{"pod default is Always", "", nil, nil, 0, true},
		{"pod OnFailure, exit 0", v1.RestartPolicyOnFailure, nil, nil, 0, false},
		{"pod OnFailure, exit 1", v1.RestartPolicyOnFailure, nil, nil, 1, true},
		{"pod Never", v1.RestartPolicyNever, nil, nil, 1, false},
		{"container Never under pod Always", v1.RestartPolicyAlways, policy(v1.ContainerRestartPolicyNever), nil, 1, false},
		{"container Always under pod Never", v1.RestartPolicyNever, policy(v1.ContainerRestartPolicyAlways), nil, 0, true},
		{"container OnFailure, exit 0", v1.RestartPolicyAlways, policy(v1.ContainerRestartPolicyOnFailure), nil, 0, false},
		{"rule In matches", v1.RestartPolicyNever, policy(v1.ContainerRestartPolicyNever), rule(v1.ContainerRestartRuleOnExitCodesOpIn, 42), 42, true},
		{"rule In does not match: the container's policy", v1.RestartPolicyNever, policy(v1.ContainerRestartPolicyNever),
			rule(v1.ContainerRestartRuleOnExitCodesOpIn, 42), 3, false},
		{"rule NotIn matches", v1.RestartPolicyNever, policy(v1.ContainerRestartPolicyNever), rule(v1.ContainerRestartRuleOnExitCodesOpNotIn, 0), 3, true},
		{"rule NotIn does not match", v1.RestartPolicyAlways, policy(v1.ContainerRestartPolicyNever), rule(v1.ContainerRestartRuleOnExitCodesOpNotIn, 0), 0, false},
		{"rules without a container policy are ignored", v1.RestartPolicyNever, nil, rule(v1.ContainerRestartRuleOnExitCodesOpIn, 42), 42, false},
	} {
		c := &v1.Container{Name: "c", RestartPolicy: tc.policy, RestartPolicyRules: tc.rules}
		assert.Equal(t, tc.want, kc.ShouldRestart(c, &v1.PodSpec{RestartPolicy: tc.pod}, tc.exitCode), tc.name)
	}
}
