package nodeagent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakeclient "k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
	"github.com/nodekit-dev/nodekit/nodeagent"
)

// The kubelet's failCgroupV1 (default true since v1.35): on a cgroup v1
// host the agent refuses to start unless it is set false, and then warns
// on the Node. Only a runtime on this host counts.
func TestFailCgroupV1(t *testing.T) {
	v1Host := cgroupmgr.HostMode() != cgroupmgr.ModeV2
	for _, tc := range []struct {
		name         string
		onHost       bool
		failCgroupV1 *bool
		wantRefused  bool
	}{
		{"default, runtime on this host", true, nil, v1Host},
		{"failCgroupV1: true", true, ptr.To(true), v1Host},
		{"failCgroupV1: false", true, ptr.To(false), false},
		{"a runtime not on this host", false, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			cfg := hollowConfig(t, clk, "")
			cfg.RuntimeOnHost, cfg.FailCgroupV1, cfg.CgroupsPerQOS = ptr.To(tc.onHost), tc.failCgroupV1, ptr.To(false)
			_, err := nodeagent.New(context.Background(), cfg)
			if tc.wantRefused {
				require.ErrorIs(t, err, nodeagent.ErrCgroupV1)
				assert.ErrorContains(t, err, "kubelet is configured to not run on a host using cgroup v1")
				return
			}
			require.NoError(t, err)
		})
	}
}

// On a cgroup v1 host with failCgroupV1 false the Node gets the kubelet's
// Warning event, reason CgroupV1.
func TestCgroupV1WarningEvent(t *testing.T) {
	if cgroupmgr.HostMode() == cgroupmgr.ModeV2 {
		t.Skip("the warning is for cgroup v1 hosts; this one is cgroup v2 (TestFailCgroupV1 covers it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clk := testingclock.NewFakeClock(time.Now())
	cfg := hollowConfig(t, clk, "")
	client := fakeclient.NewClientset()
	cfg.Client, cfg.RuntimeOnHost, cfg.FailCgroupV1, cfg.CgroupsPerQOS = clientgo.Adapt(client), ptr.To(true), ptr.To(false), ptr.To(false)
	a, err := nodeagent.New(ctx, cfg)
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	defer func() { stop(); <-done }()
	var warning *v1.Event
	poll.Eventually(t, func() bool {
		events, err := client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for i, e := range events.Items {
			if e.Reason == "CgroupV1" {
				warning = &events.Items[i]
			}
		}
		return warning != nil
	}, 20*time.Second, 10*time.Millisecond, "the CgroupV1 event")
	assert.Equal(t, v1.EventTypeWarning, warning.Type)
	assert.Equal(t, nodeagent.CgroupV1Warning, warning.Message)
	assert.Equal(t, "Node", warning.InvolvedObject.Kind)
	assert.Equal(t, "n1", warning.InvolvedObject.Name)
}
