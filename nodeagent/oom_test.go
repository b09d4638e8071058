//go:build integration

package nodeagent_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/oomwatch"
)

// events records what an oomwatch.Watcher records.
type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) Eventf(_ apiruntime.Object, eventtype, reason, format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, eventtype+" "+reason+": "+fmt.Sprintf(format, args...))
}

// TestOOMKillOnContainerd: a container allocating past its memory limit
// ends OOMKilled, and an OOM watcher on this kernel's /dev/kmsg counts
// the kill for the container's cgroup, with no SystemOOM event: the
// limit hit was the container's (constraint CONSTRAINT_MEMCG), not the
// node's, and the kubelet records SystemOOM for system-wide OOMs only.
func TestOOMKillOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rec := &events{}
	w, err := oomwatch.New(oomwatch.Config{Recorder: rec, NodeRef: &v1.ObjectReference{Kind: "Node", Name: "oom"}})
	require.NoError(t, err)
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan error, 1)
	go func() { watched <- w.Run(wctx) }()
	defer func() { stopWatch(); assert.NoError(t, <-watched) }()

	a, _ := startPodsAgent(t, ctx, cd, "oom", map[string]string{"hog.yaml": `apiVersion: v1
kind: Pod
metadata: {name: hog, namespace: default}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: nodekit.local/testbin:1, imagePullPolicy: Never, args: [alloc, "256"],
     resources: {limits: {memory: 32Mi}}}
`}, nil)
	var pod v1.Pod
	poll.Eventually(t, func() bool {
		ps := a.Pods()
		if len(ps) == 1 && len(ps[0].Status.ContainerStatuses) == 1 && ps[0].Status.ContainerStatuses[0].State.Terminated != nil {
			pod = ps[0]
			return true
		}
		return false
	}, time.Minute, 20*time.Millisecond, "the container terminated")
	term := pod.Status.ContainerStatuses[0].State.Terminated
	assert.Equal(t, "OOMKilled", term.Reason)
	assert.Equal(t, int32(137), term.ExitCode)

	podCgroup, err := a.Cgroups().PodCgroupName(&pod)
	require.NoError(t, err)
	cgroup := a.Cgroups().Path(podCgroup) + "/" + strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	poll.Eventually(t, func() bool { return w.OOMEvents(cgroup) == 1 }, 10*time.Second, 20*time.Millisecond,
		"the kill counted for %s", cgroup)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Empty(t, rec.got, "no SystemOOM for a container's own limit")
}
