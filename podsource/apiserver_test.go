package podsource

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func apiPod(name, nodeName string, uid types.UID) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns1", UID: uid,
			Annotations: map[string]string{"user": "x"}},
		Spec: v1.PodSpec{NodeName: nodeName, Containers: []v1.Container{{Name: "c", Image: "img:1"}}},
	}
}

func TestConvertAPIPod(t *testing.T) {
	p := apiPod("a", node, "uid-a")
	p.Annotations = nil
	out := ConvertAPIPod(p)
	assert.Equal(t, SourceAPI, out.Annotations[ConfigSourceAnnotation])
	assert.Nil(t, p.Annotations, "the input is not modified")
	assert.Equal(t, p.UID, out.UID)
	assert.Equal(t, "a", out.Name, "no node suffix")
	assert.Equal(t, "ns1", out.Namespace)
	_, hasHash := out.Annotations[ConfigHashAnnotation]
	assert.False(t, hasHash, "no kubelet defaults")
	assert.Empty(t, out.Spec.Tolerations)
}

func TestNewAPIServerSourceValidates(t *testing.T) {
	mux := NewMux(MuxConfig{})
	_, err := NewAPIServerSource(APIServerConfig{NodeName: node}, mux)
	assert.Error(t, err)
	_, err = NewAPIServerSource(APIServerConfig{Client: fake.NewClientset()}, mux)
	assert.Error(t, err)
	s, err := NewAPIServerSource(APIServerConfig{Client: fake.NewClientset(), NodeName: node}, mux)
	require.NoError(t, err)
	assert.Equal(t, "api", s.Name())
}

// recvUntil reads the mux until cond holds for the updates of source src,
// or fails after a deadline.
func recvUntil(t *testing.T, mux *Mux, d time.Duration, cond func(PodUpdate) bool) PodUpdate {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case u := <-mux.Updates():
			if cond(u) {
				return u
			}
		case <-timer.C:
			t.Fatalf("no matching update within %v", d)
			return PodUpdate{}
		}
	}
}

func TestAPIServerSourceFake(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The fake ignores field selectors: the source must filter by itself.
	client := fake.NewClientset(apiPod("a", node, "uid-a"), apiPod("other", "node-2", "uid-o"))
	mux := NewMux(MuxConfig{})
	src, err := NewAPIServerSource(APIServerConfig{Client: client, NodeName: node, Metrics: NewMetrics()}, mux)
	require.NoError(t, err)
	mux.Register(src.Name())
	assert.False(t, mux.SourcesReady("api"))

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); assert.NoError(t, src.Run(ctx)) }()
	defer wg.Wait()
	defer cancel()

	u := recvUntil(t, mux, 10*time.Second, func(u PodUpdate) bool { return u.Op == ADD })
	require.Len(t, u.Pods, 1)
	p := u.Pods[0]
	assert.Equal(t, "a", p.Name)
	assert.Equal(t, "ns1", p.Namespace)
	assert.Equal(t, types.UID("uid-a"), p.UID)
	assert.Equal(t, SourceAPI, p.Annotations[ConfigSourceAnnotation])
	assert.Equal(t, "x", p.Annotations["user"])
	assert.NotEmpty(t, p.Annotations[ConfigSeenAnnotation])
	assert.True(t, mux.SourcesReady("api"))
	assert.True(t, src.HasSynced())
	// The object in the "API" is untouched.
	stored, err := client.CoreV1().Pods("ns1").Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, stored.Annotations, ConfigSourceAnnotation)

	// Label change: UPDATE.
	stored.Labels = map[string]string{"l": "1"}
	_, err = client.CoreV1().Pods("ns1").Update(ctx, stored, metav1.UpdateOptions{})
	require.NoError(t, err)
	u = recvUntil(t, mux, 10*time.Second, func(u PodUpdate) bool { return u.Op != RECONCILE })
	assert.Equal(t, UPDATE, u.Op)
	assert.Equal(t, []string{"a"}, names(u.Pods))

	// Status change only: RECONCILE.
	stored, err = client.CoreV1().Pods("ns1").Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	stored.Status.Phase = v1.PodRunning
	_, err = client.CoreV1().Pods("ns1").UpdateStatus(ctx, stored, metav1.UpdateOptions{})
	require.NoError(t, err)
	u = recvUntil(t, mux, 10*time.Second, func(PodUpdate) bool { return true })
	assert.Equal(t, RECONCILE, u.Op)

	// Another node's pod added later: nothing; a second own pod: ADD.
	_, err = client.CoreV1().Pods("ns1").Create(ctx, apiPod("other2", "node-2", "uid-o2"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().Pods("ns1").Create(ctx, apiPod("b", node, "uid-b"), metav1.CreateOptions{})
	require.NoError(t, err)
	u = recvUntil(t, mux, 10*time.Second, func(PodUpdate) bool { return true })
	assert.Equal(t, ADD, u.Op)
	assert.Equal(t, []string{"b"}, names(u.Pods))

	// Delete: REMOVE.
	require.NoError(t, client.CoreV1().Pods("ns1").Delete(ctx, "a", metav1.DeleteOptions{}))
	u = recvUntil(t, mux, 10*time.Second, func(PodUpdate) bool { return true })
	assert.Equal(t, REMOVE, u.Op)
	assert.Equal(t, []string{"a"}, names(u.Pods))
	assert.Equal(t, []string{"b"}, names(mux.Pods()))

	assert.Error(t, src.Run(ctx), "a second concurrent Run is refused")
}
