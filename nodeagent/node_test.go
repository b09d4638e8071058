package nodeagent

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/podworkers"
	"github.com/nodekit-dev/nodekit/statuscache"
)

// kubelet getNodeAnyWay: admission reads the Node its informer holds (a
// label added with kubectl, a taint) and the local one before the first
// list.
func TestWithAPILabels(t *testing.T) {
	local := func() *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"configured": "yes"}},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourcePods: resource.MustParse("110")}}}
	}
	api := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"configured": "yes", "added": "by-kubectl"}},
		Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoExecute}}}}
	for _, tc := range []struct {
		name       string
		api        *v1.Node
		wantLabels map[string]string
		wantTaints []v1.Taint
	}{
		{"before the first list: the local node", nil, map[string]string{"configured": "yes"}, nil},
		{"the API's labels and taints", api, api.Labels, api.Spec.Taints},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := withAPILabels(local(), tc.api)
			assert.Equal(t, tc.wantLabels, n.Labels)
			assert.Equal(t, tc.wantTaints, n.Spec.Taints)
			assert.Equal(t, "110", n.Status.Allocatable.Pods().String(), "allocatable stays the local one")
		})
	}
}

// kubelet ShouldPodContentBeRemoved / ShouldPodRuntimeBeRemoved: a
// terminated pod its source still has (evicted, finished) keeps its dead
// containers for kubectl logs, except from the eviction manager's
// reclaim; a forgotten one loses everything.
func TestWorkersPodState(t *testing.T) {
	cache := statuscache.New()
	cache.UpdateTime(time.Now()) // relisted: nothing of the evicted pod runs
	w, err := podworkers.New(podworkers.Config{PodSyncer: podworkers.PodSyncerFunc(func(context.Context, podworkers.Work) error { return nil }),
		Cache: cache})
	require.NoError(t, err)
	w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "running"}}})
	w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "evicted"},
		Status: v1.PodStatus{Phase: v1.PodFailed}}})
	s := workersPodState{w}
	for _, tc := range []struct {
		uid              types.UID
		content, runtime bool
	}{{"running", false, false}, {"evicted", false, true}, {"gone", true, true}} {
		assert.Equal(t, tc.content, s.ShouldPodContentBeRemoved(tc.uid), "content of %s", tc.uid)
		assert.Equal(t, tc.runtime, s.ShouldPodRuntimeBeRemoved(tc.uid), "runtime of %s", tc.uid)
	}
}
